"""DuckDB over the Parquet store: one view per stored table, each carrying `suite` and `run_id`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa

from kindgi_eval.store import PARTITION_COLUMN, RUN_COLUMN, TABLES, Table
from kindgi_eval.tables import arrow_schema


def view_sql(table: Table, root: Path) -> str:
    """The view over every run's file of one table; hive folders give `suite` and `run_id`, kept as text."""
    glob = str(root / table.asset / "*" / "*" / "data.parquet").replace("'", "''")
    return (
        f"CREATE OR REPLACE VIEW {table.view} AS SELECT * FROM read_parquet('{glob}', "
        "hive_partitioning = true, hive_types_autocast = false, union_by_name = true)"
    )


def _empty(table: Table) -> pa.Table:
    schema = arrow_schema(table.row)
    schema = schema.append(pa.field(PARTITION_COLUMN, pa.string())).append(pa.field(RUN_COLUMN, pa.string()))
    return schema.empty_table()


@contextmanager
def connect(root: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB with every view defined; a table with no file yet is an empty view of its columns."""
    con = duckdb.connect()
    try:
        for table in TABLES:
            if next((root / table.asset).glob("*/*/data.parquet"), None) is not None:
                con.execute(view_sql(table, root))
            else:
                con.register(f"empty_{table.view}", _empty(table))
                con.execute(f"CREATE VIEW {table.view} AS SELECT * FROM empty_{table.view}")
        yield con
    finally:
        con.close()
