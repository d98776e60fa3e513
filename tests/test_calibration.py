"""The verdict rule's calibration (ptlm_lite.calibration, book/replication.ipynb): on
synthetic experiments with a known true effect, false alarms are rare, real effects of
twice the minimum are found when the test set is large enough, and two runs never flip
between "shows up" and "the opposite"."""

import pytest

from ptlm_lite import calibration as C
from ptlm_lite.verdict import NO_EFFECT, OPPOSITE, SHOWS_UP


def test_no_effect_rarely_shows_up():
    r = C.rates(0.0, seeds=3, examples=200, reps=300)
    assert r[SHOWS_UP] <= 0.05 and r[OPPOSITE] <= 0.05
    assert r["flips"] == 0


def test_twice_the_minimum_is_found_with_enough_examples():
    r = C.rates(0.1, min_effect=0.05, seeds=5, examples=1000, reps=200)
    assert r[SHOWS_UP] >= 0.9 and r["replicates"] >= 0.8 and r["flips"] == 0


def test_a_precise_null_does_not_show_up():
    r = C.rates(0.0, min_effect=0.05, seeds=5, examples=2000, seed_sd=0.01, reps=200)
    assert r[NO_EFFECT] >= 0.8


def test_the_simulation_is_seeded_and_checks_its_arguments():
    assert C.simulate(0.05, reps=20, rng=3) == C.simulate(0.05, reps=20, rng=3)
    with pytest.raises(ValueError, match="method must be"):
        C.simulate(0.0, method="bootstrap")
    with pytest.raises(ValueError, match="effect must be within"):
        C.simulate(0.5)
