"""A kind's figures: made as `run_metrics` rows, read back by the names of its view's columns. Reads the store only in
`stored_result` and `own_rows`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from kindgi_eval.kinds.kind import KindResult, SuiteKind
from kindgi_eval.kinds.table import kind_named, kinds, stored_tables
from kindgi_eval.rules import Interval
from kindgi_eval.store import (
    SHARED,
    FigureColumn,
    KindView,
    MetricRow,
    RunRow,
    StorePath,
    Views,
    from_table,
    read_stored,
    rows_if_stored,
)


def count(name: str, n: int | None) -> MetricRow:
    """A figure that counts something."""
    return MetricRow(name=name, value=None if n is None else float(n))


def estimate(name: str, interval: Interval | None, method: str) -> MetricRow:
    """A figure with its interval; no value when there was nothing to measure."""
    if interval is None:
        return MetricRow(name=name, value=None, method=method)
    return MetricRow(name=name, value=interval.estimate, low=interval.low, high=interval.high, method=method)


def figures_of(kind: SuiteKind, metrics: Sequence[MetricRow], params: Mapping[str, object]) -> dict[str, object]:
    """The kind's figures and parameters by the names of its view's columns, typed as those columns are."""
    by_name = {m.name: m for m in metrics}
    figures: dict[str, object] = {}
    for column in kind.report.figures:
        if column.metric is None:
            figures[column.name] = params.get(column.name)
            continue
        metric = by_name.get(column.metric)
        figures[column.name] = _typed(column, None if metric is None else getattr(metric, column.part))
    return figures


def _typed(column: FigureColumn, value: float | None) -> object:
    if value is None:
        return None
    if column.sql_type == "BIGINT":
        return int(value)
    if column.sql_type == "BOOLEAN":
        return bool(value)
    return value


def result_of(run: RunRow, metrics: Sequence[MetricRow]) -> KindResult:
    """A run as its kind reads it, from the run's row and its `run_metrics` rows."""
    return KindResult(run, figures_of(kind_named(run.suite_kind), metrics, json.loads(run.params or "{}")))


def stored_result(root: StorePath, partition: str, run_id: str) -> KindResult:
    """A stored run as its kind reads it. A run stored before `run_metrics` (its `params` is null) kept its figures
    and parameters as columns of its `runs` row, under the names of its kind's view: they are read from there."""
    stored = read_stored(root, SHARED.run_summary, partition, run_id)
    if stored is None:
        raise FileNotFoundError(f"run {run_id} stored no run_summary for suite {partition}")
    (row,) = stored.to_pylist()
    run = RunRow.model_validate({name: value for name, value in row.items() if name in RunRow.model_fields})
    if run.params is None:
        return KindResult(run, {c.name: row.get(c.name) for c in kind_named(run.suite_kind).report.figures})
    metrics = read_stored(root, SHARED.run_metrics, partition, run_id)
    return result_of(run, [] if metrics is None else from_table(metrics, MetricRow))


def own_rows(root: StorePath, partition: str, run_id: str, suite_kind: str) -> list:
    """The rows a run's kind's own stage stored; none for a kind without one."""
    stage = kind_named(suite_kind).stage
    return [] if stage is None else rows_if_stored(root, stage.stored, partition, run_id)


def store_views() -> Views:
    """What `kindgi-eval sql` can query of a store with the installed kinds: every table, and the view of every kind
    that has figures or parameters of its own."""
    return Views(
        stored_tables(),
        [KindView(name, kind.report.figures) for name, kind in sorted(kinds().items()) if kind.report.figures],
    )
