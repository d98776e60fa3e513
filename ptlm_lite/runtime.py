"""The book's environment knobs: the threads policy (applied when ``ptlm_lite`` is
imported), the seed set and the step cap.

Seeds and steps (``chapters/*.ipynb`` read them through :func:`seeds` and
:func:`capped`; ``scripts/replicate.py`` and ``tests/test_replication.py`` set them):

* ``PTLM_SEED_SET=fresh`` makes :func:`seeds` return a disjoint set of the same size
  (each seed plus :data:`FRESH_OFFSET`): the replication run of every experiment.
* ``PTLM_MAX_STEPS=n`` caps every training run at ``n`` steps (:func:`train_steps`,
  honoured by :func:`ptlm_lite.train.train`): a chapter then runs end to end in seconds,
  to catch crashes, and its asserts that hold only after full training are skipped
  (``if not P.capped(): ...``). Trained models are cached apart under a cap.

The threads policy.

PyTorch's CPU threads spin while they wait for each other. On a 2-core machine where
another process keeps one core busy, a chapter running two threads was measured 25×
slower or worse (GPT-3 chapter: 15 s quiet, ~9 min with one core busy; with one thread:
16.6 s under the same load). The book's models are small, so a second thread buys little
when the machine is quiet. The policy: leave one core free on machines with at most 4
cores; use all the others elsewhere. The free core still works where a chapter trains
independent models (seeds, conditions): :func:`ptlm_lite.pmap` runs them in worker
processes (the cores divided by torch's threads: two on two cores), and processes do
not spin.

Override with the environment variable ``PTLM_THREADS=<n>`` (or set
``torch.set_num_threads`` after importing ``ptlm_lite``). Measured in
``benchmarks/README.md``.
"""

from __future__ import annotations

import contextlib
import os
import time

__all__ = [
    "threads_policy",
    "apply_threads_policy",
    "seeds",
    "seed_set",
    "step_cap",
    "capped",
    "train_steps",
    "capped_sizes",
    "FRESH_OFFSET",
    "Timer",
]

FRESH_OFFSET = 100  # fresh seeds: s + 100, disjoint from every seed a chapter writes


def threads_policy(cpus: int | None = None) -> int:
    """How many intra-op threads the book uses on a machine with ``cpus`` cores."""
    env = os.environ.get("PTLM_THREADS")
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"PTLM_THREADS must be a positive integer, got {env!r}")
        return int(env)
    if cpus is None:
        cpus = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1)
        )
    return max(1, cpus - 1) if cpus <= 4 else cpus


def apply_threads_policy() -> int:
    """Set torch's thread count from :func:`threads_policy`; return it."""
    import torch

    n = threads_policy()
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def seed_set() -> str:
    """``"main"`` (the seeds as written) or ``"fresh"`` (``PTLM_SEED_SET=fresh``)."""
    env = os.environ.get("PTLM_SEED_SET", "main").strip().lower() or "main"
    if env not in ("main", "fresh"):
        raise ValueError(f"PTLM_SEED_SET must be 'main' or 'fresh', got {env!r}")
    return env


def seeds(written) -> tuple[int, ...]:
    """The seeds an experiment runs: ``written`` (a chapter's ``SIZES[...]["seeds"]``),
    or under ``PTLM_SEED_SET=fresh`` the same number of other seeds (``s +
    FRESH_OFFSET``), so that a replication shares no seed with the chapter's run.

    >>> seeds((0, 1, 2))  # with PTLM_SEED_SET unset
    (0, 1, 2)
    """
    if isinstance(written, (int, str, bytes)) or not hasattr(written, "__iter__"):
        raise TypeError(f"seeds must be a list of integer seeds, got {written!r}")
    out = tuple(written)
    if not out or not all(
        isinstance(s, int) and not isinstance(s, bool) and 0 <= s < FRESH_OFFSET
        for s in out
    ):
        raise ValueError(
            f"seeds must be a non-empty list of integers in [0, {FRESH_OFFSET}), got "
            f"{written!r}"
        )
    if len(set(out)) != len(out):
        raise ValueError(f"seeds names a seed twice: {written!r}")
    if seed_set() == "fresh":
        return tuple(s + FRESH_OFFSET for s in out)
    return out


def env_count(name: str, what: str = "") -> int | None:
    """The positive integer in environment variable ``name``, or None when it is unset
    or empty; anything else is a ValueError naming it (``what`` says what it counts)."""
    env = os.environ.get(name, "").strip()
    if not env:
        return None
    if not env.isdigit() or int(env) < 1:
        raise ValueError(f"{name} must be a positive integer{what}, got {env!r}")
    return int(env)


def step_cap() -> int | None:
    """The cap from ``PTLM_MAX_STEPS``, or None."""
    return env_count("PTLM_MAX_STEPS")


def capped() -> bool:
    """True when ``PTLM_MAX_STEPS`` caps training (results are then meaningless)."""
    return step_cap() is not None


def train_steps(steps: int) -> int:
    """``steps``, or the cap if it is lower."""
    cap = step_cap()
    return steps if cap is None else min(steps, cap)


apply_threads_policy()


def capped_sizes(sizes: dict, shrink, to: int = 8) -> dict:
    """``sizes`` (a chapter's ``SIZES``), or under a step cap (``PTLM_MAX_STEPS``: a
    crash test, whose numbers mean nothing) a copy whose ``shrink`` entries (numbers
    of evaluation examples, batches, seeds' test rows ...) are at most ``to``, so the
    capped run takes seconds at every scale; a tuple entry keeps its first ``to``.

    >>> capped_sizes({"n_test": 1000, "steps": 400}, ["n_test"])  # no cap: unchanged
    {'n_test': 1000, 'steps': 400}
    """
    if not isinstance(sizes, dict):
        raise TypeError(f"sizes must be a dict, got {type(sizes).__name__}")
    if isinstance(shrink, str):
        shrink = [shrink]
    unknown = [k for k in shrink if k not in sizes]
    if unknown:
        raise KeyError(f"capped_sizes: {unknown} not in sizes (keys: {sorted(sizes)})")
    if not capped():
        return sizes
    out = dict(sizes)
    for k in shrink:
        v = sizes[k]
        if isinstance(v, bool) or not isinstance(v, (int, tuple, list)):
            raise TypeError(f"capped_sizes: {k}={v!r} is not a count or a tuple")
        out[k] = type(v)(v[:to]) if isinstance(v, (tuple, list)) else min(v, to)
    return out


_CUDA_PEAK = [0]  # the highest peak a Timer reset (bytes): see cuda_peak_mb


def cuda_peak_mb() -> float | None:
    """This process's peak GPU memory in MB (``torch.cuda.max_memory_allocated``,
    counting the peaks that :class:`Timer` blocks reset); None without a CUDA GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    return max(_CUDA_PEAK[0], torch.cuda.max_memory_allocated()) / 2**20


def _cpu_seconds() -> float:
    """This process's CPU seconds, plus those of its children that ended (pmap's)."""
    try:
        import resource
    except ImportError:  # Windows: no children to count (pmap runs in this process)
        return time.process_time()
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + r.ru_utime + r.ru_stime


class Timer(dict):
    """Wall and CPU seconds (and, on a GPU, its peak memory) per named part of a
    chapter: ``TIMES = P.Timer()``, then ``with TIMES("pre-training"): ...``;
    ``TIMES["pre-training"]`` is ``{"wall s": ..., "CPU s": ..., "GPU peak MB": ...}``
    and ``TIMES.table()`` shows them all.

    CPU seconds count this process's threads and the :func:`ptlm_lite.pmap` workers
    that ended inside the block: on a busy machine they are the better guide to the
    work done. Where a CUDA GPU is in use the block waits for it at the
    end (``torch.cuda.synchronize``), so the wall time includes the GPU's work.

    A chapter makes its ``Timer`` right after its imports and ends with
    ``TIMES.summary(SCALE)``: the whole run since then, in one sentence that says
    whether other work shared the machine (the stored pages were executed beside
    other notebooks; ``book/timings.md`` gives each chapter's time alone).
    """

    def __init__(self):
        super().__init__()
        self.started = (time.perf_counter(), _cpu_seconds())
        self.loads = [_load()]  # the load average when each block ended

    @contextlib.contextmanager
    def __call__(self, what: str):
        if not isinstance(what, str) or not what:
            raise TypeError(f"what must be a non-empty name, got {what!r}")
        import torch

        cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        if cuda:
            torch.cuda.synchronize()
            _CUDA_PEAK[0] = max(_CUDA_PEAK[0], torch.cuda.max_memory_allocated())
            torch.cuda.reset_peak_memory_stats()
        wall, cpu = time.perf_counter(), _cpu_seconds()
        yield self
        if not cuda and torch.cuda.is_available() and torch.cuda.is_initialized():
            cuda = True  # the block was the first to use the GPU
        if cuda:
            torch.cuda.synchronize()
        self[what] = {
            "wall s": time.perf_counter() - wall,
            "CPU s": _cpu_seconds() - cpu,
        }
        if cuda:
            self[what]["GPU peak MB"] = torch.cuda.max_memory_allocated() / 2**20
        self.loads.append(_load())

    def total(self, key: str = "wall s") -> float:
        """The sum of ``key`` over every part."""
        return sum(v.get(key, 0.0) for v in self.values())

    def table(self, digits: int = 1):
        """A DataFrame: one row per part, in the order they ran."""
        import pandas as pd

        return pd.DataFrame.from_dict(dict(self), orient="index").round(digits)

    def summary(self, scale: str) -> str:
        """One Markdown sentence for a chapter's end: wall and CPU seconds (pmap's
        workers included) since the ``Timer`` was made, the scale, and, where the
        load average rose above the cores (other work shared them), that it did.
        ``scale`` is the chapter's ``SCALE``."""
        if not isinstance(scale, str) or not scale:
            raise TypeError(
                f"scale must be the chapter's SCALE, a string, got {scale!r}"
            )
        wall = time.perf_counter() - self.started[0]
        cpu = _cpu_seconds() - self.started[1]
        self.loads.append(_load())
        text = (
            f"This chapter ran in {wall:.0f} s after its imports, using {cpu:.0f} s of "
            f"CPU, its worker processes included (scale: {scale})."
        )
        cores = os.cpu_count() or 1
        peak = max((x for x in self.loads if x is not None), default=None)
        if peak is not None and peak > cores + 0.5:
            text += (
                f" Other work shared the machine meanwhile (load average up to "
                f"{peak:.1f} on {cores} cores), so it took longer than alone."
            )
        return (
            text + " The [timings page](../book/timings.md) gives every chapter's time "
            "on an idle machine."
        )


def _load() -> float | None:
    """The one-minute load average (runnable processes, this one and pmap's
    included); None where the platform has none (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
