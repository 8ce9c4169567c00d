"""A case's status and its precedence: failed, then judged-fail, then reviewed (docs/design.md#precedence)."""

from __future__ import annotations

import itertools

import pytest

from kindgi_eval.rules.criteria import Source
from kindgi_eval.rules.statuses import FAILING, STATUSES, Status, case_status, run_failed
from kindgi_eval.rules.verdicts import FinalVerdict

Verdicts = list[tuple[Source, FinalVerdict]]


def test_statuses_in_summary_order_and_which_fail_the_run_016() -> None:
    assert STATUSES == ("passed", "failed", "judged-fail", "judged-pass", "reviewed")
    assert FAILING == {"failed", "judged-fail"}


@pytest.mark.parametrize(
    ("held", "has_review", "verdicts", "status"),
    [
        # An asserted failure never reaches the judge, and nothing the judge says could outrank it.
        (False, False, [], "failed"),
        (False, True, [], "failed"),
        (False, False, [("rubric", "fail")], "failed"),
        (False, True, [("review", "pass")], "failed"),
        (False, True, [("review", "fail"), ("rubric", "fail")], "failed"),
        # Rubric-only cases: the rubric can turn them red, never into judged-pass.
        (True, False, [], "passed"),
        (True, False, [("rubric", "pass"), ("rubric", "pass")], "passed"),
        (True, False, [("rubric", "ungraded"), ("rubric", "ungraded")], "passed"),  # judge down or downgraded
        (True, False, [("rubric", "pass"), ("rubric", "fail")], "judged-fail"),
        # Review cases.
        (True, True, [("review", "pass")], "judged-pass"),
        (True, True, [("review", "pass"), ("review", "pass"), ("rubric", "pass")], "judged-pass"),
        # An ungraded rubric criterion leaves a fully passed review judged-pass.
        (True, True, [("review", "pass"), ("rubric", "ungraded")], "judged-pass"),
        (True, True, [("review", "pass"), ("review", "ungraded")], "reviewed"),
        (True, True, [("review", "ungraded"), ("rubric", "pass")], "reviewed"),
        # A known failure outranks a missing verdict.
        (True, True, [("review", "fail"), ("review", "ungraded")], "judged-fail"),
        (True, True, [("review", "ungraded"), ("review", "fail"), ("review", "pass")], "judged-fail"),
        # Every review entry passed, but the rubric found a failure.
        (True, True, [("review", "pass"), ("review", "pass"), ("rubric", "fail")], "judged-fail"),
        (True, True, [("review", "ungraded"), ("rubric", "fail")], "judged-fail"),
        # A review case with no review verdicts at all has nothing that passed: reviewed, fail closed.
        (True, True, [], "reviewed"),
        (True, True, [("rubric", "pass")], "reviewed"),
    ],
)
def test_status_table_and_precedence_016(held: bool, has_review: bool, verdicts: Verdicts, status: Status) -> None:
    assert case_status(assertions_held=held, has_review=has_review, verdicts=verdicts) == status


@pytest.mark.parametrize("entries", [1, 2, 3])
def test_without_a_judge_review_cases_are_reviewed_009(entries: int) -> None:
    # No judge: every review entry is ungraded and there is no rubric.
    verdicts: Verdicts = [("review", "ungraded")] * entries
    assert case_status(assertions_held=True, has_review=True, verdicts=verdicts) == "reviewed"


def test_without_a_judge_a_case_without_review_is_passed_009() -> None:
    assert case_status(assertions_held=True, has_review=False, verdicts=[]) == "passed"


FINALS: tuple[FinalVerdict, ...] = ("pass", "fail", "ungraded")
# Every case with up to two review entries and up to two rubric criteria, assertions held or not.
COMBINATIONS = [
    (held, review, rubric)
    for held in (True, False)
    for n_review in range(3)
    for n_rubric in range(3)
    for review in itertools.product(FINALS, repeat=n_review)
    for rubric in itertools.product(FINALS, repeat=n_rubric)
]


def expected_status(held: bool, review: tuple[FinalVerdict, ...], rubric: tuple[FinalVerdict, ...]) -> Status:
    """The table of docs/design.md#statuses, read top to bottom by severity, written apart from the code under test."""
    if not held:
        return "failed"
    if "fail" in review + rubric:
        return "judged-fail"
    if not review:
        return "passed"
    if set(review) == {"pass"}:
        return "judged-pass"
    return "reviewed"


@pytest.mark.parametrize("combination", COMBINATIONS)
def test_every_combination_of_verdicts_follows_the_table_016(
    combination: tuple[bool, tuple[FinalVerdict, ...], tuple[FinalVerdict, ...]],
) -> None:
    held, review, rubric = combination
    verdicts: Verdicts = [("review", v) for v in review] + [("rubric", v) for v in rubric]
    # The order the criteria arrive in never matters.
    for ordering in (verdicts, verdicts[::-1]):
        status = case_status(assertions_held=held, has_review=bool(review), verdicts=ordering)
        assert status == expected_status(held, review, rubric)
        # 009's guarantee: a review case is never plain passed; a case without review is never judged-pass.
        assert status != ("passed" if review else "judged-pass")


@pytest.mark.parametrize(
    ("statuses", "kind_failed", "failed"),
    [
        ([], False, False),  # nothing ran: nothing failed
        (["passed", "judged-pass", "reviewed"], False, False),  # reviewed waits for a person; it fails nothing
        (["passed", "failed"], False, True),
        (["judged-fail"], False, True),
        (["passed", "passed"], True, True),  # every case passed, and a regression's case moved down: the kind fails it
    ],
)
def test_a_run_fails_on_a_failing_status_or_its_kind_s_own_rule(
    statuses: list[Status], kind_failed: bool, failed: bool
) -> None:
    assert run_failed(statuses, kind_failed) is failed
