"""Boundary checks shared by the package: a setting or a count that is wrong raises
``ValueError`` / ``TypeError`` naming the argument, what it got and what it accepts,
before any tensor work (``tests/test_properties.py`` tries the public API with
generated good and bad inputs). Introduced with the trainer in
``chapters/transformer.ipynb``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Set

import numpy as np
import torch

__all__ = [
    "check_number",
    "check_count",
    "check_ints",
    "check_seeds",
    "check_flag",
    "check_weights",
    "check_generator",
]


def check_number(name, value, low=0.0, strict=False, none=False, high=None):
    """``value`` if it is a real number (Python's or NumPy's; not a bool, not NaN or
    inf) >= ``low`` (> with ``strict``) and < ``high``; None passes with ``none``."""
    if value is None and none:
        return None
    orn = " or None" if none else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a number{orn}, got {type(value).__name__} {value!r}"
        )
    if (
        not math.isfinite(value)
        or value < low
        or (strict and value == low)
        or (high is not None and value >= high)
    ):
        rng = f"{'>' if strict else '>='} {low}" + (f" and < {high}" if high else "")
        raise ValueError(f"{name} must be a finite number {rng}{orn}, got {value!r}")
    return value


def check_count(name, value, low=1):
    """``value`` if it is an int (not a bool: ``True`` is not a count) >= ``low``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < low
    ):
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)  # a NumPy integer as Python's, for the checks further down


def check_ints(
    name: str, values, below: int | None = None, below_name: str | None = None
) -> list[int]:
    """``values`` as a list: a non-empty sequence (list, tuple, range, array, tensor) of
    ints >= 0 (and < ``below``, called ``below_name`` in the message), in the caller's
    order (a set or a dict, whose order is not the caller's, is refused)."""
    if isinstance(values, torch.Tensor):
        values = values.tolist()
    if isinstance(values, (str, bytes, Set, Mapping)) or not hasattr(
        values, "__iter__"
    ):
        raise TypeError(
            f"{name} must be a sequence of ints in order, e.g. (0, 1, 2) or range(3), "
            f"got {values!r}"
        )
    values = list(values)
    if not values:
        raise ValueError(f"{name} is empty: give at least one, e.g. (0, 1, 2)")
    bound = f"{below_name}={below}" if below_name else f"{below}"
    top = "" if below is None else f" and < {bound}"
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must hold ints, got {v!r} in {values}")
        if v < 0 or (below is not None and v >= below):
            raise ValueError(f"{name} must hold ints >= 0{top}, got {v!r} in {values}")
    return [int(v) for v in values]


def check_seeds(seeds) -> list[int]:
    """``seeds`` as a list (:func:`check_ints`) of distinct seeds: conditions are
    paired seed by seed, and a seed named twice repeats a run, which the interval of a
    verdict would count twice."""
    seeds = check_ints("seeds", seeds)
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds names a seed twice: {seeds}")
    return seeds


def check_flag(name: str, value, none: bool = False):
    """``value`` as a bool (Python's or NumPy's): a string such as ``"False"`` is
    truthy, and would turn a setting around without a word; None passes with
    ``none``."""
    if value is None and none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be True or False{' or None' if none else ''}, got {value!r}"
        )
    return bool(value)


def check_weights(model, steps) -> None:
    """After the last step: a finite loss can still be followed by an update that
    makes the weights inf or NaN (the loss is read before the step)."""
    named = list(model.named_parameters())
    if not named:
        return
    ok = torch.stack([p.detach().isfinite().all() for _, p in named]).tolist()  # 1 sync
    bad = [n for (n, _), good in zip(named, ok) if not good]
    if bad:
        raise FloatingPointError(
            f"weights became non-finite after step {steps} ({', '.join(bad[:3])}"
            f"{', ...' if len(bad) > 3 else ''}): lower lr, add warm-up or clip, or "
            f"check the inputs"
        )


def check_generator(generator) -> torch.Generator:
    """``generator`` if it is a ``torch.Generator``: every corruption and noise takes
    an explicit one (same seed, same noise), never the global random state."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            "generator must be a torch.Generator (e.g. "
            "torch.Generator().manual_seed(0)), "
            f"got {type(generator).__name__}: corruptions never use the "
            "global random state"
        )
    return generator
