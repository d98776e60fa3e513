"""SpanBERT's pre-training data: one contiguous segment per row, no sentence pairs.

SpanBERT drops NSP and its half-length segment pairs: each row is ``[CLS] segment
[SEP]``, a contiguous run of whole sentences from one document, cut at ``max_len``.
The corruption is an argument, so the chapter's three conditions (BERT's token masking,
span masking, span masking + SBO) read exactly the same rows::

    batches = segment_batches(tok, corrupt=span_corruption(tok))
    recipes.bert.pretrain(model, steps=200, batches=batches, nsp=False)

Chapter: ``chapters/spanbert.ipynb``.
"""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Callable

import torch

from ..spanbert import span_mask
from .bert import token_documents, mlm_corruption

__all__ = [
    "starts_word_table",
    "span_corruption",
    "segments",
    "segment_batches",
    "masked_spans",
]


def starts_word_table(tok) -> torch.Tensor:
    """``(V,)`` bool: True for the tokens that begin a word (a WordPiece piece without
    ``##``). Chapter: ``chapters/spanbert.ipynb``.
    """
    if getattr(tok, "kind", None) != "wordpiece":
        raise ValueError(
            f"tok must be a WordPiece tokenizer (pieces that continue a word start "
            f"with '##'), got kind={getattr(tok, 'kind', None)!r}"
        )
    pieces = [tok.id_to_token(i) or "" for i in range(tok.vocab_size)]
    return torch.tensor([not (p.startswith("##") and len(p) > 2) for p in pieces])


def span_corruption(
    tok, p: float = 0.15, geometric_p: float = 0.2, max_span: int = 10
) -> Callable:
    """SpanBERT's corruption for ``tok`` as ``(ids, generator) -> Masked``: spans of
    whole words, lengths ~ Geo(``geometric_p``) up to ``max_span`` words, ``p`` of the
    tokens. Chapter: ``chapters/spanbert.ipynb``.
    """
    return partial(
        span_mask,
        special_ids=tok.all_special_ids,
        starts_word=starts_word_table(tok),
        mask_id=tok.special_ids["mask"],
        vocab_size=tok.vocab_size,
        p=p,
        geometric_p=geometric_p,
        max_span=max_span,
    )


def _streams(tok, split: str, corpora, n_docs: int) -> list[list[list[int]]]:
    """Each corpus as one stream of tokenized sentences, documents one after another
    (tokenized once per tokenizer and arguments: the chapter builds one stream per run;
    callers only read them)."""
    unknown = set(corpora) - {"shakespeare", "world"}
    if not corpora or unknown:
        raise ValueError(
            f"corpora must be a non-empty subset of ('shakespeare', 'world'), got "
            f"{corpora!r}"
        )
    return _tokenized_streams(tok, split, tuple(corpora), n_docs)


@lru_cache(maxsize=8)
def _tokenized_streams(tok, split: str, corpora: tuple, n_docs: int):
    return [
        [s for d in token_documents(tok, c, split, n_docs) for s in d if s]
        for c in corpora
    ]


def _rows(streams, n: int, max_len: int, generator, sp: dict):
    from ..data import pad_sequences

    if not isinstance(max_len, int) or max_len < 3:
        raise ValueError(f"max_len must be an integer >= 3, got {max_len!r}")
    firsts = [torch.randint(len(s), (n,), generator=generator) for s in streams]
    rows = []
    for r in range(n):
        stream, i = streams[r % len(streams)], int(firsts[r % len(streams)][r])
        text = []
        while len(text) < max_len - 2:  # the corpus read as a circle
            text, i = text + stream[i % len(stream)], i + 1
        rows.append([sp["cls"], *text[: max_len - 2], sp["sep"]])
    return pad_sequences(rows, pad_id=sp["pad"])


def segments(
    tok,
    n: int,
    *,
    generator: torch.Generator,
    max_len: int = 48,
    split: str = "train",
    corpora=("world",),
    n_docs: int = 120,
):
    """``(ids, valid)``: ``n`` uncorrupted rows ``[CLS] segment [SEP]`` of exactly
    ``max_len`` tokens, each a contiguous run of the corpus's sentences from a random
    one on (documents follow one another, the corpus read as a circle), as SpanBERT
    samples contiguous segments. ``corpora``: ``"world"`` (``make_world(0)``, or
    ``make_world(1)`` for ``split="validation"``) and/or ``"shakespeare"`` (the first
    ``n_docs`` scenes of the split), rows alternating between them. Chapter:
    ``chapters/spanbert.ipynb``.
    """
    streams = _streams(tok, split, corpora, n_docs)
    return _rows(streams, n, max_len, generator, tok.special_ids)


def segment_batches(
    tok,
    *,
    corrupt: Callable | None = None,
    batch_size: int = 24,
    max_len: int = 48,
    seed: int = 0,
    split: str = "train",
    corpora=("world",),
    n_docs: int = 120,
):
    """``step -> batch`` of :func:`segments`, corrupted by ``corrupt(ids,
    generator=g)`` (default: BERT's token masking,
    :func:`~ptlm_lite.recipes.bert.mlm_corruption`). Fields: ``ids, segments, valid,
    targets``; no ``nsp_labels``: SpanBERT has no NSP. The generator is seeded by
    ``(seed, step)`` and draws the rows before the corruption, so a step's batch never
    changes and every condition given the same ``seed`` reads the same rows. Chapter:
    ``chapters/spanbert.ipynb``.
    """
    corrupt = corrupt or mlm_corruption(tok)
    streams = _streams(tok, split, corpora, n_docs)
    _rows(streams, 1, max_len, torch.Generator(), tok.special_ids)  # checks max_len

    def batch(step: int) -> dict:
        g = torch.Generator().manual_seed(seed * 1_000_003 + step)
        ids, valid = _rows(streams, batch_size, max_len, g, tok.special_ids)
        m = corrupt(ids, generator=g)
        return {
            "ids": m.inputs,
            "segments": torch.zeros_like(ids),  # one segment: all 0
            "valid": valid,
            "targets": m.targets,
        }

    return batch


def masked_spans(selected, word_start) -> list[tuple[int, int, int, int]]:
    """The spans as they end up in a batch: ``(row, start, stop, words)`` for every run
    of ``selected`` (spans that touch merge; the budget may cut one short), ``words``
    counting the word starts inside it (a run always begins a word). Chapter:
    ``chapters/spanbert.ipynb``.
    """
    out = []
    for r, (sel, starts) in enumerate(zip(selected.tolist(), word_start.tolist())):
        t = 0
        while t < len(sel):
            if not sel[t]:
                t += 1
                continue
            s = t
            while t < len(sel) and sel[t]:
                t += 1
            out.append((r, s, t, 1 + sum(starts[s + 1 : t])))
    return out
