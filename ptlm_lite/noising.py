"""BART's five noising functions (Lewis et al., 2019), as pure functions.

BART is a denoising autoencoder: corrupt a document, then train an encoder-decoder to
write the original back. The encoder reads the noised ``source``; the decoder writes
the whole clean document as ``target``. The paper compares five ways to corrupt it
(here on the document ``A B C . D E .``, ``_`` = ``[MASK]``):

    token masking          A _ C . D _ .        tokens replaced by [MASK]
    token deletion         A C . D .            tokens removed: where is the hole?
    text infilling         A _ . D _ E .        a span → one [MASK] (length 0: inserted)
    sentence permutation   D E . A B C .        the sentences shuffled
    document rotation      C . D E . A B        starts at a random token

Deletion and infilling change the length, so the model must also learn *how many*
tokens are missing, which masking tells it. Each function keeps the house's noising
contract (:mod:`ptlm_lite.seq2seq`): ``noise(doc, generator, **params) -> Pair``, with
``doc`` one document as a list of sentences (lists of token ids), the argument left
untouched, the same generator state giving the same output, and a bad parameter raising
a ``ValueError`` that names it. Token-level noises flatten the document first.

Chapter: ``chapters/bart.ipynb``.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .seq2seq import Pair, check_document, check_generator

__all__ = [
    "token_masking",
    "token_deletion",
    "text_infilling",
    "sentence_permutation",
    "document_rotation",
    "infilling_spans",
    "fill_spans",
    "NOISES",
]


def _check_fraction(name: str, p, high: float = 1.0, closed: bool = False) -> float:
    ok = isinstance(p, (int, float)) and not isinstance(p, bool)
    ok = ok and 0.0 <= p and (p <= high if closed else p < high)
    if not ok:
        end = "]" if closed else ")"
        raise ValueError(f"{name} must be a number in [0, {high}{end}, got {p!r}")
    return float(p)


def _check_id(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{name} must be a non-negative int token id, got {v!r}")
    return v


def _flat(doc: Sequence[Sequence[int]]) -> list[int]:
    return [t for s in check_document(doc) for t in s]


def _choose(n: int, k: int, generator: torch.Generator) -> list[int]:
    """``k`` distinct positions of ``range(n)``, uniformly, in increasing order."""
    return sorted(torch.randperm(n, generator=generator)[:k].tolist())


def token_masking(doc, generator, *, p: float = 0.3, mask_id: int) -> Pair:
    """BERT's masking without the 80/10/10: ``round(p · n)`` tokens, chosen uniformly,
    become ``mask_id``; the length is kept. Target: the document."""
    check_generator(generator)
    p, mask_id = _check_fraction("p", p), _check_id("mask_id", mask_id)
    flat = _flat(doc)
    source = list(flat)
    for i in _choose(len(flat), round(p * len(flat)), generator):
        source[i] = mask_id
    return Pair(source=source, target=flat)


def token_deletion(doc, generator, *, p: float = 0.3) -> Pair:
    """``round(p · n)`` tokens, chosen uniformly, are removed: the model must find
    *where* something is missing as well as what. Target: the document."""
    check_generator(generator)
    p = _check_fraction("p", p)
    flat = _flat(doc)
    gone = set(_choose(len(flat), round(p * len(flat)), generator))
    return Pair(source=[t for i, t in enumerate(flat) if i not in gone], target=flat)


def infilling_spans(n: int, generator, *, p: float = 0.3, lam: float = 3.0):
    """Where text infilling cuts a document of ``n`` tokens: a list of ``(start,
    length)`` spans, sorted, never touching each other.

    Span lengths are drawn from Poisson(``lam``) until they cover ``round(p · n)``
    tokens (the last is cut so they cover exactly that many). A length-0 span is kept:
    it becomes a ``[MASK]`` inserted between two tokens. The ``k`` spans then go into
    ``k`` distinct gaps among the ``n - L + 1`` gaps around the ``n - L`` kept
    tokens, chosen uniformly: two spans always have a kept token between them, so each
    one is its own ``[MASK]``. If there are more spans than gaps (a short document),
    the surplus length-0 spans are dropped.
    """
    check_generator(generator)
    p = _check_fraction("p", p, 0.5, closed=True)
    if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not lam > 0:
        raise ValueError(
            f"lam must be a number > 0 (the mean span length), got {lam!r}"
        )
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int (tokens), got {n!r}")
    m = round(p * n)
    lengths, total = [], 0
    rate = torch.tensor([float(lam)])
    while total < m:
        length = min(int(torch.poisson(rate, generator=generator)), m - total)
        lengths.append(length)
        total += length
    gaps = n - m + 1
    if len(lengths) > gaps:  # keep every span with tokens, then length-0 ones
        zeros = len(lengths) - sum(1 for x in lengths if x)
        drop = len(lengths) - gaps
        keep_zero = zeros - drop
        kept = []
        for x in lengths:
            if x or keep_zero > 0:
                kept.append(x)
                keep_zero -= x == 0
        lengths = kept
    slots = _choose(gaps, len(lengths), generator)  # gap j: after j kept tokens
    spans, shift = [], 0
    for j, length in zip(slots, lengths):
        spans.append((j + shift, length))
        shift += length
    return spans


def text_infilling(
    doc, generator, *, p: float = 0.3, lam: float = 3.0, mask_id: int
) -> Pair:
    """BART's best single noise: spans of Poisson(``lam`` = 3) length, ``p`` of the
    tokens in all, each replaced by **one** ``mask_id`` (:func:`infilling_spans`).
    The model must write every missing span and learn how long each one was; a
    length-0 span is a ``[MASK]`` with nothing behind it. Target: the document."""
    check_generator(generator)
    mask_id = _check_id("mask_id", mask_id)
    flat = _flat(doc)
    spans = infilling_spans(len(flat), generator, p=p, lam=lam)
    return Pair(source=fill_spans(flat, spans, mask_id), target=flat)


def fill_spans(tokens: Sequence[int], spans, mask_id: int) -> list[int]:
    """``tokens`` with each ``(start, length)`` span of ``spans`` (sorted, not
    overlapping) replaced by one ``mask_id``; a length-0 span inserts a ``mask_id``
    before ``tokens[start]``. ``fill_spans([7, 8, 9], [(0, 0), (1, 2)], 4)`` is
    ``[4, 7, 4]``."""
    mask_id = _check_id("mask_id", mask_id)
    source, i = [], 0
    for start, length in spans:
        if start < i or length < 0 or start + length > len(tokens):
            raise ValueError(
                f"spans must be sorted, non-overlapping (start, length) pairs inside "
                f"the {len(tokens)} tokens, got {spans!r}"
            )
        source += list(tokens[i:start]) + [mask_id]
        i = start + length
    return source + list(tokens[i:])


def sentence_permutation(doc, generator) -> Pair:
    """The document's sentences in a random order (a uniform permutation); the tokens
    are all there. Target: the document in its order."""
    check_generator(generator)
    doc = check_document(doc)  # a copy, as lists of ints
    order = torch.randperm(len(doc), generator=generator).tolist()
    return Pair(
        source=[t for i in order for t in doc[i]], target=[t for s in doc for t in s]
    )


def document_rotation(doc, generator) -> Pair:
    """The document rotated to start at a token chosen uniformly (the first token
    included: no rotation); the model must find where it really begins. Target: the
    document."""
    check_generator(generator)
    flat = _flat(doc)
    if not flat:
        return Pair(source=[], target=[])
    k = int(torch.randint(len(flat), (1,), generator=generator))
    return Pair(source=flat[k:] + flat[:k], target=flat)


# the chapter's five conditions: name -> noise (the masks take mask_id= when called)
NOISES = {
    "token masking": token_masking,
    "token deletion": token_deletion,
    "text infilling": text_infilling,
    "sentence permutation": sentence_permutation,
    "document rotation": document_rotation,
}
