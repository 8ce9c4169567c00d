"""The `accuracy` stage: each accuracy item's grade, and the accuracy with its Wilson interval.

The grade is read from what the earlier stages recorded, never graded again: a deterministic grader's verdict is
the item's `expected_output` outcome, the judge's is its one criterion's final verdict in `statuses`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from kindgi_eval.kinds.figures import count, estimate
from kindgi_eval.rules import AccuracyCase, Interval, item_grade, wilson
from kindgi_eval.store import MetricRow, OutcomeRow, StatusRow, StoredRow


class AccuracyRow(StoredRow):
    """One accuracy item's grade: correct, wrong or ungraded, and why."""

    case_id: str
    """The item."""
    grader: str
    """The adapter that graded it: exact, contains, regex or judge."""
    expected_output: str
    """What the reply had to give."""
    grade: Literal["correct", "wrong", "ungraded"]
    """Only correct and wrong items count towards the accuracy; an agent error or a verdict the judge could not
    give is ungraded."""
    detail: str
    """Why, in a sentence: the grader's finding, the judge's reason, or what kept the item ungraded."""


class AccuracySummary(NamedTuple):
    """The accuracy of a run: correct over graded, with the counts beside it."""

    correct: int
    wrong: int
    ungraded: int
    interval: Interval | None
    """Correct over correct + wrong with its Wilson 95% interval; None when no item was graded."""


def accuracy_rows(
    cases: Sequence[AccuracyCase], outcomes: Sequence[OutcomeRow], statuses: Sequence[StatusRow]
) -> list[AccuracyRow]:
    """One row per accuracy item, in suite order."""
    by_case: dict[str, list[OutcomeRow]] = {}
    for o in outcomes:
        by_case.setdefault(o.case_id, []).append(o)
    status_of = {s.case_id: s for s in statuses}
    rows = []
    for case in cases:
        found = by_case.get(case.id, [])
        criteria = status_of[case.id].criteria
        judged = criteria[0].verdict if case.grader.adapter == "judge" and criteria else None
        grade = item_grade([(o.assertion, o.held) for o in found], judged)
        if found:
            detail = "; ".join(o.detail for o in found)
        elif criteria:
            detail = criteria[0].reason or f"the judge's verdict is {criteria[0].verdict}"
        else:
            detail = "no verdict was recorded"
        rows.append(
            AccuracyRow(
                case_id=case.id,
                grader=case.grader.adapter,
                expected_output=case.expected_output,
                grade=grade,
                detail=detail,
            )
        )
    return rows


def summarize_accuracy(rows: Sequence[AccuracyRow]) -> AccuracySummary:
    """The counts and the accuracy of the graded items; ungraded ones are counted apart, on neither side."""
    correct = sum(r.grade == "correct" for r in rows)
    wrong = sum(r.grade == "wrong" for r in rows)
    return AccuracySummary(correct, wrong, len(rows) - correct - wrong, wilson(correct, correct + wrong))


def accuracy_metrics(rows: Sequence[AccuracyRow]) -> list[MetricRow]:
    """An accuracy suite's figures: the counts, and the accuracy with its Wilson interval."""
    summary = summarize_accuracy(rows)
    return [
        estimate("accuracy", summary.interval, "wilson 95%"),
        count("correct", summary.correct),
        count("wrong", summary.wrong),
        count("ungraded_items", summary.ungraded),
    ]
