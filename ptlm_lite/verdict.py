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

::

    -min_effect      0      +min_effect
         |           |           |
                          [=========]      shows up
                       [=======]           shows up (certainly positive, may matter)
      [=====]                              the opposite shows up
           [=======]                       does not show up
                [===]                      does not show up (certain, but too small)
                  [===============]        too noisy to tell

The interval (:mod:`ptlm_lite.intervals`). Give each condition's measurements as one
number per seed, or, when every seed is scored on the same test examples, one row per
seed of one score per example (2-D; 1/0 for right/wrong): the interval then counts the
test set as well as the seeds, so a test set of 45 questions adds about ±15 points to
an accuracy, and a difference that is the same on every seed still gets a width.
"""

from __future__ import annotations

import html
import json
import math
import os
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

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
    "SHOWS_UP",
    "OPPOSITE",
    "NO_EFFECT",
    "TOO_NOISY",
    "VERDICTS",
]

SHOWS_UP = "shows up"
OPPOSITE = "the opposite shows up"
NO_EFFECT = "does not show up"
TOO_NOISY = "too noisy to tell"
VERDICTS = (SHOWS_UP, OPPOSITE, NO_EFFECT, TOO_NOISY)

RECOMMENDED_SEEDS = 3
# every verdict is appended to this JSON-lines file when the variable is set
# (scripts/execute.py and scripts/replicate.py read a chapter's verdicts from it)
LOG_VAR = "PTLM_VERDICT_LOG"


def rule(low: float, high: float, min_effect: float) -> str:
    """The verdict of an interval ``[low, high]`` on the effect in the claimed
    direction (the table in the module's docstring)."""
    if -min_effect <= low and high <= min_effect:
        return NO_EFFECT
    if low > 0:
        return SHOWS_UP  # clears zero; not within ±min_effect, so reaches +min_effect
    if high < 0:
        return OPPOSITE
    return TOO_NOISY


# ----------------------------------------------------------------------------------
# Checking the measurements


# ----------------------------------------------------------------------------------
# The result


@dataclass
class Verdict:
    """What :func:`verdict` or :func:`trend` found. Print it (or leave it last in a
    cell) for the sentence and the table; use its fields to write the rest of the
    paragraph.

    ``effect``, ``low``, ``high``: the effect in the claimed direction (positive = as
    claimed) with its interval; ``verdict``: one of :data:`VERDICTS`; ``sentence``: the
    verdict with its numbers; ``examples``: the test examples counted (None: seeds
    only).
    """

    verdict: str
    claim: str
    effect: float
    low: float
    high: float
    min_effect: float
    level: float
    method: str
    metric: str
    results: dict = field(repr=False)
    fmt: str = field(default="{:.3g}", repr=False)
    notes: list = field(default_factory=list)
    detail: str = field(default="", repr=False)
    examples: int | None = None

    @property
    def shows_up(self) -> bool:
        return self.verdict == SHOWS_UP

    @property
    def seeds(self) -> int:
        return min(x.shape[0] for x in self.results.values())

    @property
    def table(self):
        """One row per condition: seeds, mean, standard deviation over seeds (n - 1)."""
        import pandas as pd  # lazily: the rule itself needs numpy only

        rows = []
        for name, x in self.results.items():
            m = seed_means(x)
            rows.append(
                {
                    "condition": name,
                    "seeds": m.size,
                    "test examples": x.shape[1] if x.ndim == 2 else None,
                    "mean": float(m.mean()),
                    "std over seeds": float(m.std(ddof=1)),
                }
            )
        return pd.DataFrame(rows)

    @property
    def sentence(self) -> str:
        f, pct, m = self.fmt.format, f"{self.level:.0%}", self.min_effect
        where = {
            SHOWS_UP: f"it clears zero and reaches the minimum effect of {f(m)}",
            OPPOSITE: f"it clears zero on the wrong side and reaches -{f(m)}",
            NO_EFFECT: f"the whole interval lies within ±{f(m)}, the smallest "
            "difference that would matter",
            TOO_NOISY: f"it holds zero and reaches beyond ±{f(m)}; more seeds or more "
            "test examples would narrow it",
        }
        counted = (
            f"over {self.seeds} seeds and {self.examples} test examples"
            if self.examples
            else f"over {self.seeds} seeds"
        )
        text = (
            f"Claim: {self.claim}. Verdict: {self.verdict}. {self.detail} The effect "
            f"in the claimed direction is {f(self.effect)} ({pct} interval "
            f"{f(self.low)} to {f(self.high)}, {counted}): {where[self.verdict]}."
        )
        return " ".join([text, *self.notes]).replace("  ", " ")

    def __str__(self):
        return self.sentence

    def record(self) -> dict:
        """What ``scripts/replicate.py`` compares between seed sets."""
        return {
            "claim": self.claim,
            "verdict": self.verdict,
            "effect": self.effect,
            "low": self.low,
            "high": self.high,
            "min_effect": self.min_effect,
            "seeds": self.seeds,
            "examples": self.examples,
        }

    def _repr_html_(self):
        colour = {
            SHOWS_UP: "#1a7f37",
            OPPOSITE: "#cf222e",
            NO_EFFECT: "#57606a",
            TOO_NOISY: "#9a6700",
        }[self.verdict]
        table = self.table.to_html(
            index=False,
            float_format=lambda v: self.fmt.format(v),
            border=0,
            na_rep="",
        )
        return (
            f'<div style="border-left:4px solid {colour};padding:4px 8px"><p>'
            f"{html.escape(self.sentence)}</p>{table}"
            f'<p style="color:#57606a;font-size:small">{html.escape(self.method)}</p>'
            "</div>"
        )


def _log(record: dict) -> None:
    """Append one verdict to ``$PTLM_VERDICT_LOG`` (when set), one JSON line."""
    path = os.environ.get(LOG_VAR)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


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


def _finish(claim: str, interval: tuple, min_effect: float, **rest) -> Verdict:
    """The rule's decision on ``interval`` (effect, low, high) as a :class:`Verdict`,
    logged to ``$PTLM_VERDICT_LOG``: the one place where every verdict is made."""
    est, lo, hi = interval
    v = Verdict(rule(lo, hi, min_effect), claim, est, lo, hi, min_effect, **rest)
    _log(v.record())
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
    """
    res = check_results(results)
    better, worse = check_name(res, better, "better"), check_name(res, worse, "worse")
    if better == worse:
        raise ValueError(
            f"better and worse must name two different conditions, got {better!r} twice"
        )
    min_effect, level = check_options(min_effect, level)
    sign = 1.0 if higher_is_better else -1.0
    if paired and res[better].shape[0] != res[worse].shape[0]:
        raise ValueError(
            f"paired=True needs as many seeds in results[{better!r}] "
            f"({res[better].shape[0]}) as in results[{worse!r}] "
            f"({res[worse].shape[0]}), aligned by position"
        )
    est, lo, hi, method, n_ex = contrast(
        [res[better], res[worse]], [sign, -sign], paired, level, [better, worse]
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
        level=level,
        method=method,
        metric=metric,
        results=res,
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
    sentence says when the means are not in order.
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
    sign = 1.0 if increasing else -1.0
    dx = xs - xs.mean()
    weights = sign * dx / (dx * dx).sum() * float(xs[-1] - xs[0])
    est, lo, hi, method, n_ex = contrast(
        [res[k] for k in order], weights, paired, level, order
    )
    method = "least-squares slope of the means, " + method
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
    if np.any(np.sign(np.diff(means)) * sign < 0):
        notes.append(
            "(The means do not move the same way at every step: see the table.)"
        )
    return _finish(
        claim,
        (est, lo, hi),
        min_effect,
        level=level,
        method=method,
        metric=metric,
        results=res,
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
    ``mean - baseline`` (over seeds, and over test examples when rows are given);
    against measurements, as in :func:`verdict`.

    Returns a pandas DataFrame, one row per condition: seeds, mean, std, baseline, the
    effect (how much better than the baseline) with its interval, the verdict, and
    ``beats baseline`` (True exactly when the verdict is "shows up").
    """
    import pandas as pd

    res = check_results(results)
    min_effect, level = check_options(min_effect, level)
    if isinstance(baseline, (int, float, np.floating, np.integer)) and not isinstance(
        baseline, bool
    ):
        if not math.isfinite(baseline):
            raise ValueError(f"baseline must be finite, got {baseline!r}")
        base, base_mean = None, float(baseline)
    else:
        base = as_runs(baseline, "baseline")
        base_mean = float(seed_means(base).mean())
    sign = 1.0 if higher_is_better else -1.0
    pct, rows = f"{level:.0%}", []
    for name, x in res.items():
        if base is None:
            est, lo, hi, _, n_ex = contrast([x], [sign], False, level, [name])
            est, lo, hi = (
                est - sign * base_mean,
                lo - sign * base_mean,
                hi - sign * base_mean,
            )
        else:
            if paired and x.shape[0] != base.shape[0]:
                raise ValueError(
                    f"paired=True needs as many seeds in results[{name!r}] "
                    f"({x.shape[0]}) as in baseline ({base.shape[0]})"
                )
            est, lo, hi, _, n_ex = contrast(
                [x, base], [sign, -sign], paired, level, [name, "baseline"]
            )
        v = rule(lo, hi, min_effect)
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
        }
        rows.append(row)
        _log(
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
