"""Does the paper's claim show up here? One rule, applied to the numbers of several
seeds.

Every chapter ends its experiment with a verdict sentence. That sentence is never typed:
it comes from :func:`verdict` (two conditions: "pre-trained beats random init"),
:func:`trend` (an ordered list of conditions: "accuracy grows with the number of shots")
or :func:`beats_baseline` (each condition against the majority class or another
baseline), applied to the measurements of every seed. It serves the headline experiment
of each chapter: ``chapters/transformer.ipynb`` (post-LN without warm-up ends worse),
``chapters/gpt.ipynb`` (pre-trained vs random init), ``chapters/bert.ipynb`` (MLM + NSP
vs MLM alone, against the majority class), ``chapters/gpt2.ipynb`` (zero-shot against
the frequency guess) and ``chapters/gpt3.ipynb`` (accuracy grows with shots).

The rule, in words. Before looking at the numbers, say which direction the paper
predicts and how big a difference would matter (``min_effect``, in the units of the
measurement). Then take the difference between the two conditions, in the direction of
the claim, with a 95% interval that says how far the seeds let it move:

* the whole interval lies beyond ``+min_effect``         → **shows up**
* the whole interval lies beyond ``-min_effect``         → **the opposite shows up**
* the whole interval lies within ``[-min_effect, +min_effect]`` → **does not show up**
  (the conditions are the same, to within what matters)
* anything else (the interval straddles a boundary)       → **too noisy to tell**
  (more seeds, or a larger test set, would narrow it)

::

    -min_effect      0      +min_effect
         |           |           |
                          [=========]      shows up
      [=====]                              the opposite shows up
           [=======]                       does not show up
                  [===============]        too noisy to tell

The interval is a Student-t interval for a difference of means: Welch's (unequal
variances) when the seeds of the two conditions are independent, and the paired interval
on per-seed differences when seed ``i`` of one condition shares its data order and
initialisation with seed ``i`` of the other (``paired=True``). Two seeds are the least
that gives a spread; three or more are recommended (the sentence says so when there are
fewer). t quantiles are computed here with numpy and ``math`` (the regularised
incomplete beta function, inverted by bisection), so the package does not need scipy;
``tests/test_verdict.py`` compares them with scipy's where scipy is installed.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

__all__ = [
    "verdict",
    "trend",
    "beats_baseline",
    "majority_baseline",
    "Verdict",
    "t_quantile",
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


# ----------------------------------------------------------------------------------
# Student-t quantiles without scipy


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Numerical
    Recipes §6.4).
    """
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b)
        - math.lgamma(a)
        - math.lgamma(b)
        + a * math.log(x)
        + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def _t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0 and a Student-t variable T with ``df`` degrees of freedom."""
    return 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``df`` may be
    fractional, as Welch's is). ``t_quantile(0.975, 2) = 4.303``; ``t_quantile(0.975,
    inf) = 1.960``.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    if not df > 0:
        raise ValueError(f"df must be > 0, got {df!r}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    tail = 1.0 - p
    if math.isinf(df) or df > 1e7:  # the normal limit: P(Z > z) = erfc(z / √2) / 2
        upper = lambda z: 0.5 * math.erfc(z / math.sqrt(2.0))  # noqa: E731
    else:
        upper = lambda z: _t_upper_tail(z, df)  # noqa: E731
    lo, hi = 0.0, 1.0
    while upper(hi) > tail:  # the tail shrinks as t grows: bracket, then bisect
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if upper(mid) > tail:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


# ----------------------------------------------------------------------------------
# Checking the measurements


def _seeds(values, where: str) -> np.ndarray:
    """``values`` as a 1-D float array of at least two finite numbers, or an error
    naming ``where``.
    """
    if isinstance(values, (str, bytes)) or np.isscalar(values):
        raise TypeError(
            f"{where} must be a list of numbers, one per seed, got {values!r}"
        )
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{where} must be a list of numbers, one per seed, got {values!r}"
        ) from e
    if x.ndim != 1:
        raise ValueError(
            f"{where} must be a flat list of numbers (one per seed), got shape "
            f"{x.shape}"
        )
    if x.size == 0:
        raise ValueError(f"{where} is empty: it needs one measurement per seed")
    if not np.all(np.isfinite(x)):
        raise ValueError(
            f"{where} holds NaN or infinite values: {x.tolist()} (a diverged run? "
            "report it, do not average it away)"
        )
    if x.size < 2:
        raise ValueError(
            f"{where} has {x.size} seed; the rule needs at least 2 (3 or more "
            f"recommended) "
            "to see how much a result moves between seeds"
        )
    return x


def _results(results) -> dict[str, np.ndarray]:
    if not isinstance(results, Mapping):
        raise TypeError(
            "results must be a mapping {condition name: [one measurement per seed]}, "
            f"got {type(results).__name__}"
        )
    if not results:
        raise ValueError("results is empty: it needs at least two conditions")
    return {str(k): _seeds(v, f"results[{k!r}]") for k, v in results.items()}


def _name(results: Mapping, name, argument: str) -> str:
    if not isinstance(name, str) or name not in results:
        raise ValueError(
            f"{argument}={name!r} is not a condition in results; known: {list(results)}"
        )
    return name


def _check_options(min_effect, level) -> tuple[float, float]:
    if (
        isinstance(min_effect, bool)
        or not isinstance(min_effect, (int, float, np.floating, np.integer))
        or not math.isfinite(min_effect)
        or min_effect < 0
    ):
        raise ValueError(
            f"min_effect must be a finite number >= 0 (the smallest difference that "
            f"would "
            f"matter, in the units of the measurement), got "
            f"{min_effect!r}"
        )
    if (
        isinstance(level, bool)
        or not isinstance(level, (int, float))
        or not 0.5 <= level < 1
    ):
        raise ValueError(
            f"level must be a number in [0.5, 1), e.g. 0.95, got {level!r}"
        )
    return float(min_effect), float(level)


def _mean_interval(x: np.ndarray, level: float) -> tuple[float, float]:
    half = t_quantile(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean() - half), float(x.mean() + half)


def _difference(
    a: np.ndarray, b: np.ndarray, paired: bool, level: float
) -> tuple[float, float, float, str]:
    """mean(a) - mean(b) with its ``level`` t interval: (estimate, low, high, method)."""
    q = 0.5 + level / 2
    if paired:
        d = a - b
        est, se, df = (
            float(d.mean()),
            float(d.std(ddof=1) / math.sqrt(d.size)),
            d.size - 1,
        )
        method = f"paired t interval over {d.size} seeds (df = {df})"
    else:
        va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
        est, se = float(a.mean() - b.mean()), math.sqrt(va + vb)
        # Welch–Satterthwaite degrees of freedom; with no spread at all the interval is
        # a point anyway
        df = (
            (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
            if va + vb > 0
            else a.size + b.size - 2
        )
        method = f"Welch t interval (df = {df:.1f})"
    half = t_quantile(q, df) * se
    return est, est - half, est + half, method


def _rule(low: float, high: float, min_effect: float) -> str:
    """The verdict of an interval [low, high] on the effect in the claimed direction."""
    if low > min_effect:
        return SHOWS_UP
    if high < -min_effect:
        return OPPOSITE
    if -min_effect <= low and high <= min_effect:
        return NO_EFFECT
    return TOO_NOISY


# ----------------------------------------------------------------------------------
# The result


@dataclass
class Verdict:
    """What :func:`verdict` or :func:`trend` found. Print it (or leave it last in a
    cell) for the sentence and the table; use its fields to write the rest of the
    paragraph.

    ``effect``, ``low``, ``high``: the effect in the claimed direction (positive = as
    claimed) with its interval; ``verdict``: one of :data:`VERDICTS`; ``sentence``: the
    verdict with its numbers.
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

    @property
    def shows_up(self) -> bool:
        return self.verdict == SHOWS_UP

    @property
    def table(self):
        """One row per condition: seeds, mean, standard deviation (n - 1) and the mean's
        interval.
        """
        import pandas as pd  # lazily: the rule itself needs numpy only

        pct = f"{self.level:.0%}"
        rows = []
        for name, x in self.results.items():
            lo, hi = _mean_interval(x, self.level)
            rows.append(
                {
                    "condition": name,
                    "seeds": x.size,
                    "mean": float(x.mean()),
                    "std": float(x.std(ddof=1)),
                    f"{pct} low": lo,
                    f"{pct} high": hi,
                }
            )
        return pd.DataFrame(rows)

    @property
    def sentence(self) -> str:
        f, pct = self.fmt.format, f"{self.level:.0%}"
        where = {
            SHOWS_UP: f"the whole interval lies above the minimum effect of {f(self.min_effect)}",
            OPPOSITE: f"the whole interval lies below -{f(self.min_effect)}, against the claim",
            NO_EFFECT: f"the whole interval lies within ±{f(self.min_effect)}, the smallest difference "
            "that would matter",
            TOO_NOISY: f"the interval crosses ±{f(self.min_effect)}; more seeds would narrow it",
        }
        text = (
            f"Claim: {self.claim}. Verdict: {self.verdict}. {self.detail} The effect "
            f"in the claimed "
            f"direction is {f(self.effect)} ({pct} interval {f(self.low)} to "
            f"{f(self.high)}): "
            f"{where[self.verdict]}."
        )
        return " ".join([text, *self.notes]).replace("  ", " ")

    def __str__(self):
        return self.sentence

    def _repr_html_(self):
        colour = {
            SHOWS_UP: "#1a7f37",
            OPPOSITE: "#cf222e",
            NO_EFFECT: "#57606a",
            TOO_NOISY: "#9a6700",
        }[self.verdict]
        table = self.table.to_html(
            index=False, float_format=lambda v: self.fmt.format(v), border=0
        )
        return (
            f'<div style="border-left:4px solid {colour};padding:4px 8px"><p>{html.escape(self.sentence)}</p>'
            f'{table}<p style="color:#57606a;font-size:small">{html.escape(self.method)}</p></div>'
        )


def _spread(name: str, x: np.ndarray, f) -> str:
    return f"{name} {f(float(x.mean()))} ± {f(float(x.std(ddof=1)))}"


def _few_seeds(res: Mapping[str, np.ndarray], names) -> list[str]:
    n = min(res[k].size for k in names)
    if n < RECOMMENDED_SEEDS:
        return [
            f"(Only {n} seeds per condition: the interval is wide and itself "
            f"uncertain; "
            f"{RECOMMENDED_SEEDS} or more are recommended.)"
        ]
    return []


# ----------------------------------------------------------------------------------
# The three questions a chapter asks


def verdict(
    results: Mapping[str, Sequence[float]],
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

    ``results``: ``{condition: [one measurement per seed]}`` (other conditions may be
    present: they appear in the table, not in the verdict). ``min_effect`` (required, >=
    0): the smallest difference that would matter, in the units of the measurement,
    chosen before the run. ``higher_is_better``: False for a loss or a perplexity.
    ``paired=True`` when seed ``i`` of both conditions shares its data and
    initialisation (the lists are then aligned by position and must have equal lengths).

    The rule: the effect is ``mean(better) - mean(worse)`` (sign flipped when lower is
    better), with a ``level`` t interval (Welch's, or the paired one on per-seed
    differences). Interval above ``+min_effect``: "shows up"; below ``-min_effect``:
    "the opposite shows up"; within ``[-min_effect, +min_effect]``: "does not show up";
    otherwise "too noisy to tell".
    """
    res = _results(results)
    better, worse = _name(res, better, "better"), _name(res, worse, "worse")
    if better == worse:
        raise ValueError(
            f"better and worse must name two different conditions, got {better!r} twice"
        )
    min_effect, level = _check_options(min_effect, level)
    a, b = res[better], res[worse]
    if paired and a.size != b.size:
        raise ValueError(
            f"paired=True needs as many seeds in results[{better!r}] ({a.size}) as in "
            f"results[{worse!r}] ({b.size}), aligned by position"
        )
    if not higher_is_better:
        # the effect is always "how much better", so its sign means the same thing
        a, b = b, a
    est, lo, hi, method = _difference(a, b, paired, level)
    f = fmt.format
    word = "higher" if higher_is_better else "lower"
    claim = f"{better} beats {worse} on {metric} ({word} is better)"
    detail = (
        f"Mean ± std over seeds: {_spread(better, res[better], f)}, "
        f"{_spread(worse, res[worse], f)}."
    )
    return Verdict(
        _rule(lo, hi, min_effect),
        claim,
        est,
        lo,
        hi,
        min_effect,
        level,
        method,
        metric,
        res,
        fmt,
        _few_seeds(res, (better, worse)),
        detail,
    )


def trend(
    results: Mapping[str, Sequence[float]],
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

    The verdict is on the slope, not on each consecutive pair: a least-squares line of
    the measurement against ``x`` (default ``0, 1, 2, ...``: the rank in ``order``), and
    the effect is the change that line predicts from the first condition to the last
    (``slope × (x_last - x_first)``, in the units of the measurement, sign flipped when
    ``increasing=False``), so ``min_effect`` means the same as in :func:`verdict`. Its
    interval: with independent seeds, the t interval of the slope fitted to all (x,
    measurement) points (df = points - 2); with ``paired=True`` (seed ``i`` shares data
    and initialisation across conditions), one slope per seed and the t interval of
    their mean (df = seeds - 1). The same four-way rule then applies. A trend that
    "shows up" is a rise (or fall) overall; the table shows whether every step goes the
    same way, and the sentence says when the means are not in order.
    """
    res = _results(results)
    if isinstance(order, str) or not isinstance(order, Sequence) or len(order) < 2:
        raise ValueError(
            f"order must be a list of at least two condition names, got {order!r}"
        )
    order = [_name(res, name, "order") for name in order]
    if len(set(order)) != len(order):
        raise ValueError(f"order names a condition twice: {order}")
    min_effect, level = _check_options(min_effect, level)
    xs = np.arange(len(order), dtype=float) if x is None else _seeds(x, "x")
    if xs.size != len(order):
        raise ValueError(
            f"x must give one position per condition in order ({len(order)}), got "
            f"{xs.size}"
        )
    if np.any(np.diff(xs) <= 0):
        raise ValueError(f"x must increase along order, got {xs.tolist()}")
    span, q, sign = float(xs[-1] - xs[0]), 0.5 + level / 2, 1.0 if increasing else -1.0

    def slope(px, py):  # least squares
        dx = px - px.mean()
        return float((dx * (py - py.mean())).sum() / (dx * dx).sum())

    if paired:
        n = {res[k].size for k in order}
        if len(n) != 1:
            raise ValueError(
                f"paired=True needs the same number of seeds in every condition of "
                f"order, "
                f"got {[res[k].size for k in order]}"
            )
        per_seed = np.array(
            [slope(xs, np.array([res[k][s] for k in order])) for s in range(n.pop())]
        )
        b, se, df = (
            float(per_seed.mean()),
            float(per_seed.std(ddof=1) / math.sqrt(per_seed.size)),
            per_seed.size - 1,
        )
        method = f"paired: one least-squares slope per seed, t interval over {per_seed.size} seeds (df = {df})"
    else:
        px = np.concatenate([np.full(res[k].size, xi) for k, xi in zip(order, xs)])
        py = np.concatenate([res[k] for k in order])
        b = slope(px, py)
        resid = py - (py.mean() + b * (px - px.mean()))
        df = px.size - 2
        se = math.sqrt((resid**2).sum() / df / ((px - px.mean()) ** 2).sum())
        method = f"least-squares slope over all {px.size} (condition, seed) points, t interval (df = {df})"
    est = sign * b * span
    half = t_quantile(q, df) * se * span
    f = fmt.format
    claim = (
        f"{metric} {'grows' if increasing else 'falls'} from {order[0]} to {order[-1]}"
    )
    means = [float(res[k].mean()) for k in order]
    detail = (
        "Mean ± std over seeds: "
        + ", ".join(_spread(k, res[k], f) for k in order)
        + "."
    )
    notes = _few_seeds(res, order)
    steps = np.sign(np.diff(means)) * sign
    if np.any(steps < 0):
        notes.append(
            "(The means do not move the same way at every step: see the table.)"
        )
    return Verdict(
        _rule(est - half, est + half, min_effect),
        claim,
        est,
        est - half,
        est + half,
        min_effect,
        level,
        method,
        metric,
        res,
        fmt,
        notes,
        detail,
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
    results: Mapping[str, Sequence[float]],
    baseline,
    *,
    min_effect: float,
    higher_is_better: bool = True,
    paired: bool = False,
    level: float = 0.95,
):
    """Mark which conditions beat a baseline, by the same rule as :func:`verdict`.

    ``baseline``: a number (the majority-class accuracy of the test set, see
    :func:`majority_baseline`; or chance, ``1 / n_classes``), or a list of one
    measurement per seed (random weights trained for equal steps, say). Against a number
    the interval is the one-sample t interval of ``mean - baseline``; against a list,
    Welch's (or the paired one, ``paired=True``).

    Returns a pandas DataFrame, one row per condition: seeds, mean, std, baseline, the
    effect (how much better than the baseline) with its interval, the verdict, and
    ``beats baseline`` (True exactly when the verdict is "shows up").
    """
    import pandas as pd

    res = _results(results)
    min_effect, level = _check_options(min_effect, level)
    if isinstance(baseline, (int, float, np.floating, np.integer)) and not isinstance(
        baseline, bool
    ):
        if not math.isfinite(baseline):
            raise ValueError(f"baseline must be finite, got {baseline!r}")
        base, base_mean = None, float(baseline)
    else:
        base = _seeds(baseline, "baseline")
        base_mean = float(base.mean())
    pct, rows = f"{level:.0%}", []
    for name, x in res.items():
        if base is None:
            d = (x - base_mean) if higher_is_better else (base_mean - x)
            est = float(d.mean())
            half = (
                t_quantile(0.5 + level / 2, d.size - 1)
                * float(d.std(ddof=1))
                / math.sqrt(d.size)
            )
            lo, hi = est - half, est + half
        else:
            if paired and x.size != base.size:
                raise ValueError(
                    f"paired=True needs as many seeds in results[{name!r}] ({x.size}) "
                    f"as in "
                    f"baseline ({base.size})"
                )
            a, b = (x, base) if higher_is_better else (base, x)
            est, lo, hi, _ = _difference(a, b, paired, level)
        v = _rule(lo, hi, min_effect)
        rows.append(
            {
                "condition": name,
                "seeds": x.size,
                "mean": float(x.mean()),
                "std": float(x.std(ddof=1)),
                "baseline": base_mean,
                "effect": est,
                f"{pct} low": lo,
                f"{pct} high": hi,
                "verdict": v,
                "beats baseline": v == SHOWS_UP,
            }
        )
    return pd.DataFrame(rows)
