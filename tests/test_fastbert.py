"""FastBERT: early exit in the one stack, the uncertainty, the distillation loss.

Each example stops at the first layer whose student is sure enough; the rest of the
batch goes on without it, and what an example gets must not depend on the others.
"""

import math

import pytest
import torch

from ptlm_lite import fastbert, flops, masks
from ptlm_lite.config import preset
from ptlm_lite.heads import BertForSequenceClassification
from ptlm_lite.stack import Stack


def cfg(**kw):
    return preset("bert-tiny", vocab_size=60, n_layer=3, dropout=0.0, **kw)


def model(seed=0, n_labels=3):
    teacher = BertForSequenceClassification(cfg(), n_labels=n_labels, seed=seed).eval()
    return fastbert.FastBert(teacher, seed=seed + 1).eval()


def batch(B=16, seed=0):
    """Rows of different lengths, padded (pad id 0)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 60, (B, 12), generator=g)
    lengths = torch.randint(4, 13, (B,), generator=g)
    valid = torch.arange(12)[None] < lengths[:, None]
    return ids.masked_fill(~valid, 0), valid


# ---------------------------------------------------------------------------------
# The hook in Stack.forward


@pytest.mark.parametrize("pre_norm", [False, True])
def test_stack_without_exit_rule_unchanged_and_a_rule_that_never_fires(pre_norm):
    torch.manual_seed(0)
    stack = Stack(cfg(pre_norm=pre_norm)).eval()
    x, (_, valid) = torch.randn(4, 12, 64), batch(4)
    mask = masks.padding_mask(valid)
    plain = stack(x, mask=mask, return_hidden=True)
    never = stack(x, mask=mask, exit_rule=lambda i, h, rows: torch.zeros_like(rows) > 0)
    torch.testing.assert_close(never.last_hidden, plain.last_hidden)
    assert never.extra["exit_layer"].tolist() == [3] * 4
    assert plain.extra == {}  # the default output is as before


@pytest.mark.parametrize("pre_norm", [False, True])
def test_stack_exit_keeps_each_example_states_at_its_layer(pre_norm):
    """Example b stops after layer b % 3 + 1: its states are that layer's output."""
    torch.manual_seed(0)
    stack = Stack(cfg(pre_norm=pre_norm)).eval()
    x, (_, valid) = torch.randn(6, 12, 64), batch(6)
    mask = masks.padding_mask(valid)
    hidden = stack(x, mask=mask, return_hidden=True).hidden  # inputs of each layer
    want = torch.arange(6) % 3 + 1
    seen = []

    def rule(layer, h, rows):
        seen.append((layer, rows.tolist()))
        return want[rows] == layer

    out = stack(x, mask=mask, exit_rule=rule)
    assert out.extra["exit_layer"].tolist() == want.tolist()
    # the rule sees only the examples still running, and never the last layer
    assert seen == [(1, [0, 1, 2, 3, 4, 5]), (2, [1, 2, 4, 5])]
    for b in range(6):
        k = int(want[b])
        # hidden[k] is layer k's output (hidden[-1] already has the final norm)
        expect = stack.norm(hidden[k][b]) if k < 3 else hidden[-1][b]
        torch.testing.assert_close(out.last_hidden[b], expect)


def test_stack_exit_rule_bad_input():
    stack = Stack(cfg()).eval()
    x = torch.randn(2, 5, 64)
    with pytest.raises(TypeError, match="exit_rule must be a callable"):
        stack(x, exit_rule=0.5)
    with pytest.raises(TypeError, match="exit_rule must return a bool tensor"):
        stack(x, exit_rule=lambda i, h, rows: torch.zeros(2))
    with pytest.raises(ValueError, match="return_hidden"):
        stack(x, exit_rule=lambda i, h, r: r > 0, return_hidden=True)


# ---------------------------------------------------------------------------------
# The uncertainty and the loss, by value


def test_normalized_entropy_by_value():
    u = fastbert.normalized_entropy(
        torch.tensor([[0.0, 0.0], [math.log(0.8), math.log(0.2)], [0.0, 1e4]])
    )
    h = -(0.8 * math.log(0.8) + 0.2 * math.log(0.2)) / math.log(2)
    torch.testing.assert_close(u, torch.tensor([1.0, h, 0.0]))
    # two of three classes equally likely, the third impossible: log 2 / log 3
    u3 = fastbert.normalized_entropy(torch.tensor([0.0, 0.0, -1e4]))
    assert abs(float(u3) - math.log(2) / math.log(3)) < 1e-6


def test_distill_loss_by_value():
    teacher = torch.tensor([[0.0, 0.0], [math.log(0.9), math.log(0.1)]])
    s1 = torch.tensor([[math.log(0.8), math.log(0.2)], [math.log(0.9), math.log(0.1)]])
    s2 = torch.tensor([[0.0, 0.0], [0.0, 0.0]])
    kl = lambda p, q: sum(a * math.log(a / b) for a, b in zip(p, q))  # noqa: E731
    want = (kl([0.5, 0.5], [0.8, 0.2]) + 0.0) / 2 + (
        0.0 + kl([0.9, 0.1], [0.5, 0.5])
    ) / 2
    got = fastbert.distill_loss(torch.stack([s1, s2]), teacher)
    assert abs(float(got) - want) < 1e-6
    assert abs(float(fastbert.distill_loss([s1, s2], teacher)) - want) < 1e-6
    # the teacher is a fixed target: no gradient reaches it
    t = teacher.clone().requires_grad_(True)
    s = s2.clone().requires_grad_(True)
    fastbert.distill_loss([s], t).backward()
    assert t.grad is None and s.grad.abs().sum() > 0


# ---------------------------------------------------------------------------------
# Adaptive inference


@torch.no_grad()
def test_speed_0_runs_every_layer_and_answers_with_the_teacher():
    m, (ids, valid) = model(), batch()
    out = m(ids, valid=valid, speed=0.0)
    assert out.extra["exit_layer"].tolist() == [3] * len(ids)
    torch.testing.assert_close(out.logits, m.teacher(ids, valid=valid).logits)
    torch.testing.assert_close(out.logits, m(ids, valid=valid).logits)


@torch.no_grad()
def test_speed_1_exits_at_layer_1_with_the_first_student():
    m, (ids, valid) = model(), batch()
    out = m(ids, valid=valid, speed=1.0)
    assert out.extra["exit_layer"].tolist() == [1] * len(ids)
    torch.testing.assert_close(out.logits, m(ids, valid=valid).extra["students"][0])


@torch.no_grad()
def test_mixed_exits_give_each_example_what_it_gets_alone():
    m, (ids, valid) = model(), batch(24)
    u = fastbert.normalized_entropy(m(ids, valid=valid).extra["students"])  # (2, B)
    speed = float(u[0].median())  # about half stop after layer 1
    out = m(ids, valid=valid, speed=speed)
    layers = out.extra["exit_layer"]
    assert len(set(layers.tolist())) >= 2, layers
    for b in range(len(ids)):
        n = int(valid[b].sum())  # alone: its own tokens, no padding at all
        alone = m(ids[b : b + 1, :n], speed=speed)
        assert int(alone.extra["exit_layer"]) == int(layers[b])
        torch.testing.assert_close(alone.logits[0], out.logits[b], atol=1e-5, rtol=0)


def test_distill_trains_the_students_only_on_the_cached_states():
    m, (ids, valid) = model(), batch(32)
    unlabelled = {"ids": ids, "valid": valid, "segments": torch.zeros_like(ids)}
    frozen = {k: v.clone() for k, v in m.teacher.state_dict().items()}
    with torch.no_grad():
        before = float(m(**unlabelled).loss)
    hist = fastbert.distill(m, unlabelled, 30, batch_size=16, lr=3e-3, progress=False)
    with torch.no_grad():
        after = float(m(**unlabelled).loss)
    assert after < before * 0.7, (before, after)
    assert len(hist.losses) == 30
    for k, v in m.teacher.state_dict().items():
        assert torch.equal(v, frozen[k]), k  # backbone and teacher untouched
    assert not m.teacher.training


def test_flops_spent_by_value():
    c = cfg()
    w = fastbert.classifier_weights(c, 3)
    assert w == 64 * 64 + 64 * 3
    got = fastbert.flops_spent(c, [10, 10, 4], [1, 3, 2], 3).tolist()
    block = flops.block_weights(c)
    for (t, k), g in zip([(10, 1), (10, 3), (4, 2)], got):
        # k blocks over t tokens, attention over t positions, k classifiers on [CLS]
        assert g == pytest.approx(2 * k * block * t + 4 * k * t * 64 * t + 2 * k * w)


def test_bad_input_errors():
    m, (ids, valid) = model(), batch(4)
    with pytest.raises(TypeError, match="logits must be a float tensor"):
        fastbert.normalized_entropy(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="N >= 2"):
        fastbert.normalized_entropy(torch.zeros(3, 1))
    with pytest.raises(ValueError, match="teacher_logits' shape"):
        fastbert.distill_loss(torch.zeros(2, 4, 3), torch.zeros(4, 2))
    with pytest.raises(ValueError, match=r"\(B, N\)"):
        fastbert.distill_loss(torch.zeros(2, 4, 3), torch.zeros(4))
    with pytest.raises(ValueError, match="student_logits is empty"):
        fastbert.distill_loss([], torch.zeros(4, 2))
    with pytest.raises(TypeError, match="BertForSequenceClassification"):
        fastbert.FastBert(m.teacher.bert)
    for speed in (1.5, -0.1, "fast", True):
        with pytest.raises(ValueError, match="speed must be a number in"):
            m(ids, valid=valid, speed=speed)
    with pytest.raises(ValueError, match="n_tokens and exit_layer"):
        fastbert.flops_spent(cfg(), [3, 4], [1], 3)


@torch.no_grad()
def test_planned_exits_are_the_exits_of_a_real_run():
    from ptlm_lite.recipes.fastbert import planned_exits

    m, (ids, valid) = model(), batch(24)
    b = {"ids": ids, "valid": valid, "segments": torch.zeros_like(ids)}
    speeds = [0.0, 0.5, 0.8, 0.9, 0.95, 1.0]
    planned = planned_exits(m, b, speeds)
    for s in speeds:
        ran = m(ids, valid=valid, speed=s).extra["exit_layer"]
        assert planned[s].tolist() == ran.tolist(), s


# ---------------------------------------------------------------------------------
# The exercises reject plausible wrong answers


def _entropy(logits):  # the entropy, not normalised
    logp = logits.log_softmax(-1)
    return -(logp.exp() * logp).sum(-1)


def _kl_reversed(student_logits, teacher_logits):  # KL(student || teacher)
    log_t = teacher_logits.log_softmax(-1)
    log_s = student_logits.log_softmax(-1)
    return (log_s.exp() * (log_s - log_t)).sum(-1).mean(1).sum()


def _kl_mean_over_students(student_logits, teacher_logits):  # mean, not sum
    log_t = teacher_logits.log_softmax(-1)
    log_s = student_logits.log_softmax(-1)
    return (log_t.exp() * (log_t - log_s)).sum(-1).mean()


def _cross_entropy(student_logits, teacher_logits):  # drops the teacher's entropy
    p_t = teacher_logits.softmax(-1)
    return -(p_t * student_logits.log_softmax(-1)).sum(-1).mean(1).sum()


WRONG_ANSWERS = {
    "normalized entropy": [
        _entropy,
        lambda logits: _entropy(logits) / math.log2(logits.shape[-1]),  # mixed bases
        lambda logits: 1 - logits.softmax(-1).max(-1).values,  # not an entropy
    ],
    "self-distillation loss": [
        _kl_reversed,
        _kl_mean_over_students,
        _cross_entropy,
    ],
}


@pytest.mark.parametrize(
    "name, i", [(n, i) for n, fs in WRONG_ANSWERS.items() for i in range(len(fs))]
)
def test_wrong_answers_are_rejected(name, i):
    from ptlm_lite.exercises import WRONG, check

    r = check(name, WRONG_ANSWERS[name][i])
    assert r.status == WRONG, r.message


def test_the_solutions_pass():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "solutions" / "fastbert.py"
    spec = importlib.util.spec_from_file_location("_fastbert_solutions", path)
    sol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sol)
    from ptlm_lite.exercises import check

    assert check("normalized entropy", sol.my_normalized_entropy)
    assert check("self-distillation loss", sol.my_distill_loss)
