"""MLM masking and NSP pairs: pure functions with explicit generators."""

import pytest
import torch

from ptlm_lite.corrupt import (
    MASKED,
    RANDOM,
    UNCHANGED,
    UNSELECTED,
    Pair,
    can_mask,
    mlm_mask,
    nsp_pairs,
    pack_pairs,
    replace_selected,
    select_tokens,
)

PAD, CLS, SEP, MASK = 0, 2, 3, 4
SPECIAL = [0, 1, 2, 3, 4, 5, 6]
V = 500


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def corpus(B=64, T=40, seed=0):
    """[CLS] words [SEP] [PAD]...: rows of different lengths."""
    g = gen(seed)
    ids = torch.randint(7, V, (B, T), generator=g)
    lengths = torch.randint(10, T + 1, (B,), generator=g)
    for b, n in enumerate(lengths.tolist()):
        ids[b, 0], ids[b, n - 1] = CLS, SEP
        ids[b, n:] = PAD
    return ids


def mask(ids, seed=0, **kw):
    return mlm_mask(
        ids, special_ids=SPECIAL, mask_id=MASK, vocab_size=V, generator=gen(seed), **kw
    )


def test_special_and_padding_are_never_selected():
    ids = corpus()
    m = mask(ids, p=0.5)
    special = ~can_mask(ids, SPECIAL)
    assert not bool((m.selected & special).any())
    assert bool((m.inputs[special] == ids[special]).all())
    assert bool((m.targets[~m.selected] == -100).all())
    assert torch.equal(m.targets[m.selected], ids[m.selected])


def test_fifteen_percent_per_row():
    ids = corpus()
    m = mask(ids)
    n = can_mask(ids, SPECIAL).sum(1)
    k = m.selected.sum(1)
    assert torch.equal(k, (n.double() * 0.15).round().long().clamp(min=1))


def test_eighty_ten_ten_statistically():
    ids = corpus(B=400, T=64)
    m = mask(ids)
    n = int(m.selected.sum())
    frac = {a: float((m.action == a).sum()) / n for a in (MASKED, RANDOM, UNCHANGED)}
    # n is about 3,000: three standard deviations of a 10% proportion are about 1.6
    # points
    assert abs(frac[MASKED] - 0.8) < 0.03 and abs(frac[RANDOM] - 0.1) < 0.025
    assert abs(frac[UNCHANGED] - 0.1) < 0.025
    assert bool((m.inputs[m.action == MASKED] == MASK).all())
    assert torch.equal(m.inputs[m.action == UNCHANGED], ids[m.action == UNCHANGED])
    random_tokens = m.inputs[m.action == RANDOM]
    # never a stray [PAD]
    assert not bool(torch.isin(random_tokens, torch.tensor(SPECIAL)).any())
    assert bool((m.action[~m.selected] == UNSELECTED).all())


def test_input_untouched_and_reproducible():
    ids = corpus()
    before = ids.clone()
    a, b, c = mask(ids, seed=3), mask(ids, seed=3), mask(ids, seed=4)
    assert torch.equal(ids, before)
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.selected, b.selected)
    assert not torch.equal(a.selected, c.selected)


def test_custom_selection_keeps_the_replacement():
    ids = corpus(B=2)
    chosen = torch.zeros_like(ids, dtype=torch.bool)
    chosen[:, :4] = True  # includes [CLS], which must still be refused
    m = mask(ids, selected=chosen)
    assert torch.equal(m.selected, chosen & can_mask(ids, SPECIAL))
    # the 80/10/10 replacement acts on the chosen positions, and only there
    assert bool((m.action[m.selected] != UNSELECTED).all())
    assert bool((m.action[~m.selected] == UNSELECTED).all())
    assert torch.equal(m.inputs[~m.selected], ids[~m.selected])


def test_unselected_positions_keep_their_ids():
    ids = corpus()
    m = mask(ids, p=0.5)
    assert torch.equal(m.inputs[~m.selected], ids[~m.selected])
    assert bool((m.targets[~m.selected] == -100).all())
    assert torch.equal(m.targets[m.selected], ids[m.selected])


def test_p_zero_and_one():
    ids = corpus(B=4)
    assert not bool(mask(ids, p=0.0).selected.any())
    assert torch.equal(mask(ids, p=1.0).selected, can_mask(ids, SPECIAL))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(p=1.5), "p .*\\[0, 1\\]"),
        (dict(p=-0.1), "p .*\\[0, 1\\]"),
        (dict(proportions=(0.8, 0.1, 0.2)), "proportions"),
        (dict(proportions=(0.9, 0.1)), "proportions"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mask(corpus(B=2), **kwargs)


def test_no_maskable_token_and_bad_types():
    only_special = torch.tensor([[CLS, SEP, PAD, PAD]])
    with pytest.raises(ValueError, match="no maskable token"):
        mask(only_special)
    with pytest.raises(TypeError, match="generator"):
        mlm_mask(
            corpus(B=2), special_ids=SPECIAL, mask_id=MASK, vocab_size=V, generator=0
        )
    with pytest.raises(TypeError, match="ids"):
        mask(corpus(B=2).float())
    with pytest.raises(ValueError, match="vocab_size"):
        mask(corpus(B=2) + V)
    with pytest.raises(TypeError, match="maskable"):
        select_tokens(corpus(B=2), generator=gen())
    with pytest.raises(TypeError, match="selected"):
        replace_selected(
            corpus(B=2),
            torch.ones(3, 3, dtype=torch.bool),
            mask_id=MASK,
            vocab_size=V,
            generator=gen(),
        )


def documents():
    return [[[10 + d * 10 + s] * (s + 1) for s in range(4)] for d in range(5)]


def test_nsp_pairs_half_random_and_true_next():
    docs = documents()
    pairs = nsp_pairs(docs, 2000, generator=gen())
    share = sum(p.is_random for p in pairs) / len(pairs)
    assert abs(share - 0.5) < 0.05
    where = {
        tuple(seg): (d, s) for d, doc in enumerate(docs) for s, seg in enumerate(doc)
    }
    for p in pairs:
        (da, sa), (db, sb) = where[tuple(p.a)], where[tuple(p.b)]
        if p.is_random:
            assert da != db
        else:
            assert (da, sa + 1) == (db, sb)
    again = nsp_pairs(docs, 2000, generator=gen())
    assert again == pairs


def test_pack_pairs_layout():
    batch = pack_pairs(
        [Pair([11, 12, 13], [21, 22], False), Pair([11], [21], True)],
        cls_id=CLS,
        sep_id=SEP,
        pad_id=PAD,
        max_len=16,
    )
    assert batch["ids"].tolist() == [
        [CLS, 11, 12, 13, SEP, 21, 22, SEP],
        [CLS, 11, SEP, 21, SEP, 0, 0, 0],
    ]
    assert batch["segments"].tolist() == [
        [0, 0, 0, 0, 0, 1, 1, 1],
        [0, 0, 0, 1, 1, 0, 0, 0],
    ]
    assert batch["valid"].sum(1).tolist() == [8, 5]
    assert batch["nsp_labels"].tolist() == [0, 1]
    cut = pack_pairs(
        [Pair(list(range(10, 30)), [40, 41], False)],
        cls_id=CLS,
        sep_id=SEP,
        pad_id=PAD,
        max_len=8,
    )
    # the longer segment is cut
    assert cut["ids"].tolist() == [[CLS, 10, 11, 12, SEP, 40, 41, SEP]]


def test_nsp_bad_inputs():
    with pytest.raises(ValueError, match="documents"):
        nsp_pairs([[[1], [2]]], 5, generator=gen())
    with pytest.raises(ValueError, match="p_random"):
        nsp_pairs(documents(), 5, generator=gen(), p_random=2)
    with pytest.raises(ValueError, match="max_len"):
        pack_pairs(
            [Pair([1], [2], False)], cls_id=CLS, sep_id=SEP, pad_id=PAD, max_len=3
        )


def test_numpy_numbers_are_numbers():
    """A share or a count computed with NumPy (np.float32(0.15), np.int64(3)) gives what
    the Python number gives; it was refused as out of range."""
    import numpy as np

    ids = corpus()
    a, b = mask(ids, p=np.float32(0.15)), mask(ids, p=0.15)
    assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
    docs = documents()
    assert nsp_pairs(docs, np.int64(5), p_random=np.float64(0.5), generator=gen()) == (
        nsp_pairs(docs, 5, p_random=0.5, generator=gen())
    )


@pytest.mark.parametrize("special", [None, "012", [0, 1.5], 3])
def test_special_ids_must_be_token_ids(special):
    with pytest.raises(TypeError, match="special_ids must be"):
        mlm_mask(corpus(B=2), special_ids=special, mask_id=MASK, vocab_size=V,
                 generator=gen())  # fmt: skip


@pytest.mark.parametrize("bad", [{"pad_id": None}, {"cls_id": "x"}, {"sep_id": -1}])
def test_pack_pairs_refuses_special_ids_that_are_not_token_ids(bad):
    """A pad_id of None or a cls_id of 'x' failed inside torch, far from the call."""
    ids = {"cls_id": CLS, "sep_id": SEP, "pad_id": PAD, **bad}
    with pytest.raises(ValueError, match=next(iter(bad))):
        pack_pairs([Pair([11], [21], False)], max_len=8, **ids)


def test_targets_are_int64_whatever_the_ids_type():
    """int32 ids gave int32 targets, which cross-entropy refuses; the mask is the same."""
    ids = corpus()
    narrow, wide = mask(ids.int()), mask(ids)
    assert narrow.targets.dtype == torch.int64
    assert torch.equal(narrow.targets, wide.targets)
    assert torch.equal(narrow.inputs.long(), wide.inputs)
