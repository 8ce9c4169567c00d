"""DuckDB over the Parquet store: one view per stored table, each carrying `suite`, `date` and `run_id`."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa
from upath import UPath

from kindgi_eval.report import safe
from kindgi_eval.store import HIVE_COLUMNS, MONTH_FILES, RUN_FILES, TABLES, StorePath, Table, runtime_home
from kindgi_eval.tables import arrow_schema

DATABASE_FILE = "kindgi.duckdb"
_SQL_TYPES = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"}


def sql_type(arrow_type: pa.DataType) -> str:
    """The DuckDB type of an Arrow type used by the row models."""
    if pa.types.is_list(arrow_type):
        return f"{sql_type(arrow_type.value_type)}[]"
    if pa.types.is_struct(arrow_type):
        return "STRUCT(" + ", ".join(f'"{f.name}" {sql_type(f.type)}' for f in arrow_type) + ")"
    return _SQL_TYPES[arrow_type]


def view_sql(table: Table, root: StorePath) -> str:
    """The view over every run of one table: the runs' own files and the compacted months, whichever exist;
    with neither, an empty view with the same columns."""
    folder = root.absolute() / table.asset
    sources = []
    if next(folder.glob(RUN_FILES), None) is not None:
        sources.append(f"read_parquet('{_quoted(folder / RUN_FILES)}', hive_partitioning = true, hive_types_autocast = false)")
    if next(folder.glob(MONTH_FILES), None) is not None:
        sources.append(f"read_parquet('{_quoted(folder / MONTH_FILES)}', hive_partitioning = false)")
    if not sources:
        columns = [f'CAST(NULL AS {sql_type(f.type)}) AS "{f.name}"' for f in arrow_schema(table.row)]
        columns += [f'CAST(NULL AS VARCHAR) AS "{name}"' for name in HIVE_COLUMNS]
        return f"CREATE OR REPLACE VIEW {table.view} AS SELECT {', '.join(columns)} WHERE false"
    body = " UNION ALL BY NAME ".join(f"SELECT * FROM {source}" for source in sources)
    return f"CREATE OR REPLACE VIEW {table.view} AS {body}"


def _quoted(path: StorePath) -> str:
    return str(path).replace("'", "''")


def define_views(con: duckdb.DuckDBPyConnection, root: StorePath, tables: Sequence[Table] = TABLES) -> None:
    """Create or replace the views of `tables` (all by default) on a connection."""
    for table in tables:
        con.execute(view_sql(table, root))


def views_named(query: str) -> list[Table]:
    """The tables whose views a query names; all of them when it names none (e.g. to list the views).

    Defining a view lists its files, so a query pays only for the views it uses."""
    named = [t for t in TABLES if re.search(rf"\b{t.view}\b", query, re.IGNORECASE)]
    return named or list(TABLES)


def open_database(root: StorePath, database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that can read the store. A store at a URL is read through its fsspec filesystem,
    registered with DuckDB (which then routes even `file://` through it), since DuckDB's own httpfs may be absent."""
    con = duckdb.connect(database)
    if isinstance(root, UPath):
        con.register_filesystem(root.fs)
    return con


@contextmanager
def connect(root: StorePath, query: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB with the views over the store as it is now: those `query` names, or all."""
    con = open_database(root)
    try:
        define_views(con, root, views_named(query) if query else TABLES)
        yield con
    finally:
        con.close()


def export_database(root: StorePath) -> Path:
    """Write `kindgi.duckdb`, holding the views, for the duckdb shell or any DuckDB client: in a local store, beside
    its tables; for a store at a URL, in the runtime folder, since a database file must be local. Its views name the
    store's files by URL, which a client reads itself (`file://` natively, `s3://` and `gs://` through httpfs).

    It is built beside the old file and renamed over it, so a reader never sees a half-written database."""
    folder = runtime_home() if isinstance(root, UPath) else root
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / DATABASE_FILE
    tmp = folder / f".{DATABASE_FILE}.tmp"
    tmp.unlink(missing_ok=True)
    con = open_database(root, str(tmp))
    try:
        define_views(con, root)
    finally:
        con.close()
    os.replace(tmp, target)
    return target


def format_rows(columns: Sequence[str], rows: Sequence[tuple], fmt: str) -> str:
    """Query results as an aligned text table, CSV, or a JSON list of objects (NULL is shown as NULL or null)."""
    if fmt == "json":
        return json.dumps([dict(zip(columns, r, strict=True)) for r in rows], indent=2, default=str, ensure_ascii=False) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(["" if v is None else v for v in r] for r in rows)
        return out.getvalue()
    cells = [[safe("NULL" if v is None else str(v)) for v in r] for r in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines) + f"\n({len(rows)} row{'s' if len(rows) != 1 else ''})\n"
