"""Transformer-XL's recipe: long texts cut into parallel streams, read segment by
segment with the memory carried over, and the two ways of evaluating a language model
with a fixed context.

* Training (the paper's batching): the token sequence is cut into B contiguous
  streams; step s reads segment s of every stream, so row b of one batch continues row
  b of the batch before, and the memory of the last segment is the right context.
* Evaluation with memory (:func:`evaluate_memory`): each segment is encoded once; the
  states of earlier segments are read from the memory.
* Evaluation by sliding window (:func:`evaluate_window`), as a model without memory
  must do it (Al-Rfou et al., 2019): for every token, re-encode the ``window`` tokens
  that end at it and keep only the last prediction.
* A perturbation probe of the dependency length (:func:`influence`): replace one
  earlier token and see whether the last output moves.

With the mask :func:`~ptlm_lite.transformer_xl.window_mask` both give every token
exactly the same number of tokens of context; with one layer they are the same
computation (a test checks), with more layers the memory reaches further back.

Chapter: ``chapters/transformer_xl.ipynb``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import masks
from ..device import device_of, scores_on_device
from ..transformer_xl import TransformerXL, window_mask

__all__ = [
    "token_streams",
    "pretrain",
    "evaluate_memory",
    "evaluate_window",
    "influence",
]


def token_streams(
    n_streams: int, split: str = "train", chars: int | None = None
) -> torch.Tensor:
    """The plays of ``split`` (the first ``chars`` characters), tokenized with the GPT
    chapters' byte-level BPE and cut into ``n_streams`` contiguous rows:
    ``(n_streams, N)``.
    """
    from ..data import text_stream
    from .gpt import tokenizer

    if not isinstance(n_streams, int) or n_streams < 1:
        raise ValueError(f"n_streams must be a positive integer, got {n_streams!r}")
    ids = torch.tensor(tokenizer().encode(text_stream(split)[:chars]))
    n = ids.numel() // n_streams
    if n < 2:
        raise ValueError(f"chars={chars!r} is too short for {n_streams} streams")
    return ids[: n * n_streams].view(n_streams, n)


def pretrain(
    model: TransformerXL,
    streams: torch.Tensor,
    *,
    steps: int,
    seg_len: int,
    lr: float,
    progress: bool = True,
    callback=None,
    seed: int = 0,
):
    """Next-token training on consecutive segments of ``streams`` (B, N), the memory
    carried from one step to the next (emptied when the streams start over). Returns the
    :class:`~ptlm_lite.train.History`.
    """
    from ..train import train

    memory = model.new_memory()
    n_segments = (streams.shape[1] - 1) // seg_len
    if n_segments < 1:
        raise ValueError(f"seg_len={seg_len} is longer than the streams")

    def batch(step):
        s = (step - 1) % n_segments
        x = streams[:, s * seg_len : (s + 1) * seg_len + 1]
        return {"ids": x[:, :-1], "targets": x[:, 1:], "first": s == 0}

    def loss_fn(m, b):
        if b["first"]:
            memory.states = None
        return m(b["ids"], targets=b["targets"], memory=memory).loss

    return train(
        model,
        batch,
        steps=steps,
        lr=lr,
        warmup=steps // 10,
        schedule="cosine",
        betas=(0.9, 0.95),
        loss_fn=loss_fn,
        callback=callback,
        progress=progress,
        seed=seed,
        desc="training Transformer-XL",
    )


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def evaluate_memory(
    model: TransformerXL,
    streams: torch.Tensor,
    seg_len: int,
    mem_len: int,
    window: int | None = None,
    skip: int = 0,
) -> torch.Tensor:
    """The next-token loss of every position t >= ``skip`` of ``streams`` (B, N),
    reading segments of ``seg_len`` with a memory of ``mem_len``: (B, N - 1 - skip).
    ``window``: every token sees exactly that many tokens (itself included; needs
    ``mem_len >= window - 1``); default: the training mask (memory + causal).
    """
    if window is not None and mem_len < window - 1:
        raise ValueError(f"mem_len={mem_len} must be >= window - 1 = {window - 1}")
    if not 0 <= skip < streams.shape[1] - 1:  # else no position is left to score
        raise ValueError(f"skip must be in [0, {streams.shape[1] - 1}), got {skip}")
    model.eval()
    streams = streams.to(device_of(model))
    memory, nll = model.new_memory(mem_len), []
    for s in range(0, streams.shape[1] - 1, seg_len):
        x = streams[:, s : s + seg_len + 1]
        ids, targets = x[:, :-1], x[:, 1:]
        T, M = ids.shape[1], len(memory)
        mask = None if window is None else window_mask(T, M, window, ids.device)
        h, _ = model.hidden(ids, memory, mask)
        logits = model.head(h)
        nll.append(F.cross_entropy(logits.transpose(1, 2), targets, reduction="none"))
    return torch.cat(nll, dim=1)[:, skip:]


@scores_on_device
@torch.no_grad()
def evaluate_window(
    model: TransformerXL,
    streams: torch.Tensor,
    window: int,
    skip: int | None = None,
    chunk: int = 512,
) -> torch.Tensor:
    """The same losses as :func:`evaluate_memory` with ``window=window`` and the same
    ``skip`` (at least ``window - 1``), computed without memory: one forward pass over
    the ``window`` tokens ending at each position, ``chunk`` windows at a time.
    """
    skip = window - 1 if skip is None else skip
    if skip < window - 1:
        raise ValueError(f"skip must be >= window - 1 = {window - 1}, got {skip}")
    model.eval()
    streams = streams.to(device_of(model))
    B = streams.shape[0]
    # (B, N - window, window): the windows that end at positions window - 1 .. N - 2
    windows = streams[:, :-1].unfold(1, window, 1)[:, skip - window + 1 :]
    targets = streams[:, skip + 1 :]  # the token after each window
    flat = windows.reshape(-1, window)
    mask = masks.causal_mask(window, device=streams.device)
    last = []
    for i in range(0, flat.shape[0], chunk):
        h, _ = model.hidden(flat[i : i + chunk], mask=mask)
        last.append(model.head(h[:, -1]))  # only the last position is new
    logits = torch.cat(last).view(B, -1, model.config.vocab_size)
    return F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")


@scores_on_device
@torch.no_grad()
def influence(
    model: TransformerXL, ids: torch.Tensor, seg_len: int, window: int
) -> torch.Tensor:
    """A perturbation probe: read the text ``ids`` (N,) segment by segment with a
    memory and the ``window`` mask, and measure how far the last position's final
    state moves when the token d positions back is replaced (by the next id).

    Returns (N - 1,): the largest absolute change for d = 1 .. N - 1. Zero beyond the
    dependency length (with L layers, L·(window - 1) tokens): exactly, where every row
    of a batched product rounds alike; on some CPUs rows round differently and float64
    leaves ~1e-15 there (``tests/test_transformer_xl.py`` allows for it).
    """
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1 or ids.numel() < 2:
        raise ValueError("ids must be one text: a 1-D tensor of at least 2 token ids")
    model.eval()
    ids = ids.to(device_of(model))
    N, V = ids.numel(), model.config.vocab_size
    batch = ids.repeat(N, 1)  # row 0 as it is; row d: the token d back replaced
    d = torch.arange(1, N, device=ids.device)
    batch[d, N - 1 - d] = (ids[N - 1 - d] + 1) % V
    memory = model.new_memory(window)
    for s in range(0, N, seg_len):
        x = batch[:, s : s + seg_len]
        mask = window_mask(x.shape[1], len(memory), window, ids.device)
        h, _ = model.hidden(x, memory, mask)
    last = h[:, -1]  # (N, D): the last position's final state, for every row
    return (last[1:] - last[0]).abs().amax(-1)
