"""DuckDB over the Parquet store: one view per stored table, each carrying `suite`, `date` and `run_id`."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from upath import UPath

from kindgi_eval.store.kind_views import KindView, kind_view_sql
from kindgi_eval.store.layout import HIVE_COLUMNS, MONTH_FILES, RUN_FILES, SHARED, StorePath, Table, runtime_home
from kindgi_eval.store.reviews import REVIEW_FILES, REVIEWS
from kindgi_eval.store.rows import ReviewRow, RunEndRow, TurnRow

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

# pyarrow is imported by the functions that build a view's columns from a row model: the night's read, which names its
# files itself, starts without it.

DATABASE_FILE = "kindgi.duckdb"
RUN_ENDS = "run_ends"
"""The store's folder of the runs that failed or were stopped before they stored a summary (`store.run_ends`)."""
ALIASES = {"group": "calibration_group"}
"""Columns whose stored name SQL makes you quote, and the second name each view also gives them."""
_SQL_TYPES = {"string": "VARCHAR", "int64": "BIGINT", "double": "DOUBLE", "bool": "BOOLEAN"}
"""The DuckDB type of each scalar Arrow type the row models use, by the Arrow type's name."""


def sql_type(arrow_type: pa.DataType) -> str:
    """The DuckDB type of an Arrow type used by the row models."""
    import pyarrow as pa

    if pa.types.is_list(arrow_type):
        return f"{sql_type(arrow_type.value_type)}[]"
    if pa.types.is_struct(arrow_type):
        return "STRUCT(" + ", ".join(f'"{f.name}" {sql_type(f.type)}' for f in arrow_type) + ")"
    return _SQL_TYPES[str(arrow_type)]


def view_sql(table: Table, root: StorePath) -> str:
    """The view over every run of one table: the runs' own files and the compacted months, whichever exist;
    with neither, an empty view with the same columns.

    Files are matched by column name, so a column added to a row model later reads as NULL in the files of
    older runs. Only `<asset>/.../data.parquet` is read: never a run's recordings in progress (`store.batches`)."""
    from kindgi_eval.store.arrow import arrow_schema

    folder = root.absolute() / table.asset
    sources = []
    if next(folder.glob(RUN_FILES), None) is not None:
        sources.append(
            f"read_parquet('{_quoted(folder / RUN_FILES)}', hive_partitioning = true, hive_types_autocast = false, union_by_name = true)"
        )
    if next(folder.glob(MONTH_FILES), None) is not None:
        sources.append(
            f"read_parquet('{_quoted(folder / MONTH_FILES)}', hive_partitioning = false, union_by_name = true)"
        )
    if not sources:
        columns = [f'CAST(NULL AS {sql_type(f.type)}) AS "{f.name}"' for f in arrow_schema(table.row)]
        columns += [f'CAST(NULL AS VARCHAR) AS "{name}"' for name in HIVE_COLUMNS]
        body = f"SELECT {', '.join(columns)} WHERE false"
    else:
        body = " UNION ALL BY NAME ".join(f"SELECT * FROM {source}" for source in sources)
    if table.view == "statuses":
        body = with_judged_failures(with_reviewer_verdicts(body, root))
    if table.view == "runs":
        body = with_run_ends(body, root)
    aliases = [f'"{name}" AS {alias}' for name, alias in ALIASES.items() if name in table.row.model_fields]
    if aliases:
        body = f"SELECT *, {', '.join(aliases)} FROM ({body})"
    return f"CREATE OR REPLACE VIEW {table.view} AS {body}"


TURNS = "turns"
"""The view of every scenario turn of every run, unnested from the replies."""
TURN_COLUMNS = tuple(TurnRow.model_fields)


def turns_view_sql(replies_columns: Sequence[str]) -> str:
    """The `turns` view: one row per scenario turn (`run_id`, `suite`, `date`, `case_id`, the agent, and the turn's
    own columns), read from the replies view; with no reply stored with turns, an empty view of the same columns."""
    from kindgi_eval.store.arrow import arrow_schema

    keys = ["run_id", "suite", "date", "case_id", "agent"]
    if "turns" in replies_columns:
        columns = ", ".join([*keys, *(f't."{c}"' for c in TURN_COLUMNS)])
        return (
            f"CREATE OR REPLACE VIEW {TURNS} AS SELECT {columns} FROM "
            f"(SELECT {', '.join(keys)}, UNNEST(turns) AS t FROM {SHARED.agent_replies.view} WHERE turns IS NOT NULL)"
        )
    fields = {f.name: f.type for f in arrow_schema(TurnRow)}
    columns = [f'CAST(NULL AS VARCHAR) AS "{k}"' for k in keys] + [
        f'CAST(NULL AS {sql_type(fields[c])}) AS "{c}"' for c in TURN_COLUMNS
    ]
    return f"CREATE OR REPLACE VIEW {TURNS} AS SELECT {', '.join(columns)} WHERE false"


def reviews_source(root: StorePath) -> str:
    """A SELECT of every label people imported (`store.reviews`); with none, an empty one with the same columns."""
    from kindgi_eval.store.arrow import arrow_schema

    folder = root.absolute() / REVIEWS
    if next(folder.glob(REVIEW_FILES), None) is not None:
        return f"SELECT * FROM read_parquet('{_quoted(folder / REVIEW_FILES)}', hive_partitioning = false, union_by_name = true)"
    columns = [f'CAST(NULL AS {sql_type(f.type)}) AS "{f.name}"' for f in arrow_schema(ReviewRow)]
    return f"SELECT {', '.join(columns)} WHERE false"


def reviews_view_sql(root: StorePath) -> str:
    """The `reviews` view: every label of every import, earlier imports kept beside later ones."""
    return f"CREATE OR REPLACE VIEW {REVIEWS} AS {reviews_source(root)}"


def with_reviewer_verdicts(statuses: str, root: StorePath) -> str:
    """The statuses SELECT with the reviewer's verdict beside the judge's: `reviewer_labels`, the label in force
    (the latest import's) of each rubric item of the case, and `reviewer_verdict`, fail when any of them is fail,
    else pass; both NULL for a case nobody labelled. The stored statuses are never rewritten: this is a join."""
    latest = (
        f"SELECT * FROM ({reviews_source(root)}) QUALIFY row_number() OVER "
        "(PARTITION BY run_id, case_id, rubric_item ORDER BY imported_at DESC, import_id DESC, line DESC) = 1"
    )
    by_case = (
        "SELECT run_id, case_id, CASE WHEN bool_or(label = 'fail') THEN 'fail' ELSE 'pass' END AS reviewer_verdict, "
        "list({'rubric_item': rubric_item, 'label': label, 'note': note, 'reviewer': reviewer, "
        "'reviewer_role': reviewer_role, 'imported_at': imported_at} ORDER BY rubric_item) AS reviewer_labels "
        f"FROM ({latest}) GROUP BY run_id, case_id"
    )
    return (
        f"SELECT s.*, r.reviewer_verdict, r.reviewer_labels FROM ({statuses}) AS s "
        f"LEFT JOIN ({by_case}) AS r ON s.run_id = r.run_id AND s.case_id = r.case_id"
    )


def run_ends_source(root: StorePath) -> str:
    """A SELECT of every run that did not complete, with the hive columns; with none, an empty one of the same columns."""
    from kindgi_eval.store.arrow import arrow_schema

    folder = root.absolute() / RUN_ENDS
    if next(folder.glob(RUN_FILES), None) is not None:
        return (
            f"SELECT * FROM read_parquet('{_quoted(folder / RUN_FILES)}', hive_partitioning = true, "
            "hive_types_autocast = false, union_by_name = true)"
        )
    columns = [f'CAST(NULL AS {sql_type(f.type)}) AS "{f.name}"' for f in arrow_schema(RunEndRow)]
    columns += [f'CAST(NULL AS VARCHAR) AS "{name}"' for name in HIVE_COLUMNS]
    return f"SELECT {', '.join(columns)} WHERE false"


def with_run_ends(runs: str, root: StorePath) -> str:
    """The `runs` SELECT with the runs that did not complete beside the others, and `state` on every row: `succeeded`
    for a run that stored its summary, else `failed` or `stopped` with its `error`."""
    return (
        f"SELECT * REPLACE (coalesce(state, 'succeeded') AS state) FROM "
        f"(SELECT * FROM ({runs}) UNION ALL BY NAME {run_ends_source(root)})"
    )


def with_judged_failures(statuses: str) -> str:
    """The statuses SELECT with each criterion the judge failed added to the case's `failures`
    (`judged-fail: [rubric] implicit_concession: <reason>`), after its assertions': a `judged-fail` case names why."""
    judged = (
        "[format('judged-fail: [{}] {}: {}', c.source, c.criterion, c.reason) FOR c IN criteria IF c.verdict = 'fail']"
    )
    return f"SELECT * REPLACE (list_concat(failures, coalesce({judged}, [])) AS failures) FROM ({statuses})"


def _quoted(path: StorePath) -> str:
    return str(path).replace("'", "''")


class Views(NamedTuple):
    """What `kindgi-eval sql` can query of a store: its tables, and the kinds' views over `runs` and `run_metrics`."""

    tables: Sequence[Table] = SHARED
    """Every table of the store, in its order (`store_tables`): the shared ones by default."""
    kinds: Sequence[KindView] = ()
    """The views of the installed kinds that have figures or parameters of their own."""


def define_views(
    con: duckdb.DuckDBPyConnection,
    root: StorePath,
    tables: Sequence[Table],
    *,
    reviews: bool = True,
    kinds: Sequence[KindView] = (),
    every_kind: Sequence[KindView] = (),
) -> None:
    """Create or replace the views of `tables`, the `reviews` view unless told not to, and the views of `kinds`
    (which read `runs` and `run_metrics`, so those two are defined with them), knowing `every_kind`'s columns (all
    of `kinds` when not given)."""
    if kinds:
        tables = [*tables, *(t for t in (SHARED.run_summary, SHARED.run_metrics) if t not in tables)]
    for table in tables:
        con.execute(view_sql(table, root))
    if SHARED.agent_replies in tables:
        replies = [row[0] for row in con.execute(f"DESCRIBE {SHARED.agent_replies.view}").fetchall()]
        con.execute(turns_view_sql(replies))
    if reviews:
        con.execute(reviews_view_sql(root))
    for kind in kinds:
        con.execute(kind_view_sql(kind, every_kind or kinds))


def view_names(views: Views) -> list[str]:
    """Every view `kindgi-eval sql` can query, in the store's order (`turns` after the replies), `reviews` and then
    the kinds' views last."""
    names = []
    for t in views.tables:
        names += [t.view, TURNS] if t == SHARED.agent_replies else [t.view]
    return names + [REVIEWS] + [k.view for k in views.kinds]


def _names(query: str, view: str) -> bool:
    return re.search(rf"\b{view}\b", query, re.IGNORECASE) is not None


class Named(NamedTuple):
    """The views a query needs defined."""

    tables: list[Table]
    reviews: bool
    kinds: list[KindView]


def views_named(query: str, views: Views) -> Named:
    """The views a query names; all of them when it names none (e.g. to list the views).

    Defining a view lists its files, so a query pays only for the views it uses."""
    tables = [t for t in views.tables if _names(query, t.view) or (t == SHARED.agent_replies and _names(query, TURNS))]
    named_kinds = [k for k in views.kinds if _names(query, k.view)]
    reviews = _names(query, REVIEWS)
    if not (tables or named_kinds or reviews):
        return Named(list(views.tables), True, list(views.kinds))
    return Named(tables, reviews, named_kinds)


def open_database(root: StorePath, database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that can read the store. A store at a URL is read through its fsspec filesystem,
    registered with DuckDB (which then routes even `file://` through it), since DuckDB's own httpfs may be absent.
    DuckDB is imported here, on first use: a run's steps never query the store, and its worker is 25 MB the lighter."""
    import duckdb

    con = duckdb.connect(database)
    con.execute(
        "SET python_enable_replacements = false"
    )  # a name in a query is a view of the store, never a Python object
    if isinstance(root, UPath):
        con.register_filesystem(root.fs)
    return con


@contextmanager
def connect(root: StorePath, query: str | None = None, views: Views = Views()) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB with `views` over the store as it is now: those `query` names, or all."""
    con = open_database(root)
    try:
        named = views_named(query, views) if query else Named(list(views.tables), True, list(views.kinds))
        define_views(con, root, named.tables, reviews=named.reviews, kinds=named.kinds, every_kind=views.kinds)
        yield con
    finally:
        con.close()


def export_database(root: StorePath, views: Views) -> Path:
    """Write `kindgi.duckdb`, holding `views`, for the duckdb shell or any DuckDB client: in a local store, beside
    its tables; for a store at a URL, in the runtime folder, since a database file must be local. Its views name the
    store's files by URL, which a client reads itself (`file://` natively, `s3://` and `gs://` through httpfs).

    It is built beside the old file under a name no other process uses, and renamed over it: a reader never sees
    a half-written database, one holding the old file open keeps reading it, and two runs exporting at once
    each rename a whole database (the last one stays)."""
    folder = runtime_home() if isinstance(root, UPath) else root
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / DATABASE_FILE
    tmp = folder / f".{DATABASE_FILE}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        con = open_database(root, str(tmp))
        try:
            define_views(con, root, views.tables, kinds=views.kinds)
        finally:
            con.close()
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
    return target
