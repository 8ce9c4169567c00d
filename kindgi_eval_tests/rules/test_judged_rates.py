"""Judged rates corrected for the judge's measured error: Rogan-Gladen's estimate, Fieller's interval at adjusted
counts, its coverage by simulation, and how many more labels would halve it."""

from __future__ import annotations

import bisect
import math
import random
from itertools import accumulate

import pytest

from kindgi_eval.rules.judged_rates import METHOD, JudgeError, corrected_rate, fieller, labels_to_halve


@pytest.mark.parametrize(
    ("fails", "graded", "error", "expected"),
    [
        # the judge of the issue: right on 90% of fails and 95% of passes turns a true 2% into an observed 6.7%;
        # (0.067 - 0.05) / (0.9 - 0.05) = 0.017 / 0.85 = 0.02
        (67, 1000, JudgeError(90, 100, 95, 100), 0.02),
        # (0.1 - 0.05) / (0.9 - 0.05) = 1/17
        (3, 30, JudgeError(9, 10, 19, 20), 1 / 17),
        # a judge that agreed with every label: the corrected rate is the observed one, exactly
        (1, 30, JudgeError(2, 2, 2, 2), 1 / 30),
        (7, 9, JudgeError(3, 3, 5, 5), 7 / 9),
        # no fail observed, while the judge fails 10% of passing replies: below 0, clipped to 0
        (0, 40, JudgeError(9, 10, 9, 10), 0.0),
        # every reply failed, by a judge that misses 1 fail in 10: (1 - 0.05) / 0.85 > 1, clipped to 1
        (25, 25, JudgeError(9, 10, 19, 20), 1.0),
        # every reply failed, by a judge that agreed with every label: 1
        (25, 25, JudgeError(4, 4, 4, 4), 1.0),
        # no reply failed, by a judge that agreed with every label: 0
        (0, 25, JudgeError(4, 4, 4, 4), 0.0),
    ],
)
def test_the_estimate_is_rogan_gladen_clipped_to_0_and_1(
    fails: int, graded: int, error: JudgeError, expected: float
) -> None:
    rate = corrected_rate(fails, graded, error)
    assert rate.estimate == pytest.approx(expected, abs=1e-12)
    assert rate.low is not None and rate.high is not None
    assert rate.low <= rate.estimate <= rate.high


def test_a_judge_that_agreed_with_every_label_gives_the_observed_rate_exactly() -> None:
    assert corrected_rate(1, 30, JudgeError(2, 2, 2, 2)).estimate == 1 / 30


def test_the_interval_solves_fiellers_quadratic_at_adjusted_counts() -> None:
    # With z**2 = 2 the graded replies get one pass and one fail added, as the labels always do:
    # p = (3 + 1) / (8 + 2) = 0.4, var 0.4 * 0.6 / 10 = 0.024
    # se = (3 + 1) / (3 + 2) = 0.8, var 0.8 * 0.2 / 5 = 0.032
    # sp = (8 + 1) / (8 + 2) = 0.9, var 0.9 * 0.1 / 10 = 0.009
    # top = 0.4 + 0.9 - 1 = 0.3, bottom = 0.8 + 0.9 - 1 = 0.7
    # a = 0.49 - 2 * (0.009 + 0.032) = 0.408; b = 0.21 - 2 * 0.009 = 0.192; c = 0.09 - 2 * (0.024 + 0.009) = 0.024
    # r = (0.192 -+ sqrt(0.192**2 - 0.408 * 0.024)) / 0.408
    root = math.sqrt(0.192**2 - 0.408 * 0.024)
    low, high = fieller(3, 8, JudgeError(3, 3, 8, 8), z=math.sqrt(2))
    assert (low, high) == pytest.approx(((0.192 - root) / 0.408, (0.192 + root) / 0.408), abs=1e-12)
    assert (round(low, 4), round(high, 4)) == (0.0673, 0.8739)


def test_two_labels_of_each_that_all_agreed_prove_nothing_about_the_rate() -> None:
    # Two fail labels caught out of two leave a sensitivity as low as a coin's within reach: any rate fits.
    rate = corrected_rate(1, 30, JudgeError(2, 2, 2, 2))
    assert (rate.low, rate.high) == (0.0, 1.0)
    # the interval exists even at zero observed spread: a naive delta method would give zero width here
    assert rate.note == (
        "Corrected for the judge's sensitivity 1.00 (2 of 2 fail labels) and specificity 1.00 (2 of 2 pass labels)."
    )


def test_more_labels_narrow_the_interval() -> None:
    widths = [corrected_rate(3, 100, JudgeError(m, m, m, m)) for m in (5, 10, 25, 50)]
    assert [round(r.high - r.low, 3) for r in widths] == sorted(
        (round(r.high - r.low, 3) for r in widths), reverse=True
    )
    assert widths[-1].high - widths[-1].low < 0.15


@pytest.mark.parametrize(
    ("error", "note"),
    [
        # se + sp = 0.5 + 0.5 = 1: no better than a coin
        (
            JudgeError(1, 2, 1, 2),
            "No correction exists: the judge's sensitivity (0.50) plus specificity (0.50) is at most 1, "
            "no better than a coin on the labels.",
        ),
        # se + sp = 0 + 0.75 < 1
        (
            JudgeError(0, 2, 3, 4),
            "No correction exists: the judge's sensitivity (0.00) plus specificity (0.75) is at most 1, "
            "no better than a coin on the labels.",
        ),
        (
            JudgeError(0, 0, 3, 4),
            "No graded item labelled fail, so the judge's error is not measured and no correction exists.",
        ),
        (
            JudgeError(2, 2, 0, 0),
            "No graded item labelled pass, so the judge's error is not measured and no correction exists.",
        ),
    ],
)
def test_a_correction_that_does_not_exist_is_no_number(error: JudgeError, note: str) -> None:
    assert corrected_rate(3, 30, error) == (None, None, None, note)
    assert labels_to_halve(3, 30, error) is None


def test_nothing_graded_is_no_rate() -> None:
    assert corrected_rate(0, 0, JudgeError(2, 2, 2, 2)) == (
        None,
        None,
        None,
        "Nothing graded, so there is no rate to correct.",
    )


def test_counts_out_of_range_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="between 0 and graded"):
        corrected_rate(4, 3, JudgeError(2, 2, 2, 2))


def test_the_method_is_named() -> None:
    assert METHOD == "rogan-gladen, fieller 95%"


def _binomial(n: int, p: float):
    """A sampler of Binomial(n, p) by its inverse cumulative distribution: one uniform draw and a bisection each."""
    cumulative = list(accumulate(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)))
    return lambda draw: min(n, bisect.bisect_left(cumulative, draw.random() * cumulative[-1]))


@pytest.mark.parametrize(
    ("rate", "sensitivity", "specificity", "fail_labels", "pass_labels", "graded"),
    [
        (0.02, 0.90, 0.95, 2, 2, 20),  # the judge, the fewest labels a group calibrates on
        (0.02, 0.90, 0.95, 25, 25, 500),  # the same judge, the most labels and replies a tenant has
        (0.10, 0.90, 0.95, 1, 3, 100),  # four labels, one of them fail
        (0.30, 0.80, 0.80, 5, 5, 100),  # a poor judge
        (0.50, 0.99, 0.99, 2, 48, 20),  # a near-perfect judge, labels lopsided toward fail
        (0.10, 0.95, 0.70, 48, 2, 20),  # ... and toward pass
        (0.90, 0.70, 0.90, 25, 25, 500),  # a high rate, a judge that misses fails
        (0.00, 0.90, 0.95, 10, 40, 500),  # nothing truly fails
    ],
)
def test_the_interval_covers_the_true_rate_in_at_least_93_percent_of_runs(
    rate: float, sensitivity: float, specificity: float, fail_labels: int, pass_labels: int, graded: int
) -> None:
    # 2,000 simulated runs: the judge's error is measured on fresh labels and the rate on fresh replies each time.
    # Where the labels happen to show the judge no better than a coin, the correction does not exist and claims
    # nothing (no number is shown); coverage is counted over the runs that give an interval.
    draw = random.Random(56)
    observed = rate * sensitivity + (1 - rate) * (1 - specificity)
    caught, cleared, failed = (
        _binomial(fail_labels, sensitivity),
        _binomial(pass_labels, specificity),
        _binomial(graded, observed),
    )
    covered = shown = 0
    for _ in range(2000):
        error = JudgeError(caught(draw), fail_labels, cleared(draw), pass_labels)
        result = corrected_rate(failed(draw), graded, error)
        if result.low is None:
            assert error.sensitivity + error.specificity <= 1  # type: ignore[operator]
            continue
        shown += 1
        covered += result.low <= rate <= result.high  # type: ignore[operator]
    assert shown >= 1500
    assert covered / shown >= 0.93, f"covered {covered} of {shown}"


@pytest.mark.parametrize(
    ("fails", "graded", "error", "needed"),
    [
        # the golden set's groups: two labels of each, all agreed with, one reply in 30 failed: the interval is all of
        # [0, 1]; two more fail labels bring it under half
        (1, 30, JudgeError(2, 2, 2, 2), (0, 2)),
        # 500 replies at a 1% rate and 25 labels of each: the pass labels pin the false fails, which decide a low rate
        (5, 500, JudgeError(25, 25, 25, 25), (117, 6)),
    ],
)
def test_how_many_more_labels_halve_the_interval(
    fails: int, graded: int, error: JudgeError, needed: tuple[int, int]
) -> None:
    advice = labels_to_halve(fails, graded, error)
    assert advice is not None and (advice.pass_labels, advice.fail_labels) == needed
    now = corrected_rate(fails, graded, error)
    more = JudgeError(
        error.caught + needed[1],
        error.fail_labels + needed[1],
        error.cleared + needed[0],
        error.pass_labels + needed[0],
    )
    halved = corrected_rate(fails, graded, more)
    assert halved.high - halved.low <= (now.high - now.low) / 2  # type: ignore[operator]
    if needed[0] + needed[1] > 1:  # and one label fewer, split the same way at best, does not
        fewer = [
            JudgeError(error.caught + f, error.fail_labels + f, error.cleared + p, error.pass_labels + p)
            for f in range(needed[0] + needed[1])
            for p in [needed[0] + needed[1] - 1 - f]
        ]
        assert all(
            corrected_rate(fails, graded, e).high - corrected_rate(fails, graded, e).low > (now.high - now.low) / 2  # type: ignore[operator]
            for e in fewer
        )
    assert advice.note == (
        f"{sum(needed)} more labelled items ({needed[0]} labelled pass, {needed[1]} labelled fail) would halve "
        "the corrected interval, at today's rates."
    )


@pytest.mark.parametrize(
    ("fails", "note"),
    [
        # none of 500 replies failed, by a judge measured to fail 10% of passing replies: the correction stops at 0
        (
            0,
            " The observed rate (0.00) is below the share of passing replies this judge fails (0.10), so the correction "
            "stops at 0.",
        ),
        # all of them failed, by a judge measured to fail 90% of failing replies: it stops at 1
        (
            500,
            " The observed rate (1.00) is above the share of failing replies this judge fails (0.90), so the correction "
            "stops at 1.",
        ),
    ],
)
def test_a_rate_the_measured_judge_cannot_have_seen_says_where_the_correction_stops(fails: int, note: str) -> None:
    error = JudgeError(90, 100, 90, 100)
    rate = corrected_rate(fails, 500, error)
    assert rate.estimate == rate.low == rate.high == fails / 500
    assert rate.note.endswith(note)
    assert labels_to_halve(fails, 500, error) == (0, 0, "The interval is a single point; more labels cannot narrow it.")


def test_labels_alone_cannot_halve_an_interval_the_graded_replies_keep_wide() -> None:
    advice = labels_to_halve(3, 30, JudgeError(9, 10, 19, 20))
    assert advice == (
        None,
        None,
        "More labels alone cannot halve it: its 30 graded replies keep it wider; only more graded replies can.",
    )
