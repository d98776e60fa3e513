"""The trained-model cache: train once, load after, detect damage, race safely, explain
errors.
"""

import multiprocessing
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from ptlm_lite import cache


@dataclass
class TinyConfig:
    d_in: int = 4
    d_out: int = 2


class TinyModel(torch.nn.Module):
    """Obeys the cache's contract: TinyModel(config), model.config is a dataclass."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.linear = torch.nn.Linear(config.d_in, config.d_out)
        self.head = torch.nn.Linear(config.d_out, config.d_in, bias=False)
        self.head.weight = torch.nn.Parameter(self.linear.weight.t().contiguous())


def count_training(model):
    """A train_fn that records each call in a counter file, so tests can count
    trainings.
    """
    counter = Path(os.environ["PTLM_CACHE"]) / "trainings.txt"
    with open(counter, "a") as f:
        f.write("x")
    with torch.no_grad():
        model.linear.weight.fill_(0.5)  # "training": a recognisable result


def trainings() -> int:
    counter = Path(os.environ["PTLM_CACHE"]) / "trainings.txt"
    return len(counter.read_text()) if counter.exists() else 0


@pytest.fixture(autouse=True)
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTLM_CACHE", str(tmp_path / "cache"))
    cache.register("tiny", TinyModel, TinyConfig(), count_training, version="1")
    yield tmp_path / "cache"
    cache._REGISTRY.pop("tiny", None)


def test_get_trains_once_then_loads(tmp_cache):
    model = cache.get("tiny")
    assert trainings() == 1 and not model.training
    assert torch.all(model.linear.weight == 0.5)
    again = cache.get("tiny")
    assert trainings() == 1  # loaded, not retrained
    assert again is not model
    for (name, a), (_, b) in zip(
        model.state_dict().items(), again.state_dict().items()
    ):
        assert torch.equal(a, b), name
    weights, meta = cache.entry_paths(cache.recipe("tiny"))
    assert weights.parent == tmp_cache / "models" and weights.exists() and meta.exists()
    assert not list(weights.parent.glob("*.tmp"))  # no temporary files left behind


def test_key_changes_with_config_version_and_train_fn():
    base = cache.recipe("tiny").key
    assert (
        cache.register("tiny", TinyModel, TinyConfig(d_out=3), count_training).key
        != base
    )
    assert (
        cache.register("tiny", TinyModel, TinyConfig(), count_training, version="2").key
        != base
    )
    assert cache.register("tiny", TinyModel, TinyConfig(), lambda m: None).key != base
    assert cache.register("tiny", TinyModel, TinyConfig(), count_training).key == base


STEPS = {"tiny": 3}


def train_by_settings(model):
    with torch.no_grad():
        model.linear.weight.fill_(STEPS["tiny"])


def test_key_changes_with_the_settings_the_train_fn_reads():
    """A recipe whose source names ``STEPS["tiny"]`` gets another key when the value
    changes (the BERT recipe's PRETRAIN_KW was invisible to the key before)."""
    import functools

    first = cache.register("tiny", TinyModel, TinyConfig(), train_by_settings).key
    STEPS["tiny"] = 4
    try:
        again = cache.register("tiny", TinyModel, TinyConfig(), train_by_settings).key
    finally:
        STEPS["tiny"] = 3
    assert again != first
    same = cache.register("tiny", TinyModel, TinyConfig(), train_by_settings).key
    assert same == first
    one = functools.partial(train_by_settings)
    a = cache.register("p", TinyModel, TinyConfig(), functools.partial(one.func)).key
    b = cache.register("p", TinyModel, TinyConfig(), functools.partial(max, 1)).key
    c = cache.register("p", TinyModel, TinyConfig(), functools.partial(max, 2)).key
    assert len({a, b, c}) == 3


MEMO_IN_CAPITALS: dict = {}  # a memo named like a setting: the key reads it


def train_and_fill_a_memo(model):
    MEMO_IN_CAPITALS["seen"] = len(MEMO_IN_CAPITALS) + 1  # changes the key
    count_training(model)


def test_an_entry_keeps_the_key_it_had_when_training_began():
    """A recipe whose key changes while it trains (session 33's memo named in capitals)
    once wrote its metadata under the new key and its file under the old one: every
    later process warned and trained again. Now the entry is written under the key it
    began with, with a warning that names the cause, and a new process finds it."""
    MEMO_IN_CAPITALS.clear()
    cache.register("memo", TinyModel, TinyConfig(), train_and_fill_a_memo)
    before = cache.recipe("memo").key
    try:
        with pytest.warns(RuntimeWarning, match="key changed while it trained"):
            cache.get("memo")
        weights, meta = cache.entry_paths(cache.recipe("memo"), before)
        assert weights.exists() and meta.exists()
        import json

        assert json.loads(meta.read_text())["recipe"]["key"] == before
        MEMO_IN_CAPITALS.clear()  # a new process: the memo is empty again
        assert cache.recipe("memo").key == before
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "cannot be used", no retraining
            cache.get("memo")
        assert trainings() == 1
    finally:
        cache._REGISTRY.pop("memo", None)
        MEMO_IN_CAPITALS.clear()


def test_the_bert_recipe_key_does_not_read_the_token_documents_memo():
    from ptlm_lite.recipes import bert

    bert.register()
    before = cache.recipe("bert-tiny-shakespeare").key
    bert.token_documents(bert.tokenizer(), "shakespeare", "validation", 64)
    bert.register()
    assert cache.recipe("bert-tiny-shakespeare").key == before


HELPER_STEPS = {"tiny": 2}


def fill_by_helper(model):  # a recipe's helper, such as recipes.gpt.pretrain_lm
    with torch.no_grad():
        model.linear.weight.fill_(HELPER_STEPS["tiny"])


def fill_by_other_helper(model):  # the same helper, edited
    with torch.no_grad():
        model.linear.weight.fill_(HELPER_STEPS["tiny"] + 1)


def test_key_changes_with_the_helpers_the_train_fn_calls(monkeypatch):
    """A recipe's closure that only calls its module's training function (the GPT and
    ULMFiT recipes' ``train_fn``): editing that function, or a setting it reads, gives
    another key, so a stale model is never loaded."""

    def train_fn(model):
        fill_by_helper(model)

    first = cache.register("h", TinyModel, TinyConfig(), train_fn).key
    assert cache.register("h", TinyModel, TinyConfig(), train_fn).key == first
    monkeypatch.setitem(HELPER_STEPS, "tiny", 5)
    assert cache.register("h", TinyModel, TinyConfig(), train_fn).key != first
    monkeypatch.setitem(HELPER_STEPS, "tiny", 2)
    monkeypatch.setitem(globals(), "fill_by_helper", fill_by_other_helper)
    assert cache.register("h", TinyModel, TinyConfig(), train_fn).key != first


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete_weights", "bad_json"])
def test_damaged_entry_is_rebuilt_not_loaded(damage):
    cache.get("tiny")
    weights, meta = cache.entry_paths(cache.recipe("tiny"))
    if damage == "truncate":
        weights.write_bytes(weights.read_bytes()[:-7])
    elif damage == "flip":
        data = bytearray(weights.read_bytes())
        data[-1] ^= 0xFF
        weights.write_bytes(bytes(data))
    elif damage == "delete_weights":
        weights.unlink()
    else:
        meta.write_text("{not json")
    with pytest.warns(RuntimeWarning, match="damaged.*rebuilt"):
        model = cache.get("tiny")
    assert trainings() == 2 and torch.all(model.linear.weight == 0.5)
    cache.get("tiny")
    assert trainings() == 2  # the rebuilt entry is good


def test_interrupted_write_is_ignored():
    # A crash between the weights and the JSON "commit" leaves weights without metadata.
    weights, meta = cache.entry_paths(cache.recipe("tiny"))
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"half a file")
    cache.get("tiny")
    assert trainings() == 1 and meta.exists()


def test_load_checkpoint_only_imports_allowed_classes():
    cache.get("tiny")
    _, meta = cache.entry_paths(cache.recipe("tiny"))
    with pytest.raises(RuntimeError, match="refusing to import.*allowed_prefixes"):
        cache.load_checkpoint(meta)
    model = cache.load_checkpoint(
        meta, allowed_prefixes=("ptlm_lite.", TinyModel.__module__ + ".")
    )
    assert type(model).__name__ == "TinyModel" and torch.all(model.linear.weight == 0.5)


def test_unwritable_cache_folder_says_set_ptlm_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    # cannot mkdir under a file (even as root)
    monkeypatch.setenv("PTLM_CACHE", str(blocker / "cache"))
    with pytest.raises(
        RuntimeError, match="not writable.*set the environment variable PTLM_CACHE"
    ):
        cache.get("tiny")


def test_default_folder_without_env(monkeypatch, tmp_path):
    monkeypatch.delenv("PTLM_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache.cache_dir(create=False) == tmp_path / ".cache" / "ptlm_lite"


@pytest.mark.parametrize(
    "call, err, match",
    [
        (
            lambda: cache.get("no-such-model"),
            ValueError,
            "unknown model 'no-such-model'; registered recipes: .*tiny",
        ),
        (
            lambda: cache.register("x", dict, TinyConfig(), count_training),
            TypeError,
            "model_cls must be",
        ),
        (
            lambda: cache.register("x", TinyModel, {"d_in": 4}, count_training),
            TypeError,
            "config must be a dataclass",
        ),
        (
            lambda: cache.register("x", TinyModel, TinyConfig(), "train"),
            TypeError,
            "train_fn must be",
        ),
        (
            lambda: cache.register("a/b", TinyModel, TinyConfig(), count_training),
            ValueError,
            "name must be",
        ),
        (  # int(1.9) would have cached it as seed 1
            lambda: cache.register(
                "x", TinyModel, TinyConfig(), count_training, seed=1.9
            ),
            TypeError,
            "seed must be an int, got 1.9",
        ),
        (  # a string is truthy: "False" would have retrained
            lambda: cache.get("tiny", retrain="False"),
            TypeError,
            "retrain must be True or False",
        ),
    ],
)
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()


def _race_worker(cache_path: str, barrier, results):
    os.environ["PTLM_CACHE"] = cache_path
    torch.set_num_threads(1)
    cache.register("tiny", TinyModel, TinyConfig(), count_training, version="1")
    barrier.wait()  # start together
    model = cache.get("tiny")
    results.put(float(model.linear.weight.sum()))


def test_two_processes_racing_train_once(tmp_cache):
    ctx = multiprocessing.get_context("spawn")  # fork after torch init is not safe
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_race_worker, args=(str(tmp_cache), barrier, results))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert [results.get(timeout=5) for _ in procs] == [4.0, 4.0]
    assert trainings() == 1


def _scaled_training(model, scale=0.5):
    count_training(model)
    with torch.no_grad():
        model.linear.weight.fill_(scale)


class _Trainer:
    """A callable object as train_fn (its repr would hold a memory address)."""

    def __call__(self, model):
        count_training(model)


def test_key_is_the_same_in_every_process_for_partials_and_callable_objects():
    """A key built from a repr with an address would retrain in every new kernel."""
    import functools
    import subprocess
    import sys

    def key_of(fn):
        return cache.Recipe("k", TinyModel, TinyConfig(), fn).key

    here = {
        "partial": key_of(functools.partial(_scaled_training, scale=0.25)),
        "object": key_of(_Trainer()),
    }
    code = (
        "import functools, sys; sys.path.insert(0, 'tests'); import test_cache as t; "
        "from ptlm_lite import cache; "
        "k = lambda fn: cache.Recipe('k', t.TinyModel, t.TinyConfig(), fn).key; "
        "print(k(functools.partial(t._scaled_training, scale=0.25)), k(t._Trainer()))"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [here["partial"], here["object"]]
    # the partial's arguments still count
    assert here["partial"] != key_of(functools.partial(_scaled_training, scale=0.75))


def test_a_dotted_name_keeps_its_key_in_the_file_name(tmp_cache):
    cache.register("tiny.v2", TinyModel, TinyConfig(), count_training, version="1")
    other = cache.register("tiny.v2b", TinyModel, TinyConfig(d_out=3), count_training)
    try:
        weights, meta = cache.entry_paths(cache.recipe("tiny.v2"))
        assert cache.recipe("tiny.v2").key in weights.name
        assert meta.name == weights.name.replace(".safetensors", ".json")
        assert cache.entry_paths(other)[0] != weights
        cache.get("tiny.v2")
        assert weights.exists() and meta.exists()
    finally:
        cache._REGISTRY.pop("tiny.v2", None)
        cache._REGISTRY.pop("tiny.v2b", None)


def test_an_entry_written_for_another_key_is_rebuilt(tmp_cache):
    import json

    cache.get("tiny")
    _, meta = cache.entry_paths(cache.recipe("tiny"))
    info = json.loads(meta.read_text())
    info["recipe"]["key"] = "0" * 16
    meta.write_text(json.dumps(info))
    with pytest.warns(RuntimeWarning, match="key"):
        cache.get("tiny")
    assert trainings() == 2


def test_a_bug_while_loading_is_raised_not_hidden_as_damage(tmp_cache, monkeypatch):
    cache.get("tiny")

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug, not damage")

    monkeypatch.setattr(cache, "load_model", broken)
    with pytest.raises(ZeroDivisionError):
        cache.get("tiny")


def test_hit_and_miss_leave_the_random_state_alike(tmp_cache):
    """What a chapter draws after get() must not depend on whether the model was
    cached (the miss path seeds torch and trains)."""
    import random

    import numpy as np

    def draw():
        return (random.random(), float(np.random.rand()), float(torch.rand(())))

    def after_get():
        random.seed(7), np.random.seed(7), torch.manual_seed(7)
        cache.get("tiny")
        return draw()

    miss = after_get()
    hit = after_get()
    random.seed(7), np.random.seed(7), torch.manual_seed(7)
    assert trainings() == 1
    assert miss == hit == draw()


@pytest.mark.parametrize(
    "module, call, name",
    [
        ("bert", "pretrained_bert", "bert-tiny-shakespeare"),
        ("gpt", "pretrained_gpt", "gpt-tiny-lm"),
        ("ulmfit", "pretrained_lstm", "ulmfit-tiny-general"),
    ],
)
def test_fresh_seeds_re_seed_the_cached_pre_training(monkeypatch, module, call, name):
    # a replication (PTLM_SEED_SET=fresh) must pre-train afresh, not reuse seed 0's run
    import importlib

    recipes = importlib.import_module(f"ptlm_lite.recipes.{module}")
    monkeypatch.setattr(cache, "get", lambda n, retrain=False: cache.recipe(n))
    runs = {}
    for seed_set in ("main", "fresh"):
        monkeypatch.setenv("PTLM_SEED_SET", seed_set)
        runs[seed_set] = getattr(recipes, call)("tiny")
    assert runs["main"].name == runs["fresh"].name == name
    assert (runs["main"].seed, runs["fresh"].seed) == (0, 100)
    assert runs["main"].key != runs["fresh"].key
