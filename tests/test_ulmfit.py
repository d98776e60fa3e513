"""ULMFiT (chapters/ulmfit.ipynb): the LSTM LM, concat pooling, the slanted triangular
schedule, discriminative rates and gradual unfreezing through the trainer."""

import math

import pytest
import torch

import ptlm_lite as P
from ptlm_lite import ulmfit
from ptlm_lite.rnn import LSTMClassifier, LSTMConfig, LSTMLM, concat_pool

CFG = LSTMConfig(vocab_size=50, d_embed=8, d_hidden=12, n_layer=3, dropout=0.0)


def paper_stlr(t, T, cut_frac, ratio, lr_max=1.0):
    """Howard & Ruder (2018), eq. 3, written out independently."""
    cut = math.floor(T * cut_frac)
    p = t / cut if t < cut else 1 - (t - cut) / (cut * (1 / cut_frac - 1))
    return lr_max * (1 + p * (ratio - 1)) / ratio


@pytest.mark.parametrize("t", [0, 1, 5, 10, 11, 50, 99, 100])
def test_stlr_is_the_papers_formula(t):
    assert ulmfit.stlr(t, 100, 0.1, 32) == pytest.approx(paper_stlr(t, 100, 0.1, 32))


def test_stlr_shape_by_value():
    T, cut_frac, ratio = 1000, 0.1, 32
    assert ulmfit.stlr(0, T, cut_frac, ratio) == pytest.approx(1 / 32)
    assert ulmfit.stlr(100, T, cut_frac, ratio) == pytest.approx(1.0)  # the peak
    assert ulmfit.stlr(50, T, cut_frac, ratio) == pytest.approx((1 + 0.5 * 31) / 32)
    assert ulmfit.stlr(T, T, cut_frac, ratio) == pytest.approx(1 / 32)
    f = ulmfit.slanted_triangular(T, cut_frac, ratio)
    assert f(550) == pytest.approx(paper_stlr(550, T, cut_frac, ratio))


def test_discriminative_rates_divide_by_2_6_per_layer():
    lrs = ulmfit.discriminative_lrs(0.01, 5)
    assert lrs[-1] == 0.01
    for below, above in zip(lrs, lrs[1:]):
        assert above / below == pytest.approx(2.6)
    model = LSTMClassifier(CFG, 2)
    groups = ulmfit.param_groups(model, 0.01)
    assert len(groups) == CFG.n_layer + 2  # embedding, 3 LSTMs, head
    assert [g["lr"] for g in groups] == pytest.approx(
        [0.01 / 2.6**i for i in reversed(range(5))]
    )
    ids = {id(p) for g in groups for p in g["params"]}
    assert ids == {id(p) for p in model.parameters()}  # every parameter, once
    assert sum(len(g["params"]) for g in groups) == len(ids)


def test_the_optimizer_gets_the_discriminative_rates():
    model = LSTMClassifier(CFG, 2)
    seen = {}

    def record(optimizer, step, **_):
        seen[step] = sorted({g["lr"] for g in optimizer.param_groups})

    ids = torch.randint(0, 50, (4, 6))
    batch = {"ids": ids, "labels": torch.tensor([0, 1, 0, 1])}
    opts = ulmfit.train_options(model, 20, 0.01, unfreeze_every=None)
    P.train(model, [batch], steps=20, progress=False, on_step=record, **opts)
    # at step 2 the scheduler has moved to step 3's rate: stlr(3) x each group's peak
    want = sorted(0.01 / 2.6**i * ulmfit.stlr(3, 20) for i in range(5))
    assert seen[2] == pytest.approx(want)


def test_gradual_unfreezing_order_and_frozen_weights_stay():
    model = LSTMClassifier(CFG, 2)
    groups = ulmfit.layer_groups(model)
    hook = ulmfit.GradualUnfreezing(groups, every=3)
    assert [hook.unfrozen(s) for s in range(1, 17)] == [1] * 3 + [2] * 3 + [3] * 3 + [
        4
    ] * 3 + [5] * 4
    # building the hook froze everything but the head
    assert all(p.requires_grad for p in groups[-1])
    assert not any(p.requires_grad for g in groups[:-1] for p in g)

    snapshots = []

    def watch(step, **kw):
        hook(step=step, **kw)
        snapshots.append([[p.detach().clone() for p in g] for g in groups])

    ids = torch.randint(0, 50, (8, 7))
    batch = {"ids": ids, "labels": torch.arange(8) % 2}
    before = [[p.detach().clone() for p in g] for g in groups]
    P.train(model, [batch], steps=7, lr=0.01, progress=False, on_step=watch)

    def changed(a, b, i):
        return any(not torch.equal(x, y) for x, y in zip(a[i], b[i]))

    # steps 1-3: only the head (group 4) trains; steps 4-6: layer 3 too; 7: layer 2
    after3, after6, after7 = snapshots[2], snapshots[5], snapshots[6]
    assert changed(before, after3, 4)
    for i in range(4):
        assert not changed(before, after3, i), f"group {i} moved while frozen"
    assert changed(after3, after6, 3) and not changed(after3, after6, 2)
    assert changed(after6, after7, 2)
    assert not changed(before, after7, 0) and not changed(before, after7, 1)


def test_concat_pool_ignores_padding():
    torch.manual_seed(0)
    h = torch.randn(2, 5, 3)
    valid = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    out = concat_pool(h, valid)
    assert out.shape == (2, 9)
    assert torch.allclose(out[0, :3], h[0, 2])  # last real token, not the last slot
    assert torch.allclose(out[0, 3:6], h[0, :3].amax(0))
    assert torch.allclose(out[0, 6:], h[0, :3].mean(0))
    # changing the padded positions changes nothing
    h2 = h.clone()
    h2[0, 3:] = 100.0
    assert torch.equal(concat_pool(h2, valid)[0], out[0])
    assert torch.allclose(out[1], concat_pool(h[1:])[0])


def test_classifier_ignores_padding_and_lm_is_causal():
    model = LSTMClassifier(CFG, 2).eval()
    ids = torch.randint(1, 50, (1, 6))
    padded = torch.cat([ids, torch.zeros(1, 3, dtype=torch.long)], 1)
    valid = torch.arange(9)[None] < 6
    a = model(ids).logits
    b = model(padded, valid=valid).logits
    c = model(padded, last=torch.tensor([5])).logits
    assert torch.allclose(a, b, atol=1e-6) and torch.allclose(a, c, atol=1e-6)
    lm = LSTMLM(CFG, seed=0).eval()
    changed = ids.clone()
    changed[0, 4] = (ids[0, 4] + 1) % 50
    x, y = lm(ids).logits, lm(changed).logits
    assert torch.allclose(x[0, :4], y[0, :4]) and not torch.allclose(x[0, 4], y[0, 4])


def test_lm_output_and_hidden_states():
    lm = LSTMLM(CFG, seed=0)
    ids = torch.randint(0, 50, (2, 5))
    out = lm(ids, targets=ids, return_hidden=True)
    assert isinstance(out, P.Output) and out.logits.shape == (2, 5, 50)
    assert out.loss.ndim == 0
    assert [h.shape[-1] for h in out.hidden] == [8, 12, 12, 8]
    assert lm.decoder.weight is lm.embed.weight  # tied
    assert lm(ids).hidden is None


def test_choice_mode_scores_each_candidate():
    model = LSTMClassifier(CFG, 2, mode="choice").eval()
    ids = torch.randint(1, 50, (3, 2, 6))
    out = model(ids, last=torch.full((3, 2), 5), labels=torch.tensor([0, 1, 0]))
    assert out.logits.shape == (3, 2) and out.loss.ndim == 0
    swapped = model(ids.flip(1)).logits
    assert torch.allclose(swapped, out.logits.flip(1), atol=1e-6)


def test_lr_table_matches_the_schedule_and_unfreezing():
    table = ulmfit.lr_table(40, 0.01, 4, unfreeze_every=5)
    assert table.shape == (4, 40)
    assert table[3, 0] == pytest.approx(0.01 * ulmfit.stlr(1, 40))
    assert (table[:3, :5] == 0).all() and (table[2, 5:10] > 0).all()
    assert (table[:, 15:] > 0).all()
    assert table[2, 20] == pytest.approx(table[3, 20] / 2.6)


def test_lr_explorer_is_a_stepper():
    from ptlm_lite.viz.schedules import lr_explorer

    w = lr_explorer(20, 0.01, ["emb", "l1", "head"], (0.1, 0.3), (2.6,), 32, 4)
    assert "ptlm-stepper" in w._dom_classes
    pages = w.children[-1]
    assert len(pages.children) == 2
    assert pages.children[0].value != pages.children[1].value


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: ulmfit.stlr(1, 0), "total must be a positive integer"),
        (lambda: ulmfit.stlr(1, 10, cut_frac=1.5), "cut_frac must be in"),
        (lambda: ulmfit.stlr(1, 10, ratio=0.5), "ratio must be"),
        (lambda: ulmfit.discriminative_lrs(-1, 3), "lr must be"),
        (lambda: ulmfit.discriminative_lrs(0.1, 0), "n must be"),
        (lambda: ulmfit.discriminative_lrs(0.1, 3, factor=0.5), "factor must be"),
        (lambda: ulmfit.GradualUnfreezing([[]], 0), "every must be"),
        (lambda: ulmfit.train_options(LSTMLM(CFG), 0, 0.1), "steps must be"),
        (lambda: LSTMConfig(n_layer=0), "n_layer must be"),
        (lambda: LSTMConfig(dropout=1.0), "dropout must be"),
        (lambda: LSTMClassifier(CFG, 2, mode="pool"), "mode must be"),
        (lambda: LSTMClassifier(CFG, 1), "n_labels must be"),
        (lambda: LSTMLM(CFG)(torch.tensor([[0, 99]])), "ids must be in"),
        (lambda: LSTMLM(CFG)(torch.tensor([0, 1])), "ids must be a"),
        (
            lambda: concat_pool(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=bool)),
            "valid must mark",
        ),
        (lambda: concat_pool(torch.zeros(2, 3)), "hidden must be"),
    ],
)
def test_bad_input_names_the_argument(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_bad_types():
    with pytest.raises(TypeError, match="config must be an LSTMConfig"):
        LSTMLM(P.preset("tiny"))
    with pytest.raises(TypeError, match="source must be"):
        LSTMClassifier("lm")
    with pytest.raises(TypeError, match="model must be"):
        ulmfit.layer_groups(torch.nn.Linear(2, 2))


# --- the exercises: plausible wrong answers are rejected (tests/test_exercises.py)


def _stlr_no_floor(t, T, cut_frac, ratio):  # the peak wherever T * cut_frac lands
    cut = T * cut_frac
    p = t / cut if t < cut else max(0.0, 1 - (t - cut) / (cut * (1 / cut_frac - 1)))
    return (1 + p * (ratio - 1)) / ratio


def _stlr_no_ratio(t, T, cut_frac, ratio):  # falls to 0, not to 1/ratio
    cut = math.floor(T * cut_frac)
    return t / cut if t < cut else max(0.0, 1 - (t - cut) / (T - cut))


def _stlr_symmetric(t, T, cut_frac, ratio):  # a plain triangle peaking half-way
    cut = T // 2
    p = t / cut if t < cut else max(0.0, 1 - (t - cut) / (T - cut))
    return (1 + p * (ratio - 1)) / ratio


WRONG_ANSWERS = {
    "slanted triangular learning rate": [
        _stlr_no_floor,
        _stlr_no_ratio,
        _stlr_symmetric,
    ],
    "discriminative learning rates": [
        lambda lr, n: [lr / 2.6**i for i in range(n)],  # top to bottom: reversed
        lambda lr, n: [lr * 2.6 ** (i - n) for i in range(n)],  # the top divided too
        lambda lr, n: [lr / (2.6 * (n - 1 - i) or 1) for i in range(n)],  # linear
    ],
}


@pytest.mark.parametrize(
    "name, i", [(n, i) for n, fs in WRONG_ANSWERS.items() for i in range(len(fs))]
)
def test_wrong_answers_are_rejected(name, i):
    from ptlm_lite.exercises import WRONG, check

    r = check(name, WRONG_ANSWERS[name][i])
    assert r.status == WRONG, r.message


def test_conditions_start_each_seed_from_its_own_target_lm():
    # one stage-2 LM per seed: a verdict then counts the LM runs as well as the heads
    from ptlm_lite import suite
    from ptlm_lite.recipes import ulmfit as recipe
    from ptlm_lite.rnn import LSTMConfig, LSTMLM

    cfg = LSTMConfig(vocab_size=50, d_embed=8, d_hidden=12, n_layer=3, dropout=0.0)
    task = suite.get("slot_filler").subset(8, 4)
    lms = {s: LSTMLM(cfg, seed=s) for s in (3, 4)}
    make, _ = recipe.conditions(task, {"target": lms}, cfg, steps=2, lr=1e-2)
    for s, lm in lms.items():
        got = make["ULMFiT"](s).lm.state_dict()
        assert all(torch.equal(v, got[k]) for k, v in lm.state_dict().items())
    with pytest.raises(ValueError, match="no LM for seed 5"):
        make["ULMFiT"](5)
