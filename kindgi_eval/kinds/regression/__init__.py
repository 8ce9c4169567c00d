"""The `regression` kind: conversation cases compared one by one with a baseline run; a case that regressed fails the run."""

from collections.abc import Mapping, Sequence

from kindgi_eval.kinds.kind import KindRows, SuiteKind
from kindgi_eval.kinds.regression.report import regressed, regression_items, regression_lines, regression_marks, regression_summary
from kindgi_eval.kinds.regression.stage import regression_metrics, regression_rows, resolve_baseline
from kindgi_eval.store import FigureColumn, MetricRow, SuiteRow


def _metrics(rows: KindRows) -> list[MetricRow]:
    return regression_metrics(rows.regressions)


def _params(suite: Sequence[SuiteRow]) -> Mapping[str, str | None]:
    return {"baseline_run": suite[0].baseline_run}


FIGURES = (
    FigureColumn("baseline_run", "VARCHAR"),
    FigureColumn("improved", "BIGINT", "improved"),
    FigureColumn("regressed", "BIGINT", "regressed"),
    FigureColumn("unchanged", "BIGINT", "unchanged"),
    FigureColumn("pass_rate_change", "DOUBLE", "pass_rate_change"),
    FigureColumn("change_low", "DOUBLE", "pass_rate_change", "low"),
    FigureColumn("change_high", "DOUBLE", "pass_rate_change", "high"),
    FigureColumn("mcnemar_p", "DOUBLE", "mcnemar_p"),
)

KIND = SuiteKind(name="regression", metrics=_metrics, params=_params, figures=FIGURES, lines=regression_lines,
                 summary=regression_summary, failed=regressed, marks=regression_marks, items=regression_items)

__all__ = ["KIND", "regression_metrics", "regression_rows", "resolve_baseline"]
