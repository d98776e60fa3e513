"""SpanBERT (ptlm_lite.spanbert, recipes.spanbert) and the span-QA additions to
ptlm_lite.suite and ptlm_lite.spans.

Span masking: the exact share of tokens, the span lengths measured against the
geometric distribution, spans of whole words inside one row, special tokens and
padding never selected, the input left alone, the same generator giving the same
corruption, 80/10/10 drawn once per span. The span boundary objective: its shapes, and
a leak test (it reads the hidden states at the two boundaries only). Chapter:
``chapters/spanbert.ipynb``.
"""

import math

import pytest
import torch

from ptlm_lite import bert, heads, spans, suite
from ptlm_lite import spanbert as S
from ptlm_lite.config import preset
from ptlm_lite.corrupt import MASKED, RANDOM, UNCHANGED, UNSELECTED

SPECIAL = tuple(
    range(7)
)  # as the book's WordPiece: [PAD] 0, [CLS] 2, [SEP] 3, [MASK] 4
PAD, CLS, SEP, MASK = 0, 2, 3, 4
V = 200
THEORY = float((S.span_length_probs() * torch.arange(1, 11)).sum())


def _vocab(seed=0):
    """``starts_word`` for a toy vocabulary: a third of the ordinary ids are ``##``
    continuations."""
    g = torch.Generator().manual_seed(seed)
    starts = torch.ones(V, dtype=torch.bool)
    starts[torch.randperm(V - 7, generator=g)[: (V - 7) // 3] + 7] = False
    return starts


def _rows(B, T, seed=0, min_len=8):
    """``[CLS] text [SEP] [PAD]...`` rows of random lengths and ordinary ids."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(7, V, (B, T), generator=g)
    for r in range(B):
        n = int(torch.randint(min_len, T + 1, (1,), generator=g))
        ids[r, 0], ids[r, n - 1] = CLS, SEP
        ids[r, n:] = PAD
    return ids


def _mask(ids, seed=0, **kw):
    return S.span_mask(
        ids,
        special_ids=SPECIAL,
        starts_word=_vocab(),
        mask_id=MASK,
        vocab_size=V,
        generator=torch.Generator().manual_seed(seed),
        **kw,
    )


def _runs(selected, word_start):
    """(row, start, stop, words) of every run of selected positions."""
    from ptlm_lite.recipes.spanbert import masked_spans

    return masked_spans(selected, word_start)


def test_masked_spans_by_hand():
    selected = torch.tensor(
        [[False, True, True, True, False, True], [True] * 3 + [False] * 3]
    )
    starts = torch.tensor(
        [[True, True, False, True, True, True], [True, True, True] + [True] * 3]
    )
    assert _runs(selected, starts) == [(0, 1, 4, 2), (0, 5, 6, 1), (1, 0, 3, 3)]


# --- the span length distribution


def test_span_length_distribution_is_the_truncated_geometric():
    probs = S.span_length_probs(0.2, 10)
    assert probs.shape == (10,) and math.isclose(float(probs.sum()), 1.0)
    # p(1-p)^(k-1), renormalised over 1..10: the paper's mean of 3.8 words
    assert math.isclose(float(probs[0]), 0.2 / (1 - 0.8**10), rel_tol=1e-9)
    assert torch.allclose(
        probs[1:] / probs[:-1], torch.full((9,), 0.8, dtype=probs.dtype)
    )
    assert round(THEORY, 1) == 3.8
    # clipping (folding lengths above 10 onto 10) would give 4.46 instead
    assert round(sum(0.8**k for k in range(10)), 2) == 4.46
    with pytest.raises(ValueError, match="p"):
        S.span_length_probs(0.0)
    with pytest.raises(ValueError, match="max_span"):
        S.span_length_probs(0.2, 0)


def test_drawn_span_lengths_match_the_theory():
    T = 512
    maskable = torch.ones(200, T, dtype=torch.bool)
    word_start = torch.ones(200, T, dtype=torch.bool)
    _, spans = S.select_spans(
        maskable,
        word_start,
        generator=torch.Generator().manual_seed(0),
        return_spans=True,
    )
    lengths = torch.tensor([n for row in spans for _, _, n in row])
    assert len(lengths) > 3000 and int(lengths.min()) == 1 and int(lengths.max()) == 10
    assert abs(float(lengths.float().mean()) - THEORY) < 0.1
    shares = torch.bincount(lengths - 1, minlength=10) / len(lengths)
    assert torch.allclose(shares, S.span_length_probs().float(), atol=0.015)


def test_masked_spans_measured_in_words_are_near_the_theory_in_long_rows():
    """In long rows the runs of hidden words average close to 3.8 words (spans that
    touch merge, the budget cuts the last one); in the chapter's short rows the budget
    cuts them much shorter."""
    g = torch.Generator().manual_seed(1)
    maskable = torch.ones(100, 512, dtype=torch.bool)
    word_start = torch.rand(100, 512, generator=g) < 0.6  # ~1.7 pieces per word
    word_start[:, 0] = True
    selected = S.select_spans(maskable, word_start, generator=g)
    words = [n for *_, n in _runs(selected, word_start)]
    assert abs(sum(words) / len(words) - THEORY) < 0.3
    short = S.select_spans(maskable[:, :48], word_start[:, :48], generator=g)
    words = [n for *_, n in _runs(short, word_start[:, :48])]
    assert sum(words) / len(words) < THEORY - 0.8


# --- span masking


def test_exact_masking_fraction_on_a_large_batch():
    ids = _rows(3000, 40)
    m = _mask(ids)
    n = (~torch.isin(ids, torch.tensor(SPECIAL))).sum(1)
    want = (n.double() * 0.15).round().long().clamp(min=1)
    assert torch.equal(m.selected.sum(1), want)  # every row, exactly
    assert abs(int(m.selected.sum()) / int(n.sum()) - 0.15) < 0.01
    ten = _mask(ids, p=0.1)
    assert torch.equal(
        ten.selected.sum(1), (n.double() * 0.1).round().long().clamp(min=1)
    )


def test_spans_are_whole_words_contiguous_and_within_one_row():
    ids = _rows(400, 48, seed=2)
    starts = S.word_starts(ids, _vocab(), SPECIAL)
    maskable = ~torch.isin(ids, torch.tensor(SPECIAL))
    g = torch.Generator().manual_seed(3)
    selected, spans = S.select_spans(maskable, starts, generator=g, return_spans=True)
    cut = torch.zeros(len(ids), dtype=torch.long)
    rebuilt = torch.zeros_like(selected)
    for r, row in enumerate(spans):
        for i, j, words in row:
            assert i < j and bool(maskable[r, i:j].all())  # contiguous, inside the text
            assert bool(starts[r, i])  # a span starts at a word's start
            assert 1 + int(starts[r, i + 1 : j].sum()) <= words  # at most `words` words
            ends_word = j == ids.shape[1] or not maskable[r, j] or bool(starts[r, j])
            cut[r] += not ends_word  # only the span that met the budget stops mid-word
            rebuilt[r, i:j] = True
    assert torch.equal(rebuilt, selected)
    assert int(cut.max()) <= 1
    for r, s, t, _ in _runs(selected, starts):
        assert ids[r, s - 1].item() not in (PAD,) and ids[r, t].item() != PAD
        assert bool(starts[r, s])


def test_special_tokens_and_padding_are_never_selected_nor_changed():
    ids = _rows(500, 30, seed=4)
    m = _mask(ids, seed=5)
    special = torch.isin(ids, torch.tensor(SPECIAL))
    assert not bool((m.selected & special).any())
    assert bool((m.action[special] == UNSELECTED).all())
    assert torch.equal(m.inputs[special], ids[special])
    assert bool((m.targets[~m.selected] == -100).all())
    assert torch.equal(m.targets[m.selected], ids[m.selected])
    random = m.action == RANDOM
    assert not bool(torch.isin(m.inputs[random], torch.tensor(SPECIAL)).any())


def test_input_is_never_modified_and_the_generator_decides():
    ids = _rows(64, 32, seed=6)
    before = ids.clone()
    a, b, c = _mask(ids, seed=7), _mask(ids, seed=7), _mask(ids, seed=8)
    assert torch.equal(ids, before)
    for field in ("inputs", "targets", "selected", "action"):
        assert torch.equal(getattr(a, field), getattr(b, field))
    assert not torch.equal(a.selected, c.selected)
    torch.manual_seed(0)
    state = torch.get_rng_state()
    _mask(ids, seed=9)
    assert torch.equal(torch.get_rng_state(), state)  # never the global generator


def test_80_10_10_is_drawn_once_per_span():
    ids = _rows(3000, 48, seed=10)
    m = _mask(ids, seed=11)
    actions = []
    for r, s, t, _ in _runs(m.selected, torch.ones_like(m.selected)):
        span = m.action[r, s:t]
        assert bool((span == span[0]).all()), "a span mixes [MASK], random and kept"
        actions.append(int(span[0]))
    shares = torch.bincount(torch.tensor(actions), minlength=4)[1:] / len(actions)
    assert torch.allclose(shares, torch.tensor([0.8, 0.1, 0.1]), atol=0.02)
    assert {MASKED, RANDOM, UNCHANGED} == set(actions)


def test_word_starts_follow_the_wordpiece_marks():
    starts_word = torch.ones(V, dtype=torch.bool)
    starts_word[[11, 12]] = False  # "##" pieces
    ids = torch.tensor([[CLS, 10, 11, 12, 13, SEP, 11, 10, SEP, PAD]])
    want = [[False, True, False, False, True, False, True, True, False, False]]
    assert S.word_starts(ids, starts_word, SPECIAL).tolist() == want


def test_bad_input_raises_a_clear_error():
    ids = _rows(4, 12)
    with pytest.raises(TypeError, match="generator"):
        S.span_mask(
            ids,
            special_ids=SPECIAL,
            starts_word=_vocab(),
            mask_id=MASK,
            vocab_size=V,
            generator=0,
        )
    with pytest.raises(ValueError, match="p "):
        _mask(ids, p=1.5)
    with pytest.raises(ValueError, match="no maskable token"):
        _mask(torch.full((2, 5), PAD))
    with pytest.raises(ValueError, match="vocab_size"):
        _mask(ids + V)
    maskable = torch.ones(2, 5, dtype=torch.bool)
    g = torch.Generator()
    with pytest.raises(ValueError, match="word_start"):
        S.select_spans(maskable, torch.ones(2, 6, dtype=torch.bool), generator=g)
    with pytest.raises(TypeError, match="maskable"):
        S.select_spans(maskable.long(), maskable, generator=g)
    with pytest.raises(ValueError, match="geometric_p|p"):
        S.select_spans(maskable, maskable, generator=g, geometric_p=1.5)


# --- the span boundary objective


def test_span_boundaries_by_hand():
    selected = torch.tensor(
        [[False, True, True, False, True, False, True, True, False]]
    )
    left, right, rel = S.span_boundaries(selected)
    assert left[selected].tolist() == [0, 0, 3, 5, 5]
    assert right[selected].tolist() == [3, 3, 5, 8, 8]
    assert rel[selected].tolist() == [0, 1, 0, 0, 1]
    with pytest.raises(ValueError, match="edge"):
        S.span_boundaries(torch.tensor([[True, False, False]]))
    with pytest.raises(ValueError, match="edge"):
        S.span_boundaries(torch.tensor([[False, False, True]]))


@pytest.fixture(scope="module")
def cfg():
    return preset("bert-tiny", vocab_size=V)


def test_sbo_shapes_and_the_loss_is_mlm_plus_sbo(cfg):
    model = S.SpanBertForPreTraining(cfg, seed=0).eval()
    ids = _rows(6, 20, seed=12)
    m = _mask(ids, seed=13)
    out = model(m.inputs, targets=m.targets)
    N = int(m.selected.sum())
    assert out.logits.shape == (N, V) and out.extra["sbo_logits"].shape == (N, V)
    hidden = out.last_hidden
    assert model.sbo.inputs(hidden, m.selected).shape == (N, 3 * cfg.d_model)
    assert torch.allclose(out.loss, out.extra["mlm_loss"] + out.extra["sbo_loss"])
    assert model.sbo.decoder.weight is model.bert.embed.tok.weight  # tied
    assert model(m.inputs).logits.shape == (6, 20, V)  # no targets: MLM logits only
    with pytest.raises(TypeError):
        model(m.inputs, targets=m.targets, nsp_labels=torch.zeros(6, dtype=torch.long))


def test_sbo_reads_only_the_boundary_states(cfg):
    """Leak test: changing the state of a token inside a span (or the token itself,
    hidden behind [MASK]) does not change the SBO's input; changing a boundary does."""
    head = S.SpanBertForPreTraining(cfg, seed=0).sbo.eval()
    selected = torch.zeros(2, 12, dtype=torch.bool)
    selected[0, 3:7] = True  # boundaries 2 and 7
    selected[1, 5:6] = True  # boundaries 4 and 6
    hidden = torch.randn(2, 12, cfg.d_model, generator=torch.Generator().manual_seed(0))
    x, y = head.inputs(hidden, selected), head(hidden, selected)
    inside = hidden.clone()
    inside[0, 3:7] += 5.0
    inside[1, 5] -= 5.0
    inside[0, 9:] += 1.0  # far away, outside every span
    assert torch.equal(head.inputs(inside, selected), x)
    assert torch.equal(head(inside, selected), y)
    edge = hidden.clone()
    edge[0, 7] += 1.0  # the right boundary of row 0's span
    changed = (head.inputs(edge, selected) != x).any(1)
    assert changed.tolist() == [True] * 4 + [False]  # row 0's four tokens only
    # the gradient reaches the boundary states and nothing else
    h = hidden.clone().requires_grad_()
    head(h, selected).sum().backward()
    touched = h.grad.abs().sum(-1) > 0
    assert touched.nonzero().tolist() == [[0, 2], [0, 7], [1, 4], [1, 6]]


def test_the_hidden_token_never_reaches_the_sbo(cfg):
    """Two texts that differ only inside a span masked with [MASK] give the model the
    same input, so the SBO's input is the same: the answer cannot leak."""
    model = S.SpanBertForPreTraining(cfg, seed=0).eval()
    ids = torch.tensor([[CLS, 10, 20, 30, 40, 50, 60, SEP]])
    other = ids.clone()
    other[0, 3] = 99  # inside the span below
    selected = torch.zeros_like(ids, dtype=torch.bool)
    selected[0, 2:5] = True
    g = torch.Generator().manual_seed(0)
    inputs = []
    for x in (ids, other):
        m = S.replace_spans(x, selected, mask_id=MASK, vocab_size=V, generator=g)
        while int(m.action[0, 2]) != MASKED:  # a span all [MASK]
            m = S.replace_spans(x, selected, mask_id=MASK, vocab_size=V, generator=g)
        inputs.append(m.inputs)
    assert torch.equal(inputs[0], inputs[1])
    with torch.no_grad():
        states = [model.bert(x).last_hidden for x in inputs]
    assert torch.equal(
        model.sbo.inputs(states[0], selected), model.sbo.inputs(states[1], selected)
    )


def test_spanbert_starts_from_berts_weights(cfg):
    a = S.SpanBertForPreTraining(cfg, seed=3)
    b = bert.BertForPreTraining(cfg, seed=3)
    sa, sb = a.state_dict(), b.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sb)  # same encoder, MLM (and NSP)
    assert set(sa) - set(sb) == {k for k in sa if k.startswith("sbo.")}


# --- the recipe


def test_segment_batches_are_single_segments():
    from ptlm_lite.recipes import bert as rb
    from ptlm_lite.recipes import spanbert as R

    tok = rb.tokenizer()
    table = R.starts_word_table(tok)
    assert table.shape == (tok.vocab_size,)
    assert not bool(table[tok.token_to_id("##ea")]) and bool(
        table[tok.token_to_id("a")]
    )
    batches = R.segment_batches(tok, corrupt=R.span_corruption(tok), max_len=32)
    b = batches(5)
    assert set(b) == {"ids", "segments", "valid", "targets"}
    assert b["ids"].shape == (24, 32) and not bool(b["segments"].any())
    sp = tok.special_ids
    clean = torch.where(b["targets"] != -100, b["targets"], b["ids"])
    assert bool((clean[:, 0] == sp["cls"]).all())
    assert bool(((clean == sp["sep"]).sum(1) == 1).all())  # one segment, no NSP pair
    assert all(torch.equal(b[k], batches(5)[k]) for k in b)  # a step never changes
    with pytest.raises(ValueError, match="corpora"):
        R.segment_batches(tok, corpora=("wiki",))
    with pytest.raises(ValueError, match="WordPiece"):
        R.starts_word_table(type("Tok", (), {"kind": "bpe"})())


# --- the span-QA task and its fine-tuning support


@pytest.fixture(scope="module")
def span_task():
    return suite.get("span_qa")


def test_span_qa_task(span_task):
    t = span_task
    assert t.kind == "span" and not t.needs_pretraining
    assert len(t.train) == 455 and len(t.test) == 195
    for e in t.train + t.test:
        a = e["answer_start"]
        assert e["context"][a : a + len(e["answer"])] == e["answer"]
        assert e["entity"] in e["question"] and t.labels[e["label"]] == e["relation"]
    assert not {e["entity"] for e in t.train} & {e["entity"] for e in t.test}
    assert t.balance() == dict.fromkeys(t.labels, 0.2)
    assert 0 < t.chance < t.majority < 0.1  # no constant answer is any good
    assert "span_qa" not in suite.TASKS and "span_qa" in suite.SPAN_TASKS
    assert "surface" in repr(t) and t.subset(20, 10).test == t.test[:10]
    with pytest.raises(TypeError, match="majority label"):
        t.majority_label
    with pytest.raises(ValueError, match="kind 'span'"):
        suite.SpanTask(**{**t.__dict__, "kind": "pair"})


def test_span_batch_points_at_the_answer(span_task):
    from ptlm_lite.recipes import bert as rb

    tok = rb.tokenizer()
    b = spans.span_batch(span_task, "test", tok)
    assert b["ids"].shape[1] <= 48 and len(b["start"]) == len(span_task.test)
    passage = spans.passage_mask(b)
    for i, e in enumerate(span_task.test[:40]):
        enc = tok.encode_with_offsets(e["context"])
        q = len(tok.encode(e["question"]))
        s, t = int(b["start"][i]) - q - 2, int(b["end"][i]) - q - 2
        assert enc.offsets[s][0] <= e["answer_start"] < enc.offsets[s][1]
        end = e["answer_start"] + len(e["answer"])
        assert enc.offsets[t][0] < end <= enc.offsets[t][1]
        assert passage[i].nonzero().flatten().tolist() == list(
            range(q + 2, q + 2 + len(enc.ids))
        )
    with pytest.raises(ValueError, match=r"examples\[0\].*does not fit"):
        spans.span_batch(span_task, span_task.test[:1], tok, max_len=12)
    with pytest.raises(ValueError, match="kind 'span'"):
        spans.span_batch(suite.get("relation_check"), "test", tok)


def test_span_scores():
    s = spans.span_scores(
        torch.tensor([3, 3, 4]),
        torch.tensor([4, 6, 4]),
        torch.tensor([3, 3, 7]),
        torch.tensor([4, 4, 8]),
    )
    # exact; predicted 3..6 vs gold 3..4 (p = 2/4, r = 1: F1 2/3); no overlap
    assert math.isclose(s["exact_match"], 1 / 3, rel_tol=1e-6)
    assert math.isclose(s["f1"], (1 + 2 / 3 + 0) / 3, rel_tol=1e-6)
    assert not s["constant"]
    same = spans.span_scores(
        torch.tensor([5, 7]),
        torch.tensor([6, 8]),
        torch.tensor([5, 5]),
        torch.tensor([5, 5]),
        offset=torch.tensor([2, 4]),
    )
    assert same["constant"]  # the same distance from each passage's start, same length


class _Fixed(torch.nn.Module):
    """A span "model" whose logits favour one place: the gold answers (an oracle) or a
    fixed distance from the passage start (a constant predictor)."""

    def __init__(self, batch, oracle):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.batch, self.oracle = batch, oracle

    def forward(self, ids, segments=None, valid=None, start=None, end=None):
        from ptlm_lite.output import Output

        logits = torch.zeros(*ids.shape, 2) + self.w
        r = torch.arange(len(ids))
        if self.oracle:  # look the rows up in the batch it was built with
            at = next(
                i
                for i in range(len(self.batch["ids"]) - len(ids) + 1)
                if torch.equal(self.batch["ids"][i : i + len(ids)], ids)
            )
            s, e = (self.batch[k][at : at + len(ids)] for k in ("start", "end"))
        else:  # the passage's second token, whatever the question
            batch = {"ids": ids, "segments": segments, "valid": valid}
            s = e = spans.passage_mask(batch).float().argmax(1) + 1
        logits[r, s, 0] = logits[r, e, 1] = 10.0
        loss = None if start is None else (self.w**2).sum() + 1.0
        extra = {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}
        return Output(logits, loss, None, extra)


def test_evaluate_and_run_spans_expose_a_constant_predictor(span_task):
    from ptlm_lite.recipes import bert as rb

    tok = rb.tokenizer()
    test = spans.span_batch(span_task, "test", tok)
    oracle = spans.evaluate_spans(_Fixed(test, True), test)
    assert oracle["exact_match"] == 1.0 and oracle["f1"] == 1.0
    constant = spans.evaluate_spans(_Fixed(test, False), test)
    assert constant["constant"] and constant["exact_match"] < 0.1
    small = span_task.subset(40, 30)
    table = spans.run_spans(
        small,
        {"constant": lambda seed: _Fixed(spans.span_batch(small, "test", tok), False)},
        tok,
        seeds=(0,),
        steps=1,
    )
    assert table.model.tolist()[0] == "constant" and bool(table.constant.iloc[0])
    assert table.model.iloc[1] == "chance" and table.model.iloc[2].startswith(
        "frequency guess"
    )
    assert table.exact_match.iloc[1] < 0.05 and table.attrs["task"] == "span_qa"


def test_a_real_span_model_fine_tunes(span_task, cfg):
    from ptlm_lite.recipes import bert as rb

    tok = rb.tokenizer()
    c = cfg.replace(vocab_size=tok.vocab_size)
    table = spans.run_spans(
        span_task,
        {"random init": lambda seed: heads.BertForSpanExtraction(c)},
        tok,
        seeds=(0,),
        steps=30,
        lr=3e-3,
    )
    row = table.iloc[0]
    guess = table.exact_match.iloc[2]
    assert not row.constant and row.exact_match > guess + 0.1


# --- the exercises: plausible wrong answers are rejected


def _clipped(p, max_span):  # the tail's mass folded onto max_span
    k = torch.arange(1, max_span + 1, dtype=torch.float64)
    w = p * (1 - p) ** (k - 1)
    w[-1] = (1 - p) ** (max_span - 1)
    return w


def _unnormalised(p, max_span):
    k = torch.arange(1, max_span + 1, dtype=torch.float64)
    return p * (1 - p) ** (k - 1)


def _swapped(p, max_span):  # success and failure swapped
    k = torch.arange(1, max_span + 1, dtype=torch.float64)
    w = (1 - p) * p ** (k - 1)
    return w / w.sum()


def _uniform(p, max_span):
    return torch.full((max_span,), 1 / max_span, dtype=torch.float64)


def _boundaries_inside(selected):  # the span's own first and last token
    left, right, rel = S.span_boundaries(selected)
    return (left + 1)[selected], (right - 1)[selected], rel[selected]


def _rel_from_one(selected):
    left, right, rel = S.span_boundaries(selected)
    return left[selected], right[selected], (rel + 1)[selected]


def _one_span_per_row(selected):  # ignores the gaps between spans
    B, T = selected.shape
    idx = torch.arange(T).expand(B, T)
    first = torch.where(selected, idx, T).min(1, keepdim=True).values.expand(B, T)
    last = torch.where(selected, idx, -1).max(1, keepdim=True).values.expand(B, T)
    return (first - 1)[selected], (last + 1)[selected], (idx - first)[selected]


WRONG_ANSWERS = {
    "span length distribution": [_clipped, _unnormalised, _swapped, _uniform],
    "span boundaries": [_boundaries_inside, _rel_from_one, _one_span_per_row],
}


def test_span_targets_are_int64_whatever_the_ids_type():
    """int32 ids gave int32 targets, which cross-entropy refuses."""
    ids = torch.tensor([[CLS, 10, 20, 30, 40, 50, 60, SEP]])
    selected = torch.zeros_like(ids, dtype=torch.bool)
    selected[0, 2:5] = True
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    wide = S.replace_spans(ids, selected, mask_id=MASK, vocab_size=V, generator=g())
    narrow = S.replace_spans(
        ids.int(), selected, mask_id=MASK, vocab_size=V, generator=g()
    )
    assert narrow.targets.dtype == torch.int64
    assert torch.equal(narrow.targets, wide.targets)
