"""How often does the verdict rule say the wrong thing? Measured by simulation, on
synthetic experiments whose true effect is known (``book/replication.ipynb``).

A synthetic experiment is the book's usual one: two conditions (say pre-trained and
random weights) each run over ``seeds`` seeds, every run scored right or wrong on the
same ``examples`` test questions. Question ``j`` has its own difficulty, seed ``s``
its own luck (shared by both conditions: a paired design) plus a little of each
condition's own, and the better condition adds the true effect ``effect`` to the chance
of a right answer, more on some questions than on others (``v_j``: what the better
condition happens to know, the same on every seed)::

    P(right | worse)  = p_j + u_s + e_(s,2)
    P(right | better) = p_j + u_s + e_(s,1) + effect + v_j
    p_j ~ U(0.35, 0.55),  u_s ~ N(0, seed_sd),  e_(s,k) ~ N(0, seed_sd / 2),
    v_j ~ N(0, item_sd)   (each clipped symmetrically, so its mean stays 0)

The probabilities never leave [0, 1], so the true difference in accuracy, over the
population of questions, is exactly ``effect``. A test set of a few questions can still
favour one condition on every seed alike: only an interval that counts the test
examples sees that. Each simulated experiment goes through the rule of
:mod:`ptlm_lite.verdict` (the same code the chapters call), and :func:`rates` counts
how often each verdict comes out, and how often two independent runs of the same
experiment (a replication with fresh seeds and a fresh test set) agree.
"""

from __future__ import annotations

import numpy as np

from . import verdict as V
from .intervals import contrast

__all__ = ["simulate", "rates", "old_rule"]


def old_rule(low: float, high: float, min_effect: float) -> str:
    """The rule the book used before (an interval over seeds only): shows up only when
    the whole interval lies beyond ``min_effect``; "too noisy" whenever it straddles a
    boundary. Kept to show what changed."""
    if low > min_effect:
        return V.SHOWS_UP
    if high < -min_effect:
        return V.OPPOSITE
    if -min_effect <= low and high <= min_effect:
        return V.NO_EFFECT
    return V.TOO_NOISY


def simulate(
    effect: float,
    *,
    min_effect: float = 0.05,
    seeds: int = 3,
    examples: int = 200,
    seed_sd: float = 0.03,
    item_sd: float = 0.1,
    reps: int = 1000,
    method: str = "seeds and examples",
    rng: int = 0,
) -> list[str]:
    """The verdicts of ``reps`` simulated experiments with true effect ``effect``.

    ``method``: ``"seeds and examples"`` (the book's rule: per-example scores, paired
    seeds) or ``"seeds only"`` (the interval over per-seed accuracies alone, with the
    old rule).
    """
    if method not in ("seeds and examples", "seeds only"):
        raise ValueError(
            f"method must be 'seeds and examples' or 'seeds only', got {method!r}"
        )
    if not abs(effect) <= 0.1:
        raise ValueError(
            f"effect must be within ±0.1 (a probability shift), got {effect}"
        )
    g = np.random.default_rng(rng)
    out = []
    for _ in range(reps):
        p = g.uniform(0.35, 0.55, examples)  # (N,) question difficulty
        u = np.clip(g.normal(0, seed_sd, (seeds, 1)), -0.1, 0.1)  # shared seed luck
        e = np.clip(g.normal(0, seed_sd / 2, (2, seeds, 1)), -0.05, 0.05)
        v = np.clip(g.normal(0, item_sd, examples), -0.2, 0.2)  # (N,) per question
        gain = np.stack([effect + v, np.zeros(examples)])[:, None, :]  # (2, 1, N)
        prob = np.clip(
            p + u + e + gain, 0.0, 1.0
        )  # (2, S, N); bites only if effect < 0
        right = (g.random(prob.shape) < prob).astype(float)
        # the book's rule reads every answer; the old one per-seed accuracies (2, S)
        old = method == "seeds only"
        scores = right.mean(axis=2) if old else right
        _, lo, hi, _, _ = contrast(list(scores), [1, -1], True, 0.95, "ab")
        out.append((old_rule if old else V.rule)(lo, hi, min_effect))
    return out


def rates(effect: float, *, reps: int = 1000, **experiment) -> dict:
    """The share of each verdict over ``reps`` experiments, and ``"replicates"``: the
    share of pairs of independent experiments (fresh seeds, fresh test set) that reach
    the same verdict. ``experiment``: :func:`simulate`'s other arguments."""
    got = simulate(effect, reps=2 * reps, **experiment)
    first, second = got[:reps], got[reps:]
    out = {v: first.count(v) / reps for v in V.VERDICTS}
    out["replicates"] = float(np.mean([a == b for a, b in zip(first, second)]))
    out["flips"] = float(
        np.mean([{a, b} == {V.SHOWS_UP, V.OPPOSITE} for a, b in zip(first, second)])
    )
    return out
