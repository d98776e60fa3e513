"""ALBERT's pre-training data and the chapter's measurements.

The data is BERT's (:func:`ptlm_lite.recipes.bert.pretraining_batches`) with ALBERT's
two functions passed in: the pairs (sentence order, or BERT's NSP for the comparison)
and the corruption (n-grams of whole words)::

    batches = albert_batches(tok, pairs="sop")
    recipes.bert.pretrain(model, steps=60, batches=batches)

The measurements score every held-out example separately, so a verdict's interval
counts the test examples as well as the seeds: masked-token accuracy
(:func:`mlm_correct`), pair accuracy (:func:`pair_correct`, from the head's answers,
:func:`pair_answers`) and each layer's step through the embedding space
(:func:`layer_steps`, the paper's Figure 2).

Chapter: ``chapters/albert.ipynb``.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import torch
import torch.nn.functional as F

from ..albert import ngram_mask, sop_pairs
from ..corrupt import nsp_pairs
from ..device import device_of, scores_on_device, to_device
from ..output import IGNORE
from .bert import pretraining_batches
from .spanbert import starts_word_table

__all__ = [
    "PAIRS",
    "ngram_corruption",
    "albert_batches",
    "held_out",
    "mlm_correct",
    "pair_answers",
    "pair_correct",
    "layer_steps",
]

PAIRS = {"sop": sop_pairs, "nsp": nsp_pairs}


def ngram_corruption(tok, p: float = 0.15, max_n: int = 3) -> Callable:
    """ALBERT's corruption for ``tok`` as ``(ids, generator) -> Masked``: n-grams of
    whole words (a WordPiece word is a piece and its ``##`` pieces), P(n) ∝ 1/n, n <=
    ``max_n``, ``p`` of the tokens. Chapter: ``chapters/albert.ipynb``.
    """
    return partial(
        ngram_mask,
        special_ids=tok.all_special_ids,
        mask_id=tok.special_ids["mask"],
        vocab_size=tok.vocab_size,
        starts_word=starts_word_table(tok),
        p=p,
        max_n=max_n,
    )


def albert_batches(tok, *, pairs: str = "sop", **kw) -> Callable:
    """``step -> batch``: BERT's pre-training batches with ``pairs`` ``"sop"`` (both
    segments from one document, half swapped) or ``"nsp"`` (half with a random B),
    masked by :func:`ngram_corruption` (``corrupt=`` overrides). ``nsp_labels`` holds
    the pair label either way (1 = swapped, or 1 = random). ``kw``: as
    :func:`~ptlm_lite.recipes.bert.pretraining_batches`. Chapter:
    ``chapters/albert.ipynb``.
    """
    if pairs not in PAIRS:
        raise ValueError(f"pairs must be one of {sorted(PAIRS)}, got {pairs!r}")
    kw.setdefault("corrupt", ngram_corruption(tok))
    return pretraining_batches(tok, pairs=PAIRS[pairs], **kw)


def held_out(
    tok, pairs: str, n_batches: int, batch_size: int, max_len: int, **kw
) -> list:
    """``n_batches`` fixed batches of held-out text (``make_world(1)``; with
    ``corpora=("shakespeare", "world")`` the validation plays too), n-gram masked, with
    ``pairs`` ``"sop"`` or ``"nsp"``. ``kw``: as :func:`albert_batches`. Chapter:
    ``chapters/albert.ipynb``.
    """
    kw.setdefault("corpora", ("world",))
    get = albert_batches(
        tok,
        pairs=pairs,
        split="validation",
        seed=10_007,
        batch_size=batch_size,
        max_len=max_len,
        **kw,
    )
    return [get(i) for i in range(n_batches)]


def at_mask(batch, mask_id: int) -> torch.Tensor:
    """``batch["targets"]`` where the input reads ``[MASK]`` (``mask_id``), ``IGNORE``
    elsewhere: a held-out score counts those only. The chosen tokens left unchanged
    are in the input (copying them needs no context: it would beat the most frequent
    token), and the randomly replaced ones are not asked either."""
    t = batch["targets"]
    return torch.where(batch["ids"] == mask_id, t, torch.full_like(t, IGNORE))


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def mlm_correct(model, batches, mask_id: int) -> torch.Tensor:
    """1/0 per ``[MASK]`` token of ``batches`` (row-major, batch after batch; see
    :func:`at_mask`): is the model's top prediction the hidden token? Chapter:
    ``chapters/albert.ipynb``.
    """
    model.eval()
    out = []
    for b in batches:
        b = to_device(b, device_of(model))
        t = at_mask(b, mask_id)
        o = model(b["ids"], b["segments"], b["valid"], targets=t)
        out.append((o.logits.argmax(-1) == t[t != IGNORE]).float())
    return torch.cat(out)


@scores_on_device
@torch.no_grad()
def pair_answers(model, batches) -> torch.Tensor:
    """The label the pair head gives each pair of ``batches`` (1 or 0, as
    ``nsp_labels``): a head that gives one label to every pair scores that label's
    share. Chapter: ``chapters/albert.ipynb``.
    """
    model.eval()
    out = []
    for b in batches:
        b = to_device(b, device_of(model))
        out.append(model(b["ids"], b["segments"], b["valid"]).extra["nsp_logits"])
    return torch.cat(out).argmax(-1)


def pair_correct(model, batches) -> torch.Tensor:
    """1/0 per pair of ``batches``: does the pair head give the pair's label? Chapter:
    ``chapters/albert.ipynb``.
    """
    labels = torch.cat([b["nsp_labels"] for b in batches])
    return (pair_answers(model, batches) == labels).float()  # both on the CPU


@scores_on_device
@torch.no_grad()
def layer_steps(model, batches) -> tuple[torch.Tensor, torch.Tensor]:
    """How far each layer moves its input: ``(l2, cosine)``, each ``(N, L)`` for the N
    rows of ``batches``: the L2 distance and the cosine similarity between layer l's
    input and output, averaged over the row's real tokens (Lan et al., Figure 2).
    Chapter: ``chapters/albert.ipynb``.
    """
    model.eval()
    l2, cos = [], []
    for b in batches:
        b = to_device(b, device_of(model))
        hidden = model.bert(b["ids"], b["segments"], b["valid"], return_hidden=True)
        h = torch.stack(hidden.hidden)  # (L + 1, B, T, D)
        w = b["valid"].float() / b["valid"].sum(1, keepdim=True)  # (B, T)
        dist = (h[1:] - h[:-1]).norm(dim=-1)  # (L, B, T)
        sim = F.cosine_similarity(h[1:], h[:-1], dim=-1)
        l2.append((dist * w).sum(-1).T)  # (B, L)
        cos.append((sim * w).sum(-1).T)
    return torch.cat(l2), torch.cat(cos)
