"""The judged rates of the `run_metrics` stage: per calibration group and criterion, the share of graded replies the
judge failed and that share corrected for the judge's measured error; per run, the pass rate corrected the same way.
Rows in, rows out."""

from __future__ import annotations

from collections.abc import Sequence

from kindgi_eval.rules import CORRECTION_METHOD, CorrectedRate, JudgeError, corrected_rate, wilson
from kindgi_eval.store import CalibrationRow, CriterionRow, MetricRow, StatusRow

JUDGED_FAIL_RATE = "judged_fail_rate"
"""The share of the replies the judge graded on a criterion (or a group's criteria) that it failed."""
JUDGED_FAIL_RATE_CORRECTED = "judged_fail_rate_corrected"
"""That share corrected for the judge's sensitivity and specificity on the group's labels."""
PASS_RATE_CORRECTED = "pass_rate_corrected"
"""(passed + judged-pass) / all cases, with the cases whose status rests on a judge verdict corrected."""
OBSERVED_METHOD = "wilson 95%"
"""The interval of an observed judged rate: the replies graded alone, as if the judge never erred."""
JUDGED_RATES = (JUDGED_FAIL_RATE, JUDGED_FAIL_RATE_CORRECTED, PASS_RATE_CORRECTED)
"""The names of the figures every judged run adds to its kind's."""


def judged_rate_rows(statuses: Sequence[StatusRow], calibration: Sequence[CalibrationRow]) -> list[MetricRow]:
    """A judged run's rates: per calibration group (in order) its observed and corrected judged-fail rate, then the same
    per criterion the judge graded in it, and the corrected pass rate; none for a run without a judge."""
    if not calibration:
        return []
    verdicts = [c for s in statuses for c in s.criteria if c.verdict != "ungraded"]
    rows = []
    for group in calibration:
        graded = [c for c in verdicts if c.group == group.group]
        rows += _rates(graded, group.judge_error, group.group, None)
        for criterion in dict.fromkeys(c.criterion for c in graded):
            rows += _rates([c for c in graded if c.criterion == criterion], group.judge_error, group.group, criterion)
    return [*rows, pass_rate_row(statuses, calibration)]


def _rates(graded: Sequence[CriterionRow], error: JudgeError, group: str, criterion: str | None) -> list[MetricRow]:
    fails, n = sum(c.verdict == "fail" for c in graded), len(graded)
    observed = wilson(fails, n)
    corrected = corrected_rate(fails, n, error)
    about = {"group": group, "criterion": criterion, "count": fails, "out_of": n}
    return [
        MetricRow(
            name=JUDGED_FAIL_RATE,
            value=observed.estimate if observed else None,
            low=observed.low if observed else None,
            high=observed.high if observed else None,
            method=OBSERVED_METHOD,
            note=None if observed else "Nothing graded.",
            **about,
        ),
        MetricRow(
            name=JUDGED_FAIL_RATE_CORRECTED,
            value=corrected.estimate,
            low=corrected.low,
            high=corrected.high,
            method=CORRECTION_METHOD,
            note=corrected.note,
            **about,
        ),
    ]


def pass_rate_row(statuses: Sequence[StatusRow], calibration: Sequence[CalibrationRow]) -> MetricRow:
    """The suite's pass rate with the cases whose status rests on a judge verdict corrected for the judge's error.

    A case rests on the judge when its assertions held, the judge graded one of its criteria and no review entry of it
    was left ungraded (else it is `reviewed` whatever the judge says); it passes unless a verdict failed. The rest keep
    their status: failed by an assertion, or passed with no verdict. A judged case counts as one verdict of the judge,
    whose error is that of the calibrated groups' labels together."""
    judged = [s for s in statuses if s.status != "failed" and _rests_on_the_judge(s.criteria)]
    judged_fails = sum(any(c.verdict == "fail" for c in s.criteria) for s in judged)
    passes = sum(s.status in ("passed", "judged-pass") for s in statuses)
    cases = len(statuses)
    about = {"name": PASS_RATE_CORRECTED, "method": CORRECTION_METHOD, "count": passes, "out_of": cases}
    if not cases:
        return MetricRow(value=None, note="No cases.", **about)
    if not judged:
        rate = passes / cases
        return MetricRow(
            value=rate,
            low=rate,
            high=rate,
            note="No case's status rests on a judge verdict, so there is no judge error to correct.",
            **about,
        )
    counted = [c for c in calibration if c.calibrated]
    error = JudgeError(
        *(sum(getattr(c, f) for c in counted) for f in ("caught", "fails_graded", "cleared", "passes_graded"))
    )
    rate = corrected_rate(judged_fails, len(judged), error)
    return MetricRow(**_as_passes(rate, passes - (len(judged) - judged_fails), len(judged), cases), **about)


def _as_passes(rate: CorrectedRate, kept: int, judged: int, cases: int) -> dict:
    """The judged cases' corrected fail rate as the run's pass rate: the `kept` passes no judge decided, and the judged
    cases that truly pass."""
    note = f"{judged} of {cases} cases rest on a judge verdict. {rate.note}"
    if rate.estimate is None or rate.low is None or rate.high is None:
        return {"value": None, "note": note}
    return {
        "value": (kept + judged * (1 - rate.estimate)) / cases,
        "low": (kept + judged * (1 - rate.high)) / cases,
        "high": (kept + judged * (1 - rate.low)) / cases,
        "note": note,
    }


def _rests_on_the_judge(criteria: Sequence[CriterionRow]) -> bool:
    """Whether the judge decided the case: it graded a criterion, and left no review entry ungraded."""
    graded = any(c.verdict != "ungraded" for c in criteria)
    return graded and not any(c.source == "review" and c.verdict == "ungraded" for c in criteria)
