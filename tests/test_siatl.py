"""SiATL (chapters/siatl.ipynb): the auxiliary LM weight's schedule by value, the
classifier's two losses, and sequential unfreezing through the trainer."""

import math

import pytest
import torch

import ptlm_lite as P
from ptlm_lite import siatl
from ptlm_lite.output import IGNORE
from ptlm_lite.rnn import LSTMConfig, LSTMLM
from ptlm_lite.siatl import SiATLClassifier

CFG = LSTMConfig(vocab_size=50, d_embed=8, d_hidden=12, n_layer=3, dropout=0.0)


def test_aux_weight_by_value():
    # 11 steps from 1.0 to 0.01: a factor 10 every 5 steps
    got = [siatl.aux_weight(s, 11, 1.0, 0.01) for s in range(1, 12)]
    want = [10 ** (-(s - 1) / 5) for s in range(1, 12)]
    assert got == pytest.approx(want)
    assert siatl.aux_weight(1, 11, 1.0, 0.01) == 1.0
    assert siatl.aux_weight(6, 11, 1.0, 0.01) == pytest.approx(0.1)
    assert siatl.aux_weight(11, 11, 1.0, 0.01) == pytest.approx(0.01)
    assert siatl.aux_weight(3, 5, 0.2, 0.1) == pytest.approx(0.2 * 0.5**0.5)
    assert siatl.aux_weight(1, 1, 0.5, 0.1) == 0.5  # one step: the start
    assert siatl.aux_weight(7, 9, 0.3, 0.3) == pytest.approx(0.3)  # constant
    assert siatl.aux_weight(4, 9, 0, 0) == 0.0  # no auxiliary loss
    # it decays: every step's weight is a constant ratio of the one before
    r = [got[i + 1] / got[i] for i in range(10)]
    assert r == pytest.approx([10 ** (-1 / 5)] * 10)


def test_unfrozen_groups_by_value():
    starts = (1, 4, 7)
    assert [siatl.unfrozen_groups(s, starts) for s in range(1, 10)] == [1] * 3 + [
        2
    ] * 3 + [3] * 3
    assert siatl.sequential_starts(30) == (1, 11, 21)
    assert siatl.sequential_starts(2) == (1, 2, 3)
    assert siatl.unfrozen_groups(100, (1,)) == 1


def test_groups_cover_every_parameter_once():
    model = SiATLClassifier(CFG, 2)
    groups = siatl.siatl_groups(model)
    assert len(groups) == len(siatl.GROUP_NAMES) == 3
    ids = [id(p) for g in groups for p in g]
    assert len(ids) == len(set(ids))
    assert set(ids) == {id(p) for p in model.parameters()}
    new = {id(p) for p in model.task_lstm.parameters()}
    new |= {id(p) for p in model.head.parameters()}
    assert {id(p) for p in groups[2]} == new  # the top group: the new layers only
    assert groups[0] == [model.lm.embed.weight]


def test_loss_is_task_plus_gamma_times_lm():
    torch.manual_seed(0)
    model = SiATLClassifier(CFG, 2, mode="choice").eval()
    ids = torch.randint(1, 50, (3, 2, 6))
    last = torch.tensor([[5, 3], [4, 5], [5, 5]])
    labels = torch.tensor([0, 1, 1])
    model.aux_weight = 0.0
    out0 = model(ids, last=last, labels=labels)
    model.aux_weight = 0.5
    out = model(ids, last=last, labels=labels)
    assert torch.allclose(out.logits, out0.logits)
    task, lm = out.extra["task_loss"], out.extra["lm_loss"]
    assert torch.allclose(out.loss, task + 0.5 * lm) and torch.allclose(out0.loss, task)
    # L_LM is the LM's own next-token loss on the right endings' sequences, up to last
    flat, want = ids.view(6, 6), []
    for b, c in enumerate(labels.tolist()):
        seq = ids[b, c, : last[b, c] + 1]
        want.append((seq[:-1], seq[1:]))
    logits = model.lm(flat).logits.view(3, 2, 6, -1)
    nll = torch.cat(
        [
            torch.nn.functional.cross_entropy(
                logits[b, c][: len(x)], y, reduction="none"
            )
            for (b, c), (x, y) in zip(enumerate(labels.tolist()), want)
        ]
    )
    assert torch.allclose(lm, nll.mean(), atol=1e-6)
    # the wrong endings do not count: changing one changes L_LM not at all
    changed = ids.clone()
    changed[0, 1, 2] = (ids[0, 1, 2] + 1) % 50
    assert torch.allclose(
        model(changed, last=last, labels=labels).extra["lm_loss"], lm, atol=1e-6
    )


def test_classify_mode_and_padding():
    model = SiATLClassifier(CFG, 3).eval()
    ids = torch.randint(1, 50, (1, 6))
    padded = torch.cat([ids, torch.zeros(1, 3, dtype=torch.long)], 1)
    a = model(ids).logits
    b = model(padded, valid=torch.arange(9)[None] < 6).logits
    assert a.shape == (1, 3) and torch.allclose(a, b, atol=1e-6)
    model.aux_weight = 1.0
    out = model(padded, valid=torch.arange(9)[None] < 6, labels=torch.tensor([2]))
    lm = model.lm(ids, targets=torch.cat([ids[:, 1:], torch.tensor([[IGNORE]])], 1))
    assert torch.allclose(out.extra["lm_loss"], lm.loss, atol=1e-6)


def test_sequential_unfreezing_trains_exactly_what_it_unfreezes():
    torch.manual_seed(0)
    model = SiATLClassifier(CFG, 2)
    groups = siatl.siatl_groups(model)
    hook = siatl.SiATLSchedule(model, 9, (1, 4, 7), start=1.0, end=0.01)
    assert model.aux_weight == 1.0
    assert all(p.requires_grad for p in groups[2])
    assert not any(p.requires_grad for g in groups[:2] for p in g)

    snaps, gammas = [], []

    def watch(step, **kw):
        gammas.append(model.aux_weight)  # the weight step `step` used
        hook(step=step, **kw)
        snaps.append([[p.detach().clone() for p in g] for g in groups])

    batch = {"ids": torch.randint(1, 50, (8, 7)), "labels": torch.arange(8) % 2}
    before = [[p.detach().clone() for p in g] for g in groups]
    P.train(model, [batch], steps=9, lr=0.01, progress=False, on_step=watch)
    assert gammas == pytest.approx(
        [siatl.aux_weight(s, 9, 1.0, 0.01) for s in range(1, 10)]
    )

    def moved(a, b, i):
        return any(not torch.equal(x, y) for x, y in zip(a[i], b[i]))

    s3, s6, s9 = snaps[2], snaps[5], snaps[8]
    # steps 1-3: the new layers only; 4-6: the pre-trained LSTMs too; 7-9: all
    assert moved(before, s3, 2)
    assert not moved(before, s3, 1) and not moved(before, s3, 0)
    assert moved(s3, s6, 1) and not moved(s3, s6, 0)
    assert moved(s6, s9, 0)


def test_train_options_switches():
    model = SiATLClassifier(CFG, 2)
    opts = siatl.train_options(model, 30, aux=False, sequential=True)
    assert model.aux_weight == 0.0
    assert opts["on_step"].starts == (1, 11, 21)
    assert not model.lm.embed.weight.requires_grad
    siatl.train_options(model, 30, aux=True, sequential=False, start=0.7, end=0.1)
    assert model.aux_weight == pytest.approx(0.7)
    assert all(p.requires_grad for p in model.parameters())


def test_schedule_table_matches_the_functions():
    gamma, trains = siatl.schedule_table(9, (1, 4, 7), 1.0, 0.01)
    assert gamma.shape == (9,) and trains.shape == (3, 9)
    assert gamma[5] == pytest.approx(siatl.aux_weight(6, 9, 1.0, 0.01))
    assert trains[2].all()  # the new layers: always
    assert trains[1].tolist() == [False] * 3 + [True] * 6
    assert trains[0].tolist() == [False] * 6 + [True] * 3


def test_siatl_explorer_is_a_stepper():
    from ptlm_lite.viz.siatl_views import siatl_explorer

    w = siatl_explorer(12, ((1.0, 0.1), (0.5, 0.5)))
    assert "ptlm-stepper" in w._dom_classes
    pages = w.children[-1]
    assert len(pages.children) == 2
    assert pages.children[0].value != pages.children[1].value


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: siatl.aux_weight(1, 0), "total must be a positive integer"),
        (lambda: siatl.aux_weight(0, 5), "step must be an integer in"),
        (lambda: siatl.aux_weight(6, 5), "step must be an integer in"),
        (lambda: siatl.aux_weight(1, 5, start=-1), "start must be a number"),
        (lambda: siatl.aux_weight(1, 5, end=True), "end must be a number"),
        (lambda: siatl.aux_weight(1, 5, 1.0, 0.0), "end must be > 0"),
        (lambda: siatl.aux_weight(1, 5, 0.0, 0.1), "end must be 0"),
        (lambda: siatl.unfrozen_groups(0, (1, 2)), "step must be"),
        (lambda: siatl.unfrozen_groups(1, (2, 3)), "starts must be increasing"),
        (lambda: siatl.unfrozen_groups(1, (1, 3, 3)), "starts must be increasing"),
        (lambda: siatl.unfrozen_groups(1, ()), "starts must be increasing"),
        (lambda: siatl.sequential_starts(0), "steps must be"),
        (
            lambda: siatl.SiATLSchedule(SiATLClassifier(CFG), 5, (1, 2)),
            "starts must give one step per group",
        ),
        (lambda: siatl.train_options(SiATLClassifier(CFG), 0), "steps must be"),
        (lambda: SiATLClassifier(CFG, mode="pool"), "mode must be"),
        (
            lambda: SiATLClassifier(CFG, mode="choice")(torch.zeros(2, 5, dtype=int)),
            "ids must be",
        ),
    ],
)
def test_bad_input_names_the_argument(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_bad_types():
    with pytest.raises(TypeError, match="model must be a SiATLClassifier"):
        siatl.siatl_groups(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="source must be"):
        SiATLClassifier("lm")
    with pytest.raises(TypeError, match="source must be"):
        SiATLClassifier(LSTMLM)


# --- the exercises: plausible wrong answers are rejected (tests/test_exercises.py)


def _linear_decay(step, total, start, end):  # a straight line, not an exponential
    return start + (end - start) * (step - 1) / max(1, total - 1)


def _off_by_one(step, total, start, end):  # counts from 0: ends one step too early
    return start * (end / start) ** (step / max(1, total - 1))


def _reaches_end_late(step, total, start, end):  # divides by total, not total - 1
    return start * math.exp((step - 1) / total * math.log(end / start))


WRONG_ANSWERS = {
    "auxiliary weight schedule": [_linear_decay, _off_by_one, _reaches_end_late],
    "sequential unfreezing": [
        lambda step, starts: sum(step > s for s in starts),  # one step late
        lambda step, starts: (
            len(starts) - sum(step >= s for s in starts) + 1
        ),  # reversed
        lambda step, starts: min(len(starts), step),  # one group per step
    ],
}


@pytest.mark.parametrize(
    "name, i", [(n, i) for n, fs in WRONG_ANSWERS.items() for i in range(len(fs))]
)
def test_wrong_answers_are_rejected(name, i):
    from ptlm_lite.exercises import WRONG, check

    r = check(name, WRONG_ANSWERS[name][i])
    assert r.status == WRONG, r.message


def test_recipe_conditions_and_the_lm_alone():
    from types import SimpleNamespace

    from ptlm_lite.recipes import siatl as recipe
    from ptlm_lite.rnn import LSTMClassifier

    task = SimpleNamespace(
        kind="choice",
        n_labels=2,
        test=[
            {"context": "a b", "endings": ["c", "d e"], "label": 0},
            {"context": "b", "endings": ["a", "c"], "label": 1},
        ],
    )
    lm = LSTMLM(CFG, seed=0)
    built = {}
    make, train_kw = recipe.conditions(task, {"target": lm}, CFG, 9, 0.01, built)
    assert list(make) == list(recipe.PLANS)
    models = {name: f(0) for name, f in make.items()}
    assert type(models["ULMFiT"]) is LSTMClassifier
    assert isinstance(models["SiATL"], SiATLClassifier)
    assert torch.equal(models["SiATL"].lm.embed.weight, lm.embed.weight)
    assert not torch.equal(models["from scratch"].lm.embed.weight, lm.embed.weight)
    train_kw("SiATL without LM loss", models["SiATL without LM loss"])
    assert models["SiATL without LM loss"].aux_weight == 0.0
    train_kw("SiATL", models["SiATL"])
    assert models["SiATL"].aux_weight == recipe.GAMMA["start"]
    assert set(built) == set(recipe.PLANS)
    with pytest.raises(ValueError, match="lms must hold"):
        recipe.conditions(task, {}, CFG, 9, 0.01)

    # the LM alone: the batched scorer agrees with one sequence at a time
    tok = SimpleNamespace(encode=lambda text: [ord(ch) % 50 for ch in text.strip()])
    got = recipe.lm_choice(lm, task, tok)
    lm.eval()
    want = []
    for e in task.test:
        ctx = tok.encode(" " + e["context"])
        scores = []
        for end in e["endings"]:
            ids = torch.tensor([ctx + tok.encode(" " + end)])
            logp = lm(ids[:, :-1]).logits[0].log_softmax(-1)
            t = torch.arange(len(ctx) - 1, ids.shape[1] - 1)
            scores.append(logp[t, ids[0, t + 1]].mean().item())
        want.append(int(max(range(2), key=scores.__getitem__) == e["label"]))
    assert got.tolist() == want
    with pytest.raises(ValueError, match="split must be"):
        recipe.lm_choice(lm, task, tok, split="dev")


def test_conditions_start_each_seed_from_its_own_lm():
    # one target LM per seed: a verdict then counts the LM runs as well as the heads
    from ptlm_lite import suite
    from ptlm_lite.recipes import siatl as recipe

    task = suite.get("slot_filler").subset(8, 4)
    lms = {s: LSTMLM(CFG, seed=s) for s in (3, 4)}
    make, _ = recipe.conditions(task, {"target": lms}, CFG, steps=2, lr=1e-2)
    for name in ("SiATL", "ULMFiT"):
        for s, lm in lms.items():
            got = make[name](s).lm.state_dict()
            assert all(torch.equal(v, got[k]) for k, v in lm.state_dict().items())
    with pytest.raises(ValueError, match="no LM for seed 5"):
        make["SiATL"](5)
