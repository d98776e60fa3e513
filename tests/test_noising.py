"""BART's five noising functions: fractions, span lengths, one [MASK] per span, the
argument untouched, same generator -> same output, bad parameters named."""

import copy

import pytest
import torch

from ptlm_lite.noising import (
    NOISES,
    document_rotation,
    infilling_spans,
    sentence_permutation,
    text_infilling,
    token_deletion,
    token_masking,
)

MASK = 4


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def _doc(n_sent=8, length=25, start=10):
    """Sentences of distinct ids (>= start): every token can be traced back."""
    ids = iter(range(start, start + n_sent * length))
    return [[next(ids) for _ in range(length)] for _ in range(n_sent)]


def _kw(name):
    return {"mask_id": MASK} if name in ("token masking", "text infilling") else {}


def _spans_back(source, target):
    """The (start, length) spans of ``target`` that text infilling replaced, read back
    from a source whose kept tokens are distinct (so the alignment is unique)."""
    where = {t: i for i, t in enumerate(target)}
    spans, i = [], 0  # i: the next target position not accounted for
    for k, t in enumerate(source):
        if t == MASK:
            nxt = next((s for s in source[k + 1 :] if s != MASK), None)
            end = len(target) if nxt is None else where[nxt]
            spans.append((i, end - i))
            i = end
        else:
            assert where[t] == i, "kept tokens keep their order and nothing else moves"
            i += 1
    assert i == len(target)
    return spans


@pytest.mark.parametrize("name", list(NOISES))
def test_contract_input_untouched_deterministic_target_is_the_document(name):
    doc = _doc()
    before = copy.deepcopy(doc)
    a = NOISES[name](doc, _g(3), **_kw(name))
    b = NOISES[name](doc, _g(3), **_kw(name))
    assert doc == before
    assert a == b
    assert a.target == [t for s in doc for t in s]
    c = NOISES[name](doc, _g(4), **_kw(name))
    assert c.source != a.source  # another seed, another corruption


@pytest.mark.parametrize("name", list(NOISES))
def test_empty_and_one_token_documents(name):
    for doc in ([[]], [[7]], [[], [8, 9]]):
        out = NOISES[name](doc, _g(), **_kw(name))
        assert out.target == [t for s in doc for t in s]


def test_token_masking_fraction_and_positions():
    doc = _doc()
    flat = [t for s in doc for t in s]
    for p in (0.0, 0.15, 0.3, 0.5):
        out = token_masking(doc, _g(1), p=p, mask_id=MASK)
        assert len(out.source) == len(flat)
        changed = [i for i, (a, b) in enumerate(zip(out.source, flat)) if a != b]
        assert len(changed) == round(p * len(flat))
        assert all(out.source[i] == MASK for i in changed)


def test_token_deletion_fraction_keeps_order():
    doc = _doc()
    flat = [t for s in doc for t in s]
    out = token_deletion(doc, _g(2), p=0.3)
    assert len(out.source) == len(flat) - round(0.3 * len(flat))
    assert out.source == [t for t in flat if t in set(out.source)]


def test_text_infilling_fraction_and_one_mask_per_span():
    doc = _doc()
    flat = [t for s in doc for t in s]
    for seed in range(20):
        out = text_infilling(doc, _g(seed), p=0.3, mask_id=MASK)
        spans = _spans_back(out.source, flat)
        assert sum(n for _, n in spans) == round(0.3 * len(flat))
        assert out.source.count(MASK) == len(spans)  # one [MASK] per span
        # the spans the function says it cut are the ones read back from the output
        assert spans == infilling_spans(len(flat), _g(seed), p=0.3, lam=3.0)


def test_text_infilling_span_lengths_are_poisson_3_zero_included():
    lengths = []
    for seed in range(40):
        spans = infilling_spans(1000, _g(seed), p=0.3, lam=3.0)
        lengths += [n for _, n in spans[:-1]]  # the last one may be cut short
    mean = sum(lengths) / len(lengths)
    assert 2.8 < mean < 3.2, mean
    zero = lengths.count(0) / len(lengths)  # Poisson(3): P(0) = e^-3 ≈ 0.0498
    assert 0.03 < zero < 0.07, zero
    # a length-0 span is a [MASK] inserted between two kept tokens
    doc = _doc()
    flat = [t for s in doc for t in s]
    inserted = 0
    for seed in range(30):
        out = text_infilling(doc, _g(seed), mask_id=MASK)
        inserted += sum(n == 0 for _, n in _spans_back(out.source, flat))
    assert inserted > 0
    with_lam = [n for s in range(40) for _, n in infilling_spans(1000, _g(s), lam=1.0)]
    assert sum(with_lam) / len(with_lam) < 1.2


def test_spans_never_touch_and_short_documents_fit():
    for n in range(0, 12):
        for seed in range(30):
            spans = infilling_spans(n, _g(seed), p=0.5, lam=3.0)
            ends = [s + k for s, k in spans]
            assert all(e < s for e, (s, _) in zip(ends, spans[1:]))  # a kept token
            assert sum(k for _, k in spans) == round(0.5 * n)
            assert all(0 <= s and s + k <= n for s, k in spans)


def test_sentence_permutation_is_a_permutation_of_sentences():
    doc = _doc(n_sent=6, length=3)
    seen = set()
    for seed in range(30):
        src = sentence_permutation(doc, _g(seed)).source
        sents = [tuple(src[i : i + 3]) for i in range(0, len(src), 3)]
        assert sorted(sents) == sorted(tuple(s) for s in doc)
        seen.add(tuple(sents))
    assert len(seen) > 20  # 720 orders: not stuck on a few


def test_document_rotation_is_a_rotation_from_any_token():
    doc = _doc(n_sent=2, length=5)
    flat = [t for s in doc for t in s]
    starts = set()
    for seed in range(200):
        src = document_rotation(doc, _g(seed)).source
        k = flat.index(src[0])
        assert src == flat[k:] + flat[:k]
        starts.add(k)
    assert starts == set(range(len(flat)))  # the first token (no rotation) included


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda d: token_masking(d, _g(), p=1.0, mask_id=MASK), "p"),
        (lambda d: token_masking(d, _g(), p=-0.1, mask_id=MASK), "p"),
        (lambda d: token_masking(d, _g(), mask_id=-1), "mask_id"),
        (lambda d: token_masking(d, _g(), mask_id=True), "mask_id"),
        (lambda d: token_deletion(d, _g(), p="0.3"), "p"),
        (lambda d: text_infilling(d, _g(), p=0.6, mask_id=MASK), "p"),
        (lambda d: text_infilling(d, _g(), lam=0, mask_id=MASK), "lam"),
        (lambda d: text_infilling(d, _g(), lam=float("nan"), mask_id=MASK), "lam"),
    ],
)
def test_bad_parameters_name_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        call(_doc())


@pytest.mark.parametrize("name", list(NOISES))
def test_bad_generator_and_document(name):
    with pytest.raises(TypeError, match="generator"):
        NOISES[name](_doc(), 0, **_kw(name))
    for bad in ("not a document", [], [[1, -2]], [1, 2]):
        with pytest.raises((TypeError, ValueError), match="doc"):
            NOISES[name](bad, _g(), **_kw(name))


def test_fill_spans():
    from ptlm_lite.noising import fill_spans

    assert fill_spans([7, 8, 9], [(0, 0), (1, 2)], MASK) == [MASK, 7, MASK]
    assert fill_spans([7, 8, 9], [(3, 0)], MASK) == [7, 8, 9, MASK]
    assert fill_spans([7, 8, 9], [], MASK) == [7, 8, 9]
    with pytest.raises(ValueError, match="spans"):
        fill_spans([7, 8, 9], [(1, 1), (0, 1)], MASK)
    with pytest.raises(ValueError, match="spans"):
        fill_spans([7, 8, 9], [(2, 5)], MASK)
