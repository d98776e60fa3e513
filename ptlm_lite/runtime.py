"""The one threads policy of the book, applied when ``ptlm_lite`` is imported.

PyTorch's CPU threads spin while they wait for each other. On a 2-core machine where
another process keeps one core busy, a chapter running two threads was measured 25×
slower or worse (GPT-3 chapter: 15 s quiet, ~9 min with one core busy; with one thread:
16.6 s under the same load). The book's models are small, so a second thread buys little
when the machine is quiet. The policy: leave one core free on machines with at most 4
cores; use all the others elsewhere.

Override with the environment variable ``PTLM_THREADS=<n>`` (or set
``torch.set_num_threads`` after importing ``ptlm_lite``). Measured in
``benchmarks/README.md``.
"""

from __future__ import annotations

import os

__all__ = ["threads_policy", "apply_threads_policy"]


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


apply_threads_policy()
