"""The verdict rule (ptlm_lite.verdict): one rule for every chapter's "does the claim
show up?".
"""

import doctest
import math

import numpy as np
import pytest

from ptlm_lite import verdict as V
from ptlm_lite.verdict import (
    CANNOT_TEST,
    CATEGORIES,
    NO_EFFECT,
    OPPOSITE,
    SHOWS_UP,
    TOO_NOISY,
    beats_baseline,
    majority_baseline,
    trend,
    verdict,
)


# --- t quantiles (scipy.stats)


@pytest.mark.parametrize(
    "df, want",
    [
        (1, 12.7062),
        (2, 4.3027),
        (3, 3.1824),
        (5, 2.5706),
        (10, 2.2281),
        (30, 2.0423),
        (math.inf, 1.9600),
    ],
)
def test_t_quantile_matches_the_printed_table(df, want):
    assert V.t_quantile(0.975, df) == pytest.approx(want, abs=1e-4)


def test_t_quantile_is_symmetric_and_monotone():
    assert V.t_quantile(0.5, 4) == 0.0
    assert V.t_quantile(0.025, 4) == pytest.approx(-V.t_quantile(0.975, 4))
    qs = [V.t_quantile(p, 3.7) for p in (0.6, 0.8, 0.9, 0.95, 0.99)]
    assert qs == sorted(qs)
    with pytest.raises(ValueError, match="p must be"):
        V.t_quantile(1.0, 3)
    with pytest.raises(ValueError, match="df must be"):
        V.t_quantile(0.9, 0)


def test_t_quantile_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 1.5, 2.3, 4, 7.9, 29, 200, 1e5):
        for p in (0.55, 0.9, 0.975, 0.995, 0.9995):
            assert V.t_quantile(p, df) == float(stats.t.ppf(p, df))  # bit for bit
        assert V.t_quantile(p, float("inf")) == float(stats.norm.ppf(p))


def test_welch_interval_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    a, b = [0.81, 0.84, 0.80, 0.86], [0.62, 0.60, 0.66]
    v = verdict({"a": a, "b": b}, better="a", worse="b", min_effect=0.0)
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (v.low, v.high) == pytest.approx((ci.low, ci.high), rel=1e-6)
    p = verdict(
        {"a": a[:3], "b": b}, better="a", worse="b", min_effect=0.0, paired=True
    )
    ci = stats.ttest_rel(a[:3], b).confidence_interval(0.95)
    assert (p.low, p.high) == pytest.approx((ci.low, ci.high), rel=1e-6)


# --- the rule


def test_rule_on_intervals():
    m = 0.02
    assert V.rule(0.03, 0.2, m) == SHOWS_UP
    assert V.rule(-0.2, -0.03, m) == OPPOSITE
    assert V.rule(-0.01, 0.015, m) == NO_EFFECT
    # clears zero and reaches the minimum effect: shows up (not "too noisy")
    assert V.rule(0.01, 0.05, m) == SHOWS_UP
    assert V.rule(-0.028, -0.015, m) == OPPOSITE
    # certain but smaller than what matters: does not show up
    assert V.rule(0.005, 0.015, m) == NO_EFFECT
    assert V.rule(-0.05, 0.05, m) == TOO_NOISY
    assert V.rule(-0.01, 0.05, m) == TOO_NOISY  # holds zero, reaches beyond
    # no effect measured exactly, and none required
    assert V.rule(0.0, 0.0, 0.0) == NO_EFFECT
    # an interval that touches zero does not clear it; one that touches the minimum
    # effect stays within it
    assert V.rule(0.0, 0.05, m) == TOO_NOISY
    assert V.rule(-0.05, 0.0, m) == TOO_NOISY
    assert V.rule(-m, m, m) == NO_EFFECT


KNOWN = [  # (a, b, paired, scipy's 95% interval of mean(a) - mean(b)): recomputed below
    ([0.81, 0.84, 0.80, 0.86], [0.62, 0.60, 0.66], False),
    ([0.81, 0.84, 0.80], [0.62, 0.60, 0.66], True),
    ([2.0, 2.5, 2.1, 2.2, 2.4], [2.3, 2.2, 2.6, 2.5, 2.4], True),
]


@pytest.mark.parametrize("a, b, paired", KNOWN)
def test_seed_only_intervals_are_scipys_t_tests(a, b, paired):
    stats = pytest.importorskip("scipy.stats")
    v = verdict({"a": a, "b": b}, better="a", worse="b", min_effect=0.0, paired=paired)
    test = stats.ttest_rel(a, b) if paired else stats.ttest_ind(a, b, equal_var=False)
    ci = test.confidence_interval(0.95)
    assert (v.low, v.high) == pytest.approx((ci.low, ci.high), rel=1e-6)


def test_per_example_scores_count_the_test_set():
    # every seed gets exactly the same answers: the seeds alone see no spread at all,
    # but 45 test questions still leave the accuracy uncertain
    right = np.zeros(45)
    right[:30] = 1
    other = np.zeros(45)
    other[:27] = 1
    a, b = np.tile(right, (3, 1)), np.tile(other, (3, 1))
    seeds_only = verdict(
        {"a": a.mean(1), "b": b.mean(1)},
        better="a",
        worse="b",
        min_effect=0.02,
        paired=True,
    )
    assert seeds_only.low == seeds_only.high  # the zero-width interval of issue 22
    v = verdict({"a": a, "b": b}, better="a", worse="b", min_effect=0.02, paired=True)
    assert v.effect == pytest.approx(3 / 45)
    assert v.examples == 45 and "45 test examples" in v.sentence
    assert v.table["test examples"].tolist() == [45, 45]
    # the per-example differences: 3 of 45 are +1, the rest 0
    d = right - other
    half = V.t_quantile(0.975, 44) * d.std(ddof=1) / math.sqrt(45)
    assert (v.low, v.high) == pytest.approx((3 / 45 - half, 3 / 45 + half))
    assert v.verdict == TOO_NOISY


def test_per_example_variance_adds_seeds_and_examples():
    rng = np.random.default_rng(0)
    a = (rng.random((4, 300)) < 0.7).astype(float)
    b = (rng.random((4, 300)) < 0.5).astype(float)
    v = verdict({"a": a, "b": b}, better="a", worse="b", min_effect=0.05, paired=True)
    seed_part = (a.mean(1) - b.mean(1)).var(ddof=1) / 4
    item_part = (a.mean(0) - b.mean(0)).var(ddof=1) / 300
    df = (seed_part + item_part) ** 2 / (seed_part**2 / 3 + item_part**2 / 299)
    half = V.t_quantile(0.975, df) * math.sqrt(seed_part + item_part)
    assert (v.low, v.high) == pytest.approx((v.effect - half, v.effect + half))
    with pytest.raises(ValueError, match="same test examples in every condition"):
        verdict({"a": a, "b": b[:, :200]}, better="a", worse="b", min_effect=0.05)


def test_every_verdict_is_logged_when_asked(tmp_path, monkeypatch):
    import json

    log = tmp_path / "v.jsonl"
    monkeypatch.setenv("PTLM_VERDICT_LOG", str(log))
    verdict(GOOD, better="a", worse="b", min_effect=0.01, metric="accuracy")
    beats_baseline(GOOD, 0.5, min_effect=0.01, metric="accuracy")
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["claim"] for r in rows] == [
        "a beats b on accuracy (higher is better)",
        "a beats the baseline on accuracy",
        "b beats the baseline on accuracy",
    ]
    assert rows[0]["verdict"] == SHOWS_UP and rows[0]["seeds"] == 3


def test_equal_conditions_rarely_show_up():
    # with no true difference, "shows up" (or its opposite) is a false alarm: the 95%
    # interval clears zero on one side in about 2.5% of experiments
    rng = np.random.default_rng(0)
    seen = []
    for _ in range(400):
        a, b = rng.normal(0.7, 0.02, 5), rng.normal(0.7, 0.02, 5)
        seen.append(verdict({"a": a, "b": b}, better="a", worse="b", min_effect=0.02))
    got = [v.verdict for v in seen]
    assert got.count(SHOWS_UP) <= 16 and got.count(OPPOSITE) <= 16
    assert {TOO_NOISY, NO_EFFECT} <= set(got)  # with 5 seeds and this spread, both


def test_clearly_separated_shows_up_and_reversed_shows_the_opposite():
    results = {"pre-trained": [0.81, 0.84, 0.80], "random init": [0.62, 0.60, 0.66]}
    v = verdict(
        results,
        better="pre-trained",
        worse="random init",
        min_effect=0.02,
        metric="accuracy",
    )
    assert v.verdict == SHOWS_UP and v.shows_up
    assert v.effect == pytest.approx(0.19) and v.low > 0.02
    r = verdict(
        results,
        better="random init",
        worse="pre-trained",
        min_effect=0.02,
        metric="accuracy",
    )
    assert r.verdict == OPPOSITE and r.effect == pytest.approx(-0.19)
    assert (r.low, r.high) == pytest.approx((-v.high, -v.low))


def test_lower_is_better_flips_the_direction():
    losses = {"pre-LN": [2.01, 2.03, 2.00], "post-LN": [2.40, 2.52, 2.45]}
    v = verdict(
        losses,
        better="pre-LN",
        worse="post-LN",
        min_effect=0.05,
        higher_is_better=False,
        metric="loss",
    )
    assert v.verdict == SHOWS_UP and v.effect > 0
    assert "lower is better" in v.sentence
    w = verdict(
        losses,
        better="post-LN",
        worse="pre-LN",
        min_effect=0.05,
        higher_is_better=False,
    )
    assert w.verdict == OPPOSITE


def test_constant_tiny_difference_does_not_show_up():
    v = verdict(
        {"a": [0.5, 0.5, 0.5], "b": [0.49, 0.49, 0.49]},
        better="a",
        worse="b",
        min_effect=0.02,
    )
    assert v.verdict == NO_EFFECT
    assert v.low == pytest.approx(0.01) and v.high == pytest.approx(0.01)
    # the same difference counts once it is at least what matters
    assert (
        verdict(
            {"a": [0.5] * 3, "b": [0.49] * 3}, better="a", worse="b", min_effect=0.005
        ).verdict
        == SHOWS_UP
    )


def test_small_effect_with_wide_spread_is_too_noisy():
    v = verdict(
        {"a": [0.70, 0.80, 0.75], "b": [0.68, 0.74, 0.80]},
        better="a",
        worse="b",
        min_effect=0.01,
    )
    assert v.verdict == TOO_NOISY
    assert "more seeds or more test examples" in v.sentence


def test_paired_seeds_remove_shared_noise():
    # seeds differ a lot, the same for both conditions
    base = np.array([0.55, 0.70, 0.62, 0.80, 0.66])
    results = {
        "with": base + 0.03 + np.array([0.001, -0.002, 0.0, 0.002, -0.001]),
        "without": base,
    }
    assert (
        verdict(results, better="with", worse="without", min_effect=0.01).verdict
        == TOO_NOISY
    )
    p = verdict(results, better="with", worse="without", min_effect=0.01, paired=True)
    assert p.verdict == SHOWS_UP and "paired" in p.method


def test_sentence_table_and_html_carry_the_numbers():
    v = verdict(
        {
            "pre-trained": [0.81, 0.84, 0.80],
            "random init": [0.62, 0.60, 0.66],
            "other": [0.1, 0.2],
        },
        better="pre-trained",
        worse="random init",
        min_effect=0.02,
        metric="accuracy",
        fmt="{:.3f}",
    )
    s = v.sentence
    assert (
        s.startswith("Claim: pre-trained beats random init on accuracy")
        and "Verdict: shows up." in s
        and "0.190" in s
        and "0.817" in s
        and "0.627" in s
        and "95% interval" in s
    )
    assert str(v) == s
    # the seeds counted are the compared conditions' (3), not the shown "other"'s (2)
    assert v.seeds == 3 and "over 3 seeds" in s and v.record()["seeds"] == 3
    t = v.table
    # one number per seed: no "test examples" column (it showed None in every row)
    assert list(t.columns) == ["condition", "seeds", "mean", "std over seeds"]
    assert "None" not in v._repr_html_()
    # every condition is shown
    assert t["condition"].tolist() == ["pre-trained", "random init", "other"]
    assert t.loc[0, "mean"] == pytest.approx(0.81667, abs=1e-4)
    h = v._repr_html_()
    assert "<table" in h and "Verdict: shows up" in h and "independent" in h
    assert "Only" not in s  # three seeds: no warning


def test_two_seeds_are_allowed_but_noted():
    v = verdict(
        {"a": [0.8, 0.82], "b": [0.5, 0.52]}, better="a", worse="b", min_effect=0.02
    )
    assert v.verdict == SHOWS_UP
    assert "Only 2 seeds" in v.sentence


# --- trends


SHOTS = {
    "0 shots": [0.13, 0.12, 0.14],
    "2 shots": [0.35, 0.31, 0.33],
    "8 shots": [0.61, 0.66, 0.58],
}
ORDER = ["0 shots", "2 shots", "8 shots"]


def test_trend_up_shows_up_and_down_is_the_opposite():
    v = trend(SHOTS, order=ORDER, x=[0, 2, 8], min_effect=0.05, metric="accuracy")
    assert v.verdict == SHOWS_UP and "grows" in v.sentence
    assert 0.3 < v.effect < 0.6  # the fitted rise from the first condition to the last
    down = trend(SHOTS, order=ORDER[::-1], min_effect=0.05)
    assert down.verdict == OPPOSITE
    assert (
        trend(SHOTS, order=ORDER[::-1], min_effect=0.05, increasing=False).verdict
        == SHOWS_UP
    )


def test_trend_flat_rarely_shows_up():
    rng = np.random.default_rng(1)
    got = []
    for _ in range(200):
        flat = {f"size {i}": rng.normal(0.5, 0.01, 4) for i in range(4)}
        got.append(trend(flat, order=list(flat), min_effect=0.03).verdict)
    assert got.count(SHOWS_UP) + got.count(OPPOSITE) <= 16
    flat = {"s": [0.5, 0.5, 0.5], "m": [0.5, 0.5, 0.5], "l": [0.5, 0.5, 0.5]}
    assert trend(flat, order=["s", "m", "l"], min_effect=0.01).verdict == NO_EFFECT


def test_trend_says_when_the_means_are_not_in_order():
    bumpy = {
        "a": [0.1, 0.11, 0.12],
        "b": [0.5, 0.52, 0.51],
        "c": [0.4, 0.41, 0.42],
        "d": [0.9, 0.91, 0.92],
    }
    v = trend(bumpy, order=["a", "b", "c", "d"], min_effect=0.05)
    assert v.verdict == SHOWS_UP
    assert "not move the same way at every step" in v.sentence


def test_trend_says_when_every_step_goes_against_the_claim():
    # Transformer-XL's memory: the loss rises at every step where the paper says it
    # falls. The means are in order (the wrong one): "not the same way" would be false.
    rising = {
        f"mem {m}": [5.03 + 0.003 * i, 5.04 + 0.003 * i] for i, m in enumerate("0123")
    }
    v = trend(rising, order=list(rising), increasing=False, min_effect=0.02)
    assert "against the claim at every step" in v.sentence
    assert "not move the same way" not in v.sentence
    falling = {k: [-x for x in xs] for k, xs in rising.items()}  # the claimed way
    v = trend(falling, order=list(falling), increasing=False, min_effect=0.02)
    assert "every step" not in v.sentence


def test_paired_trend():
    # per-seed offsets shared by every condition
    base = np.array([0.2, 0.5, 0.35])
    res = {
        k: base + 0.05 * i + np.array([0.001, -0.001, 0.0]) * i
        for i, k in enumerate("abcd")
    }
    v = trend(res, order=list("abcd"), min_effect=0.05, paired=True)
    assert (
        v.verdict == SHOWS_UP
        and v.effect == pytest.approx(0.15, abs=0.01)
        and "paired" in v.method
    )
    with pytest.raises(ValueError, match="as many seeds in every condition"):
        trend(
            {**res, "d": [0.1, 0.2]}, order=list("abcd"), min_effect=0.05, paired=True
        )


# --- baselines


def test_beats_baseline_against_a_number_and_against_seeds():
    res = {
        "fine-tuned": [0.62, 0.65, 0.63],
        "probe": [0.400, 0.402, 0.401],
        "tiny": [0.30, 0.50, 0.40],
    }
    t = beats_baseline(res, 0.40, min_effect=0.02)
    assert t["condition"].tolist() == list(res)
    assert t["beats baseline"].tolist() == [True, False, False]
    assert t["verdict"].tolist() == [SHOWS_UP, NO_EFFECT, TOO_NOISY]
    assert t.loc[0, "baseline"] == 0.40 and t.loc[0, "effect"] == pytest.approx(
        0.2333, abs=1e-3
    )
    s = beats_baseline(res, [0.39, 0.41, 0.40], min_effect=0.02)
    assert s["beats baseline"].tolist() == [True, False, False]
    loss = beats_baseline(
        {"model": [1.0, 1.1, 1.05]}, 2.0, min_effect=0.1, higher_is_better=False
    )
    assert loss["beats baseline"].tolist() == [True]


def test_a_baseline_table_marks_its_close_calls():
    """A row whose interval is within NEAR half-widths of another category says so,
    as a verdict's sentence does (the replication page counts how often such rows
    changed category with fresh seeds)."""
    res = {"clear": [0.62, 0.65, 0.63], "near zero": [0.41, 0.44, 0.42, 0.45]}
    t = beats_baseline(res, 0.40, min_effect=0.02)
    for i, row in t.iterrows():
        c = V.closeness(row["95% low"], row["95% high"], 0.02)
        assert row["close call"] == (c is not None and c < V.NEAR), row.to_dict()
    assert t["close call"].tolist() == [False, True]


# --- the floor: "cannot test here"

AT_FLOOR = {"pre-trained": [0.51, 0.50, 0.52], "random init": [0.50, 0.49, 0.51]}


def _vs_majority(results, **kw):
    """Pre-trained against random init, with a majority answer of 50% as the floor."""
    return verdict(
        results,
        better="pre-trained",
        worse="random init",
        min_effect=0.05,
        **{"floor": 0.5, "floor_name": "the majority answer", **kw},
    )


def test_a_comparison_at_the_floor_cannot_test_the_claim():
    v = _vs_majority(AT_FLOOR)
    assert v.verdict == CANNOT_TEST and v.rule_verdict == NO_EFFECT
    assert v.above_floor == {"pre-trained": NO_EFFECT, "random init": NO_EFFECT}
    assert (
        "cannot test here" in v.sentence and "the majority answer (0.5)" in v.sentence
    )
    assert '"does not show up"' in v.sentence  # the rule's verdict stays beside it
    rec = v.record()
    assert rec["verdict"] == CANNOT_TEST and rec["rule_verdict"] == NO_EFFECT
    assert rec["floor"] == 0.5
    # without a floor the same numbers get the rule's verdict, and the record keeps
    # its old keys (replication.json compares records made before floors existed)
    plain = _vs_majority(AT_FLOOR, floor=None)
    assert plain.verdict == NO_EFFECT and "floor" not in plain.record()
    assert CANNOT_TEST in CATEGORIES and CANNOT_TEST not in V.VERDICTS


def test_one_condition_above_the_floor_is_enough_for_the_rules_verdict():
    res = {"pre-trained": [0.71, 0.70, 0.72], "random init": [0.50, 0.49, 0.51]}
    v = _vs_majority(res)
    assert v.verdict == SHOWS_UP == v.rule_verdict
    assert v.above_floor["pre-trained"] == SHOWS_UP
    # below the floor is not above it: a "win" of one floor-level model over a model
    # below the floor is still no test of the claim
    low = {"pre-trained": [0.50, 0.51, 0.50], "random init": [0.30, 0.31, 0.29]}
    w = _vs_majority(low)
    assert w.rule_verdict == SHOWS_UP and w.verdict == CANNOT_TEST


def test_a_floor_of_measurements_and_of_a_loss():
    # a loss: lower is better, and the floor is a unigram model's loss per seed
    res = {"big": [3.0, 3.1, 3.05], "small": [3.2, 3.3, 3.25]}
    args = dict(better="big", worse="small", min_effect=0.05, higher_is_better=False)
    beaten = verdict(res, **args, floor=[4.9, 4.9, 4.91], floor_name="unigram")
    assert beaten.verdict == SHOWS_UP and set(beaten.above_floor.values()) == {SHOWS_UP}
    unbeaten = verdict(res, **args, floor=[3.0, 3.05, 3.1], floor_name="unigram")
    assert unbeaten.verdict == CANNOT_TEST and unbeaten.rule_verdict == SHOWS_UP


def test_trend_reads_x_not_the_ranks():
    # means exactly 0.1 * x at x = 0, 1, 2, 6: the least-squares line through x
    # predicts 0.6 from the first to the last; through the ranks it would say 0.57
    x = [0, 1, 2, 6]
    res = {f"x={v}": [0.1 * v - 0.01, 0.1 * v, 0.1 * v + 0.01] for v in x}
    t = trend(res, order=list(res), x=x, min_effect=0.05)
    assert t.effect == pytest.approx(0.6)
    assert trend(res, order=list(res), min_effect=0.05).effect == pytest.approx(0.57)


def test_a_falling_accuracy_is_judged_against_its_floor_upwards():
    # accuracy falls from 0.9 to 0.4, all well above chance (0.25): the claim "falls"
    # can be tested; the floor is beaten in the metric's direction, not the claim's
    falls = {"a": [0.9, 0.88, 0.91], "b": [0.6, 0.62, 0.61], "c": [0.4, 0.41, 0.39]}
    kw = dict(order=["a", "b", "c"], increasing=False, min_effect=0.05, floor=0.25)
    t = trend(falls, higher_is_better=True, floor_name="chance", **kw)
    assert t.verdict == SHOWS_UP and set(t.above_floor.values()) == {SHOWS_UP}
    # a loss that grows, all worse than the unigram floor: nothing beats the floor
    grows = {"a": [5.0, 5.1, 4.9], "b": [5.5, 5.6, 5.4]}
    t = trend(
        grows,
        order=["a", "b"],
        min_effect=0.05,
        higher_is_better=False,
        floor=4.5,
        floor_name="unigram",
    )
    assert t.verdict == CANNOT_TEST and t.rule_verdict == SHOWS_UP


def test_flags_must_be_booleans():
    # "False" is truthy: it would turn the claim around without a word
    with pytest.raises(TypeError, match="higher_is_better must be True or False"):
        verdict(GOOD, better="a", worse="b", min_effect=0.01, higher_is_better="False")
    with pytest.raises(TypeError, match="paired must be True or False"):
        beats_baseline(GOOD, 0.5, min_effect=0.01, paired=1)
    with pytest.raises(TypeError, match="increasing must be True or False"):
        trend(GOOD, order=["a", "b"], min_effect=0.01, increasing="no")
    assert verdict(
        GOOD, better="a", worse="b", min_effect=0.01, higher_is_better=np.bool_(True)
    ).verdict


def test_containers_that_iterate_the_wrong_way_are_refused():
    pd = pytest.importorskip("pandas")
    for bad in (
        {0: 0.9, 1: 0.91, 2: 0.92},
        {0.9, 0.91, 0.92},
        pd.DataFrame(np.ones((3, 4))),
    ):
        with pytest.raises(
            TypeError, match=r"results\['a'\] must be a list or an array"
        ):
            verdict(
                {"a": bad, "b": [0.5, 0.5, 0.51]},
                better="a",
                worse="b",
                min_effect=0.05,
            )
    with pytest.raises(ValueError, match="keys that read the same as text"):
        verdict(
            {1: [0.9, 0.91], "1": [0.5, 0.51]}, better="1", worse="1", min_effect=0.05
        )
    # a NumPy level is a level
    assert verdict(GOOD, better="a", worse="b", min_effect=0.01, level=np.float32(0.9))


def test_an_interval_without_width_says_so():
    v = verdict(
        {"a": [0.8, 0.8], "b": [0.7, 0.7]}, better="a", worse="b", min_effect=0.05
    )
    assert (v.low, v.high) == pytest.approx((0.1, 0.1)) and v.verdict == SHOWS_UP
    assert "has no width" in str(v) and "is wide" not in str(v)
    assert "no width" not in str(verdict(GOOD, better="a", worse="b", min_effect=0.01))
    t = trend({"a": [0.1, 0.1], "b": [0.3, 0.3]}, order=["a", "b"], min_effect=0.05)
    assert "has no width" in str(t) and "is wide" not in str(t)


def test_trend_at_the_floor():
    flat = {"0 shots": [0.25, 0.26, 0.24], "4 shots": [0.26, 0.25, 0.27]}
    t = trend(flat, order=list(flat), min_effect=0.05, floor=0.25, floor_name="chance")
    assert t.verdict == CANNOT_TEST
    up = {"0 shots": [0.25, 0.26, 0.24], "4 shots": [0.56, 0.55, 0.57]}
    assert trend(up, order=list(up), min_effect=0.05, floor=0.25).verdict == SHOWS_UP


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"floor": float("nan")}, "floor must be finite"),
        ({"floor": "majority"}, "floor must be a list of numbers"),
        ({"floor": 0.5, "floor_name": ""}, "floor_name must say what the floor is"),
    ],
)
def test_bad_floors_are_named(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        _vs_majority(AT_FLOOR, **kw)


def test_majority_baseline():
    assert majority_baseline([0, 1, 1, 2, 1]) == pytest.approx(0.6)
    torch = pytest.importorskip("torch")
    assert majority_baseline(torch.tensor([2, 2, 0, 1])) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="labels is empty"):
        majority_baseline([])


# --- bad input says which argument


GOOD = {"a": [0.8, 0.81, 0.82], "b": [0.5, 0.51, 0.52]}


@pytest.mark.parametrize(
    "results, match",
    [
        (
            {"a": [0.8, float("nan"), 0.82], "b": [0.5, 0.51]},
            r"results\['a'\] holds NaN",
        ),
        (
            {"a": [0.8, 0.81], "b": [0.5, float("inf")]},
            r"results\['b'\] holds NaN or infinite",
        ),
        ({"a": [], "b": [0.5, 0.51]}, r"results\['a'\] is empty"),
        (
            {"a": [0.8], "b": [0.5, 0.51]},
            r"results\['a'\] has 1 seed; the rule needs at least 2",
        ),
        ({"a": [[0.8, 0.9]], "b": [0.5, 0.51]}, r"results\['a'\] has 1 seed"),
        ({"a": [[[0.8]], [[0.9]]], "b": [0.5, 0.51]}, r"one row per seed \(2-D\)"),
        ({}, "results is empty"),
    ],
)
def test_bad_results(results, match):
    with pytest.raises(ValueError, match=match):
        verdict(results, better="a", worse="b", min_effect=0.01)


def test_bad_arguments():
    with pytest.raises(TypeError, match="results must be a mapping"):
        verdict([[0.8, 0.9], [0.5, 0.6]], better="a", worse="b", min_effect=0.01)
    with pytest.raises(TypeError, match=r"results\['a'\] must be a list of numbers"):
        verdict({"a": "0.8", "b": [0.5, 0.6]}, better="a", worse="b", min_effect=0.01)
    with pytest.raises(
        ValueError,
        match=r"better='c' is not a condition in results; known: \['a', 'b'\]",
    ):
        verdict(GOOD, better="c", worse="b", min_effect=0.01)
    with pytest.raises(ValueError, match="worse='B' is not a condition"):
        verdict(GOOD, better="a", worse="B", min_effect=0.01)
    with pytest.raises(ValueError, match="two different conditions"):
        verdict(GOOD, better="a", worse="a", min_effect=0.01)
    with pytest.raises(ValueError, match="min_effect must be a finite number >= 0"):
        verdict(GOOD, better="a", worse="b", min_effect=-0.1)
    with pytest.raises(TypeError, match="min_effect"):
        # no default: say what would matter
        verdict(GOOD, better="a", worse="b")
    with pytest.raises(ValueError, match="level must be"):
        verdict(GOOD, better="a", worse="b", min_effect=0.01, level=95)
    with pytest.raises(
        ValueError, match=r"paired=True needs as many seeds in results\['a'\]"
    ):
        verdict(
            {"a": [0.8, 0.81, 0.82], "b": [0.5, 0.51]},
            better="a",
            worse="b",
            min_effect=0.01,
            paired=True,
        )
    with pytest.raises(ValueError, match="order='c' is not a condition"):
        trend(GOOD, order=["a", "c"], min_effect=0.01)
    with pytest.raises(ValueError, match="order must be a list of at least two"):
        trend(GOOD, order="ab", min_effect=0.01)
    with pytest.raises(ValueError, match="order names a condition twice"):
        trend(GOOD, order=["a", "a"], min_effect=0.01)
    with pytest.raises(ValueError, match="x must increase"):
        trend(GOOD, order=["a", "b"], x=[2, 1], min_effect=0.01)
    with pytest.raises(ValueError, match="x must give one position per condition"):
        trend(GOOD, order=["a", "b"], x=[1, 2, 3], min_effect=0.01)
    with pytest.raises(ValueError, match="baseline holds NaN"):
        beats_baseline(GOOD, [0.5, float("nan")], min_effect=0.01)
    with pytest.raises(ValueError, match="baseline must be finite"):
        beats_baseline(GOOD, float("nan"), min_effect=0.01)


def test_docstring_examples_run():
    assert doctest.testmod(V, raise_on_error=False).failed == 0


def test_module_docstring_points_to_the_chapters():
    for chapter in ("transformer", "gpt", "bert", "gpt2", "gpt3"):
        assert f"chapters/{chapter}.ipynb" in V.__doc__


def test_short_says_the_verdict_and_its_numbers_in_one_line():
    v = _vs_majority(AT_FLOOR)
    line = v.short()
    assert line.startswith(f"**{CANNOT_TEST}** (effect {v.effect:+.3f}, 95% interval ")
    assert f"{v.low:+.3f} to {v.high:+.3f}, minimum effect 0.05" in line
    assert v.rule_note == f"the rule alone: {NO_EFFECT}" and line.endswith(
        f"; {v.rule_note})"
    )
    plain = _vs_majority(AT_FLOOR, floor=None)
    assert plain.rule_note == "" and "rule alone" not in plain.short()
    assert plain.short("{:.1%}").startswith(f"**{plain.verdict}** (effect ")


def _moves(low, high, step):
    """Every interval with one end of [low, high] moved by ``step`` (either way)."""
    for d in (step, -step):
        if low + d <= high:
            yield low + d, high
        if high + d >= low:
            yield low, high + d


def test_closeness_is_the_smallest_move_of_one_end_that_changes_the_verdict():
    from ptlm_lite.categories import closeness

    rng = np.random.default_rng(0)
    m = 0.05
    ends = rng.uniform(-0.2, 0.2, size=(2000, 2))
    for low, high in np.sort(ends, axis=1):
        said, half, c = V.rule(low, high, m), (high - low) / 2, closeness(low, high, m)
        below = [V.rule(lo, hi, m) for lo, hi in _moves(low, high, 0.999 * c * half)]
        above = [V.rule(lo, hi, m) for lo, hi in _moves(low, high, 1.001 * c * half)]
        assert all(v == said for v in below), (low, high, c)
        assert any(v != said for v in above), (low, high, c)
    assert closeness(0.01, 0.21, m) == pytest.approx(0.1)  # the low end, 0.01 from 0
    assert closeness(0.3, 0.3, m) is None  # no width
    # an end exactly on a boundary: 0, never -0.0 (the sentence would print "-0.00")
    assert (
        str(closeness(0.0, 0.1, m)) == "0.0" and str(closeness(-0.1, 0.0, m)) == "0.0"
    )
    assert closeness(-m, m, m) == 0.0  # within ±m, touching both ends


@pytest.mark.parametrize(
    "args, match",
    [
        ((0.2, 0.1, 0.05), "low <= high"),
        ((float("nan"), 0.1, 0.05), "low must be a finite number"),
        ((0.0, float("inf"), 0.05), "high must be a finite number"),
        ((0.0, 0.1, -0.05), "min_effect >= 0"),
        ((0.0, 0.1, True), "min_effect must be a finite number"),
    ],
)
def test_closeness_names_bad_input(args, match):
    from ptlm_lite.categories import closeness

    with pytest.raises(ValueError, match=match):
        closeness(*args)


def test_a_verdict_close_to_another_category_says_so():
    near = verdict(  # shows up, its low end 0.005 above zero: 0.09 of its half-width
        {"a": [0.62, 0.66, 0.63, 0.72, 0.64], "b": [0.60, 0.60, 0.60, 0.60, 0.60]},
        better="a",
        worse="b",
        min_effect=0.05,
    )
    far = verdict(
        {"a": [0.81, 0.84, 0.80], "b": [0.62, 0.60, 0.66]},
        better="a",
        worse="b",
        min_effect=0.02,
    )
    assert near.verdict == far.verdict == SHOWS_UP
    assert near.closeness < V.NEAR <= far.closeness
    assert "Close to another category" in near.sentence
    assert "Close to another category" not in far.sentence
    assert f"{near.closeness:.2f} of its half-width" in near.sentence
    assert near.near and not far.near
    assert "close to another category" in near.short()
    assert "close to another category" not in far.short()
