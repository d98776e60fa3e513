"""UniLM's pre-training recipe: the cloze on sentence pairs of the synthetic world, with
the self-attention mask switched from batch to batch, and the chapter's two measures.

* :func:`pretraining_batches`: pairs ``[CLS] A [SEP] B [SEP]`` where B is the sentence
  that follows A (the seq2seq objective learns to write it), 15% of the tokens masked as
  BERT does, and the batch's ``objective`` taken in turn from ``objectives``: the
  paper's mixture is a third bidirectional, a third seq2seq and a sixth each of
  left-to-right and right-to-left; here a third each of bidirectional, left-to-right
  and seq2seq (no right-to-left).
* :func:`slot_cloze`: understanding, zero-shot: does the bidirectional cloze put the
  right kind of word (a colour, an occupation) in the slot of ``suite``'s slot_filler?
* :func:`next_token_hits`: generation: writing B from A with the seq2seq mask, how
  often is the token chosen at each step the right one, given the right tokens before?

Chapter: ``chapters/unilm.ipynb``.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch

from ..config import preset
from ..corrupt import nsp_pairs, pack_pairs
from ..device import device_of, scores_on_device
from ..unilm import OBJECTIVES, UniLM
from . import bert as bert_recipe

__all__ = [
    "MIXES",
    "PRETRAIN_KW",
    "VOCAB",
    "tokenizer",
    "new_model",
    "pretraining_batches",
    "pretrain",
    "generation_pairs",
    "next_token_hits",
    "slot_cloze",
]

VOCAB = 512


def tokenizer():
    """A 512-token WordPiece trained on the world's documents (``make_world(0)``): the
    words of its sentences (colours, occupations) are single tokens, which a tiny model
    learns in a hundred steps; the book's Shakespeare WordPiece cuts them in pieces.
    """
    from ..data.tokenizer import get_tokenizer

    return get_tokenizer("wordpiece", VOCAB, corpus="world", n_sentinels=0)


# the chapter's conditions: which objectives take turns, batch by batch
MIXES = {
    "mixed (UniLM)": OBJECTIVES,
    "bidirectional only": ("bidirectional",),
    "seq2seq only": ("seq2seq",),
}
# each scale's batches and schedule (a constant rate after the warm-up)
PRETRAIN_KW = {
    "tiny": dict(batch_size=24, max_len=32, lr=5e-3, warmup=20),
    "small": dict(batch_size=64, max_len=64, lr=1e-3, warmup=50),
}


def new_model(tok, scale: str = "tiny", seed: int | None = None) -> UniLM:
    """A UniLM of the ``bert-<scale>`` preset for ``tok``'s vocabulary, without dropout
    (runs of a few hundred steps on fresh text every step do not overfit)."""
    cfg = preset(f"bert-{scale}", vocab_size=tok.vocab_size, dropout=0.0)
    return UniLM(cfg, seed=seed)


def pretraining_batches(
    tok,
    objectives=OBJECTIVES,
    *,
    batch_size: int = 24,
    max_len: int = 32,
    seed: int = 0,
    split: str = "train",
):
    """``step -> batch``: BERT's pairs and masking (:func:`ptlm_lite.recipes.bert.
    pretraining_batches` on the world's documents, B always the next sentence), plus
    ``objective``: ``objectives[step % len(objectives)]``, the mask of that batch.
    """
    if not objectives or any(o not in OBJECTIVES for o in objectives):
        raise ValueError(
            f"objectives must be a non-empty sequence of {OBJECTIVES}, got "
            f"{objectives!r}"
        )
    base = bert_recipe.pretraining_batches(
        tok,
        batch_size=batch_size,
        max_len=max_len,
        seed=seed,
        split=split,
        corpora=("world",),
        pairs=partial(nsp_pairs, p_random=0.0),
    )

    def batch(step: int) -> dict:
        b = {k: v for k, v in base(step).items() if k != "nsp_labels"}
        return {**b, "objective": objectives[step % len(objectives)]}

    return batch


def pretrain(model, objectives, *, steps: int, tok, seed: int = 0, **kw):
    """Pre-train ``model`` (a :class:`~ptlm_lite.unilm.UniLM`) for ``steps`` steps on
    :func:`pretraining_batches` of ``objectives``; ``kw``: ``batch_size``, ``max_len``,
    ``lr``, ``warmup`` and :func:`~ptlm_lite.train.train`'s keywords. Returns its
    History.
    """
    from ..train import train

    sizes = {k: kw.pop(k) for k in ("batch_size", "max_len") if k in kw}
    batches = pretraining_batches(tok, objectives, seed=seed, **sizes)
    kw.setdefault("warmup", 20)
    kw["warmup"] = min(kw["warmup"], steps - 1)
    return train(model, batches, steps=steps, schedule="constant", seed=seed, **kw)


def generation_pairs(tok, n: int, max_len: int = 32, seed: int = 0) -> dict:
    """``n`` held-out pairs (A, the sentence after it) from another world's documents,
    packed ``[CLS] A [SEP] B [SEP]`` without masking: the generation test set."""
    g = torch.Generator().manual_seed(seed)
    docs = bert_recipe.token_documents(tok, "world", "validation", 0)
    s = tok.special_ids
    pairs = nsp_pairs(docs, n, generator=g, p_random=0.0)
    return pack_pairs(
        pairs, cls_id=s["cls"], sep_id=s["sep"], pad_id=s["pad"], max_len=max_len
    )


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def next_token_hits(model, batch: dict, mask_id: int) -> np.ndarray:
    """Per example of ``batch`` (:func:`generation_pairs`): the share of B's tokens
    (its [SEP] included) that greedy seq2seq decoding picks right when the tokens
    before are right: B's k-th token is replaced by ``[MASK]`` and predicted under the
    seq2seq mask (it sees A and B's first k-1 tokens), for every k."""
    model.eval()
    dev = device_of(model)
    ids, seg, valid = (batch[k].to(dev) for k in ("ids", "segments", "valid"))
    target = (seg == 1) & valid  # (B, T)
    start = target.int().argmax(1)  # (B,): where B begins
    hits = torch.zeros(ids.shape, dtype=torch.float, device=dev)
    rows = torch.arange(len(ids), device=dev)
    for k in range(int(target.sum(1).max())):
        pos = (start + k).clamp(max=ids.shape[1] - 1)
        here = target[rows, pos]  # rows whose B is longer than k
        probe = ids.clone()
        probe[rows, pos] = mask_id
        logits = model(probe, seg, valid, objective="seq2seq").logits  # (B, T, V)
        right = logits[rows, pos].argmax(-1) == ids[rows, pos]
        hits[rows[here], pos[here]] = right[here].float()
    return ((hits * target).sum(1) / target.sum(1)).cpu().numpy()


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def slot_cloze(model, tok, examples) -> np.ndarray:
    """Zero-shot understanding, 1/0 per example of slot_filler (``suite``): is the
    first piece of the right ending likelier than the wrong one's at the ``[MASK]`` of
    ``[CLS] context [MASK] . [SEP]``, under the bidirectional mask?"""
    model.eval()
    s = tok.special_ids
    rows = [
        [s["cls"], *tok.encode(e["context"]), s["mask"], *tok.encode("."), s["sep"]]
        for e in examples
    ]
    T = max(map(len, rows))
    dev = device_of(model)
    ids = torch.tensor([r + [s["pad"]] * (T - len(r)) for r in rows], device=dev)
    logits = model(ids, objective="bidirectional").logits  # (N, T, V)
    at = logits[ids == s["mask"]]  # (N, V): one [MASK] per row
    first = [[tok.encode(w)[0] for w in e["endings"]] for e in examples]
    label = torch.tensor([e["label"] for e in examples], device=dev)
    scores = at.gather(1, torch.tensor(first, device=dev))  # (N, 2)
    return (scores.argmax(1) == label).float().cpu().numpy()
