"""The interval behind every verdict: a difference of means (or any weighted sum of
condition means) with a Student-t interval that counts the seeds and the test examples.

Measurements come as one number per seed (1-D) or one row per seed of per-example
scores on the same test examples (2-D). The variance of the estimate is a seed part (the
spread of per-seed values: paired when seed ``i`` is shared across conditions, Welch's
otherwise) plus, with 2-D rows, an example part (the spread over test examples of the
per-example value, averaged over seeds); the degrees of freedom are
Welch–Satterthwaite's and the quantile is ``scipy.stats``'. The two parts overlap: the
noise of one seed on one example is in both, so with 2-D rows the interval is wider
than an exact 95% one (conservative: it errs towards "too noisy to tell"; the
calibration on ``book/replication.ipynb`` measures how often it says "shows up" with no
effect). Subtracting the overlap (a two-way ANOVA) would be exact on average but
unstable with three seeds. The rule that turns the interval into a verdict is
:mod:`ptlm_lite.verdict`; ``book/replication.ipynb`` shows both at work.
"""

from __future__ import annotations

import math
import numbers
from typing import Mapping, Sequence

import numpy as np
from scipy import special

__all__ = [
    "t_quantile",
    "as_runs",
    "seed_means",
    "contrast",
    "check_results",
    "check_name",
    "check_options",
    "finite_number",
]


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``df`` may be
    fractional, as Welch's is; ``inf`` gives the normal): ``scipy.stats.t.ppf``, bit
    for bit, through the special functions it calls (``stdtrit``, ``ndtri``), which
    spares every chapter the second it takes to import ``scipy.stats``.
    ``t_quantile(0.975, 2) = 4.303``.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    if not df > 0:
        raise ValueError(f"df must be > 0, got {df!r}")
    return float(special.ndtri(p) if math.isinf(df) else special.stdtrit(df, p))


def as_runs(values, where: str) -> np.ndarray:
    """``values`` as a float array: 1-D (one number per seed) or 2-D (seeds × test
    examples), at least two seeds, all finite; or an error naming ``where``. A dict, a
    set or a DataFrame is refused: iterating one gives its keys, an arbitrary order or
    its column labels, not its measurements."""
    if isinstance(values, (str, bytes)) or np.isscalar(values):
        raise TypeError(
            f"{where} must be a list of numbers, one per seed (or one row of "
            f"per-example scores per seed), got {values!r}"
        )
    if isinstance(values, (Mapping, set, frozenset)) or hasattr(values, "columns"):
        raise TypeError(
            f"{where} must be a list or an array, one number (or row) per seed in seed "
            f"order, got a {type(values).__name__} (use list(d.values()) or "
            ".to_numpy())"
        )
    try:
        x = np.asarray(
            [np.asarray(v, dtype=float) for v in values]
            if not isinstance(values, np.ndarray)
            else values,
            dtype=float,
        )
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{where} must be a list of numbers, one per seed, or a list of equally "
            f"long rows of per-example scores, got {values!r}"
        ) from e
    if x.ndim not in (1, 2):
        raise ValueError(
            f"{where} must be one number per seed or one row per seed (2-D), got shape "
            f"{x.shape}"
        )
    if x.shape[0] == 0 or x.size == 0:
        raise ValueError(f"{where} is empty: it needs one measurement per seed")
    if not np.all(np.isfinite(x)):
        raise ValueError(
            f"{where} holds NaN or infinite values (a diverged run? report it, do not "
            "average it away)"
        )
    if x.shape[0] < 2:
        raise ValueError(
            f"{where} has {x.shape[0]} seed; the rule needs at least 2 (3 or more "
            "recommended) to see how much a result moves between seeds"
        )
    return x


def seed_means(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=1) if x.ndim == 2 else x


def contrast(
    arrays: Sequence[np.ndarray],
    weights: Sequence[float],
    paired: bool,
    level: float,
    names: Sequence[str],
) -> tuple[float, float, float, str, int | None]:
    """``sum_k w_k · mean(X_k)`` with its ``level`` t interval: (estimate, low, high,
    method, examples). The variance adds a seed part and, when every ``X_k`` is 2-D with
    the same number of examples, an example part; Welch–Satterthwaite df."""
    w = np.asarray(weights, dtype=float)
    if len(w) != len(arrays):
        raise ValueError(
            f"weights must give one weight per condition: {len(w)} weights for "
            f"{len(arrays)} conditions"
        )
    means = [seed_means(x) for x in arrays]
    est = float(sum(wk * m.mean() for wk, m in zip(w, means)))
    parts: list[tuple[float, float]] = []  # (variance, df)
    if paired:
        sizes = {m.size for m in means}
        if len(sizes) != 1:
            raise ValueError(
                "paired=True needs as many seeds in every condition, aligned by "
                f"position; got {dict(zip(names, (m.size for m in means)))}"
            )
        d = sum(wk * m for wk, m in zip(w, means))
        parts.append((float(d.var(ddof=1) / d.size), d.size - 1))
        how = f"paired over {d.size} seeds"
    else:
        vs = [wk * wk * m.var(ddof=1) / m.size for wk, m in zip(w, means)]
        v = float(sum(vs))
        df = (
            v * v / sum(vk * vk / (m.size - 1) for vk, m in zip(vs, means))
            if v > 0
            else float(sum(m.size for m in means) - len(means))
        )
        parts.append((v, df))
        how = "seeds independent between conditions"
    n_ex = {x.shape[1] if x.ndim == 2 else None for x in arrays}
    examples = n_ex.pop() if len(n_ex) == 1 else None
    if examples is not None:
        if examples < 2:
            raise ValueError(
                f"per-example scores need at least 2 test examples; {list(names)} "
                f"have {examples}"
            )
        e = sum(wk * x.mean(axis=0) for wk, x in zip(w, arrays))
        parts.append((float(e.var(ddof=1) / e.size), e.size - 1))
        how += f" and {examples} test examples"
    elif any(x.ndim == 2 for x in arrays):
        raise ValueError(
            "per-example scores must cover the same test examples in every condition "
            f"compared; got {[x.shape for x in arrays]} for {list(names)}"
        )
    var = sum(p[0] for p in parts)
    if var <= 0:
        return est, est, est, f"no spread at all ({how})", examples
    df = var * var / sum(p[0] ** 2 / p[1] for p in parts if p[0] > 0)
    half = t_quantile(0.5 + level / 2, df) * math.sqrt(var)
    method = f"t interval, {how} (df = {df:.1f})"
    return est, est - half, est + half, method, examples


def check_results(results) -> dict[str, np.ndarray]:
    """``{condition: measurements}`` checked, each as :func:`as_runs` returns it."""
    if not isinstance(results, Mapping):
        raise TypeError(
            "results must be a mapping {condition name: [one measurement per seed]}, "
            f"got {type(results).__name__}"
        )
    if not results:
        raise ValueError("results is empty: it needs at least one condition")
    if len({str(k) for k in results}) != len(results):
        raise ValueError(
            f"results has keys that read the same as text: {list(results)}; name "
            "each condition once"
        )
    return {str(k): as_runs(v, f"results[{k!r}]") for k, v in results.items()}


def check_name(results: Mapping, name, argument: str) -> str:
    if not isinstance(name, str) or name not in results:
        raise ValueError(
            f"{argument}={name!r} is not a condition in results; known: {list(results)}"
        )
    return name


def finite_number(name: str, value, what: str = "") -> float:
    """``value`` as a float, or a ValueError that names ``name`` (a bool, a string,
    NaN and ±inf are not finite numbers); ``what`` says more about the argument."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
    ):
        raise ValueError(f"{name} must be a finite number{what}, got {value!r}")
    return float(value)


def check_options(min_effect, level) -> tuple[float, float]:
    what = " >= 0 (the smallest difference that would matter, in the units of the "
    what += "measurement)"
    if finite_number("min_effect", min_effect, what) < 0:
        raise ValueError(
            f"min_effect must be a finite number{what}, got {min_effect!r}"
        )
    if (
        isinstance(level, bool)
        or not isinstance(level, (int, float, np.floating))
        or not 0.5 <= level < 1
    ):
        raise ValueError(
            f"level must be a number in [0.5, 1), e.g. 0.95, got {level!r}"
        )
    return float(min_effect), float(level)
