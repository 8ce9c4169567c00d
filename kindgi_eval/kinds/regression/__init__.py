"""The `regression` kind: conversation cases compared one by one with a baseline run; a case that regressed fails the run."""

from collections.abc import Mapping

from kindgi_eval.kinds.kind import KindRows, SuiteKind
from kindgi_eval.kinds.regression.report import regressed, regression_items, regression_lines, regression_marks, regression_summary
from kindgi_eval.kinds.regression.stage import regression_columns, regression_rows, resolve_baseline


def _columns(rows: KindRows) -> Mapping[str, object]:
    return regression_columns(rows.suite[0].baseline_run, rows.regressions)


KIND = SuiteKind(name="regression", columns=_columns, lines=regression_lines, summary=regression_summary, failed=regressed,
                 marks=regression_marks, items=regression_items)

__all__ = ["KIND", "regression_columns", "regression_rows", "resolve_baseline"]
