"""Judged rates corrected for the judge's measured error: the share of graded replies the judge failed, corrected by
the judge's sensitivity and specificity on the hand labels, with a 95% interval that counts both samples. Pure
arithmetic on counts.

The correction is Rogan and Gladen's: a judge that fails a truly failing reply with probability `se` (sensitivity) and
passes a truly passing one with probability `sp` (specificity) shows the observed fail rate
`p = rate * se + (1 - rate) * (1 - sp)`, so `rate = (p + sp - 1) / (se + sp - 1)`, clipped to [0, 1]. It exists only
where `se + sp > 1`: a judge no better than a coin on the labels says nothing about the replies.

The interval is Fieller's for that ratio: the rates `r` with `(p + sp - 1 - r * (se + sp - 1))**2 <= z**2 * var`,
where `var` is the variance of the left side's estimate from the three binomial samples (graded replies, fail labels,
pass labels). Unlike the delta method's symmetric interval it keeps the skew a ratio has when the denominator (how much
better than a coin the judge is) is uncertain, and when the labels cannot show the judge better than a coin it is
unbounded: all of [0, 1]. Its variances are taken at adjusted counts, so that a judge that agreed with all of two
labels is not taken to be known exactly: one pass and one fail added to each label sample (Laplace), z**2 / 2 of each
to the graded replies (Agresti and Coull). `kindgi_eval_tests/rules/test_judged_rates.py` checks its coverage by
simulation.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from kindgi_eval.rules.intervals import Z95

METHOD = "rogan-gladen, fieller 95%"
"""How a corrected rate and its interval are computed, as `run_metrics.method` names it."""
MOST_LABELS = 10_000
"""The most labels `labels_to_halve` searches for; a group that needs more is told so."""


class JudgeError(NamedTuple):
    """The judge's majority verdicts against the hand labels of its calibration items (ungraded items left out)."""

    caught: float
    """Items labelled fail that the judge failed."""
    fail_labels: float
    """Items labelled fail that the judge graded."""
    cleared: float
    """Items labelled pass that the judge passed."""
    pass_labels: float
    """Items labelled pass that the judge graded."""

    @property
    def sensitivity(self) -> float | None:
        """The share of fail labels the judge failed; None without one."""
        return self.caught / self.fail_labels if self.fail_labels else None

    @property
    def specificity(self) -> float | None:
        """The share of pass labels the judge passed; None without one."""
        return self.cleared / self.pass_labels if self.pass_labels else None


class CorrectedRate(NamedTuple):
    """A judged-fail rate corrected for the judge's error, and its 95% interval; all None (with the note saying why)
    when there is nothing to correct or the correction does not exist."""

    estimate: float | None
    low: float | None
    high: float | None
    note: str
    """What the figure is, or why there is none, in a sentence for the summary's reader."""


def corrected_rate(fails: int, graded: int, error: JudgeError) -> CorrectedRate:
    """The rate of truly failing replies among `graded` replies of which the judge failed `fails`, given its `error`."""
    if not 0 <= fails <= graded:
        raise ValueError(f"fails must be between 0 and graded, not {fails} of {graded}")
    if not graded:
        return CorrectedRate(None, None, None, "Nothing graded, so there is no rate to correct.")
    se, sp = error.sensitivity, error.specificity
    if se is None or sp is None:
        missing = "fail" if se is None else "pass"
        return CorrectedRate(
            None,
            None,
            None,
            f"No graded item labelled {missing}, so the judge's error is not measured and no correction exists.",
        )
    if se + sp <= 1:
        return CorrectedRate(
            None,
            None,
            None,
            f"No correction exists: the judge's sensitivity ({se:.2f}) plus specificity "
            f"({sp:.2f}) is at most 1, no better than a coin on the labels.",
        )
    observed = fails / graded
    false_fails = (
        error.pass_labels - error.cleared
    ) / error.pass_labels  # 1 - sp, exactly 0 for a judge that passed every pass label
    estimate = _clipped((observed - false_fails) / (se - false_fails))
    low, high = fieller(fails, graded, error)
    note = (
        f"Corrected for the judge's sensitivity {se:.2f} ({error.caught:g} of {error.fail_labels:g} fail labels) and "
        f"specificity {sp:.2f} ({error.cleared:g} of {error.pass_labels:g} pass labels)."
    )
    if observed < false_fails:
        note += (
            f" The observed rate ({observed:.2f}) is below the share of passing replies this judge fails "
            f"({false_fails:.2f}), so the correction stops at 0."
        )
    elif observed > se:
        note += (
            f" The observed rate ({observed:.2f}) is above the share of failing replies this judge fails ({se:.2f}), "
            "so the correction stops at 1."
        )
    return CorrectedRate(estimate, min(low, estimate), max(high, estimate), note)


def fieller(fails: float, graded: float, error: JudgeError, z: float = Z95) -> tuple[float, float]:
    """The interval of the corrected rate at adjusted counts (see the module's docstring), clipped to [0, 1]; all of
    [0, 1] where the labels cannot show the judge better than a coin. Counts may be fractions (`labels_to_halve` asks
    about labels not yet written, at today's rates)."""
    z2 = z * z
    p, var_p = _adjusted(fails, graded, z2 / 2)
    se, var_se = _adjusted(error.caught, error.fail_labels, 1.0)
    sp, var_sp = _adjusted(error.cleared, error.pass_labels, 1.0)
    top, bottom = p + sp - 1, se + sp - 1
    # (top - r * bottom)**2 <= z2 * (var_p + (1 - r)**2 * var_sp + r**2 * var_se), as a * r**2 - 2 * b * r + c <= 0
    a = bottom * bottom - z2 * (var_sp + var_se)
    b = top * bottom - z2 * var_sp
    c = top * top - z2 * (var_p + var_sp)
    if a <= 0:  # the denominator is not shown to be above 0: any rate fits
        return 0.0, 1.0
    root = math.sqrt(max(0.0, b * b - a * c))  # never below 0 but by rounding: the estimate itself always fits
    return _clipped((b - root) / a), _clipped((b + root) / a)


class LabelsNeeded(NamedTuple):
    """How many more labelled items would halve a corrected interval's width, at today's rates."""

    pass_labels: int | None
    """More items labelled pass; None when labels alone cannot halve it."""
    fail_labels: int | None
    """More items labelled fail; None when labels alone cannot halve it."""
    note: str
    """The advice in a sentence."""


def labels_to_halve(fails: int, graded: int, error: JudgeError) -> LabelsNeeded | None:
    """The fewest more labelled items, split between pass and fail labels, whose sensitivity and specificity stay
    today's and that narrow the corrected interval to half its width; None where there is no interval."""
    rate = corrected_rate(fails, graded, error)
    if rate.low is None or rate.high is None:
        return None
    target = (rate.high - rate.low) / 2
    if target <= 0:
        return LabelsNeeded(0, 0, "The interval is a single point; more labels cannot narrow it.")
    se, sp = error.sensitivity or 0.0, error.specificity or 0.0

    def width(more_pass: float, more_fail: float) -> float:
        more = JudgeError(
            se * (error.fail_labels + more_fail),
            error.fail_labels + more_fail,
            sp * (error.pass_labels + more_pass),
            error.pass_labels + more_pass,
        )
        shown = corrected_rate(fails, graded, more)  # as it would be shown: the estimate always inside
        assert (
            shown.low is not None and shown.high is not None
        )  # today's sensitivity and specificity admit a correction
        return shown.high - shown.low

    if width(1e9, 1e9) > target:
        return LabelsNeeded(
            None,
            None,
            f"More labels alone cannot halve it: its {graded} graded replies keep it wider; "
            "only more graded replies can.",
        )

    def best_split(total: int) -> tuple[float, int]:
        """The narrowest width `total` more labels give, and how many of them are fail labels."""
        step = max(1, total // 40)
        coarse = min((width(total - f, f), f) for f in range(0, total + 1, step))
        around = range(max(0, coarse[1] - step), min(total, coarse[1] + step) + 1)
        return min((width(total - f, f), f) for f in around)

    if best_split(MOST_LABELS)[0] > target:
        return LabelsNeeded(None, None, f"More than {MOST_LABELS} more labels would be needed to halve it.")
    low, high = 0, MOST_LABELS  # best_split(high) reaches the target; best_split(low) does not
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if best_split(middle)[0] <= target else (middle, high)
    fail = best_split(high)[1]
    return LabelsNeeded(
        high - fail,
        fail,
        f"{high} more {_items(high)} ({high - fail} labelled pass, {fail} labelled fail) would "
        "halve the corrected interval, at today's rates.",
    )


def _adjusted(successes: float, trials: float, added: float) -> tuple[float, float]:
    """The proportion with `added` successes and `added` failures more, and its binomial variance at those counts."""
    share = (successes + added) / (trials + 2 * added)
    return share, share * (1 - share) / (trials + 2 * added)


def _items(n: int) -> str:
    return "labelled item" if n == 1 else "labelled items"


def _clipped(rate: float) -> float:
    return min(1.0, max(0.0, rate))
