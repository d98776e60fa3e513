"""The training loop: schedules, determinism, errors instead of NaN."""

import math

import pytest
import torch

import ptlm_lite as P
from ptlm_lite.train import adamw


def test_inverse_sqrt_is_the_papers_formula_rescaled():
    d, w = 512, 4000
    paper = lambda s: d**-0.5 * min(s**-0.5, s * w**-1.5)  # noqa: E731
    ours = P.lr_schedule("inverse_sqrt", warmup=w)
    for s in (1, 100, 4000, 10000, 100000):
        assert math.isclose(ours(s) * paper(w), paper(s), rel_tol=1e-9)


@pytest.mark.parametrize("name", ["constant", "linear", "cosine", "inverse_sqrt"])
def test_warmup_ramps(name):
    f = P.lr_schedule(name, warmup=10, total=100)
    assert f(1) == pytest.approx(0.1) and f(10) == pytest.approx(1.0)
    if name in ("linear", "cosine"):  # the last step still learns; 0 only after it
        assert f(100) > 0 and f(101) == pytest.approx(0.0, abs=1e-12)
        assert P.lr_schedule(name, warmup=0, total=1)(1) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, words",
    [
        (
            lambda: P.lr_schedule("constant", warmup=-5),
            "warmup must be an integer >= 0",
        ),
        (lambda: P.lr_schedule("cosine", warmup=10, total=5), "needs total"),
        (lambda: P.lr_schedule("triangle"), "unknown schedule"),
        (lambda: P.auto_device("tpu"), "prefer must be"),
    ],
)
def test_bad_schedule(call, words):
    with pytest.raises(ValueError, match=words):
        call()


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def forward(self, x, y):
        pred = self.lin(x)
        return P.Output(pred, ((pred - y) ** 2).mean())


def data(step):
    g = torch.Generator().manual_seed(step)
    x = torch.randn(16, 4, generator=g)
    return {"x": x, "y": x.sum(-1, keepdim=True)}


class Dropped(Tiny):  # its loss depends on the dropout draws: train() must seed them
    def forward(self, x, y):
        pred = self.lin(torch.nn.functional.dropout(x, 0.5, self.training))
        return P.Output(pred, ((pred - y) ** 2).mean())


def test_same_seed_same_numbers():
    runs = []
    for global_seed in (123, 456):
        P.set_seed(0)
        m = Tiny()
        # a different global state before train() must not matter: train() seeds
        torch.manual_seed(global_seed)
        runs.append(P.train(m, data, steps=30, lr=0.05, progress=False).losses)
    assert runs[0] == runs[1]
    assert runs[0][-1] < 0.1 * runs[0][0]
    dropped = []
    for global_seed, seed in ((123, 0), (456, 0), (123, 1)):
        P.set_seed(0)
        m = Dropped()
        torch.manual_seed(global_seed)
        dropped.append(P.train(m, data, steps=5, lr=0.05, seed=seed, progress=False))
    assert dropped[0].losses == dropped[1].losses  # the dropout masks are train()'s
    assert dropped[0].losses != dropped[2].losses  # and another seed draws others


def test_eval_hook_and_history():
    h = P.train(
        Tiny(),
        data,
        steps=20,
        lr=0.05,
        eval_fn=lambda m: {"w": float(m.lin.weight.sum())},
        eval_every=10,
        progress=False,
    )
    assert [s for s, _ in h.evals] == [10, 20]
    assert len(h.losses) == len(h.lrs) == 20


def test_numpy_counts_and_seeds_train_like_python_ints():
    """Counts computed with NumPy (np.int64) are counts: finetune passes them on."""
    import numpy as np

    runs = []
    for ints in (int, np.int64):
        P.set_seed(0)
        h = P.train(Dropped(), data, steps=ints(12), lr=0.05, warmup=ints(3),
                    seed=ints(1), eval_fn=lambda m: {}, eval_every=ints(6),
                    progress=False)  # fmt: skip
        runs.append(h)
    assert runs[0].losses == runs[1].losses and runs[0].lrs == runs[1].lrs
    assert [s for s, _ in runs[1].evals] == [6, 12]
    for bad, words in (
        (dict(steps=np.float64(3.0)), "steps must be an integer >= 1"),
        (dict(steps=True), "steps must be an integer >= 1"),
        (dict(eval_every=True, eval_fn=lambda m: {}), "eval_every must be"),
    ):
        with pytest.raises(ValueError, match=words):
            P.train(Tiny(), data, **{"steps": 2, **bad}, progress=False)
    with pytest.raises(TypeError, match="seed must be an int, got bool"):
        P.set_seed(True)


def test_final_loss_needs_a_window_and_losses():
    h = P.train(Tiny(), data, steps=4, lr=0.05, progress=False)
    assert h.final_loss(1) == h.losses[-1]
    assert h.final_loss(2) == pytest.approx(sum(h.losses[-2:]) / 2)
    for window in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="window must be an integer >= 1"):
            h.final_loss(window)
    with pytest.raises(ValueError, match="no loss recorded yet"):
        P.History().final_loss()


def test_nan_loss_is_an_error():
    with pytest.raises(FloatingPointError, match="lower lr"):
        P.train(
            Tiny(),
            lambda s: {"x": torch.full((2, 4), float("nan")), "y": torch.zeros(2, 1)},
            steps=3,
            progress=False,
        )


def test_iterable_batches_cycle_and_empty_is_error():
    batches = [data(0), data(1)]
    assert len(P.train(Tiny(), batches, steps=5, progress=False).losses) == 5
    with pytest.raises(ValueError, match="batches is empty"):
        P.train(Tiny(), [], steps=2, progress=False)


# --- the trainer's seams: parameter groups, on_step, unfreezing (issue 23)


def _tiny_regression():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1))
    batch = (torch.randn(16, 3), torch.randn(16, 1))

    def loss_fn(m, b):
        return ((m(b[0]) - b[1]) ** 2).mean()

    return model, [batch], loss_fn


def test_a_layer_unfrozen_during_training_trains():
    model, batches, loss_fn = _tiny_regression()
    first = model[0]
    first.requires_grad_(False)
    before = first.weight.detach().clone()
    seen = []

    def unfreeze(model, optimizer, step, loss, history):
        seen.append(step)
        if step == 3:
            model[0].requires_grad_(True)  # ULMFiT's gradual unfreezing

    P.train(model, batches, steps=6, loss_fn=loss_fn, on_step=unfreeze, progress=False)
    assert seen == [1, 2, 3, 4, 5, 6]
    assert not torch.equal(first.weight, before), "the unfrozen layer never trained"


def test_param_groups_have_their_own_learning_rate_and_schedule():
    model, batches, loss_fn = _tiny_regression()
    lrs = []

    def record(model, optimizer, step, loss, history):
        lrs.append([g["lr"] for g in optimizer.param_groups])

    P.train(
        model,
        batches,
        steps=4,
        lr=1e-2,
        loss_fn=loss_fn,
        param_groups=[
            {"params": model[0], "lr": 1e-3, "schedule": lambda step: 1.0 / step},
        ],
        on_step=record,
        progress=False,
    )
    # groups: model[0] (matrix, vector), then the rest at lr (matrix, vector)
    assert len(lrs[0]) == 4
    assert lrs[0][:2] == pytest.approx([1e-3 / 2] * 2)  # read after step 1: step 2's
    assert lrs[0][2:] == pytest.approx([1e-2] * 2)
    with pytest.raises(TypeError, match=r"param_groups\[0\] must be a dict"):
        P.train(model, batches, steps=1, loss_fn=loss_fn, param_groups=[model[0]])
    with pytest.raises(ValueError, match="unknown keys"):
        P.train(
            model,
            batches,
            steps=1,
            loss_fn=loss_fn,
            param_groups=[{"params": model[0], "rate": 1}],
        )


def test_a_generator_of_batches_is_cycled_like_a_list():
    """The docstring promises cycling; a generator can be read only once."""
    torch.manual_seed(0)
    data = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(3)]

    def loss_fn(model, batch):
        x, y = batch
        return ((model(x) - y) ** 2).mean()

    def run(batches):
        torch.manual_seed(1)
        model = torch.nn.Linear(3, 1)
        hist = P.train(model, batches, steps=7, loss_fn=loss_fn, progress=False)
        return hist.losses

    assert run(iter(data)) == run(data)
    assert run(b for b in data) == run(data)
    with pytest.raises(ValueError, match="batches is empty"):
        run(iter([]))


def test_adamw_takes_a_generator_of_parameters(monkeypatch):
    """Where the fused kernel fails, the fallback must still see every parameter."""
    real = torch.optim.AdamW

    def no_fused(params, fused=None, **kw):
        if fused:
            list(params)  # what a failing constructor does to a generator
            raise RuntimeError("no fused kernel here")
        return real(params, **kw)

    monkeypatch.setattr(torch.optim, "AdamW", no_fused)
    model = torch.nn.Linear(3, 2)
    opt = adamw((p for p in model.parameters()), lr=1e-3, device="cpu")
    assert sum(len(g["params"]) for g in opt.param_groups) == 2


@pytest.mark.parametrize("name", ["linear", "cosine"])
def test_decay_matches_hugging_face_after_the_warmup(name):
    """Past the warm-up, step k (ours, from 1) has Hugging Face's rate at step k - 1
    (theirs, from 0): the decay starts at the peak and the last step still learns."""
    transformers = pytest.importorskip("transformers")
    model = torch.nn.Linear(2, 2)
    make = {
        "linear": transformers.get_linear_schedule_with_warmup,
        "cosine": transformers.get_cosine_schedule_with_warmup,
    }[name]
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    theirs = make(opt, num_warmup_steps=5, num_training_steps=40).lr_lambdas[0]
    ours = P.lr_schedule(name, warmup=5, total=40)
    for k in range(6, 42):
        assert ours(k) == pytest.approx(theirs(k - 1), abs=1e-12), k
