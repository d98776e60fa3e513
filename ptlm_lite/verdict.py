"""Does the paper's claim show up here? One rule, applied to every seed's measurements
and, where there is a test set, to every test example.

Every chapter ends its experiments with verdict sentences. A sentence is never typed:
it comes from :func:`verdict` (two conditions: "pre-trained beats random init"),
:func:`trend` (an ordered list of conditions: "accuracy grows with the number of shots")
or :func:`beats_baseline` (each condition against the majority class or another
baseline). Every chapter uses them, from ``chapters/transformer.ipynb`` (post-LN
without warm-up ends worse), ``chapters/gpt.ipynb`` (pre-trained vs random init),
``chapters/bert.ipynb`` (MLM + NSP vs MLM alone), ``chapters/gpt2.ipynb`` (zero-shot
against the frequency guess) and ``chapters/gpt3.ipynb`` (accuracy grows with shots)
on; ``book/replication.ipynb`` calibrates the rule by simulation and shows which
verdicts of the book held with fresh seeds.

The rule, in words. Before looking at the numbers, say which direction the paper
predicts and how big a difference would matter (``min_effect``, in the units of the
measurement). Then take the difference between the conditions, in the direction of the
claim, with a 95% interval that counts **both sources of noise**: the seeds (another
initialisation and data order) and the test examples (another test set of the same
size). Then:

* the interval clears zero and reaches ``+min_effect``        → **shows up**
* the interval clears zero and reaches ``-min_effect``        → **the opposite shows up**
* the interval lies within ``[-min_effect, +min_effect]``     → **does not show up**
  (an equivalence test: no difference that matters, even where a small one is certain)
* the interval holds zero and reaches beyond ``±min_effect``  → **too noisy to tell**
  (more seeds or a larger test set would narrow it)

And one category before the rule: a comparison means something only on a task that the
compared models learn at all. Give ``floor=`` (the score of a model that learns nothing:
the majority answer, the best constant summary, token frequencies; a number or
measurements) and, when **neither** condition beats the floor by the same rule, the
verdict is **cannot test here**, with the rule's own verdict beside it
(``Verdict.rule_verdict``): two models at the floor are not evidence against the claim,
and one below the floor is not evidence for it.

::

    -min_effect      0      +min_effect
         |           |           |
                          [=========]      shows up
                       [=======]           shows up (certainly positive, may matter)
      [=====]                              the opposite shows up
           [=======]                       does not show up
                [===]                      does not show up (certain, but too small)
                  [===============]        too noisy to tell

How sure is the category? :func:`closeness` measures how far one end of the interval
would have to move to change it, in half-widths of the interval; below :data:`NEAR` the
verdict's sentence says it is close to another category (``book/replication.ipynb``:
such verdicts are the ones that fresh seeds changed most often).

The interval (:mod:`ptlm_lite.intervals`). Give each condition's measurements as one
number per seed, or, when every seed is scored on the same test examples, one row per
seed of one score per example (2-D; 1/0 for right/wrong): the interval then counts the
test set as well as the seeds, so a test set of 45 questions adds about ±15 points to
an accuracy, and a difference that is the same on every seed still gets a width.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from .categories import (
    CANNOT_TEST,
    CATEGORIES,
    LOG_VAR,
    NEAR,
    NO_EFFECT,
    OPPOSITE,
    SHOWS_UP,
    TOO_NOISY,
    VERDICTS,
    Verdict,
    closeness,
    log,
    rule,
)
from .checks import check_flag
from .intervals import (
    as_runs,
    check_name,
    check_options,
    check_results,
    contrast,
    seed_means,
    t_quantile,
)

__all__ = [
    "verdict",
    "trend",
    "beats_baseline",
    "majority_baseline",
    "Verdict",
    "t_quantile",
    "rule",
    "closeness",
    "NEAR",
    "SHOWS_UP",
    "OPPOSITE",
    "NO_EFFECT",
    "TOO_NOISY",
    "CANNOT_TEST",
    "VERDICTS",
    "CATEGORIES",
    "LOG_VAR",
]

RECOMMENDED_SEEDS = 3


def _spread(name: str, x: np.ndarray, f) -> str:
    m = seed_means(x)
    return f"{name} {f(float(m.mean()))} ± {f(float(m.std(ddof=1)))}"


def _few_seeds(res: Mapping[str, np.ndarray], names) -> list[str]:
    n = min(res[k].shape[0] for k in names)
    if n < RECOMMENDED_SEEDS:
        return [
            f"(Only {n} seeds per condition: the interval is wide and itself "
            f"uncertain; {RECOMMENDED_SEEDS} or more are recommended.)"
        ]
    return []


def _as_baseline(baseline, where: str):
    """``(runs or None, mean)`` of a baseline given as a number or as measurements."""
    if isinstance(baseline, (int, float, np.floating, np.integer)) and not isinstance(
        baseline, bool
    ):
        if not math.isfinite(baseline):
            raise ValueError(f"{where} must be finite, got {baseline!r}")
        return None, float(baseline)
    base = as_runs(baseline, where)
    return base, float(seed_means(base).mean())


def _against(name, x, base, base_mean, sign, paired, level, what="baseline") -> tuple:
    """``(effect, low, high, examples)`` of condition ``x`` minus a baseline (a number
    when ``base`` is None, else measurements), in the better direction; ``what``: the
    baseline's argument name, for the errors."""
    if base is None:
        est, lo, hi, _, n_ex = contrast([x], [sign], False, level, [name])
        shift = sign * base_mean
        return est - shift, lo - shift, hi - shift, n_ex
    if paired and x.shape[0] != base.shape[0]:
        raise ValueError(
            f"paired=True needs as many seeds in results[{name!r}] "
            f"({x.shape[0]}) as in the {what} ({base.shape[0]})"
        )
    est, lo, hi, _, n_ex = contrast(
        [x, base], [sign, -sign], paired, level, [name, what]
    )
    return est, lo, hi, n_ex


def _floor_check(res, names, floor, floor_name, sign, paired, level, min_effect):
    """The ``floor=`` part of :class:`Verdict`'s fields: ``{}`` without a floor, else
    the floor's mean, its name and each compared condition's category against it."""
    if floor is None:
        return {}
    if not isinstance(floor_name, str) or not floor_name.strip():
        raise ValueError(
            "floor_name must say what the floor is (e.g. 'the majority answer'), got "
            f"{floor_name!r}"
        )
    base, mean = _as_baseline(floor, "floor")
    above = {}
    for name in names:
        _, lo, hi, _ = _against(
            name, res[name], base, mean, sign, paired, level, "floor"
        )
        above[name] = rule(lo, hi, min_effect)
    return {"floor": mean, "floor_name": floor_name, "above_floor": above}


def _finish(
    claim: str, interval: tuple, min_effect: float, floored: dict, **rest
) -> Verdict:
    """The rule's decision on ``interval`` (effect, low, high) as a :class:`Verdict`
    (:data:`CANNOT_TEST` when a floor was given and no condition beats it), logged to
    ``$PTLM_VERDICT_LOG``: the one place where every verdict is made."""
    est, lo, hi = interval
    if lo == hi:  # no width: the same difference on every seed (and example)
        rest["notes"] = [  # instead of "the interval is wide" for few seeds
            *[n for n in rest.get("notes", []) if not n.startswith("(Only")],
            "(The difference is the same on every seed, and on every test example "
            "where they are given: the interval has no width, and the verdict is only "
            "as sure as these few runs.)",
        ]
    said = rule(lo, hi, min_effect)
    above = floored.get("above_floor", {})
    cannot = bool(floored) and SHOWS_UP not in above.values()
    v = Verdict(
        CANNOT_TEST if cannot else said,
        claim,
        est,
        lo,
        hi,
        min_effect,
        rule_verdict=said,
        **floored,
        **rest,
    )
    log(v.record())
    return v


# ----------------------------------------------------------------------------------
# The three questions a chapter asks


def verdict(
    results: Mapping[str, Sequence],
    *,
    better: str,
    worse: str,
    min_effect: float,
    higher_is_better: bool = True,
    paired: bool = False,
    metric: str = "the measurement",
    level: float = 0.95,
    fmt: str = "{:.3g}",
    floor=None,
    floor_name: str = "the floor",
) -> Verdict:
    """Does condition ``better`` beat condition ``worse``, as the paper claims?

    >>> v = verdict({"pre-trained": [0.81, 0.84, 0.80], "random init": [0.62, 0.60, 0.66]},
    ...             better="pre-trained", worse="random init", min_effect=0.02, metric="accuracy")
    >>> v.verdict
    'shows up'

    ``results``: ``{condition: measurements}``, one number per seed, or one row per seed
    of per-example scores on the same test examples (other conditions may be present:
    they appear in the table, not in the verdict). ``min_effect`` (required, >= 0): the
    smallest difference that would matter, in the units of the measurement, chosen
    before the run. ``higher_is_better``: False for a loss or a perplexity.
    ``paired=True`` when seed ``i`` of both conditions shares its data and
    initialisation (rows are then aligned by position).

    The effect is ``mean(better) - mean(worse)`` (sign flipped when lower is better)
    with a ``level`` t interval over seeds and test examples; the module's rule names
    the verdict.

    ``floor``: the score of a model that learns nothing on this task (the majority
    answer's accuracy, the best constant summary, the token-frequency loss; a number,
    or measurements like a condition's), named by ``floor_name``. When neither
    condition beats it by the rule (as :func:`beats_baseline` decides, with the same
    ``min_effect``), the verdict is :data:`CANNOT_TEST`:

    >>> verdict({"pre-trained": [0.51, 0.50, 0.52], "random init": [0.50, 0.49, 0.51]},
    ...         better="pre-trained", worse="random init", min_effect=0.05,
    ...         floor=0.5, floor_name="the majority answer").verdict
    'cannot test here'
    """
    res = check_results(results)
    better, worse = check_name(res, better, "better"), check_name(res, worse, "worse")
    if better == worse:
        raise ValueError(
            f"better and worse must name two different conditions, got {better!r} twice"
        )
    min_effect, level = check_options(min_effect, level)
    paired = check_flag("paired", paired)
    sign = 1.0 if check_flag("higher_is_better", higher_is_better) else -1.0
    if paired and res[better].shape[0] != res[worse].shape[0]:
        raise ValueError(
            f"paired=True needs as many seeds in results[{better!r}] "
            f"({res[better].shape[0]}) as in results[{worse!r}] "
            f"({res[worse].shape[0]}), aligned by position"
        )
    est, lo, hi, method, n_ex = contrast(
        [res[better], res[worse]], [sign, -sign], paired, level, [better, worse]
    )
    floored = _floor_check(
        res, (better, worse), floor, floor_name, sign, paired, level, min_effect
    )
    f = fmt.format
    word = "higher" if higher_is_better else "lower"
    claim = f"{better} beats {worse} on {metric} ({word} is better)"
    detail = (
        f"Mean ± std over seeds: {_spread(better, res[better], f)}, "
        f"{_spread(worse, res[worse], f)}."
    )
    return _finish(
        claim,
        (est, lo, hi),
        min_effect,
        floored,
        level=level,
        method=method,
        metric=metric,
        results=res,
        compared=(better, worse),
        fmt=fmt,
        notes=_few_seeds(res, (better, worse)),
        detail=detail,
        examples=n_ex,
    )


def trend(
    results: Mapping[str, Sequence],
    *,
    order: Sequence[str],
    min_effect: float,
    increasing: bool = True,
    x: Sequence[float] | None = None,
    paired: bool = False,
    metric: str = "the measurement",
    level: float = 0.95,
    fmt: str = "{:.3g}",
    floor=None,
    floor_name: str = "the floor",
    higher_is_better: bool | None = None,
) -> Verdict:
    """Does the measurement grow (``increasing=True``) or fall along ``order``, as the
    paper claims?

    >>> v = trend({"0 shots": [.13, .12, .14], "2 shots": [.35, .31, .33], "8 shots": [.61, .66, .58]},
    ...           order=["0 shots", "2 shots", "8 shots"], x=[0, 2, 8], min_effect=0.05, metric="accuracy")
    >>> v.verdict
    'shows up'

    The verdict is on the slope, not on each consecutive pair: the least-squares line of
    the condition means against ``x`` (default ``0, 1, 2, ...``: the rank in
    ``order``), and the effect is the change that line predicts from the first
    condition to the last (``slope × (x_last - x_first)``, in the units of the
    measurement, sign flipped when ``increasing=False``), so ``min_effect`` means the
    same as in :func:`verdict`. The slope is a weighted sum of the condition means, so
    its interval counts seeds (per-seed slopes with ``paired=True``) and test examples
    (per-example slopes, when rows of per-example scores are given) as in
    :func:`verdict`. The table shows whether every step goes the same way, and the
    sentence says when the means are not in order (or all move against the claim). ``floor``, ``floor_name``: as in
    :func:`verdict`; the verdict is :data:`CANNOT_TEST` when no condition of ``order``
    beats the floor, "beats" in the metric's better direction: ``higher_is_better``
    (default: ``increasing``, a claim that the metric improves along ``order``; say it
    for a claim that it gets worse, e.g. ``increasing=False, higher_is_better=True``
    for an accuracy that falls).
    """
    res = check_results(results)
    if isinstance(order, str) or not isinstance(order, Sequence) or len(order) < 2:
        raise ValueError(
            f"order must be a list of at least two condition names, got {order!r}"
        )
    order = [check_name(res, name, "order") for name in order]
    if len(set(order)) != len(order):
        raise ValueError(f"order names a condition twice: {order}")
    min_effect, level = check_options(min_effect, level)
    xs = np.arange(len(order), dtype=float) if x is None else as_runs(x, "x")
    if xs.ndim != 1 or xs.size != len(order):
        raise ValueError(
            f"x must give one position per condition in order ({len(order)}), got "
            f"{xs.size}"
        )
    if np.any(np.diff(xs) <= 0):
        raise ValueError(f"x must increase along order, got {xs.tolist()}")
    increasing = check_flag("increasing", increasing)
    paired = check_flag("paired", paired)
    better = check_flag("higher_is_better", higher_is_better, none=True)
    better = increasing if better is None else better
    sign = 1.0 if increasing else -1.0
    dx = xs - xs.mean()
    weights = sign * dx / (dx * dx).sum() * float(xs[-1] - xs[0])
    est, lo, hi, method, n_ex = contrast(
        [res[k] for k in order], weights, paired, level, order
    )
    method = "least-squares slope of the means, " + method
    toward = 1.0 if better else -1.0  # the floor is beaten in the better direction
    floored = _floor_check(
        res, order, floor, floor_name, toward, paired, level, min_effect
    )
    f = fmt.format
    claim = (
        f"{metric} {'grows' if increasing else 'falls'} from {order[0]} to {order[-1]}"
    )
    means = [float(seed_means(res[k]).mean()) for k in order]
    detail = (
        "Mean ± std over seeds: "
        + ", ".join(_spread(k, res[k], f) for k in order)
        + "."
    )
    notes = _few_seeds(res, order)
    steps = np.sign(np.diff(means)) * sign  # +1: a step the claimed way, -1: against
    if np.all(steps < 0):
        notes.append("(The means move against the claim at every step.)")
    elif np.any(steps < 0):
        notes.append(
            "(The means do not move the same way at every step: see the table.)"
        )
    return _finish(
        claim,
        (est, lo, hi),
        min_effect,
        floored,
        level=level,
        method=method,
        metric=metric,
        results=res,
        compared=tuple(order),
        fmt=fmt,
        notes=notes,
        detail=detail,
        examples=n_ex,
    )


def majority_baseline(labels) -> float:
    """The accuracy of always answering the most frequent label in ``labels`` (the test
    labels).
    """
    x = np.asarray(labels.tolist() if hasattr(labels, "tolist") else labels).reshape(-1)
    if x.size == 0:
        raise ValueError("labels is empty")
    _, counts = np.unique(x, return_counts=True)
    return float(counts.max() / x.size)


def beats_baseline(
    results: Mapping[str, Sequence],
    baseline,
    *,
    min_effect: float,
    higher_is_better: bool = True,
    paired: bool = False,
    level: float = 0.95,
    metric: str = "the measurement",
):
    """Mark which conditions beat a baseline, by the same rule as :func:`verdict`.

    ``baseline``: a number (the majority-class accuracy of the test set, see
    :func:`majority_baseline`; or chance, ``1 / n_classes``), or measurements like a
    condition's (random weights trained for equal steps, say: one number per seed, or
    rows of per-example scores). Against a number the interval is the one-sample one of
    ``mean - baseline`` (over seeds, and over test examples when rows are given), the
    number taken as exact: a majority share measured on the same test set moves with
    that set too, which such an interval does not count (to count it, give the
    constant answer's 1/0 per test example as a row per seed); against measurements,
    as in :func:`verdict`.

    Returns a pandas DataFrame, one row per condition: seeds, mean, std, baseline, the
    effect (how much better than the baseline) with its interval, the verdict,
    ``beats baseline`` (True exactly when the verdict is "shows up") and ``close call``
    (the interval's :func:`closeness` is below :data:`NEAR`, as a verdict's sentence
    notes).
    """
    import pandas as pd

    res = check_results(results)
    min_effect, level = check_options(min_effect, level)
    base, base_mean = _as_baseline(baseline, "baseline")
    paired = check_flag("paired", paired)
    sign = 1.0 if check_flag("higher_is_better", higher_is_better) else -1.0
    pct, rows = f"{level:.0%}", []
    for name, x in res.items():
        est, lo, hi, n_ex = _against(name, x, base, base_mean, sign, paired, level)
        v, near = rule(lo, hi, min_effect), closeness(lo, hi, min_effect)
        m = seed_means(x)
        row = {
            "condition": name,
            "seeds": m.size,
            "mean": float(m.mean()),
            "std": float(m.std(ddof=1)),
            "baseline": base_mean,
            "effect": est,
            f"{pct} low": lo,
            f"{pct} high": hi,
            "verdict": v,
            "beats baseline": v == SHOWS_UP,
            "close call": near is not None and near < NEAR,
        }
        rows.append(row)
        log(
            {
                "claim": f"{name} beats the baseline on {metric}",
                "verdict": v,
                "effect": est,
                "low": lo,
                "high": hi,
                "min_effect": min_effect,
                "seeds": int(m.size),
                "examples": n_ex,
            }
        )
    return pd.DataFrame(rows)
