"""Independent runs on every core: :func:`pmap`.

A chapter trains many small models that do not depend on each other: one per seed and
condition. On a 2-core machine the threads policy (:mod:`ptlm_lite.runtime`) gives torch
one thread, because two threads on models this small buy little and spin when the other
core is busy. Two *processes* do not spin: each runs its own model at full speed on its
own core. :func:`pmap` runs a function over a list of jobs in forked worker processes,
each with the parent's thread count, and returns the results in order, so that::

    models = P.pmap(lambda seed: pretrain(seed), SEEDS)

gives what ``[pretrain(seed) for seed in SEEDS]`` gives, number for number, in about
half the time on two cores. The rules that make it so:

* Every job starts from the random state the parent had when :func:`pmap` was called,
  and the parent's random state (torch, numpy, ``random``) is the same afterwards. The
  sequential path (one worker) does the same, so the result does not depend on the
  number of workers. A job should seed what it draws (the book's runs all do).
* A job returns everything it makes: a change it makes to an object of the notebook
  (a list it appends to, a model it trains in place) stays in the worker.
* What a job prints, and its warnings, come back and are shown in the jobs' order;
  progress bars inside a job are off (``in_worker()``); :func:`pmap` shows one bar over
  the jobs instead.

Workers: ``PTLM_WORKERS=<n>``, or the cores divided by torch's threads (2 on a 2-core
machine, 1 where torch already uses every core). Sequential where ``os.fork`` is
missing (Windows), on a GPU (one device, and CUDA does not survive a fork) and inside a
worker. Measured in ``benchmarks/README.md``.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import random
import sys
import warnings
from collections.abc import Callable, Iterable

import numpy as np
import torch

__all__ = ["pmap", "workers", "in_worker", "state_of", "take_state"]

_IN_WORKER = False
_JOB: tuple | None = None  # (fn, jobs, random state): read by forked workers


def in_worker() -> bool:
    """True inside a worker process of :func:`pmap` (its progress bars are off)."""
    return _IN_WORKER


def _uses_gpu() -> bool:
    from .device import auto_device

    return auto_device().type != "cpu"


def workers(n_jobs: int | None = None) -> int:
    """How many processes :func:`pmap` uses for ``n_jobs`` jobs (see the module)."""
    env = os.environ.get("PTLM_WORKERS", "").strip()
    if env and (not env.isdigit() or int(env) < 1):
        raise ValueError(f"PTLM_WORKERS must be a positive integer, got {env!r}")
    if _IN_WORKER or not hasattr(os, "fork") or _uses_gpu():
        return 1
    if env:
        n = int(env)
    else:
        affinity = getattr(os, "sched_getaffinity", None)
        cpus = len(affinity(0)) if affinity else (os.cpu_count() or 1)
        n = max(1, cpus // torch.get_num_threads())
    return max(1, min(n, n_jobs)) if n_jobs is not None else n


def _random_state():
    return torch.get_rng_state(), np.random.get_state(), random.getstate()


def _set_random_state(state) -> None:
    torch.set_rng_state(state[0])
    np.random.set_state(state[1])
    random.setstate(state[2])


def _start_worker(threads: int) -> None:
    global _IN_WORKER
    _IN_WORKER = True
    torch.set_num_threads(threads)  # the parent's: the same kernels, the same numbers
    sys.stdout = sys.stderr = io.StringIO()  # never the kernel's streams


def _run(i: int):
    """One job in a worker: its result, what it printed, its warnings."""
    fn, jobs, state = _JOB
    _set_random_state(state)  # each job from the parent's state, not the last job's
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        with warnings.catch_warnings(record=True) as caught:
            result = fn(jobs[i])
    said = [(str(w.message), w.category, w.filename, w.lineno) for w in caught]
    # plain pickle: tensors travel as bytes, not through shared memory (/dev/shm is
    # small in many containers)
    return pickle.dumps((result, out.getvalue(), said))


def pmap(
    fn: Callable,
    jobs: Iterable,
    *,
    n_workers: int | None = None,
    desc: str = "runs",
    progress: bool = True,
) -> list:
    """``[fn(job) for job in jobs]``, the jobs spread over :func:`workers` forked
    processes (``n_workers`` overrides), with the same results (see the module's rules).
    ``fn`` may be a lambda or a function defined in a notebook; its results must pickle
    (numbers, tensors, dicts, models). An exception in a job is raised here.
    """
    global _JOB
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    jobs = list(jobs)
    if n_workers is not None and (not isinstance(n_workers, int) or n_workers < 1):
        raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
    n = workers(len(jobs)) if n_workers is None else min(n_workers, max(1, len(jobs)))
    state = _random_state()
    if n <= 1 or len(jobs) <= 1:
        results = []
        for job in jobs:  # each from the same random state, as in a worker
            _set_random_state(state)
            results.append(fn(job))
        _set_random_state(state)
        return results

    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), desc=f"{desc} ({n} processes)", leave=True)
    _JOB = (fn, jobs, state)
    try:
        with warnings.catch_warnings():
            # Python 3.12 warns on any fork of a process with threads (the kernel's);
            # the workers touch none of the kernel's locks: they print to buffers
            warnings.simplefilter("ignore", DeprecationWarning)
            pool = ProcessPoolExecutor(
                n,
                mp_context=mp.get_context("fork"),
                initializer=_start_worker,
                initargs=(torch.get_num_threads(),),
            )
            with pool:
                futures = [pool.submit(_run, i) for i in range(len(jobs))]
                for f in futures:  # in order: the bar moves as the earliest finish
                    f.result()
                    if bar is not None:
                        bar.update(1)
        outcomes = [pickle.loads(f.result()) for f in futures]
    finally:
        _JOB = None
        if bar is not None:
            bar.close()
        _set_random_state(state)
    results = []
    for result, text, said in outcomes:
        if text:
            print(text, end="")
        for message, category, filename, lineno in said:
            warnings.warn_explicit(message, category, filename, lineno)
        results.append(result)
    return results


def state_of(model: torch.nn.Module) -> dict:
    """What training changes in ``model``, to return from a job: its tensors, which
    parameters train (gradual unfreezing changes that) and its mode."""
    grads = [p.requires_grad for p in model.parameters()]
    return {"tensors": model.state_dict(), "grads": grads, "training": model.training}


def take_state(model: torch.nn.Module, state: dict) -> None:
    """Give ``model`` (the parent's copy) what :func:`state_of` took from a worker's."""
    model.load_state_dict(state["tensors"])
    for p, g in zip(model.parameters(), state["grads"], strict=True):
        p.requires_grad_(g)
    model.train(state["training"])
