"""The verdict's categories, the rule that picks one from an interval, and the
:class:`Verdict` a chapter prints. The questions that produce them (:func:`verdict`,
:func:`trend`, :func:`beats_baseline`) and the rule in words are in
:mod:`ptlm_lite.verdict`; ``book/replication.ipynb`` shows the rule at work.
"""

from __future__ import annotations

import html
import json
import os
import sys
from dataclasses import dataclass, field

from .intervals import finite_number, seed_means

__all__ = [
    "CANNOT_TEST",
    "CATEGORIES",
    "LOG_VAR",
    "NO_EFFECT",
    "OPPOSITE",
    "SHOWS_UP",
    "TOO_NOISY",
    "NEAR",
    "VERDICTS",
    "Verdict",
    "closeness",
    "log",
    "rule",
]

SHOWS_UP = "shows up"
OPPOSITE = "the opposite shows up"
NO_EFFECT = "does not show up"
TOO_NOISY = "too noisy to tell"
CANNOT_TEST = "cannot test here"
VERDICTS = (SHOWS_UP, OPPOSITE, NO_EFFECT, TOO_NOISY)  # what rule() can say
CATEGORIES = (*VERDICTS, CANNOT_TEST)  # what a Verdict can be: the floor adds one

# a verdict whose closeness() is below this says so (book/replication.ipynb: such
# verdicts are the ones that fresh seeds changed most often)
NEAR = 0.25

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


def closeness(low: float, high: float, min_effect: float) -> float | None:
    """How near the interval ``[low, high]`` is to another category of :func:`rule`:
    the smallest move of one end that would change the verdict, in half-widths of the
    interval (None for an interval with no width).

    >>> closeness(0.01, 0.21, 0.05)  # low end 0.01 above zero, half-width 0.1
    0.1

    ``book/replication.ipynb`` counts, by closeness, how often the book's verdicts kept
    their category with fresh seeds: those under :data:`NEAR` changed most often.
    """
    for name, v in (("low", low), ("high", high), ("min_effect", min_effect)):
        finite_number(name, v)
    if min_effect < 0 or low > high:
        raise ValueError(
            f"closeness needs low <= high and min_effect >= 0, got low={low!r}, "
            f"high={high!r}, min_effect={min_effect!r}"
        )
    half = (high - low) / 2
    if half == 0:
        return None
    m = min_effect
    said = rule(low, high, m)
    if said == NO_EFFECT:  # either end out past ±m
        gaps = [low + m, m - high]
    elif said == SHOWS_UP:  # low back to zero, or high inside +m (if low is)
        gaps = [low] + ([high - m] if low <= m else [])
    elif said == OPPOSITE:
        gaps = [-high] + ([-m - low] if high >= -m else [])
    else:  # holds zero: one end across it, or the one end beyond ±m back inside
        gaps = [-low, high]
        beyond = [e for e in (low, high) if abs(e) > m]
        if len(beyond) == 1:
            gaps.append(abs(beyond[0]) - m)
    return max(0.0, min(gaps) / half)  # never -0.0 (an end exactly on a boundary)


@dataclass
class Verdict:
    """What :func:`verdict` or :func:`trend` found. Print it (or leave it last in a
    cell) for the sentence and the table; use its fields to write the rest of the
    paragraph.

    ``effect``, ``low``, ``high``: the effect in the claimed direction (positive = as
    claimed) with its interval; ``verdict``: one of :data:`CATEGORIES`;
    ``rule_verdict``: what the rule says of the interval (one of :data:`VERDICTS`; the
    same as ``verdict`` unless that is :data:`CANNOT_TEST`); ``floor``: the floor's
    mean score and ``above_floor`` each compared condition's category against it
    (None/empty without ``floor=``); ``sentence``: the verdict with its numbers;
    ``examples``: the test examples counted (None: seeds only).
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
    rule_verdict: str = ""
    floor: float | None = None
    floor_name: str = ""
    above_floor: dict = field(default_factory=dict, repr=False)
    compared: tuple = field(default=(), repr=False)  # the conditions the claim compares

    def __post_init__(self):
        self.rule_verdict = self.rule_verdict or self.verdict

    @property
    def shows_up(self) -> bool:
        return self.verdict == SHOWS_UP

    @property
    def seeds(self) -> int:
        """The seeds of the compared conditions (not of those shown beside them)."""
        names = self.compared or tuple(self.results)
        return min(self.results[n].shape[0] for n in names)

    @property
    def table(self):
        """One row per condition: seeds, test examples (a column only where some
        condition was scored per example), mean, standard deviation over seeds
        (n - 1)."""
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
        out = pd.DataFrame(rows)
        if out["test examples"].isna().all():  # seeds only: no column of None
            out = out.drop(columns="test examples")
        return out

    @property
    def closeness(self) -> float | None:
        """:func:`closeness` of the interval: below :data:`NEAR`, the sentence says the
        verdict is close to another category."""
        return closeness(self.low, self.high, self.min_effect)

    @property
    def near(self) -> bool:
        """Close to another category (:attr:`closeness` below :data:`NEAR`; never for
        :data:`CANNOT_TEST`, which the floor decides): the sentence and
        :meth:`short` say so."""
        c = self.closeness
        return self.verdict != CANNOT_TEST and c is not None and c < NEAR

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
        }[self.rule_verdict]
        counted = (
            f"over {self.seeds} seeds and {self.examples} test examples"
            if self.examples
            else f"over {self.seeds} seeds"
        )
        said = f"Verdict: {self.verdict}."
        if self.verdict == CANNOT_TEST:
            said = (
                f"Verdict: {CANNOT_TEST}: no condition compared beats "
                f"{self.floor_name} ({f(self.floor)}) by the same rule, so the task "
                "does not measure what the claim is about (the rule alone would say "
                f'"{self.rule_verdict}").'
            )
        text = (
            f"Claim: {self.claim}. {said} {self.detail} The effect "
            f"in the claimed direction is {f(self.effect)} ({pct} interval "
            f"{f(self.low)} to {f(self.high)}, {counted}): {where}."
        )
        if self.near:
            by = self.closeness
            by = f"{by:.2f}" if by >= 0.005 else "less than 0.01"
            text += (
                f" (Close to another category: moving one end of the interval by "
                f"{by} of its half-width would change the verdict; such verdicts "
                "are the ones fresh seeds changed most often, book/replication.ipynb.)"
            )
        return " ".join([text, *self.notes]).replace("  ", " ")

    @property
    def rule_note(self) -> str:
        """``"the rule alone: <its category>"`` for a :data:`CANNOT_TEST` verdict (what
        the rule says of the difference, no evidence either way), else ``""``."""
        return (
            f"the rule alone: {self.rule_verdict}"
            if self.verdict == CANNOT_TEST
            else ""
        )

    def short(self, fmt: str = "{:+.3f}") -> str:
        """The verdict and its numbers in one line of Markdown, for a chapter's summary
        list: ``**shows up** (effect +0.120, 95% interval +0.050 to +0.190, minimum
        effect 0.05)``; a :data:`CANNOT_TEST` verdict adds :attr:`rule_note`, one
        close to another category (:attr:`near`) says so."""
        f, m = fmt.format, self.min_effect
        note = f"; {self.rule_note}" if self.rule_note else ""
        note += "; close to another category" if self.near else ""
        return (
            f"**{self.verdict}** (effect {f(self.effect)}, {self.level:.0%} interval "
            f"{f(self.low)} to {f(self.high)}, minimum effect {m:g}{note})"
        )

    def __str__(self):
        return self.sentence

    def record(self) -> dict:
        """What ``scripts/replicate.py`` compares between seed sets (with
        ``rule_verdict`` and ``floor`` only where a floor was given)."""
        rec = {
            "claim": self.claim,
            "verdict": self.verdict,
            "effect": self.effect,
            "low": self.low,
            "high": self.high,
            "min_effect": self.min_effect,
            "seeds": self.seeds,
            "examples": self.examples,
        }
        if self.floor is not None:
            rec.update(rule_verdict=self.rule_verdict, floor=self.floor)
        return rec

    def _repr_html_(self):
        colour = {
            SHOWS_UP: "#1a7f37",
            OPPOSITE: "#cf222e",
            NO_EFFECT: "#57606a",
            TOO_NOISY: "#9a6700",
            CANNOT_TEST: "#8250df",
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


def log(record: dict) -> None:
    """Append one verdict to ``$PTLM_VERDICT_LOG`` (when set), one JSON line, with
    ``cell``: the execution count of the notebook cell that made it (so the synthesis
    links each verdict to its section), where it runs in a notebook."""
    path = os.environ.get(LOG_VAR)
    if path:
        cell = _cell()
        record = record if cell is None else {**record, "cell": cell}
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def _cell() -> int | None:
    """The execution count of the IPython cell running now; None outside IPython (the
    package never imports IPython itself)."""
    if "IPython" not in sys.modules:
        return None
    ip = sys.modules["IPython"].get_ipython()
    count = getattr(ip, "execution_count", None)
    return count if isinstance(count, int) and count > 0 else None
