"""ptlm_lite.parallel.pmap: independent runs in forked workers give what a loop gives."""

import os
import random
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import torch

import ptlm_lite.bert  # noqa: F401  (registers the "bert-tiny" preset)
from ptlm_lite import finetune as F
from ptlm_lite import parallel, suite
from ptlm_lite.config import preset
from ptlm_lite.data import make_world, train_tokenizer

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")


def _train(seed):  # a job that draws from the parent's random state, then seeds
    drawn = (torch.rand(2), np.random.rand(), random.random())
    torch.manual_seed(seed)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(20):
        loss = model(torch.randn(16, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return drawn, model.weight.detach().clone()


@needs_fork
def test_workers_give_what_one_process_gives_and_leave_the_random_state():
    torch.manual_seed(7)
    before = torch.get_rng_state()
    two = parallel.pmap(_train, [0, 1, 2, 3], n_workers=2, progress=False)
    assert torch.equal(torch.get_rng_state(), before)
    one = parallel.pmap(_train, [0, 1, 2, 3], n_workers=1)
    assert torch.equal(torch.get_rng_state(), before)
    for (d2, w2), (d1, w1) in zip(two, one, strict=True):
        assert torch.equal(d2[0], d1[0]) and d2[1:] == d1[1:]
        assert torch.equal(w2, w1)
    # every job drew from the state at the call, not from the job before it
    assert all(torch.equal(d[0], two[0][0][0]) for d, _ in two)
    assert not torch.equal(two[0][1], two[1][1])  # and the seeds differ


def _noisy(x):
    print(f"job {x}")
    if x == 1:
        warnings.warn("job 1 warns", UserWarning, stacklevel=1)
    return parallel.in_worker()


@needs_fork
def test_output_and_warnings_come_back_in_order(capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        inside = parallel.pmap(_noisy, range(3), n_workers=2, progress=False)
    assert inside == [True, True, True]
    assert capsys.readouterr().out == "job 0\njob 1\njob 2\n"
    assert [str(w.message) for w in caught] == ["job 1 warns"]
    assert parallel.pmap(_noisy, [0], n_workers=1) == [False]  # no worker for one job


@needs_fork
def test_no_warning_escapes_a_fork_of_a_threaded_process():
    # a kernel has threads; Python 3.12+ warns on forking such a process (Colab runs
    # 3.12): pmap forks with that warning silenced, and nothing else may leak out
    code = """if True:
        import threading, time, warnings
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        from ptlm_lite.parallel import pmap
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert pmap(abs, [-1, -2, -3], n_workers=2, progress=False) == [1, 2, 3]
        assert not caught, [str(w.message) for w in caught]
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr, done.stderr


def _fails(x):
    if x == 2:
        raise KeyError(f"job {x} failed")
    return x


@needs_fork
def test_an_error_in_a_job_is_raised_here():
    with pytest.raises(KeyError, match="job 2 failed"):
        parallel.pmap(_fails, range(4), n_workers=2, progress=False)
    assert parallel._JOB is None  # nothing left for the next call


def test_bad_arguments_say_what_they_accept(monkeypatch):
    with pytest.raises(TypeError, match="fn must be callable"):
        parallel.pmap(3, [1])
    with pytest.raises(ValueError, match="n_workers must be a positive integer"):
        parallel.pmap(_fails, [1], n_workers=0)
    monkeypatch.setenv("PTLM_WORKERS", "two")
    with pytest.raises(ValueError, match="PTLM_WORKERS must be a positive integer"):
        parallel.workers()
    monkeypatch.setenv("PTLM_WORKERS", "3")
    assert parallel.workers(2) == (2 if hasattr(os, "fork") else 1)


@needs_fork
def test_finetune_run_is_the_same_with_workers_and_trains_the_factorys_models(
    monkeypatch,
):
    docs = [d.text for d in make_world(0).documents]
    tok = train_tokenizer("wordpiece", docs, vocab_size=300, n_sentinels=0)
    task = suite.get("kind_from_sentence").subset(32, 16)
    config = preset("bert-tiny", vocab_size=tok.vocab_size)
    tables, built = {}, {}
    for n in ("1", "2"):
        kept = built.setdefault(n, [])

        def make(seed, kept=kept):
            model = F.bert_model(task, config)
            kept.append((model, model.classifier.weight.detach().clone()))
            return model

        monkeypatch.setenv("PTLM_WORKERS", n)
        tables[n] = F.run(task, make, tok, seeds=(0, 1), steps=4, batch_size=4,
                          surface=False)  # fmt: skip
    cols = ["model", "seed", "accuracy", "final_loss", "correct"]
    assert tables["1"][cols].equals(tables["2"][cols])
    for (m1, start), (m2, _) in zip(built["1"], built["2"], strict=True):
        # the factory's model is the trained one, whichever process trained it
        assert not torch.equal(m1.classifier.weight, start)
        for a, b in zip(m1.state_dict().values(), m2.state_dict().values()):
            assert torch.equal(a, b)


def _burn(_):
    start = time.process_time()
    while time.process_time() - start < 0.2:
        pass
    return time.process_time() - start


@needs_fork
def test_the_timer_counts_the_workers_cpu_seconds():
    import ptlm_lite as P

    times = P.Timer()
    with times("runs"):
        spent = parallel.pmap(_burn, range(4), n_workers=2, progress=False)
    assert times["runs"]["CPU s"] >= 0.9 * sum(spent)  # not the parent's 0.0 s
