"""BERT: shapes of every head, the padding leak test, overfitting a batch, bad inputs."""

import pytest
import torch

from ptlm_lite import bert, heads
from ptlm_lite.bert import BertForPreTraining
from ptlm_lite.heads import (
    BertForMultipleChoice,
    BertForSequenceClassification,
    BertForSpanExtraction,
    best_span,
    mean_pool,
)
from ptlm_lite.config import preset
from ptlm_lite.corrupt import mlm_mask
from ptlm_lite.train import count_parameters, train


def config(**kw):
    return preset(
        "bert-tiny", vocab_size=120, d_model=32, n_head=4, d_ff=64, max_len=24, **kw
    )


def inputs(B=3, T=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(7, 120, (B, T), generator=g)
    ids[:, 0] = 2
    ids[1, 6:] = 0  # padding
    segments = torch.zeros_like(ids)
    segments[:, 4:] = 1
    segments[ids == 0] = 0
    return ids, segments


def test_paper_sizes():
    # 110M and 340M in the paper; the exact counts are the chapter's subject
    base = count_parameters(BertForPreTraining(preset("bert-base")).bert)
    assert 109e6 < base < 111e6


def test_pretraining_shapes_and_loss():
    torch.manual_seed(0)
    model = BertForPreTraining(config()).eval()
    ids, segments = inputs()
    targets = torch.full_like(ids, -100)
    targets[:, 2] = ids[:, 2]
    out = model(
        ids,
        segments,
        targets=targets,
        nsp_labels=torch.tensor([0, 1, 0]),
        return_attention=True,
    )
    # with targets: only the 3 masked positions are scored
    assert out.logits.shape == (3, 120)
    assert model(ids, segments).logits.shape == (3, 10, 120)
    assert out.extra["nsp_logits"].shape == (3, 2)
    assert torch.isclose(out.loss, out.extra["mlm_loss"] + out.extra["nsp_loss"])
    assert len(out.attentions) == 2 and out.attentions[0].shape == (3, 4, 10, 10)
    assert model.mlm.decoder.weight is model.bert.embed.tok.weight  # tied


def test_padding_never_leaks():
    """Change what sits in the padded positions: the real tokens' outputs must not move."""
    torch.manual_seed(0)
    model = BertForPreTraining(config()).eval()
    ids, segments = inputs()
    valid = ids != 0
    other = ids.clone()
    other[~valid] = torch.randint(7, 120, (int((~valid).sum()),))
    with torch.no_grad():
        a = model(ids, segments, valid)
        b = model(other, segments, valid)
    torch.testing.assert_close(a.logits[valid], b.logits[valid], atol=1e-6, rtol=0)
    torch.testing.assert_close(
        a.extra["nsp_logits"], b.extra["nsp_logits"], atol=1e-6, rtol=0
    )


def test_bidirectional():
    """Unlike GPT, an early token sees a later one."""
    torch.manual_seed(0)
    model = BertForPreTraining(config()).eval()
    ids, segments = inputs()
    later = ids.clone()
    later[0, 8] = 7 if ids[0, 8] != 7 else 8
    with torch.no_grad():
        assert not torch.allclose(
            model(ids, segments).logits[0, 1], model(later, segments).logits[0, 1]
        )


def test_fine_tuning_heads():
    torch.manual_seed(0)
    pre = BertForPreTraining(config())
    ids, segments = inputs()
    clf = BertForSequenceClassification.from_pretrained(pre, n_labels=3).eval()
    assert torch.equal(clf.bert.embed.tok.weight, pre.bert.embed.tok.weight)
    out = clf(ids, segments, labels=torch.tensor([0, 2, 1]))
    assert out.logits.shape == (3, 3) and out.loss.ndim == 0

    span = BertForSpanExtraction.from_pretrained(pre).eval()
    out = span(
        ids, segments, start=torch.tensor([4, 4, 5]), end=torch.tensor([5, 5, 7])
    )
    assert out.logits.shape == (3, 10, 2) and torch.isfinite(out.loss)
    # padding can't be an answer
    assert bool(torch.isinf(out.extra["start_logits"][1, 6:]).all())
    s, e = best_span(
        out.extra["start_logits"], out.extra["end_logits"], allowed=segments == 1
    )
    assert bool((s <= e).all()) and bool((segments.gather(1, s[:, None]) == 1).all())

    mc = BertForMultipleChoice.from_pretrained(pre).eval()
    ids4 = torch.stack([ids] * 4, 1)  # (B, C=4, T)
    out = mc(ids4, torch.stack([segments] * 4, 1), labels=torch.tensor([0, 3, 1]))
    assert out.logits.shape == (3, 4)


def test_best_span_and_mean_pool():
    start = torch.tensor([[-5.0, 5, 1, 0]])
    # the best end (0) comes before every good start
    end = torch.tensor([[9.0, 0, 1, 4]])
    assert [t.item() for t in best_span(start, end)] == [1, 3]
    h = torch.tensor([[[1.0], [3.0], [100.0]]])
    assert mean_pool(h, torch.tensor([[True, True, False]])).item() == 2.0


def test_overfit_one_batch():
    torch.manual_seed(0)
    model = BertForPreTraining(config(dropout=0.0))
    ids, segments = inputs(B=4, T=12)
    m = mlm_mask(
        ids,
        special_ids=[0, 1, 2, 3, 4],
        mask_id=4,
        vocab_size=120,
        p=0.3,
        generator=torch.Generator().manual_seed(0),
    )
    batch = {
        "ids": m.inputs,
        "segments": segments,
        "targets": m.targets,
        "nsp_labels": torch.tensor([0, 1, 1, 0]),
    }
    hist = train(model, [batch], steps=150, lr=3e-3, progress=False)
    assert hist.losses[-1] < 0.05 * hist.losses[0]


def test_bad_inputs():
    model = BertForPreTraining(config()).eval()
    ids, segments = inputs()
    with pytest.raises(ValueError, match="segments"):
        model(ids, segments + 1)
    with pytest.raises(ValueError, match="max_len"):
        model(torch.ones(1, 30, dtype=torch.long))
    with pytest.raises(TypeError, match="ids"):
        model(ids.float())
    with pytest.raises(ValueError, match="vocab_size"):
        model(ids + 200)
    with pytest.raises(TypeError, match="valid"):
        model(ids, segments, valid=(ids != 0).long())
    with pytest.raises(ValueError, match="n_segment"):
        BertForPreTraining(preset("tiny"))
    with pytest.raises(ValueError, match="\\(B, C, T\\)"):
        BertForMultipleChoice(config())(ids)


def test_fine_tuning_heads_live_in_heads_and_at_the_top():
    """The heads are ``ptlm_lite.heads`` (and ``P.<name>``); ``bert`` does not import
    them back (no import circle)."""
    import ptlm_lite as P

    for name in (
        "BertForSequenceClassification",
        "BertForSpanExtraction",
        "BertForMultipleChoice",
    ):
        assert getattr(P, name) is getattr(heads, name)
        assert not hasattr(bert, name)


def test_a_short_pretraining_run_is_the_kept_checkpoint_of_a_longer_one():
    """chapters/bert.ipynb §7a loads the main run's step-k checkpoint as seed 0 of its
    main ablation condition instead of training it again: that is only right if a run
    of k steps (warm-up, then a constant rate) is exactly a longer run's first k."""
    from ptlm_lite.recipes import bert as recipe

    def batches(step):
        ids, segments = inputs(B=4, seed=step)
        m = mlm_mask(ids, generator=torch.Generator().manual_seed(step), vocab_size=120,
                     special_ids=(0, 1, 2, 3), mask_id=4)  # fmt: skip
        return {"ids": m.inputs, "segments": segments, "valid": ids != 0,
                "targets": m.targets, "nsp_labels": torch.tensor([0, 1, 0, 1])}  # fmt: skip

    def run(steps, keep=(), warmup=2):
        model = BertForPreTraining(config(), seed=0)
        hist = recipe.pretrain(model, steps=steps, lr=5e-3, warmup=warmup,
                               batches=batches, keep=keep, progress=False)  # fmt: skip
        return model, hist

    # k after the warm-up, and k no longer than it (ELECTRA's ablation: 20 steps of a
    # run whose warm-up is 20): the short run must not squeeze the warm-up into itself
    for k, warmup in ((5, 2), (4, 4), (3, 4)):
        short, _ = run(k, warmup=warmup)
        _, long = run(9, keep=(k,), warmup=warmup)
        kept = long.checkpoints[k]
        assert all(torch.equal(v, kept[key]) for key, v in short.state_dict().items())


def test_token_documents_are_encoded_once_and_handed_out_as_fresh_copies():
    from ptlm_lite.recipes import bert as recipe

    tok = recipe.tokenizer()
    first = recipe.token_documents(tok, "shakespeare", "train", 5)
    assert len(first) == 5 and all(isinstance(s, list) for d in first for s in d)
    first[0][0].append(-1)  # a caller changes what it got
    first[0].clear()
    again = recipe.token_documents(tok, "shakespeare", "train", 5)
    assert again[0] and -1 not in again[0][0]
    assert again == recipe.token_documents(tok, "shakespeare", "train", 5)
    # the same encoding as the tokenizer's own, sentence by sentence
    from ptlm_lite.data import documents

    scene = documents("train", "sentence")[1]
    assert again[1] == [t for t in tok.encode_batch(scene) if t]
    world = recipe.token_documents(tok, "world", "validation", 0)
    assert world[0] == [t for t in tok.encode_batch(recipe.world_documents(1)[0]) if t]
