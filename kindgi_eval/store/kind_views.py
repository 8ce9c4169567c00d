"""Each suite kind's view of its runs (`accuracy_runs`, `pairwise_runs`, ...): the common columns of `runs` and the
kind's figures and parameters as typed columns under the names SQL users have always queried. Builds SQL only.

A run stores its kind's figures as rows of `run_metrics` and its parameters as the JSON object `runs.params`; a run
stored before then holds both as columns of its `runs` row. A kind's view reads either, so an old store answers
the same queries as a new one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

SqlType = Literal["BIGINT", "DOUBLE", "BOOLEAN", "VARCHAR"]
Part = Literal["value", "low", "high"]


class FigureColumn(NamedTuple):
    """One typed column of a kind's view: a part of one of its figures, or one of its parameters."""

    name: str
    """The column's name, as `runs` held it before the kinds' figures moved to `run_metrics` (`accuracy_low`)."""
    sql_type: SqlType
    """Its type in the view; a figure is stored as a double, so a count is cast back to BIGINT and a flag to BOOLEAN."""
    metric: str | None = None
    """The figure it shows (`run_metrics.name`); None for a parameter, read from `runs.params` under the column's name."""
    part: Part = "value"
    """Which part of the figure: its value or a bound of its interval."""


class KindView(NamedTuple):
    """A kind's view: which runs it shows and its own columns."""

    suite_kind: str
    """The kind, as `runs.suite_kind` spells it."""
    columns: tuple[FigureColumn, ...]
    """Its columns after the common ones, in order."""

    @property
    def view(self) -> str:
        """`<kind>_runs`, the kind's name made an SQL name (`human-review` gives `human_review_runs`)."""
        return f"{self.suite_kind.replace('-', '_')}_runs"


def kind_view_sql(kind: KindView, every_kind: Sequence[KindView]) -> str:
    """The CREATE VIEW of one kind's view, over the `runs` and `run_metrics` views.

    Every kind's own column names are left out of the common ones: they are the columns of runs stored before
    `run_metrics`, and a run's figure reads from there when `run_metrics` holds none for it."""
    legacy = {c.name: c.sql_type for k in every_kind for c in k.columns}
    present = " UNION ALL BY NAME ".join(
        [
            "SELECT * FROM runs",
            "SELECT "
            + ", ".join(
                [f'CAST(NULL AS {t}) AS "{n}"' for n, t in legacy.items()] + ["CAST(NULL AS VARCHAR) AS params"]
            )
            + " WHERE false",
        ]
    )
    metrics = sorted({c.metric for c in kind.columns if c.metric is not None})
    pivot = ", ".join(
        f"max({part}) FILTER (WHERE name = {_text(m)}) AS {_name(m, part)}"
        for m in metrics
        for part in ("value", "low", "high")
    )
    columns = ", ".join(_column(c) for c in kind.columns)
    excluded = ", ".join(f'"{n}"' for n in [*legacy, "params"])
    joined = (
        f"LEFT JOIN (SELECT run_id, {pivot} FROM run_metrics GROUP BY run_id) AS m ON m.run_id = r.run_id"
        if metrics
        else ""
    )
    return (
        f"CREATE OR REPLACE VIEW {kind.view} AS SELECT r.* EXCLUDE ({excluded}), {columns} "
        f"FROM ({present}) AS r {joined} WHERE r.suite_kind = {_text(kind.suite_kind)}"
    )


def _column(c: FigureColumn) -> str:
    stored = f'CAST(r."{c.name}" AS {c.sql_type})'
    if c.metric is None:
        given = f"json_extract_string(r.params, {_text('$.' + c.name)})"
    else:
        given = f"CAST(m.{_name(c.metric, c.part)} AS {c.sql_type})"
    return f'COALESCE({given}, {stored}) AS "{c.name}"'


def _name(metric: str, part: str) -> str:
    return '"' + f"{metric}#{part}".replace('"', '""') + '"'


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
