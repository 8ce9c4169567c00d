"""The `accuracy` kind: items with an expected output, graded correct or wrong, and the accuracy with its interval."""

from pathlib import Path

from kindgi_eval.kinds.accuracy.check import CONSUMER
from kindgi_eval.kinds.accuracy.report import accuracy_items, accuracy_lines, accuracy_marks, accuracy_summary
from kindgi_eval.kinds.accuracy.stage import AccuracyRow, accuracy_metrics, accuracy_rows
from kindgi_eval.kinds.kind import (
    Checking,
    KindRows,
    Reading,
    Reporting,
    Stage,
    StageInputs,
    SuiteKind,
    published_starter,
)
from kindgi_eval.kinds.table import cases_of
from kindgi_eval.rules import ACCURACY_GROUP, AccuracyCase, AgentReply, AssertionResult, Group, check_accuracy
from kindgi_eval.store import FigureColumn, MetricRow


def _graded(
    case: AccuracyCase, reply: AgentReply | None, *, error: str | None, latency_ms: float, max_latency_ms: float
) -> list[AssertionResult]:
    """An item is held to its grader only: no latency, no closing question."""
    return check_accuracy(case, reply.messages if reply else None, error=error)


def _in_accuracy_group(criterion: str) -> Group:
    """Every labelled item of an accuracy suite counts in its one group, whatever its criterion says."""
    return ACCURACY_GROUP


def _metrics(rows: KindRows) -> list[MetricRow]:
    return accuracy_metrics(rows.own)


def _grades(given: StageInputs) -> list[AccuracyRow]:
    """Each item of an accuracy suite graded correct, wrong or ungraded, and why; empty for other kinds.

    The metadata holds the accuracy and its Wilson 95% interval as numbers, so they plot night over night.
    Query: `kindgi-eval sql "SELECT case_id, grade, expected_output, detail FROM accuracy WHERE grade <> 'correct'"`.
    """
    return accuracy_rows(cases_of(given.suite), given.outcomes, given.statuses)


FIGURES = (
    FigureColumn("accuracy", "DOUBLE", "accuracy"),
    FigureColumn("accuracy_low", "DOUBLE", "accuracy", "low"),
    FigureColumn("accuracy_high", "DOUBLE", "accuracy", "high"),
    FigureColumn("correct", "BIGINT", "correct"),
    FigureColumn("wrong", "BIGINT", "wrong"),
    FigureColumn("ungraded_items", "BIGINT", "ungraded_items"),
)


KIND = SuiteKind(
    name="accuracy",
    reading=Reading(case_model=AccuracyCase),
    checking=Checking(assertions=_graded, groups=(ACCURACY_GROUP,), item_group=_in_accuracy_group),
    report=Reporting(
        metrics=_metrics,
        figures=FIGURES,
        lines=accuracy_lines,
        summary=accuracy_summary,
        marks=accuracy_marks,
        items=accuracy_items,
        enters_funnel=False,
    ),
    stage=Stage("accuracy", AccuracyRow, _grades),
    consumer=CONSUMER,
    starter=published_starter(Path(__file__).parent / "starter"),
)

__all__ = ["KIND", "accuracy_metrics", "accuracy_rows"]
