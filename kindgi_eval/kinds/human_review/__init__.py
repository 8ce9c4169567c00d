"""The `human-review` kind: every reply queued with the suite's rubric for a person to label, labels importable."""

from collections.abc import Mapping, Sequence
from pathlib import Path

from kindgi_eval.inputs import Suite
from kindgi_eval.kinds.figures import count
from kindgi_eval.kinds.human_review.check import CONSUMER
from kindgi_eval.kinds.human_review.report import review_lines, review_summary
from kindgi_eval.kinds.human_review.stage import QueueRow, QueueSummary, promoted_items, queue_rows, summarize_queue
from kindgi_eval.kinds.kind import (
    Checking,
    KindRows,
    Pins,
    Reporting,
    RunStart,
    Stage,
    StageInputs,
    SuiteKind,
    published_starter,
)
from kindgi_eval.kinds.table import cases_of
from kindgi_eval.store import FigureColumn, MetricRow, SuiteRow


def _metrics(rows: KindRows) -> list[MetricRow]:
    summary = summarize_queue(rows.replies, rows.own)
    return [
        count("review_items", summary.items),
        count("review_replies", summary.replies),
        count("review_skipped", summary.skipped),
    ]


def _queue(given: StageInputs) -> list[QueueRow]:
    """A human-review suite's replies, one row per reply and rubric item, for a person to label; empty for other kinds.

    `kindgi-eval review export RUN_ID` writes it as the CSV or JSONL a person fills in; `review import` reads the
    labels back into the `reviews` view, and `statuses` shows them beside the judge's verdicts.
    Query: `kindgi-eval sql "SELECT case_id, rubric_item, judge_verdict FROM review_queue WHERE suite = '<partition>'"`.
    """
    return queue_rows(given.suite, cases_of(given.suite), given.replies, given.statuses)


def _stored(suite: Suite, pins: Pins) -> Mapping[str, object]:
    """The rubric every reply is queued with, and who labels it."""
    registered = suite.registered
    if registered is None:
        return {}
    return {"rubric": registered.param("rubric") or None, "reviewer_role": registered.param("reviewer_role")}


def _params(suite: Sequence[SuiteRow]) -> Mapping[str, str | None]:
    return {"reviewer_role": suite[0].param("reviewer_role")}


FIGURES = (
    FigureColumn("reviewer_role", "VARCHAR"),
    FigureColumn("review_items", "BIGINT", "review_items"),
    FigureColumn("review_replies", "BIGINT", "review_replies"),
    FigureColumn("review_skipped", "BIGINT", "review_skipped"),
)

KIND = SuiteKind(
    name="human-review",
    checking=Checking(reviewed_by_people=True),
    start=RunStart(stored_params=_stored),
    report=Reporting(metrics=_metrics, params=_params, figures=FIGURES, lines=review_lines, summary=review_summary),
    stage=Stage("review_queue", QueueRow, _queue),
    consumer=CONSUMER,
    starter=published_starter(
        Path(__file__).parent / "starter", "labels: kindgi-eval review export RUN_ID, then review import"
    ),
)

__all__ = ["KIND", "QueueRow", "QueueSummary", "promoted_items", "queue_rows", "summarize_queue"]
