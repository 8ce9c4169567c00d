"""A judged run's rates as `run_metrics` rows: per group and criterion observed and corrected, and the corrected pass
rate, which corrects only the cases whose status rests on a judge verdict."""

from __future__ import annotations

import pytest

from kindgi_eval.rules import JudgeError, corrected_rate
from kindgi_eval.steps.run_metrics import judged_rate_rows, pass_rate_row
from kindgi_eval.store import CalibrationRow, CriterionRow, StatusRow


def criterion(
    verdict: str, group: str = "implicit_concession", name: str | None = None, source: str = "rubric"
) -> CriterionRow:
    return CriterionRow(
        source=source,
        criterion=name or group,
        group=group,
        verdict=verdict,
        split=False,
        votes=[],
        evidence="",
        reason="",
    )


def status(case_id: str, status_: str, *criteria: CriterionRow) -> StatusRow:
    return StatusRow(
        case_id=case_id,
        status=status_,
        failures=["broke"] if status_ == "failed" else [],
        messages=["hi"],
        escalate=False,
        reason=None,
        latency_ms=1.0,
        error=None,
        review=[c.criterion for c in criteria if c.source == "review"],
        criteria=list(criteria),
    )


def group(name: str, error: JudgeError, calibrated: bool = True) -> CalibrationRow:
    caught, fails, cleared, passes = (int(n) for n in error)
    return CalibrationRow(
        group=name,
        agreement=1.0,
        kappa=1.0,
        items=fails + passes,
        pass_labels=passes,
        fail_labels=fails,
        calibrated=calibrated,
        note="",
        judge="openai:j",
        sensitivity=error.sensitivity,
        caught=caught,
        fails_graded=fails,
        specificity=error.specificity,
        cleared=cleared,
        passes_graded=passes,
    )


PERFECT = JudgeError(3, 3, 3, 3)


def test_a_run_without_a_judge_has_no_judged_rates() -> None:
    assert judged_rate_rows([status("a", "passed")], []) == []


def test_each_group_and_each_criterion_gets_its_observed_and_corrected_rate() -> None:
    statuses = [
        status("a", "judged-fail", criterion("fail"), criterion("fail", "free_text", "polite", "review")),
        status(
            "b",
            "judged-pass",
            criterion("pass"),
            criterion("pass", "free_text", "polite", "review"),
            criterion("pass", "free_text", "short", "review"),
        ),
        status("c", "passed", criterion("pass"), criterion("ungraded", "answers_the_question")),
    ]
    calibration = [
        group("implicit_concession", PERFECT),
        group("free_text", JudgeError(9, 10, 19, 20)),
        group("answers_the_question", PERFECT, calibrated=False),
    ]
    rows = judged_rate_rows(statuses, calibration)
    table = [(r.name, r.group, r.criterion, r.count, r.out_of, r.value) for r in rows]
    assert table == [
        ("judged_fail_rate", "implicit_concession", None, 1, 3, 1 / 3),
        ("judged_fail_rate_corrected", "implicit_concession", None, 1, 3, 1 / 3),
        ("judged_fail_rate", "implicit_concession", "implicit_concession", 1, 3, 1 / 3),
        ("judged_fail_rate_corrected", "implicit_concession", "implicit_concession", 1, 3, 1 / 3),
        # (1/3 - 0.05) / 0.85 and (0 - 0.05) / 0.85 clipped to 0
        ("judged_fail_rate", "free_text", None, 1, 3, 1 / 3),
        ("judged_fail_rate_corrected", "free_text", None, 1, 3, pytest.approx((1 / 3 - 0.05) / 0.85)),
        ("judged_fail_rate", "free_text", "polite", 1, 2, 0.5),
        ("judged_fail_rate_corrected", "free_text", "polite", 1, 2, pytest.approx((0.5 - 0.05) / 0.85)),
        ("judged_fail_rate", "free_text", "short", 0, 1, 0.0),
        ("judged_fail_rate_corrected", "free_text", "short", 0, 1, 0.0),
        # an ungraded criterion counts in no rate: the group graded nothing
        ("judged_fail_rate", "answers_the_question", None, 0, 0, None),
        ("judged_fail_rate_corrected", "answers_the_question", None, 0, 0, None),
        # the three cases rest on the judge; its error is the calibrated groups' labels together: 12 of 13, 22 of 23
        (
            "pass_rate_corrected",
            None,
            None,
            2,
            3,
            pytest.approx(1 - corrected_rate(1, 3, JudgeError(12, 13, 22, 23)).estimate),
        ),
    ]
    observed = rows[0]
    assert (observed.method, round(observed.low, 4), round(observed.high, 4)) == ("wilson 95%", 0.0615, 0.7923)
    corrected = rows[1]
    assert (corrected.method, corrected.low, corrected.high) == (
        "rogan-gladen, fieller 95%",
        *corrected_rate(1, 3, PERFECT)[1:3],
    )
    assert rows[-3].note == "Nothing graded." and rows[-2].note == "Nothing graded, so there is no rate to correct."


def test_the_pass_rate_corrects_only_the_cases_the_judge_decided() -> None:
    statuses = [
        status("asserted", "failed"),  # an assertion failed it: no judge error
        status("unjudged", "passed"),  # no verdict at all: no judge error
        status(
            "reviewed", "judged-fail", criterion("fail"), criterion("ungraded", "free_text", "x", "review")
        ),  # not a pass whatever the judge said
        status("judged-1", "passed", criterion("pass")),
        status("judged-2", "judged-pass", criterion("pass"), criterion("pass", "free_text", "x", "review")),
        status("judged-3", "judged-fail", criterion("fail")),
        status("judged-4", "passed", criterion("pass"), criterion("ungraded", "answers_the_question")),
    ]
    error = JudgeError(9, 10, 19, 20)
    calibration = [group("implicit_concession", error), group("answers_the_question", PERFECT, calibrated=False)]
    row = pass_rate_row(statuses, calibration)
    # 4 judged cases, 1 judged fail; one unjudged pass kept: (1 + 4 * (1 - rate)) / 7
    rate = corrected_rate(1, 4, error)
    assert (row.count, row.out_of) == (4, 7)
    assert row.value == pytest.approx((1 + 4 * (1 - rate.estimate)) / 7)
    assert (row.low, row.high) == (
        pytest.approx((1 + 4 * (1 - rate.high)) / 7),
        pytest.approx((1 + 4 * (1 - rate.low)) / 7),
    )
    assert row.note.startswith("4 of 7 cases rest on a judge verdict. Corrected for the judge's sensitivity 0.90")


def test_the_pass_rate_pools_the_calibrated_groups_labels() -> None:
    statuses = [
        status("a", "judged-fail", criterion("fail")),
        status("b", "passed", criterion("pass", "answers_the_question")),
    ]
    calibration = [
        group("implicit_concession", JudgeError(2, 2, 3, 3)),
        group("answers_the_question", JudgeError(1, 2, 2, 2)),
        group("free_text", JudgeError(0, 5, 0, 5), calibrated=False),
    ]
    row = pass_rate_row(statuses, calibration)
    pooled = corrected_rate(1, 2, JudgeError(3, 4, 5, 5))
    assert row.value == pytest.approx(1 - pooled.estimate)


def test_a_run_no_judge_decided_keeps_its_pass_rate_exactly() -> None:
    row = pass_rate_row([status("a", "passed"), status("b", "failed")], [group("implicit_concession", PERFECT)])
    assert (row.value, row.low, row.high) == (0.5, 0.5, 0.5)
    assert row.note == "No case's status rests on a judge verdict, so there is no judge error to correct."


def test_a_pass_rate_whose_correction_does_not_exist_is_no_number() -> None:
    row = pass_rate_row(
        [status("a", "judged-fail", criterion("fail"))], [group("implicit_concession", JudgeError(1, 2, 1, 2))]
    )
    assert (row.value, row.low, row.high) == (None, None, None)
    assert "No correction exists" in row.note
