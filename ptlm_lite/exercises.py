"""Exercises that check themselves.

A chapter's exercise is three cells: a stub the reader fills in (it raises ``NotImplementedError``
until then), a check cell that calls :func:`check`, and the solution (tagged ``hide-cell``, so the
book folds it away) which must pass the same check. An unattempted stub is reported, not raised,
so the chapter still runs top to bottom; a wrong answer says which case failed and why.

Introduced in ``chapters/transformer.ipynb``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch

__all__ = ["check", "Result"]


@dataclass
class Result:
    exercise: str
    passed: bool
    attempted: bool
    message: str

    def __bool__(self):
        return self.passed

    def _repr_html_(self):
        colour = "#1a7f37" if self.passed else ("#9a6700" if not self.attempted else "#cf222e")
        return f'<div style="border-left:4px solid {colour};padding:4px 8px">{self.message}</div>'

    def __repr__(self):
        return self.message


def _same(a, b, atol: float) -> bool:
    if isinstance(b, torch.Tensor):
        if not isinstance(a, torch.Tensor) or a.shape != b.shape:
            return False
        if b.dtype == torch.bool or not b.is_floating_point():
            return a.dtype == b.dtype and torch.equal(a, b)
        return a.is_floating_point() and torch.allclose(a.float(), b.float(), atol=atol, rtol=1e-4)
    if isinstance(b, float):
        return isinstance(a, (int, float)) and math.isclose(a, b, rel_tol=1e-4, abs_tol=atol)
    if isinstance(b, (tuple, list)):
        return isinstance(a, (tuple, list)) and len(a) == len(b) and all(_same(x, y, atol) for x, y in zip(a, b))
    return a == b


def _show(x) -> str:
    s = repr(x.tolist()) if isinstance(x, torch.Tensor) else repr(x)
    return s if len(s) < 200 else s[:200] + " ..."


def check(exercise: str, candidate: Callable, reference: Callable, cases: Iterable[tuple],
          atol: float = 1e-5) -> Result:
    """Compare ``candidate(*case)`` with ``reference(*case)`` on every case.

    Returns a :class:`Result` (truthy when every case matches) that renders as a coloured note.
    """
    if not callable(candidate) or not callable(reference):
        raise TypeError("candidate and reference must be callables (functions)")
    cases = list(cases)
    if not cases:
        raise ValueError("cases must hold at least one tuple of arguments")
    for case in cases:
        args = case if isinstance(case, tuple) else (case,)
        try:
            got = candidate(*args)
        except NotImplementedError:
            return Result(exercise, False, False,
                          f"⏳ {exercise}: not attempted yet. Replace `raise NotImplementedError` with your code.")
        except Exception as e:  # the reader's bug: say where, do not crash the chapter
            return Result(exercise, False, True,
                          f"✗ {exercise}: raised {type(e).__name__}: {e} for arguments {_show(args)}")
        want = reference(*args)
        if not _same(got, want, atol):
            return Result(exercise, False, True,
                          f"✗ {exercise}: wrong for arguments {_show(args)}: expected {_show(want)}, got {_show(got)}")
    return Result(exercise, True, True, f"✓ {exercise}: all {len(cases)} cases pass.")
