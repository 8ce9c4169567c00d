"""The `custom` kind: a tenant's own handler grades each reply in a sandbox, its verdict one assertion of the case."""

from collections.abc import Sequence
from pathlib import Path

from kindgi_eval.kinds.custom.check import CONSUMER
from kindgi_eval.kinds.custom.folder import needs_sandbox, read_handler_file
from kindgi_eval.kinds.custom.report import custom_items, custom_lines, custom_marks, custom_summary
from kindgi_eval.kinds.custom.stage import (
    CustomRow,
    CustomSummary,
    custom_metrics,
    custom_params,
    custom_rows,
    grade_replies,
    handler_of,
    handler_outcomes,
    summarize_custom,
)
from kindgi_eval.kinds.kind import (
    Checking,
    KindRows,
    Reading,
    Reporting,
    RunStart,
    Stage,
    StageInputs,
    SuiteKind,
    published_starter,
)
from kindgi_eval.kinds.table import cases_of
from kindgi_eval.store import FigureColumn, MetricRow


def _metrics(rows: KindRows) -> list[MetricRow]:
    return custom_metrics(rows.own) if handler_of(rows.suite) else []


def _verdicts(given: StageInputs) -> list[CustomRow]:
    """Each case of a custom suite with its handler's verdict (pass, fail, error or skipped), score, reason, error and
    time in the sandbox, beside the case's status; empty for other kinds.

    The verdicts are the ones `outcomes` recorded (the handler is not run again here, nor in a replay).
    Query: `kindgi-eval sql "SELECT case_id, verdict, score, reason, error, duration_ms FROM custom WHERE verdict <> 'pass'"`.
    """
    handler = handler_of(given.suite)
    return [] if handler is None else custom_rows(handler, cases_of(given.suite), given.outcomes, given.statuses)


def _slowest(rows: Sequence[CustomRow]) -> dict[str, object]:
    return {"duration_ms_max": float(max((r.duration_ms or 0.0 for r in rows), default=0.0))}


FIGURES = (
    FigureColumn("handler_name", "VARCHAR"),
    FigureColumn("handler_hash", "VARCHAR"),
    FigureColumn("handler_passed", "BIGINT", "handler_passed"),
    FigureColumn("handler_failed", "BIGINT", "handler_failed"),
    FigureColumn("handler_errors", "BIGINT", "handler_errors"),
    FigureColumn("handler_skipped", "BIGINT", "handler_skipped"),
)

KIND = SuiteKind(
    name="custom",
    reading=Reading(files=read_handler_file),
    checking=Checking(replies=handler_outcomes),
    start=RunStart(needs=needs_sandbox),
    report=Reporting(
        metrics=_metrics,
        params=custom_params,
        figures=FIGURES,
        lines=custom_lines,
        summary=custom_summary,
        marks=custom_marks,
        items=custom_items,
    ),
    consumer=CONSUMER,
    stage=Stage("custom", CustomRow, _verdicts, _slowest),
    starter=published_starter(
        Path(__file__).parent / "starter", "a sandbox for its handler: bubblewrap (bwrap) and a cgroup it may write"
    ),
)

__all__ = [
    "KIND",
    "CustomSummary",
    "custom_metrics",
    "custom_rows",
    "grade_replies",
    "handler_of",
    "handler_outcomes",
    "summarize_custom",
]
