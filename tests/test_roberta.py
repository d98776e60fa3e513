"""RoBERTa: the network's differences from BERT (ptlm_lite.roberta) and the recipe's
data functions (ptlm_lite.recipes.roberta): static and dynamic masking, FULL-SENTENCES
and DOC-SENTENCES packing, segment pairs; the chapter's exercises."""

import copy
import dataclasses

import pytest
import torch

import ptlm_lite as P
from ptlm_lite import corrupt
from ptlm_lite import exercises as E
from ptlm_lite.recipes import roberta as R
from ptlm_lite.recipes.bert import mlm_corruption
from ptlm_lite.roberta import (
    Roberta,
    RobertaForMaskedLM,
    roberta_positions,
)

PAD, CLS, SEP, MASK, V = 0, 2, 3, 4, 200
SPECIAL = set(range(7))


def corruption(p=0.15, proportions=(0.8, 0.1, 0.1)):
    from types import SimpleNamespace

    # what mlm_corruption reads from a tokenizer
    tok = SimpleNamespace(
        all_special_ids=SPECIAL, special_ids={"mask": MASK}, vocab_size=V
    )
    return mlm_corruption(tok, p=p, proportions=proportions)


def dataset(n=64, T=20, seed=0):
    """n distinct rows [CLS] w... [SEP] [PAD]..., lengths 6 to T."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.full((n, T), PAD)
    valid = torch.zeros(n, T, dtype=torch.bool)
    for i in range(n):
        L = int(torch.randint(6, T + 1, (1,), generator=g))
        ids[i, :L] = torch.cat(
            [
                torch.tensor([CLS]),
                torch.randint(7, V, (L - 2,), generator=g),
                torch.tensor([SEP]),
            ]
        )
        valid[i, :L] = True
    return {"ids": ids, "valid": valid, "segments": torch.zeros_like(ids)}


def documents(seed=0, n_docs=12, max_sentences=6, max_words=9):
    g = torch.Generator().manual_seed(seed)

    def rand(lo, hi):
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    return [
        [
            [rand(7, V - 1) for _ in range(rand(1, max_words))]
            for _ in range(rand(1, max_sentences))
        ]
        for _ in range(n_docs)
    ]


def clean(batch):
    """The uncorrupted ids of a batch (targets where selected, ids elsewhere)."""
    return torch.where(batch["targets"] != -100, batch["targets"], batch["ids"])


# --- the network


def tiny(**kw):
    return P.preset("roberta-tiny", vocab_size=V, **kw)


def test_positions_start_after_the_pad_id_and_skip_padding():
    ids = torch.tensor([[5, 6, 7, 0, 0], [0, 0, 5, 6, 7], [5, 0, 6, 0, 7]])
    assert roberta_positions(ids, 0).tolist() == [
        [1, 2, 3, 0, 0],
        [0, 0, 1, 2, 3],
        [1, 0, 2, 0, 3],
    ]
    assert roberta_positions(torch.tensor([[0, 5, 1, 1]]), 1).tolist() == [[2, 3, 1, 1]]


def test_presets_have_robertas_sizes():
    base = P.preset("roberta-base")
    assert (base.vocab_size, base.max_len, base.pad_id, base.n_segment) == (
        50265,
        514,
        1,
        1,
    )
    assert base.ln_eps == 1e-5 and P.preset("roberta-tiny").max_len == 65
    with torch.device("meta"):  # Hugging Face's RobertaModel: 124,645,632
        assert P.count_parameters(Roberta(base)) == 124_645_632


def test_masked_lm_shapes_and_loss():
    m = RobertaForMaskedLM(tiny(), seed=0)
    d = dataset(4, 12)
    masked = corruption()(d["ids"], generator=torch.Generator().manual_seed(0))
    out = m(masked.inputs, valid=d["valid"])
    assert out.logits.shape == (4, 12, V) and out.loss is None
    out = m(masked.inputs, valid=d["valid"], targets=masked.targets)
    n = int((masked.targets != -100).sum())
    assert out.logits.shape == (n, V) and torch.isfinite(out.loss)
    assert m.mlm.decoder.weight is m.roberta.embed.tok.weight  # tied
    assert not hasattr(m, "nsp")


def test_segments_are_ignored():
    m = RobertaForMaskedLM(tiny(), seed=0).eval()
    d = dataset(3, 10)
    segs = torch.randint(
        0, 2, d["ids"].shape, generator=torch.Generator().manual_seed(1)
    )
    with torch.no_grad():
        a = m(d["ids"], valid=d["valid"]).logits
        b = m(d["ids"], segs, d["valid"]).logits
    assert torch.equal(a, b)


def test_left_padding_does_not_change_the_real_tokens():
    m = RobertaForMaskedLM(tiny(), seed=0).eval()
    row = torch.randint(7, V, (1, 8), generator=torch.Generator().manual_seed(2))
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), row], 1)
    with torch.no_grad():
        a = m(row).logits[0]
        b = m(padded).logits[0, 3:]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_bad_configs_and_inputs_raise():
    with pytest.raises(ValueError, match="n_segment=1"):
        Roberta(tiny(n_segment=2))
    m = RobertaForMaskedLM(tiny(), seed=0)
    with pytest.raises(ValueError, match="max_len=65"):
        m(torch.full((1, 65), 9))  # 65 tokens need positions up to 65
    m(torch.full((1, 64), 9))  # 64 fit
    with pytest.raises(ValueError, match="vocab_size"):
        m(torch.full((1, 4), V))


def test_same_seed_same_weights_with_or_without_nsp():
    a = RobertaForMaskedLM(tiny(), seed=3).state_dict()
    b = R.RobertaWithNSP(tiny(), seed=3).state_dict()
    assert set(b) - set(a) == {"nsp.weight", "nsp.bias"}
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_nsp_variant_adds_the_nsp_loss():
    m = R.RobertaWithNSP(tiny(), seed=0)
    d = dataset(4, 12)
    masked = corruption()(d["ids"], generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([0, 1, 1, 0])
    out = m(masked.inputs, valid=d["valid"], targets=masked.targets, nsp_labels=labels)
    torch.testing.assert_close(out.loss, out.extra["mlm_loss"] + out.extra["nsp_loss"])
    assert out.extra["nsp_logits"].shape == (4, 2)


def test_nsp_logits_from_the_encoder_alone_match_the_full_forward():
    # the chapter's NSP check runs the encoder and the NSP head only (no MLM head)
    m = R.RobertaWithNSP(tiny(), seed=0).eval()
    d = dataset(9, 14)
    with torch.no_grad():
        full = m(d["ids"], valid=d["valid"]).extra["nsp_logits"]
        _, pooled, _ = m.roberta(d["ids"], valid=d["valid"])
        torch.testing.assert_close(m.nsp(pooled), full, atol=1e-5, rtol=0)


# --- static and dynamic masking


def test_static_masks_exact_fraction_and_no_special_tokens():
    d = dataset(400, 40)
    before = d["ids"].clone()
    copies = R.static_masks(
        d["ids"], corruption(), copies=3, generator=torch.Generator().manual_seed(0)
    )
    assert torch.equal(d["ids"], before)  # input never modified
    assert len(copies) == 3
    maskable = corrupt.can_mask(d["ids"], SPECIAL)
    for m in copies:
        # exactly round(15% of the maskable tokens) per row, as Google's code
        want = (maskable.sum(1).double() * 0.15).round().long().clamp(min=1)
        assert torch.equal(m.selected.sum(1), want)
        assert not (m.selected & ~maskable).any()  # never [CLS], [SEP] or [PAD]
        assert not (m.selected & ~d["valid"]).any()
        n = int(m.selected.sum())
        for action, share in ((corrupt.MASKED, 0.8), (corrupt.RANDOM, 0.1)):
            assert abs(int((m.action == action).sum()) / n - share) < 0.02
    assert not torch.equal(copies[0].selected, copies[1].selected)  # each its own


def test_static_masks_same_generator_same_masks():
    d = dataset(50)

    def masks(seed):
        g = torch.Generator().manual_seed(seed)
        return R.static_masks(d["ids"], corruption(), copies=2, generator=g)

    a, b, c = masks(0), masks(0), masks(1)
    assert all(torch.equal(x.inputs, y.inputs) for x, y in zip(a, b))
    assert not torch.equal(a[0].inputs, c[0].inputs)


def _masks_by_row(stream, epoch):
    """{clean row: selected positions} for every row read in ``epoch``."""
    out = {}
    for k in range(stream.steps_per_epoch):
        b = stream(epoch * stream.steps_per_epoch + k + 1)
        for row, sel in zip(clean(b), b["targets"] != -100):
            out[tuple(row.tolist())] = sel
    return out


def test_static_masking_repeats_each_rows_mask_every_epoch():
    d = dataset(48)
    stream = R.epoch_batches(
        d, batch_size=16, corrupt=corruption(), masking="static", seed=0
    )
    epochs = [_masks_by_row(stream, e) for e in range(4)]
    assert len(epochs[0]) == 48  # every row once per epoch
    for e in epochs[1:]:
        assert e.keys() == epochs[0].keys()
        assert all(torch.equal(e[r], epochs[0][r]) for r in e)


def test_static_copies_cycle():
    d = dataset(32)
    stream = R.epoch_batches(
        d, batch_size=8, corrupt=corruption(), masking="static", copies=2, seed=0
    )
    e = [_masks_by_row(stream, i) for i in range(4)]
    same = lambda a, b: sum(torch.equal(a[r], b[r]) for r in a)
    assert same(e[0], e[2]) == same(e[1], e[3]) == 32  # copy 0, 1, 0, 1
    assert same(e[0], e[1]) < 32 // 2


def test_dynamic_masking_draws_a_new_mask_every_epoch():
    d = dataset(48)
    stream = R.epoch_batches(d, batch_size=16, corrupt=corruption(), seed=0)
    a, b = _masks_by_row(stream, 0), _masks_by_row(stream, 1)
    assert a.keys() == b.keys()
    assert sum(torch.equal(a[r], b[r]) for r in a) < 48 // 4


def test_epoch_batches_fields_fractions_and_determinism():
    d = dataset(300, 40)
    before = copy.deepcopy(d)
    for masking in ("static", "dynamic"):
        stream = R.epoch_batches(
            d, batch_size=300, corrupt=corruption(), masking=masking
        )
        b = stream(1)
        assert set(b) == {"ids", "valid", "segments", "targets"}
        assert torch.equal(b["valid"], b["ids"] != PAD)  # rows keep their padding
        sel = b["targets"] != -100
        maskable = corrupt.can_mask(clean(b), SPECIAL)
        want = (maskable.sum(1).double() * 0.15).round().long().clamp(min=1)
        assert torch.equal(sel.sum(1), want) and not (sel & ~maskable).any()
        again = R.epoch_batches(
            d, batch_size=300, corrupt=corruption(), masking=masking
        )
        assert all(torch.equal(b[k], again(1)[k]) for k in b)  # same seed, same batch
        other = R.epoch_batches(
            d, batch_size=300, corrupt=corruption(), masking=masking, seed=1
        )
        assert not torch.equal(b["ids"], other(1)["ids"])
    assert all(torch.equal(d[k], before[k]) for k in d)  # data never modified


def test_epoch_batches_bad_arguments():
    d = dataset(10)
    with pytest.raises(ValueError, match="masking"):
        R.epoch_batches(d, batch_size=2, corrupt=corruption(), masking="once")
    with pytest.raises(ValueError, match="batch_size"):
        R.epoch_batches(d, batch_size=11, corrupt=corruption())
    with pytest.raises(TypeError, match="data"):
        R.epoch_batches(d["ids"], batch_size=2, corrupt=corruption())
    with pytest.raises(ValueError, match="copies"):
        R.static_masks(d["ids"], corruption(), copies=0, generator=torch.Generator())
    with pytest.raises(TypeError, match="generator"):
        R.static_masks(d["ids"], corruption(), generator=0)
    with pytest.raises(ValueError, match="seed must be an integer >= 0, got 0.5"):
        R.epoch_batches(d, batch_size=2, corrupt=corruption(), seed=0.5)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got 0"):
        R.heldout_mlm(torch.nn.Linear(1, 1), d, corruption(), batch_size=0)
    with pytest.raises(TypeError, match="'ids' and 'valid'"):
        R.heldout_mlm(torch.nn.Linear(1, 1), {"ids": d["ids"]}, corruption())


# --- FULL-SENTENCES, DOC-SENTENCES and segment pairs


def _rows(packed):
    return [r[v].tolist() for r, v in zip(packed["ids"], packed["valid"])]


@pytest.mark.parametrize("cross", [True, False])
@pytest.mark.parametrize("max_len", [6, 12, 40])
def test_packing_uses_every_token_once_in_order(cross, max_len):
    docs = documents(0)
    before = copy.deepcopy(docs)
    packed = R.full_sentences(
        docs, max_len, cls_id=CLS, sep_id=SEP, pad_id=PAD, cross_documents=cross
    )
    assert docs == before  # input never modified
    rows = _rows(packed)
    assert all(len(r) <= max_len and r[0] == CLS and r[-1] == SEP for r in rows)
    assert torch.equal(packed["valid"], packed["ids"] != PAD)
    assert not packed["segments"].any()
    inner = [t for r in rows for t in r[1:-1] if t != SEP]
    assert inner == [t for d in docs for s in d for t in s]  # all tokens, in order
    # the extra [SEP]s: at most one per document boundary; none in DOC-SENTENCES
    n_sep = sum(r[1:-1].count(SEP) for r in rows)
    if not cross:
        assert n_sep == 0
    else:
        assert n_sep <= len(docs) - 1 and (n_sep > 0 or max_len < 12)


def test_sentences_are_never_split_unless_longer_than_a_row():
    docs = documents(1, max_words=9)
    rows = _rows(R.full_sentences(docs, 12, cls_id=CLS, sep_id=SEP, pad_id=PAD))
    bodies = [r[1:-1] for r in rows]
    for s in (s for d in docs for s in d):  # every sentence (<= 10 tokens) in one row
        assert any(
            b[i : i + len(s)] == s for b in bodies for i in range(len(b) - len(s) + 1)
        )


def test_doc_sentences_rows_stay_within_a_document():
    docs = [[[10 + d] * 3] * 2 for d in range(5)]  # document d: token 10 + d only
    rows = _rows(
        R.full_sentences(
            docs, 20, cls_id=CLS, sep_id=SEP, pad_id=PAD, cross_documents=False
        )
    )
    assert [len(set(r[1:-1])) for r in rows] == [1] * 5
    full = _rows(R.full_sentences(docs, 20, cls_id=CLS, sep_id=SEP, pad_id=PAD))
    assert full[0] == [CLS] + [10] * 6 + [SEP] + [11] * 6 + [SEP] + [12] * 3 + [SEP]


def test_packing_fills_rows_and_shuffles_with_a_generator():
    docs = documents(2, n_docs=40)
    a = R.full_sentences(docs, 24, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    doc = R.full_sentences(
        docs, 24, cls_id=CLS, sep_id=SEP, pad_id=PAD, cross_documents=False
    )
    # crossing documents wastes less of each row
    assert a["valid"].float().mean() > doc["valid"].float().mean()
    g = lambda s: torch.Generator().manual_seed(s)
    kw = {"cls_id": CLS, "sep_id": SEP, "pad_id": PAD}
    x = R.full_sentences(docs, 24, generator=g(0), **kw)
    y = R.full_sentences(docs, 24, generator=g(0), **kw)
    z = R.full_sentences(docs, 24, generator=g(1), **kw)
    assert torch.equal(x["ids"], y["ids"]) and not torch.equal(x["ids"], z["ids"])


def test_packing_bad_arguments():
    with pytest.raises(ValueError, match="max_len"):
        R.full_sentences(documents(), 2, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    with pytest.raises(ValueError, match="no token"):
        R.full_sentences([[[]], []], 8, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    with pytest.raises(TypeError, match="documents"):
        R.full_sentences("text", 8, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    with pytest.raises(TypeError, match="cross_documents must be True or False"):
        R.full_sentences(documents(), 8, cls_id=CLS, sep_id=SEP, pad_id=PAD,
                         cross_documents="no")  # fmt: skip


def _spans(docs):
    """{doc index: its tokens, flat} to find where a segment came from."""
    return {d: [t for s in doc for t in s] for d, doc in enumerate(docs)}


def _find(tokens, flat):
    return [
        i
        for i in range(len(flat) - len(tokens) + 1)
        if flat[i : i + len(tokens)] == tokens
    ]


def test_segment_pairs_real_and_random_continuations():
    docs = documents(3, n_docs=30, max_sentences=8)
    before = copy.deepcopy(docs)
    pairs = R.segment_pairs(docs, 4000, 24, generator=torch.Generator().manual_seed(0))
    assert docs == before
    assert abs(sum(p.is_random for p in pairs) / len(pairs) - 0.5) < 0.03
    flat = _spans(docs)
    for p in pairs[:300]:
        where = [(d, i) for d, f in flat.items() for i in _find(p.a, f)]
        assert where, "A is not a run of one document"
        if p.is_random:  # B: a run of another document
            assert any(_find(p.b, f) for d, f in flat.items() if d != where[0][0])
        else:  # B: what follows A in its document
            assert any(
                flat[d][i + len(p.a) : i + len(p.a) + len(p.b)] == p.b for d, i in where
            )


def test_segment_pairs_are_whole_sentences_and_deterministic():
    docs = documents(4, n_docs=20, max_sentences=8)
    sentences = {tuple(s) for d in docs for s in d}
    g = lambda s: torch.Generator().manual_seed(s)
    pairs = R.segment_pairs(docs, 200, 30, generator=g(0))
    # A starts at a sentence's start (a run of whole sentences)
    assert all(any(tuple(p.a[: len(s)]) == s for s in sentences) for p in pairs)
    again = R.segment_pairs(docs, 200, 30, generator=g(0))
    assert [(p.a, p.b, p.is_random) for p in pairs] == [
        (p.a, p.b, p.is_random) for p in again
    ]
    packed = corrupt.pack_pairs(pairs, cls_id=CLS, sep_id=SEP, pad_id=PAD, max_len=32)
    assert packed["ids"].shape[1] <= 32 and set(packed["nsp_labels"].tolist()) == {0, 1}


def test_segment_pairs_bad_arguments():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="p_random"):
        R.segment_pairs(documents(), 4, 20, generator=g, p_random=1.5)
    with pytest.raises(ValueError, match="two non-empty documents"):
        R.segment_pairs([[[5, 6], [7]]], 4, 20, generator=g)
    with pytest.raises(ValueError, match="n must"):
        R.segment_pairs(documents(), 0, 20, generator=g)
    with pytest.raises(TypeError, match="generator"):
        R.segment_pairs(documents(), 4, 20, generator=None)


# --- scoring


class _Oracle(torch.nn.Module):
    """Puts all its probability on a fixed answer: the true ids, or token 9."""

    def __init__(self, truth=None):
        super().__init__()
        self.truth = truth

    def forward(self, ids, valid=None):
        want = self.truth if self.truth is not None else torch.full_like(ids, 9)
        logits = torch.full((*ids.shape, V), -30.0)
        logits.scatter_(-1, want[..., None], 30.0)
        return P.Output(logits)


def test_heldout_mlm_scores_the_same_masked_positions():
    d = dataset(40, 16)
    perfect = R.heldout_mlm(_Oracle(d["ids"]), d, corruption(), batch_size=64)
    assert perfect["accuracy"] == 1.0 and perfect["loss"] < 1e-6
    constant = R.heldout_mlm(_Oracle(), d, corruption(), batch_size=7)
    assert constant["tokens"] == perfect["tokens"] and constant["accuracy"] < 0.05
    base = R.unigram_baseline(d["ids"], d, corruption(), special_ids=SPECIAL)
    assert base["tokens"] == perfect["tokens"] and base["loss"] > 4.0
    # per-row scores (a verdict's per-example input): one per row, their mean the score
    for score in (constant, base):
        assert score["row_loss"].shape == (len(d["ids"]),)
        assert abs(score["row_loss"].mean() - score["loss"]) < 1e-9
    assert abs(constant["row_accuracy"].mean() - constant["accuracy"]) < 1e-9


class _Copier(torch.nn.Module):
    """Reads no context: answers, at each position, the token it sees there."""

    def forward(self, ids, valid=None):
        logits = torch.full((*ids.shape, V), -30.0)
        return P.Output(logits.scatter_(-1, ids[..., None], 30.0))


def test_heldout_mlm_and_its_floor_count_the_mask_positions_only():
    """Of the chosen tokens 10% stay in the input unchanged: a model that copies its
    input would get those right without any context, and beat the unigram floor. The
    held-out scores count the positions that read [MASK] only, where it gets none."""
    d = dataset(40, 16)
    m = corruption()(d["ids"], generator=torch.Generator().manual_seed(0))
    at_mask = int((m.action == corrupt.MASKED).sum())
    assert 0 < at_mask < int(m.selected.sum())  # some chosen tokens are not [MASK]
    copier = R.heldout_mlm(_Copier(), d, corruption())
    assert copier["tokens"] == at_mask and copier["accuracy"] == 0.0
    base = R.unigram_baseline(d["ids"], d, corruption(), special_ids=SPECIAL)
    assert base["tokens"] == at_mask
    only_unchanged = corruption(proportions=(0.0, 0.0, 1.0))
    with pytest.raises(ValueError, match="masked no token"):
        R.heldout_mlm(_Copier(), d, only_unchanged)


class _Unselective(torch.nn.Module):
    """Wraps a model so that heldout_mlm takes its simple path: logits at every
    position, the masked ones selected afterwards."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, valid=None):
        return self.model(ids, valid=valid)


@pytest.mark.parametrize("nsp", [False, True])
def test_heldout_mlm_fast_path_gives_the_simple_paths_numbers(nsp):
    # a RobertaForMaskedLM is given the targets and scores the masked positions only
    d = dataset(40, 16)
    d["ids"][3, 10:] = PAD  # some padding
    d["valid"][3, 10:] = False
    model = (R.RobertaWithNSP if nsp else RobertaForMaskedLM)(tiny(), seed=1)
    fast = R.heldout_mlm(model, d, corruption(), seed=3, batch_size=7)
    simple = R.heldout_mlm(_Unselective(model), d, corruption(), seed=3, batch_size=7)
    assert fast["tokens"] == simple["tokens"] > 0
    for k in ("loss", "accuracy"):
        assert abs(fast[k] - simple[k]) < 1e-5
    for k in ("row_loss", "row_accuracy"):
        assert abs(fast[k] - simple[k]).max() < 1e-5


# --- the chapter's exercises: plausible wrong answers are rejected


def _positions_from_zero(ids, pad_id):
    real = (ids != pad_id).long()
    return (real.cumsum(1) - 1).clamp(min=0) * real + pad_id  # forgets the + 1


def _positions_sequential(ids, pad_id):
    T = ids.shape[1]
    return torch.arange(pad_id + 1, pad_id + 1 + T).expand_as(ids)  # counts padding


def _positions_pad_zero(ids, pad_id):
    real = (ids != pad_id).long()
    return real.cumsum(1) * real + pad_id * real  # padding at 0, not pad_id


def _positions_hardwired(ids, pad_id):
    real = (ids != 0).long()  # pad id 0 always
    return real.cumsum(1) * real


def _pack_no_doc_sep(documents, max_len, cls_id, sep_id):
    return E.solution("full-sentences packing")(
        [[s for d in documents for s in d]], max_len, cls_id, sep_id
    )


def _pack_split_sentences(documents, max_len, cls_id, sep_id):
    flat = []  # a plain token stream: sentences cut at row ends
    for d, doc in enumerate(documents):
        flat += ([sep_id] if d else []) + [t for s in doc for t in s]
    n = max_len - 2
    return [[cls_id] + flat[i : i + n] + [sep_id] for i in range(0, len(flat), n)]


def _pack_doc_sentences(documents, max_len, cls_id, sep_id):
    rows = []
    for doc in documents:
        rows += E.solution("full-sentences packing")([doc], max_len, cls_id, sep_id)
    return rows


def _pack_too_long(documents, max_len, cls_id, sep_id):
    return E.solution("full-sentences packing")(documents, max_len + 1, cls_id, sep_id)


WRONG_ANSWERS = {
    "RoBERTa positions": [
        _positions_from_zero,
        _positions_sequential,
        _positions_pad_zero,
        _positions_hardwired,
    ],
    "full-sentences packing": [
        _pack_no_doc_sep,
        _pack_split_sentences,
        _pack_doc_sentences,
        _pack_too_long,
    ],
}


def test_every_roberta_exercise_has_wrong_answers():
    E.load_all()
    assert set(WRONG_ANSWERS) == {
        n for n, e in E.EXERCISES.items() if e.chapter == "roberta"
    }


def test_nothing_masked_is_an_error_not_a_score():
    d = dataset(4, 16)

    def masks_nothing(ids, generator=None):
        m = corruption()(ids, generator=generator)
        return dataclasses.replace(m, targets=torch.full_like(ids, -100))

    with pytest.raises(ValueError, match="masked no token"):
        R.heldout_mlm(_Oracle(d["ids"]), d, masks_nothing)
    with pytest.raises(ValueError, match="nothing to score"):
        R.unigram_baseline(d["ids"], d, masks_nothing, special_ids=SPECIAL)


@pytest.mark.parametrize("warmup", [-0.1, 1.0, 10, True, "0.1"])
def test_pretrain_warmup_is_a_share(warmup):
    with pytest.raises(ValueError, match="warmup must be the share"):
        R.pretrain(torch.nn.Linear(2, 2), lambda step: {}, steps=10, warmup=warmup)


def test_pretrain_runs_a_single_step():
    model = R.RobertaForMaskedLM(P.preset("roberta-tiny", vocab_size=V))
    d = dataset(8, 16)
    m = corruption()(d["ids"], generator=torch.Generator().manual_seed(0))
    batch = {"ids": m.inputs, "targets": m.targets, "valid": d["valid"]}
    history = R.pretrain(model, lambda step: batch, steps=1, progress=False)
    assert len(history.losses) == 1


def test_unigram_baseline_smooths_over_the_vocabulary():
    """Add-one over every token a model can answer, not only the ids seen: more
    tokens share the smoothing mass, so the floor's loss can only go up."""
    d = dataset(8, 16)
    seen = R.unigram_baseline(d["ids"], d, corruption(), special_ids=SPECIAL)
    vocab = R.unigram_baseline(
        d["ids"], d, corruption(), special_ids=SPECIAL, vocab_size=V + 500
    )
    assert vocab["loss"] > seen["loss"] and vocab["tokens"] == seen["tokens"]
    for bad in (3, True, 2.5):
        with pytest.raises(ValueError, match="vocab_size must be an int"):
            R.unigram_baseline(d["ids"], d, corruption(), vocab_size=bad)


def test_packing_and_batching_refuse_what_would_pack_silently():
    """Float or negative token ids were packed (truncated) into the long tensor; n=True
    made one pair; batch_size=True one row; step 0 read the last epoch's batch."""
    docs = documents(0)
    kw = dict(cls_id=CLS, sep_id=SEP, pad_id=PAD)
    for bad in (1.5, -3, True, None):
        broken = [[list(s) for s in d] for d in docs]
        broken[1][0][0] = bad
        with pytest.raises((TypeError, ValueError), match="token ids"):
            R.full_sentences(broken, 12, **kw)
        with pytest.raises((TypeError, ValueError), match="token ids"):
            R.segment_pairs(broken, 2, 12, generator=torch.Generator())
    with pytest.raises(ValueError, match="pad_id"):
        R.full_sentences(docs, 12, cls_id=CLS, sep_id=SEP, pad_id=None)
    with pytest.raises(ValueError, match="n must"):
        R.segment_pairs(docs, True, 12, generator=torch.Generator())
    with pytest.raises(TypeError, match="p_random"):
        R.segment_pairs(docs, 2, 12, generator=torch.Generator(), p_random="0.5")
    d = dataset(48)
    with pytest.raises(ValueError, match="batch_size"):
        R.epoch_batches(d, batch_size=True, corrupt=corruption())
    stream = R.epoch_batches(d, batch_size=16, corrupt=corruption())
    with pytest.raises(ValueError, match="step"):
        stream(0)
    np = pytest.importorskip("numpy")  # NumPy counts are counts
    R.epoch_batches(d, batch_size=np.int64(16), corrupt=corruption())(1)
    R.full_sentences(docs, np.int64(12), **kw)
