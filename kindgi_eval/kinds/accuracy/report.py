"""What an accuracy suite adds to the report and the `--json` summary: its accuracy with its Wilson interval."""

from __future__ import annotations

from collections.abc import Sequence

from kindgi_eval.kinds.accuracy.stage import AccuracyRow
from kindgi_eval.kinds.kind import Items, KindResult, KindRows


def _not_correct(rows: Sequence[AccuracyRow]) -> list[AccuracyRow]:
    return [a for a in rows if a.grade != "correct"]


def accuracy_lines(result: KindResult) -> list[str]:
    """One line: the accuracy, how many graded items were correct, the interval, the items left ungraded."""
    f = result.figures
    graded = (f["correct"] or 0) + (f["wrong"] or 0)
    if f["accuracy"] is None:
        figure = "n/a (no item was graded)"
    else:
        figure = f"{f['accuracy']:.3f}, {f['correct']} of {graded} graded items correct (95% Wilson interval {f['accuracy_low']:.3f} to {f['accuracy_high']:.3f})"
    return [f"Accuracy: {figure}; {f['ungraded_items']} ungraded, counted on neither side"]


def accuracy_summary(result: KindResult) -> dict:
    """The `accuracy` key of `--json`."""
    f = result.figures
    interval = (
        None
        if f["accuracy"] is None
        else {"low": f["accuracy_low"], "high": f["accuracy_high"], "method": "wilson", "level": 0.95}
    )
    return {
        "accuracy": {
            "value": f["accuracy"],
            "correct": f["correct"],
            "wrong": f["wrong"],
            "ungraded": f["ungraded_items"],
            "interval": interval,
        }
    }


def accuracy_marks(rows: KindRows) -> dict[str, str]:
    """Under each item not graded correct: its grade, its grader, and why."""
    return {a.case_id: f"{a.grade} ({a.grader}): {a.detail}" for a in _not_correct(rows.own)}


def accuracy_items(rows: KindRows) -> Items:
    """The items not graded correct, with what they had to give."""
    return Items(
        "Items not graded correct",
        ("item", "grade", "expected", "why"),
        [(a.case_id, a.grade, a.expected_output, a.detail) for a in _not_correct(rows.own)],
    )
