"""The environment knobs of ptlm_lite.runtime: the seed set and the step cap."""

import pytest
import torch

import ptlm_lite as P
from ptlm_lite import runtime


def test_seeds_as_written_and_fresh(monkeypatch):
    monkeypatch.delenv("PTLM_SEED_SET", raising=False)
    assert P.seeds((0, 1, 2)) == (0, 1, 2)
    monkeypatch.setenv("PTLM_SEED_SET", "fresh")
    fresh = P.seeds([0, 1, 2])
    assert fresh == (100, 101, 102) and not set(fresh) & {0, 1, 2}
    monkeypatch.setenv("PTLM_SEED_SET", "other")
    with pytest.raises(ValueError, match="PTLM_SEED_SET must be"):
        P.seeds((0,))


@pytest.mark.parametrize("bad", [3, "012", (), (0, 0), (0, 100), (True,), (1.0,)])
def test_bad_seeds_say_what_is_accepted(bad, monkeypatch):
    monkeypatch.delenv("PTLM_SEED_SET", raising=False)
    with pytest.raises((TypeError, ValueError), match="seed"):
        P.seeds(bad)


def test_the_step_cap_caps_train(monkeypatch):
    model = torch.nn.Linear(2, 1)
    batch = (torch.randn(4, 2), torch.randn(4, 1))

    def loss_fn(m, b):
        return ((m(b[0]) - b[1]) ** 2).mean()

    monkeypatch.delenv("PTLM_MAX_STEPS", raising=False)
    assert not P.capped() and runtime.train_steps(50) == 50
    h = P.train(model, [batch], steps=7, loss_fn=loss_fn, progress=False)
    assert len(h.losses) == 7
    monkeypatch.setenv("PTLM_MAX_STEPS", "2")
    assert P.capped() and runtime.train_steps(50) == 2 and runtime.train_steps(1) == 1
    h = P.train(model, [batch], steps=7, loss_fn=loss_fn, progress=False)
    assert len(h.losses) == 2
    monkeypatch.setenv("PTLM_MAX_STEPS", "0")
    with pytest.raises(ValueError, match="PTLM_MAX_STEPS must be a positive integer"):
        runtime.step_cap()


def test_a_capped_model_is_cached_apart(monkeypatch):
    from ptlm_lite import cache
    from ptlm_lite.config import preset
    from ptlm_lite.gpt import GPT

    r = cache.Recipe("x", GPT, preset("gpt-tiny", vocab_size=10), lambda m: None)
    monkeypatch.delenv("PTLM_MAX_STEPS", raising=False)
    full = r.key
    monkeypatch.setenv("PTLM_MAX_STEPS", "2")
    assert r.key != full


def test_capped_sizes_shrinks_only_under_a_cap(monkeypatch):
    import ptlm_lite as P

    sizes = {"n_test": 1000, "lengths": (1, 2, 3, 4), "steps": 400}
    monkeypatch.delenv("PTLM_MAX_STEPS", raising=False)
    assert P.capped_sizes(sizes, ["n_test", "lengths"]) is sizes
    monkeypatch.setenv("PTLM_MAX_STEPS", "2")
    out = P.capped_sizes(sizes, ["n_test", "lengths"], to=2)
    assert out == {"n_test": 2, "lengths": (1, 2), "steps": 400}
    assert sizes["n_test"] == 1000  # a copy
    with pytest.raises(KeyError, match="n_tst"):
        P.capped_sizes(sizes, ["n_tst"])
    with pytest.raises(TypeError, match="count"):
        P.capped_sizes({"flag": True}, ["flag"])


def test_timer_records_wall_and_cpu_seconds():
    import time

    import ptlm_lite as P

    T = P.Timer()
    with T("sleep"):
        time.sleep(0.05)
    with T("spin"):
        sum(range(200_000))
    assert list(T) == ["sleep", "spin"]
    assert T["sleep"]["wall s"] >= 0.05 > T["sleep"]["CPU s"]
    assert T["spin"]["CPU s"] > 0
    assert abs(T.total() - T["sleep"]["wall s"] - T["spin"]["wall s"]) < 1e-9
    assert list(T.table().columns)[:2] == ["wall s", "CPU s"]
    with pytest.raises(TypeError, match="name"):
        with T(""):
            pass


def test_timer_summary_says_when_other_work_shared_the_machine(monkeypatch):
    """Every chapter ends with TIMES.summary(SCALE). The stored pages are executed
    beside other notebooks, so their times ran up to twice the timings page's (MASS:
    68 s against 31 s): the sentence says so when the load average rose above the
    cores, and always points to the timings page."""
    import ptlm_lite as P
    from ptlm_lite import runtime

    monkeypatch.setattr(runtime.os, "cpu_count", lambda: 2)
    loads = iter([1.0, 2.1, 1.9])
    monkeypatch.setattr(runtime, "_load", lambda: next(loads))
    T = P.Timer()
    with T("part"):
        pass
    quiet = T.summary("tiny")
    assert quiet.startswith("This chapter ran in 0 s after its imports, using ")
    assert "(scale: tiny)" in quiet and "shared" not in quiet
    assert "[timings page](../book/timings.md)" in quiet
    loads = iter([1.0, 4.25, 3.0])
    T = P.Timer()
    with T("part"):
        pass
    busy = T.summary("small")
    assert "(scale: small)" in busy
    assert "load average up to 4.2 on 2 cores" in busy
    monkeypatch.setattr(runtime, "_load", lambda: None)  # no load average (Windows)
    assert "shared" not in P.Timer().summary("tiny")
    with pytest.raises(TypeError, match="scale must be the chapter's SCALE"):
        T.summary(None)


def test_timer_blocks_do_not_hide_the_process_peak_gpu_memory(monkeypatch):
    """P.Timer resets CUDA's peak-memory counter to give each block its own peak;
    benchmarks/chapter_times.py read that counter as the notebook's peak, so a chapter
    that used 2.8 GB before its last timed block was recorded with 65 MB (an H200 run,
    2026-11-27). runtime.cuda_peak_mb keeps the highest peak a Timer reset. (A fake
    CUDA: the machines that run the tests have no GPU.)"""
    import torch

    import ptlm_lite as P
    from ptlm_lite import runtime

    state = {"peak": 0}

    def alloc(n):
        state["peak"] = max(state["peak"], n)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: state["peak"])
    monkeypatch.setattr(
        torch.cuda, "reset_peak_memory_stats", lambda: state.update(peak=0)
    )
    monkeypatch.setattr(runtime, "_CUDA_PEAK", [0])
    T = P.Timer()
    with T("big"):
        alloc(3000 * 2**20)
    with T("small"):
        alloc(65 * 2**20)
    assert T["big"]["GPU peak MB"] == 3000 and T["small"]["GPU peak MB"] == 65
    assert runtime.cuda_peak_mb() == 3000
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert runtime.cuda_peak_mb() is None
