"""Attention masks as pure functions. The mask is the model.

One polarity everywhere: a mask is a **boolean** tensor and ``True`` means *may attend*.
Rows are queries, columns are keys. Shapes are ``(Tq, Tk)`` for masks that are the same
for every example, and ``(B, Tq, Tk)`` or ``(B, 1, Tk)`` for masks that depend on the
batch (padding). Masks combine with ``&`` (both must allow) and broadcast like any
tensor.

Each docstring draws its matrix (``■`` may attend, ``·`` may not);
``tests/test_masks.py`` checks that the drawings are what the functions return.
Introduced in ``chapters/transformer.ipynb``; prefix and permutation masks come back in
the UniLM and XLNet chapters.
"""

from __future__ import annotations

from typing import Sequence

import torch

__all__ = [
    "causal_mask",
    "full_mask",
    "padding_mask",
    "cross_mask",
    "prefix_mask",
    "seq2seq_mask",
    "permutation_masks",
    "combine",
    "draw",
]


def _check_len(name: str, n) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n!r}")
    return n


def causal_mask(T: int, memory: int = 0, device=None) -> torch.Tensor:
    """Left-to-right (GPT, the Transformer decoder): query ``i`` may see keys ``0..i``.

    With ``memory`` extra keys in front (Transformer-XL's cached segment), every query
    also sees all of them: the diagonal just shifts right by ``memory``.

    ``causal_mask(5)``::

        ■ · · · ·
        ■ ■ · · ·
        ■ ■ ■ · ·
        ■ ■ ■ ■ ·
        ■ ■ ■ ■ ■

    Returns a ``(T, memory + T)`` bool tensor.
    """
    _check_len("T", T)
    if isinstance(memory, bool) or not isinstance(memory, int) or memory < 0:
        raise ValueError(f"memory must be a non-negative integer, got {memory!r}")
    q = torch.arange(T, device=device)[:, None]
    k = torch.arange(memory + T, device=device)[None, :]
    return k <= q + memory


def full_mask(Tq: int, Tk: int | None = None, device=None) -> torch.Tensor:
    """Bidirectional (BERT, the Transformer encoder): every query sees every key.

    ``full_mask(3)``::

        ■ ■ ■
        ■ ■ ■
        ■ ■ ■
    """
    _check_len("Tq", Tq)
    Tk = Tq if Tk is None else _check_len("Tk", Tk)
    return torch.ones(Tq, Tk, dtype=torch.bool, device=device)


def padding_mask(valid: torch.Tensor) -> torch.Tensor:
    """Keys that are padding may not be attended to.

    ``valid`` is a ``(B, T)`` bool tensor, True for real tokens (the same polarity as
    the ``attention_mask`` of Hugging Face tokenizers, as bools). Returns ``(B, 1, T)``,
    which broadcasts over the queries. For one sequence of three tokens and two pads,
    ``padding_mask(torch.tensor([[1, 1, 1, 0, 0]]).bool())[0].expand(5, 5)``::

        ■ ■ ■ · ·
        ■ ■ ■ · ·
        ■ ■ ■ · ·
        ■ ■ ■ · ·
        ■ ■ ■ · ·

    The pad *queries* (last two rows) still see the real keys: their outputs are
    computed and ignored by the loss, which is cheaper than special-casing them.
    """
    if (
        not isinstance(valid, torch.Tensor)
        or valid.dtype != torch.bool
        or valid.dim() != 2
    ):
        raise TypeError(
            "valid must be a (B, T) bool tensor, True for real tokens; got "
            + (
                f"{valid.dtype} tensor of shape {tuple(valid.shape)}"
                if isinstance(valid, torch.Tensor)
                else type(valid).__name__
            )
        )
    return valid[:, None, :]


def cross_mask(src_valid: torch.Tensor, tgt_len: int) -> torch.Tensor:
    """Encoder-decoder attention: every target query sees every real source key.

    ``src_valid`` is ``(B, S)`` bool (True = real source token). Returns ``(B, tgt_len,
    S)``. For a source of four tokens (one pad) and three target positions::

        ■ ■ ■ ·
        ■ ■ ■ ·
        ■ ■ ■ ·

    No causal structure here: the whole source is known before decoding starts.
    """
    _check_len("tgt_len", tgt_len)
    return padding_mask(src_valid).expand(-1, tgt_len, -1)


def prefix_mask(T: int, prefix: int, device=None) -> torch.Tensor:
    """Prefix LM (UniLM's seq2seq mask, T5's prefix-LM): the first ``prefix`` tokens see
    each other in both directions; the rest see the prefix and their own past.

    ``prefix_mask(5, 2)``::

        ■ ■ · · ·
        ■ ■ · · ·
        ■ ■ ■ · ·
        ■ ■ ■ ■ ·
        ■ ■ ■ ■ ■
    """
    _check_len("T", T)
    if isinstance(prefix, bool) or not isinstance(prefix, int) or not 0 <= prefix <= T:
        raise ValueError(f"prefix must be an integer in [0, T={T}], got {prefix!r}")
    m = causal_mask(T, device=device)  # the target part stays left-to-right ...
    m[:, :prefix] = True  # ... and everyone sees the whole prefix
    return m


def seq2seq_mask(
    segments: torch.Tensor, valid: torch.Tensor | None = None
) -> torch.Tensor:
    """UniLM's seq2seq mask, one per example, from its segment ids: the source (segment
    0) sees itself in both directions and never the target; the target (segment 1) sees
    the whole source and its own past. :func:`prefix_mask` with a prefix per example.

    ``segments``: ``(B, T)`` integer, 0 for ``[CLS] source [SEP]``, 1 for ``target
    [SEP]`` (the segments of :func:`ptlm_lite.corrupt.pack_pairs`); ``valid``: ``(B,
    T)`` bool, True for real tokens (default all): padding keys are hidden. Returns
    ``(B, T, T)``.
    For segments ``[0, 0, 1, 1, 1]`` (source of two, target of three)::

        ■ ■ · · ·
        ■ ■ · · ·
        ■ ■ ■ · ·
        ■ ■ ■ ■ ·
        ■ ■ ■ ■ ■

    Chapter: ``chapters/unilm.ipynb``.
    """
    if (
        not isinstance(segments, torch.Tensor)
        or segments.dim() != 2
        or segments.dtype.is_floating_point
        or segments.dtype == torch.bool
        or not bool(((segments == 0) | (segments == 1)).all())
    ):
        raise TypeError(
            "segments must be a (B, T) integer tensor of 0 (source) and 1 (target), "
            "got "
            + (
                f"{segments.dtype} tensor of shape {tuple(segments.shape)}"
                if isinstance(segments, torch.Tensor)
                else type(segments).__name__
            )
        )
    if valid is None:
        valid = torch.ones_like(segments, dtype=torch.bool)
    elif not isinstance(valid, torch.Tensor) or valid.shape != segments.shape:
        raise TypeError(
            f"valid must be a bool tensor of the shape of segments "
            f"{tuple(segments.shape)}, True for real tokens"
        )
    target = segments.bool()  # (B, T)
    q, k = target[:, :, None], target[:, None, :]  # (B, T, 1), (B, 1, T)
    causal = causal_mask(segments.shape[1], device=segments.device)  # (T, T)
    # a source key is seen by everyone; a target key only by target queries at or
    # after it
    allowed = ~k | (q & causal)
    return allowed & padding_mask(valid)


def permutation_masks(
    order: Sequence[int] | torch.Tensor, memory: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """XLNet's two masks for one factorisation order (a permutation of ``range(T)``).

    Position ``i`` is predicted after the positions that come before it *in the order*,
    whatever their place in the sentence. Let ``rank[i]`` be where position ``i`` sits
    in the order.

    * content stream: ``i`` may see ``j`` if ``rank[j] <= rank[i]`` (itself included);
    * query stream: ``i`` may see ``j`` if ``rank[j] < rank[i]`` (not itself: it must
      predict it).

    For order ``[2, 0, 3, 1]`` (predict position 2 first, then 0, 3, 1), the query
    stream is::

        · · ■ ·
        ■ · ■ ■
        · · · ·
        ■ · ■ ·

    Row 1 is predicted last and sees the three others; row 2 is predicted first and sees
    nothing (its output comes from its position alone). The content stream is the same
    plus the diagonal. ``memory`` columns in front (Transformer-XL's memory) are visible
    to everyone. Returns ``(content, query)``, each ``(T, memory + T)``, or ``(B, T,
    memory + T)`` for a ``(B, T)`` batch of orders. The model of
    ``chapters/xlnet.ipynb`` and its widget both use this one function.
    """
    order = torch.as_tensor(order)
    if order.dim() not in (1, 2) or order.dtype not in (
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
    ):
        raise TypeError(
            "order must be a 1-D sequence of integers (or a (B, T) batch of them), "
            f"got {order.dtype} of shape {tuple(order.shape)}"
        )
    T = order.shape[-1]
    _check_len("len(order)", T)
    if not torch.equal(
        order.sort(-1).values, torch.arange(T).to(order).expand_as(order)
    ):
        raise ValueError(
            f"order must be a permutation of range({T}), got {order.tolist()}"
        )
    if isinstance(memory, bool) or not isinstance(memory, int) or memory < 0:
        raise ValueError(f"memory must be an integer >= 0, got {memory!r}")
    rank = order.long().argsort(-1)  # rank[i] = t where z_t = i
    content = rank[..., None, :] <= rank[..., :, None]  # (…, T, T)
    query = rank[..., None, :] < rank[..., :, None]
    pad = content.new_ones(*content.shape[:-1], memory)
    return torch.cat([pad, content], -1), torch.cat([pad, query], -1)


def combine(*masks: torch.Tensor) -> torch.Tensor:
    """A key is visible only if every mask allows it (logical AND, broadcasting)."""
    if not masks:
        raise ValueError("combine needs at least one mask")
    out = masks[0]
    for m in masks:
        if not isinstance(m, torch.Tensor) or m.dtype != torch.bool:
            raise TypeError(
                "masks must be bool tensors (True = may attend), got "
                + (str(m.dtype) if isinstance(m, torch.Tensor) else type(m).__name__)
            )
    for m in masks[1:]:
        try:
            out = out & m
        except RuntimeError:
            raise ValueError(
                f"masks of shapes {[tuple(m.shape) for m in masks]} do not broadcast "
                f"together"
            ) from None
    return out


def draw(mask: torch.Tensor, on: str = "■", off: str = "·") -> str:
    """The text picture of a ``(Tq, Tk)`` mask used in the docstrings above."""
    if not isinstance(mask, torch.Tensor) or mask.dim() != 2:
        raise ValueError(
            "mask must be a 2-D (Tq, Tk) tensor to draw, got "
            + (
                f"shape {tuple(mask.shape)}"
                if isinstance(mask, torch.Tensor)
                else type(mask).__name__
            )  # fmt: skip
        )
    return "\n".join(" ".join(on if v else off for v in row) for row in mask.tolist())
