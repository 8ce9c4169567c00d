"""The intervals a suite reports, against figures worked by hand and an exact enumeration."""

import math

import pytest

from kindgi_eval.rules import mcnemar_exact, paired_change, wilson

Z2 = 1.959963984540054**2


def test_wilson_at_0_of_n_runs_from_zero_to_z2_over_n_plus_z2():
    # at p = 0 the Wilson bound is z^2 / (n + z^2): 3.8415 / 13.8415 for n = 10
    interval = wilson(0, 10)
    assert interval.estimate == 0.0 and interval.low == 0.0
    assert interval.high == pytest.approx(Z2 / (10 + Z2)) and interval.high == pytest.approx(0.277533, abs=1e-6)


def test_wilson_at_n_of_n_mirrors_0_of_n():
    interval = wilson(10, 10)
    assert interval.estimate == 1.0 and interval.high == 1.0
    assert interval.low == pytest.approx(1 - 0.277533, abs=1e-6)


def test_wilson_at_half_is_symmetric_about_one_half():
    # centre 0.5; half-width z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/(4 n^2)) = 0.263406 for 5 of 10
    interval = wilson(5, 10)
    assert (interval.low, interval.high) == pytest.approx((0.236594, 0.763406), abs=1e-6)


def test_wilson_of_an_uneven_count_by_hand():
    # 81 of 263: centre (0.30798 + 0.0073038) / 1.0146063 = 0.310744, half-width 0.055324
    interval = wilson(81, 263)
    assert (interval.low, interval.high) == pytest.approx((0.2553, 0.3662), abs=1e-4)


def test_wilson_without_trials_is_none_and_counts_outside_the_trials_are_refused():
    assert wilson(0, 0) is None
    with pytest.raises(ValueError):
        wilson(3, 2)
    with pytest.raises(ValueError):
        wilson(-1, 2)


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 5, 2 / 32),
        (5, 0, 2 / 32),
        (1, 9, 2 * 11 / 1024),
        (5, 5, 1.0),
        (0, 0, 1.0),
        (0, 1, 1.0),
        (2, 8, 2 * 56 / 1024),
    ],
)
def test_mcnemar_exact_is_twice_the_smaller_binomial_tail(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p)


def test_no_flips_is_no_change_with_an_empty_interval():
    change = paired_change(0, 0, 12)
    assert change.change == (0.0, 0.0, 0.0) and change.mcnemar_p == 1.0


def test_every_case_improved_is_a_change_of_one_and_every_case_regressed_of_minus_one():
    up = paired_change(7, 0, 7)
    assert up.change == (1.0, 1.0, 1.0)
    down = paired_change(0, 7, 7)
    assert down.change == (-1.0, -1.0, -1.0)
    assert up.mcnemar_p == down.mcnemar_p == pytest.approx(2 / 2**7)


def _exact_quantiles(improved: int, regressed: int, n: int) -> tuple[float, float]:
    """The 2.5% and 97.5% quantiles of the bootstrap distribution itself: the mean of n draws with replacement."""
    p_up, p_down = improved / n, regressed / n
    p_same = 1 - p_up - p_down
    mass: dict[float, float] = {}
    for up in range(n + 1):
        for down in range(n - up + 1):
            same = n - up - down
            ways = math.comb(n, up) * math.comb(n - up, down)
            mass[(up - down) / n] = mass.get((up - down) / n, 0.0) + ways * p_up**up * p_down**down * p_same**same
    total, low, high = 0.0, None, None
    for value in sorted(mass):
        total += mass[value]
        if low is None and total >= 0.025:
            low = value
        if high is None and total >= 0.975:
            high = value
    return low, high


def test_the_paired_bootstrap_matches_the_exact_distribution_it_samples():
    # 40 cases, 12 improved and 4 regressed: the estimate is +0.2 and each quantile lands within one step (1/40)
    change = paired_change(12, 4, 40)
    low, high = _exact_quantiles(12, 4, 40)
    assert change.change.estimate == pytest.approx(0.2)
    assert abs(change.change.low - low) <= 1 / 40 + 1e-9
    assert abs(change.change.high - high) <= 1 / 40 + 1e-9
    assert change.change.low < 0.2 < change.change.high


def test_the_paired_interval_is_narrower_than_an_unpaired_one_would_be():
    # 20 of 40 passed before and 21 now, with a single flip: pairing knows 39 cases did not move
    change = paired_change(1, 0, 40)
    unpaired_half = 1.96 * math.sqrt(2 * 0.5 * 0.5 / 40)
    assert change.change.high - change.change.low < unpaired_half


def test_the_same_counts_give_the_same_interval_every_time():
    assert paired_change(9, 3, 30) == paired_change(9, 3, 30)


def test_flips_outside_the_cases_are_refused():
    with pytest.raises(ValueError):
        paired_change(3, 3, 5)
    with pytest.raises(ValueError):
        paired_change(0, 0, 0)
