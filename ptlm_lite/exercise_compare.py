"""How an exercise's answer is compared with the expected one, and shown: values to a
tolerance (tensors by shape and value, and integer or boolean tensors by dtype too; a
floating-point answer in another precision passes), arguments changed in place, a stub left
as it was. Used by :func:`ptlm_lite.exercises.check` (every chapter's exercises).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

__all__ = [
    "same",
    "unchanged",
    "copy_answer",
    "describe",
    "show",
    "difference",
    "is_stub_value",
]


def same(a, b, atol: float) -> bool:
    if isinstance(b, torch.Tensor):
        if not isinstance(a, torch.Tensor) or a.shape != b.shape:
            return False
        if b.dtype == torch.bool or not b.is_floating_point():
            return a.dtype == b.dtype and torch.equal(a, b)
        return a.is_floating_point() and torch.allclose(
            a.float(), b.float(), atol=atol, rtol=1e-4
        )
    if isinstance(a, np.generic):
        a = a.item()  # a NumPy number for a number (a tensor for a float is wrong)
    if isinstance(b, float):
        return (
            isinstance(a, (int, float))
            and not isinstance(a, bool)
            and math.isclose(a, b, rel_tol=1e-4, abs_tol=atol)
        )
    if isinstance(b, (tuple, list)):
        return (
            isinstance(a, (tuple, list))
            and len(a) == len(b)
            and all(same(x, y, atol) for x, y in zip(a, b))
        )
    if isinstance(b, dict):
        return (
            isinstance(a, dict)
            and a.keys() == b.keys()
            and all(same(a[k], b[k], atol) for k in b)
        )
    if isinstance(a, (torch.Tensor, np.ndarray)) and a.ndim == 0:
        a = a.item()  # a 0-d tensor for an int or a bool: ((D & off) == tril).all()
    if isinstance(a, (torch.Tensor, tuple, list, dict)) or hasattr(a, "__array__"):
        return False  # a container for a number is wrong, not an error
    try:
        return bool(a == b)
    except (TypeError, ValueError, RuntimeError):  # an == that is not a truth value
        return False


def unchanged(before, after) -> bool:
    """Whether every tensor in ``after`` still equals its copy in ``before`` (other
    objects: assumed so).
    """
    if isinstance(before, torch.Tensor):
        return (
            isinstance(after, torch.Tensor)
            and before.shape == after.shape
            and torch.equal(before, after)
        )
    if isinstance(before, (tuple, list)):
        return len(before) == len(after) and all(
            unchanged(x, y) for x, y in zip(before, after)
        )
    if isinstance(before, dict):
        return all(unchanged(v, after.get(k)) for k, v in before.items())
    return True


def copy_answer(x):
    try:
        return copy.deepcopy(x)
    # an argument that cannot be copied is shared (and then cannot be checked)
    except Exception:
        return x


def describe(x) -> str:
    """A tensor's shape and dtype, or the type of anything else: what an answer is."""
    if isinstance(x, torch.Tensor):
        return f"tensor{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"
    return type(x).__name__


def show(x, short: bool = False) -> str:
    """A readable value; with ``short``, a tensor of more than 16 entries is only its
    shape and dtype.
    """
    if isinstance(x, torch.Tensor):
        if short and x.numel() > 9:
            return describe(x)
        s = repr(x.tolist())
    elif isinstance(x, (tuple, list)):
        inner = ", ".join(show(y, short) for y in x)
        s = (
            f"[{inner}]"
            if isinstance(x, list)
            else f"({inner}{',' if len(x) == 1 else ''})"
        )
    elif isinstance(x, torch.nn.Module):
        s = type(x).__name__
    elif isinstance(x, float):
        s = f"{x:.1f}" if x.is_integer() else f"{x:.6g}"
    else:
        s = repr(x)
    return s if len(s) < 200 else s[:200] + " ..."


def difference(got, want, atol: float) -> str:
    """What differs between ``got`` and ``want``, in a few words."""
    if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
        if got.shape != want.shape:
            return f"expected shape {tuple(want.shape)}, got {tuple(got.shape)}"
        if want.dtype == torch.bool or not want.is_floating_point():
            if got.dtype != want.dtype:
                return f"expected dtype {want.dtype}, got {got.dtype}"
            bad = got != want
        elif not got.is_floating_point():
            return f"expected a floating-point tensor ({want.dtype}), got {got.dtype}"
        else:
            g, w = got.float(), want.float()
            bad = ~torch.isclose(g, w, atol=atol, rtol=1e-4, equal_nan=False) & ~(
                (g == w) & torch.isinf(w)
            )
        if want.numel() <= 9:
            return f"expected {show(want)}, got {show(got)}"
        where = tuple(int(i) for i in bad.nonzero()[0])
        return (
            f"{int(bad.sum())} of {want.numel()} entries differ; the first at {where}: "
            f"expected {show(want[where].item())}, got {show(got[where].item())}"
        )
    if isinstance(want, torch.Tensor) != isinstance(got, torch.Tensor) or (
        isinstance(want, float) and not isinstance(got, (int, float))
    ):
        return f"expected a {type(want).__name__} {show(want, True)}, got a {type(got).__name__} {show(got, True)}"
    if isinstance(want, dict) and isinstance(got, dict) and got.keys() == want.keys():
        # None: not measured
        bad = [
            k for k in want if not same(got[k], want[k], atol) and got[k] is not None
        ]
        tol = (
            f" (fractions must match within {atol})"
            if any(isinstance(want[k], float) for k in bad)
            else ""
        )
        return (
            "; ".join(f"{k}: expected {show(want[k])}, got {show(got[k])}" for k in bad)
            + tol
        )
    if (
        isinstance(want, (tuple, list))
        and isinstance(got, (tuple, list))
        and len(got) == len(want)
        and type(got) is type(want)
    ):
        return "; ".join(
            f"item {i}: {difference(g, w, atol)}"
            for i, (g, w) in enumerate(zip(got, want))
            if not same(g, w, atol)
        )
    return f"expected {show(want)}, got {show(got)}"


def is_stub_value(x) -> bool:
    return x is None or x is Ellipsis
