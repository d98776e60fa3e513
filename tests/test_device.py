"""One device, by default, everywhere (issue 24): every function that trains or scores
models defaults to ``auto_device()`` (a GPU if there is one; ``PTLM_DEVICE``
overrides), and no chapter passes ``device=`` to get it. On the CPU, where CI runs,
the precision switch leaves training bit for bit as it was."""

from __future__ import annotations

import inspect
import json
import pathlib
import re

import pytest
import torch

import ptlm_lite as P
from ptlm_lite import finetune, spans
from ptlm_lite.train import auto_device, autocast_dtype, train

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))

# every public function that trains or scores a model and takes a device
TRAINERS = [train, finetune.run, finetune.seed_runs, spans.run_spans]


@pytest.mark.parametrize("fn", TRAINERS, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_device_defaults_to_auto(fn):
    params = inspect.signature(fn).parameters
    assert "device" in params, f"{fn.__name__} takes no device"
    if params["device"].default is not inspect.Parameter.empty:
        assert params["device"].default is None, (
            f"{fn.__name__}: device must default to None (= auto_device())"
        )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_chapter_passes_a_device(path):
    nb = json.loads(path.read_text())
    code = "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
    )
    found = [
        code[max(0, m.start() - 60) : m.end() + 20]
        for m in re.finditer(r"[(,]\s*device\s*=(?!\s*\{)", code)  # not f"{x=}"
    ]
    assert not found, (
        f"{path.name} passes device= (the package picks the GPU by itself): {found}"
    )


def test_ptlm_device_overrides(monkeypatch):
    monkeypatch.setenv("PTLM_DEVICE", "cpu")
    assert auto_device() == torch.device("cpu")
    monkeypatch.setenv("PTLM_DEVICE", "tpu")
    with pytest.raises(ValueError, match="PTLM_DEVICE"):
        auto_device()
    monkeypatch.delenv("PTLM_DEVICE")
    with pytest.raises(ValueError, match="prefer"):
        auto_device("gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA"):
            auto_device("cuda")


def test_precision_is_fp32_on_the_cpu(monkeypatch):
    assert autocast_dtype("cpu") is None
    assert autocast_dtype("cpu", params=10**9) is None
    assert autocast_dtype("cpu", "fp32") is None
    with pytest.raises(ValueError, match="precision"):
        autocast_dtype("cpu", "fp16")
    monkeypatch.setenv("PTLM_PRECISION", "half")
    with pytest.raises(ValueError, match="precision"):
        autocast_dtype("cpu")


def _tiny_run(**kw):
    model = P.GPT(P.preset("gpt-tiny", vocab_size=20, max_len=8), seed=0)
    g = torch.Generator().manual_seed(0)
    data = [{"ids": torch.randint(20, (4, 8), generator=g)} for _ in range(3)]
    for b in data:
        b["targets"] = b["ids"]
    hist = train(model, data, steps=6, lr=1e-3, progress=False, **kw)
    return model, hist


@pytest.mark.skipif(torch.cuda.is_available(), reason="the default is the GPU here")
def test_training_on_the_cpu_is_unchanged_by_the_switches():
    """auto (the default), an explicit fp32 and the CPU named: the same losses and
    weights, bit for bit."""
    m1, h1 = _tiny_run()
    m2, h2 = _tiny_run(precision="fp32", device="cpu")
    assert h1.losses == h2.losses and len(h1.losses) == 6
    assert h1.grad_norms == h2.grad_norms
    for a, b in zip(m1.state_dict().values(), m2.state_dict().values()):
        assert torch.equal(a, b)


def test_train_hands_the_model_back_where_it_was():
    model, _ = _tiny_run()
    assert next(model.parameters()).device == torch.device("cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_training_runs_there_and_the_model_comes_back():
    seen = []
    model = P.GPT(P.preset("gpt-tiny", vocab_size=20, max_len=8), seed=0)
    data = [{"ids": torch.randint(20, (4, 8))}]
    data[0]["targets"] = data[0]["ids"]
    train(
        model,
        data,
        steps=3,
        progress=False,
        on_step=lambda model, **_: seen.append(next(model.parameters()).device.type),
    )
    assert seen == ["cuda"] * 3
    assert next(model.parameters()).device.type == "cpu"


@pytest.mark.skipif(
    not (torch.cuda.is_available() and torch.cuda.is_bf16_supported()),
    reason="needs a CUDA GPU with bf16",
)
def test_auto_precision_on_a_gpu_follows_the_model_size():
    from ptlm_lite.device import BF16_MIN_PARAMS

    assert autocast_dtype("cuda", params=BF16_MIN_PARAMS - 1) is None
    assert autocast_dtype("cuda", params=BF16_MIN_PARAMS) is torch.bfloat16
    assert autocast_dtype("cuda", "fp32", params=10**9) is None
    assert autocast_dtype("cuda", "bf16", params=10) is torch.bfloat16


def test_scores_on_device_hands_results_and_model_back_on_the_cpu():
    from ptlm_lite.device import on_device, scores_on_device

    seen = []

    @scores_on_device
    def score(model, x):
        seen.append(next(model.parameters()).device)
        return {"y": model(x.to(seen[-1]))}

    model = torch.nn.Linear(3, 2)
    out = score(model, torch.ones(4, 3))
    assert seen == [auto_device()]
    assert out["y"].device.type == "cpu" and out["y"].shape == (4, 2)
    assert next(model.parameters()).device.type == "cpu"
    with on_device(model) as dev:
        assert (
            next(model.parameters()).device == torch.device(dev) or dev.type == "cuda"
        )
    assert next(model.parameters()).device.type == "cpu"
    with pytest.raises(TypeError, match="model"):
        scores_on_device(lambda net: net)


def test_eval_mode_restores_the_mode_even_when_the_block_raises():
    from ptlm_lite.device import eval_mode

    model = torch.nn.Dropout(0.5).train()
    with pytest.raises(ZeroDivisionError):
        with eval_mode(model):
            assert not model.training
            1 / 0
    assert model.training
    with eval_mode(model.eval()):
        pass
    assert not model.training


# the package's scorers: each runs with its model on auto_device() (the GPU if there is
# one) and takes its inputs there. The seq2seq decoders and UniLM's two measures ran on
# the CPU in an H200 run of the chapters at small (2026-11-27): UniLM's scoring had not
# finished 95 s after its training. A scorer is a public function of the package with
# an argument named ``model`` that runs under ``torch.no_grad()``; those that stay where
# they are called, and why:
NOT_SCORERS = {
    # primitives called by the scorers, with their inputs already on the model's device
    "generate.generate": "a primitive: its callers pass ids on the model's device",
    "seq2seq.greedy": "a primitive of the seq2seq scorers (recipes.*.summarise)",
    "seq2seq.beam_search": "a primitive of the seq2seq scorers",
    # measured where the chapter runs it, on purpose
    "recipes.fastbert.wall_clock": "times the model where it is: a CPU latency",
    # the shipped models: loaded on the CPU for the interactive cells of BERT's chapter
    "shipped.heldout_loss": "the shipped models run on the CPU",
    "shipped.fill": "the shipped models run on the CPU",
}


def _no_grad_functions_with_a_model() -> dict:
    import importlib
    import pkgutil

    found = {}
    for info in pkgutil.walk_packages(P.__path__, "ptlm_lite."):
        module = importlib.import_module(info.name)
        for name, f in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(inspect.unwrap(f)):
                continue
            plain = inspect.unwrap(f)
            if plain.__module__ != info.name:
                continue  # imported from elsewhere: counted where it is defined
            if "model" not in inspect.signature(plain).parameters:
                continue
            head = inspect.getsource(plain).split("def ", 1)[0]
            if "no_grad" in head or getattr(f, "scores_on_device", False):
                found[f"{info.name.removeprefix('ptlm_lite.')}.{name}"] = f
    return found


SCORERS = _no_grad_functions_with_a_model()


def test_the_scorers_are_found():
    for name in (
        "finetune.evaluate",
        "recipes.t5.write",
        "recipes.xlnet.score_names",
        "suite.zero_shot.ending_logprob",
        "transe.tail_ranks",
    ):
        assert name in SCORERS, name
    assert set(NOT_SCORERS) <= set(SCORERS), set(NOT_SCORERS) - set(SCORERS)


@pytest.mark.parametrize("name", sorted(set(SCORERS) - set(NOT_SCORERS)))
def test_scorers_run_on_the_auto_device(name):
    assert getattr(SCORERS[name], "scores_on_device", False), (
        f"{name} is not decorated with ptlm_lite.device.scores_on_device (or, if it "
        "must run where it is called, listed in NOT_SCORERS with the reason)"
    )
