"""Batching: packed blocks, sentence pairs with segments, boolean masks, DataLoader
collate.
"""

import functools

import pytest
import torch

from ptlm_lite.data import batching as bt
from ptlm_lite.data.tokenizer import train_tokenizer


def test_pack_blocks_shapes_and_order():
    blocks = bt.pack_blocks(list(range(23)), block_size=5)
    assert blocks.shape == (4, 5) and blocks.dtype == torch.long
    assert blocks[1].tolist() == [5, 6, 7, 8, 9]  # consecutive, tail of 3 dropped
    assert bt.pack_blocks(torch.arange(10), 2).shape == (5, 2)


@pytest.mark.parametrize(
    "ids, block_size, match",
    [
        (list(range(10)), 1, "block_size must be an integer >= 2"),
        (list(range(10)), 2.5, "block_size must be an integer >= 2"),
        ([1, 2], 4, "fewer than one block"),
        ([], 4, "fewer than one block"),
        ([[1, 2], [3, 4]], 2, "1-D"),
    ],
)
def test_pack_blocks_bad_input(ids, block_size, match):
    with pytest.raises(ValueError, match=match):
        bt.pack_blocks(ids, block_size)


def test_pad_sequences_mask_polarity():
    ids, valid = bt.pad_sequences([[5, 6, 7], [8]], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0]]
    assert valid.dtype == torch.bool
    # True = real token
    assert valid.tolist() == [[True, True, True], [True, False, False]]
    with pytest.raises(ValueError, match="seqs is empty"):
        bt.pad_sequences([])


def test_encode_pair_segments_and_truncation():
    ids, segments = bt.encode_pair(
        [10, 11, 12], [20, 21], cls_id=2, sep_id=3, max_len=16
    )
    assert ids == [2, 10, 11, 12, 3, 20, 21, 3]
    assert segments == [0, 0, 0, 0, 0, 1, 1, 1]
    ids, segments = bt.encode_pair(list(range(100, 120)), [20, 21], 2, 3, max_len=10)
    assert (
        len(ids) == len(segments) == 10
        and ids.count(3) == 2
        and segments[-3:] == [1, 1, 1]
    )


DOCS = [[f"doc{d} sentence {i}." for i in range(6)] for d in range(5)]


def test_nsp_and_sop_pairs_have_correct_labels():
    # Google's BERT and Hugging Face: 0 = IsNext
    assert (bt.IS_NEXT, bt.NOT_NEXT) == (0, 1)
    nsp = bt.sentence_pairs(DOCS, "nsp", seed=0)
    sop = bt.sentence_pairs(DOCS, "sop", seed=0)
    assert 0.3 < sum(l for *_, l in nsp) / len(nsp) < 0.7
    for a, b, label in nsp:
        same_doc = a.split()[0] == b.split()[0]
        follows = same_doc and int(b.split()[2][:-1]) == int(a.split()[2][:-1]) + 1
        assert follows == (label == bt.IS_NEXT)
        # negatives come from another document
        assert label == bt.IS_NEXT or not same_doc
    for a, b, label in sop:
        assert a.split()[0] == b.split()[0]  # SOP never changes topic
        step = int(b.split()[2][:-1]) - int(a.split()[2][:-1])
        assert step == {bt.IS_NEXT: 1, bt.NOT_NEXT: -1}[label]  # 1 = swapped
    assert bt.sentence_pairs(DOCS, "nsp", seed=0) == nsp  # seeded
    with pytest.raises(ValueError, match="task must be one of"):
        bt.sentence_pairs(DOCS, "mlm")


def test_nsp_polarity_agrees_with_corrupt():
    from ptlm_lite.corrupt import Pair

    assert Pair([1], [2], is_random=False).label == bt.IS_NEXT
    assert Pair([1], [2], is_random=True).label == bt.NOT_NEXT


def test_ignore_index_is_the_package_constant():
    import ptlm_lite.data

    assert ptlm_lite.data.IGNORE_INDEX == bt.IGNORE_INDEX == -100
    output = pytest.importorskip("ptlm_lite.output")
    assert output.IGNORE == ptlm_lite.data.IGNORE_INDEX


def test_collate_works_with_a_dataloader():
    tok = train_tokenizer("char", [s for d in DOCS for s in d], n_sentinels=0)
    examples = bt.make_pair_examples(DOCS, tok, "sop", max_len=24)
    assert set(examples[0]) == {"ids", "segments", "nsp_labels"}
    for ex in examples:
        ex["targets"] = ex["ids"][:3]  # a per-token field, padded with -100
    loader = torch.utils.data.DataLoader(
        examples,
        batch_size=4,
        collate_fn=functools.partial(bt.collate, pad_id=tok.pad_id),
    )
    batch = next(iter(loader))
    assert set(batch) == {"ids", "valid", "segments", "nsp_labels", "targets"}
    B, T = batch["ids"].shape
    assert B == 4 and batch["ids"].dtype == torch.long
    assert batch["segments"].shape == (B, T) and batch["segments"].dtype == torch.long
    assert batch["valid"].dtype == torch.bool and batch["valid"].shape == (B, T)
    assert batch["nsp_labels"].shape == (B,) and batch["nsp_labels"].dtype == torch.long
    assert set(batch["nsp_labels"].tolist()) <= {bt.IS_NEXT, bt.NOT_NEXT}
    assert (batch["ids"][~batch["valid"]] == tok.pad_id).all()
    assert (batch["ids"][:, 0] == tok.cls_id).all()
    assert batch["targets"].shape == (B, 3)  # padded to its own longest, not to T


def test_collate_pads_each_field_with_its_own_value():
    batch = bt.collate(
        [
            {
                "ids": [5, 6, 7],
                "targets": [1, 2, 3],
                "segments": [0, 1, 1],
                "labels": 2,
            },
            {"ids": [8], "targets": [4], "segments": [0], "labels": 0},
        ],
        pad_id=9,
    )
    assert batch["ids"].tolist() == [[5, 6, 7], [8, 9, 9]]
    assert batch["valid"].tolist() == [[True, True, True], [True, False, False]]
    assert batch["targets"].tolist() == [
        [1, 2, 3],
        [4, bt.IGNORE_INDEX, bt.IGNORE_INDEX],
    ]
    assert batch["segments"].tolist() == [[0, 1, 1], [0, 0, 0]]
    assert batch["labels"].tolist() == [2, 0]
    # Examples that bring their own boolean mask keep it (and its dtype); an empty
    # sequence does not turn ids into floats.
    batch = bt.collate(
        [{"ids": [], "valid": []}, {"ids": [3, 4], "valid": [True, False]}]
    )
    assert batch["ids"].dtype == torch.long and batch["valid"].dtype == torch.bool
    assert batch["valid"].tolist() == [[False, False], [True, False]]


@pytest.mark.parametrize(
    "batch, err, match",
    [
        ([], TypeError, "list of dicts"),
        ([[1, 2]], TypeError, "list of dicts"),
        ([{"input_ids": [1, 2]}], ValueError, "'input_ids' is called 'ids'"),
        (
            [{"ids": [1], "attention_mask": [1]}],
            ValueError,
            "'attention_mask' is called 'valid'",
        ),
        (
            [{"ids": [1], "segment_ids": [0]}],
            ValueError,
            "'segment_ids' is called 'segments'",
        ),
        (
            [{"ids": [1], "label": 1}],
            ValueError,
            "'label' is called 'labels .* or nsp_labels",
        ),
        (
            [{"ids": [1], "labels": [1]}],
            ValueError,
            "one label per sequence.*'targets'",
        ),
        (
            [{"ids": [1], "labels": 0}, {"ids": [2]}],
            ValueError,
            r"batch\[1\] has fields",
        ),
        ([{"ids": [[1, 2]]}], ValueError, "one 1-D sequence per example"),
    ],
)
def test_collate_bad_input(batch, err, match):
    with pytest.raises(err, match=match):
        bt.collate(batch)
