"""Batching: packed blocks, sentence pairs with segments, boolean masks, DataLoader collate."""
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


@pytest.mark.parametrize("ids, block_size, match", [
    (list(range(10)), 1, "block_size must be an integer >= 2"),
    (list(range(10)), 2.5, "block_size must be an integer >= 2"),
    ([1, 2], 4, "fewer than one block"),
    ([], 4, "fewer than one block"),
    ([[1, 2], [3, 4]], 2, "1-D"),
])
def test_pack_blocks_bad_input(ids, block_size, match):
    with pytest.raises(ValueError, match=match):
        bt.pack_blocks(ids, block_size)


def test_pad_sequences_mask_polarity():
    ids, mask = bt.pad_sequences([[5, 6, 7], [8]], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0]]
    assert mask.dtype == torch.bool
    assert mask.tolist() == [[True, True, True], [True, False, False]]  # True = real token
    with pytest.raises(ValueError, match="seqs is empty"):
        bt.pad_sequences([])


def test_encode_pair_segments_and_truncation():
    ids, seg = bt.encode_pair([10, 11, 12], [20, 21], cls_id=2, sep_id=3, max_len=16)
    assert ids == [2, 10, 11, 12, 3, 20, 21, 3]
    assert seg == [0, 0, 0, 0, 0, 1, 1, 1]
    ids, seg = bt.encode_pair(list(range(100, 120)), [20, 21], 2, 3, max_len=10)
    assert len(ids) == len(seg) == 10 and ids.count(3) == 2 and seg[-3:] == [1, 1, 1]


DOCS = [[f"doc{d} sentence {i}." for i in range(6)] for d in range(5)]


def test_nsp_and_sop_pairs_have_correct_labels():
    nsp = bt.sentence_pairs(DOCS, "nsp", seed=0)
    sop = bt.sentence_pairs(DOCS, "sop", seed=0)
    assert 0.3 < sum(l for *_, l in nsp) / len(nsp) < 0.7
    for a, b, label in nsp:
        same_doc = a.split()[0] == b.split()[0]
        follows = same_doc and int(b.split()[2][:-1]) == int(a.split()[2][:-1]) + 1
        assert follows == (label == 1) and (label == 1 or not same_doc)  # negatives: another doc
    for a, b, label in sop:
        assert a.split()[0] == b.split()[0]  # SOP never changes topic
        step = int(b.split()[2][:-1]) - int(a.split()[2][:-1])
        assert step == (1 if label == 1 else -1)
    assert bt.sentence_pairs(DOCS, "nsp", seed=0) == nsp  # seeded
    with pytest.raises(ValueError, match="task must be one of"):
        bt.sentence_pairs(DOCS, "mlm")


def test_collate_works_with_a_dataloader():
    tok = train_tokenizer("char", [s for d in DOCS for s in d], n_sentinels=0)
    examples = bt.make_pair_examples(DOCS, tok, "sop", max_len=24)
    for ex in examples:
        ex["labels"] = ex["input_ids"][:3]  # a per-token field padded with -100
    loader = torch.utils.data.DataLoader(examples, batch_size=4,
                                         collate_fn=functools.partial(bt.collate, pad_id=tok.pad_id))
    batch = next(iter(loader))
    B, T = batch["input_ids"].shape
    assert B == 4 and batch["segment_ids"].shape == (B, T)
    assert batch["attention_mask"].dtype == torch.bool and batch["attention_mask"].shape == (B, T)
    assert batch["label"].shape == (B,)
    assert (batch["input_ids"][~batch["attention_mask"]] == tok.pad_id).all()
    assert (batch["input_ids"][:, 0] == tok.cls_id).all()
    assert (batch["labels"][:, 3:] == bt.IGNORE_INDEX).all()
    with pytest.raises(TypeError, match="list of dicts"):
        bt.collate([])
