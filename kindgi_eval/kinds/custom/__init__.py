"""The `custom` kind: a tenant's own handler grades each reply in a sandbox, its verdict one assertion of the case."""

from kindgi_eval.kinds.custom.report import custom_items, custom_lines, custom_marks, custom_summary
from kindgi_eval.kinds.custom.stage import CustomSummary, custom_metrics, custom_params, custom_rows, grade_replies, handler_of, summarize_custom
from kindgi_eval.kinds.kind import KindRows, SuiteKind
from kindgi_eval.store import FigureColumn, MetricRow


def _metrics(rows: KindRows) -> list[MetricRow]:
    return custom_metrics(rows.custom) if handler_of(rows.suite) else []


FIGURES = (
    FigureColumn("handler_name", "VARCHAR"),
    FigureColumn("handler_hash", "VARCHAR"),
    FigureColumn("handler_passed", "BIGINT", "handler_passed"),
    FigureColumn("handler_failed", "BIGINT", "handler_failed"),
    FigureColumn("handler_errors", "BIGINT", "handler_errors"),
    FigureColumn("handler_skipped", "BIGINT", "handler_skipped"),
)

KIND = SuiteKind(name="custom", metrics=_metrics, params=custom_params, figures=FIGURES, lines=custom_lines, summary=custom_summary, marks=custom_marks, items=custom_items)

__all__ = ["KIND", "CustomSummary", "custom_metrics", "custom_rows", "grade_replies", "handler_of", "summarize_custom"]
