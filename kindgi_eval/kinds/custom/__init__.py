"""The `custom` kind: a tenant's own handler grades each reply in a sandbox, its verdict one assertion of the case."""

from collections.abc import Mapping

from kindgi_eval.kinds.custom.report import custom_items, custom_lines, custom_marks, custom_summary
from kindgi_eval.kinds.custom.stage import CustomSummary, custom_columns, custom_rows, grade_replies, handler_of, summarize_custom
from kindgi_eval.kinds.kind import KindRows, SuiteKind


def _columns(rows: KindRows) -> Mapping[str, object]:
    return custom_columns(handler_of(rows.suite), rows.custom)


KIND = SuiteKind(name="custom", columns=_columns, lines=custom_lines, summary=custom_summary, marks=custom_marks, items=custom_items)

__all__ = ["KIND", "CustomSummary", "custom_columns", "custom_rows", "grade_replies", "handler_of", "summarize_custom"]
