"""The Parquet store: where every asset's table of every run lives, written atomically, never overwritten."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel
from upath import UPath

from kindgi_eval.store.rows import (
    CalibrationRow,
    MetricRow,
    OutcomeRow,
    ReplyRow,
    RunRow,
    SampleRow,
    StatusRow,
    SuiteRow,
)

if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow is imported by the functions that read or write a table's rows: what only names runs by their folders (the
# night's read, the listing of runs) starts without it.

HOME_ENV = "KINDGI_HOME"
STORE_ENV = "KINDGI_STORE"
DEFAULT_HOME = ".kindgi"
PARTITION_COLUMN = "suite"
DATE_COLUMN = "date"
RUN_COLUMN = "run_id"
MONTH_COLUMN = "month"
HIVE_COLUMNS = (PARTITION_COLUMN, DATE_COLUMN, RUN_COLUMN)
RUN_FILES = f"{PARTITION_COLUMN}=*/{DATE_COLUMN}=*/{RUN_COLUMN}=*/data.parquet"
MONTH_FILES = f"{MONTH_COLUMN}=*/data.parquet"


class Table(NamedTuple):
    """An asset's stored table: its folder (the asset's name), its DuckDB view and its row model."""

    asset: str
    view: str
    row: type[BaseModel]


class Shared(NamedTuple):
    """The tables every run writes, whatever its kind: the shared chain's, then the run's figures and its summary."""

    suite: Table
    agent_replies: Table
    outcomes: Table
    judge_samples: Table
    calibration: Table
    statuses: Table
    run_metrics: Table
    run_summary: Table


# One name per thing: asset = folder under the store; view = what `kindgi-eval sql` calls it.
SHARED = Shared(
    Table("suite", "cases", SuiteRow),
    Table("agent_replies", "replies", ReplyRow),
    Table("outcomes", "outcomes", OutcomeRow),
    Table("judge_samples", "judge_samples", SampleRow),
    Table("calibration", "calibration", CalibrationRow),
    Table("statuses", "statuses", StatusRow),
    Table("run_metrics", "run_metrics", MetricRow),
    Table("run_summary", "runs", RunRow),
)


def store_tables(own: Sequence[Table]) -> tuple[Table, ...]:
    """Every table of a store whose kinds' own stages write `own`, in the store's order: the shared chain's, the
    kinds' own, then `run_metrics` and `run_summary`."""
    return (*SHARED[:-2], *own, *SHARED[-2:])


StorePath = Path | UPath
"""A place in the store: a `Path` in a local folder, read and written natively and renamed into place; a `UPath`
in a store named by URL (`s3://…`, `gs://…`, `file:///…`), read, listed and written through its fsspec filesystem."""


def runtime_home() -> Path:
    """The one git-ignored folder holding all runtime state: `$KINDGI_HOME`, else `./.kindgi`."""
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).absolute()


def is_url(location: str) -> bool:
    """Whether a store location is a URL (`scheme://…`) rather than a local folder."""
    return re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", location) is not None


def store_root(home: Path | None = None) -> StorePath:
    """Where the Parquet tables live: `$KINDGI_STORE` (a folder or a URL), else `<home>/store`.

    The one place that decides between a local store and one reached through fsspec."""
    location = os.environ.get(STORE_ENV)
    if not location:
        return (home or runtime_home()) / "store"
    if not is_url(location):
        return Path(location).absolute()
    if location.startswith("s3://"):
        from kindgi_eval.store.s3 import s3_options  # botocore is needed only for a store on S3

        return UPath(location, **s3_options())
    return UPath(location)


def table_path(root: StorePath, asset: str, partition: str, day: str, run_id: str) -> StorePath:
    """`<root>/<asset>/suite=<key>/date=<YYYY-MM-DD>/run_id=<run>/data.parquet`: hive-style, so DuckDB prunes
    by suite, by the day the run started and by run."""
    return (
        root
        / asset
        / f"{PARTITION_COLUMN}={partition}"
        / f"{DATE_COLUMN}={day}"
        / f"{RUN_COLUMN}={run_id}"
        / "data.parquet"
    )


def find_table(root: StorePath, asset: str, partition: str, run_id: str) -> StorePath | None:
    """The file one run wrote for one asset, whatever day it ran; None if it wrote none."""
    folder = root / asset / f"{PARTITION_COLUMN}={partition}"
    return next(folder.glob(f"{DATE_COLUMN}=*/{RUN_COLUMN}={run_id}/data.parquet"), None)


def month_path(root: StorePath, asset: str, month: str) -> StorePath:
    """`<root>/<asset>/month=<YYYY-MM>/data.parquet`: one month of runs compacted into one file, with the
    hive columns `suite`, `date` and `run_id` stored as real columns and rows sorted by them."""
    return root / asset / f"{MONTH_COLUMN}={month}" / "data.parquet"


def _compacted_rows(root: StorePath, asset: str, run_id: str, partition: str | None = None) -> pa.Table | None:
    """The rows of one run in the compacted month files (hive columns kept); None if no month file holds it."""
    import pyarrow as pa

    found = []
    for path in sorted((root / asset).glob(MONTH_FILES)):
        condition = [(RUN_COLUMN, "=", run_id)] + ([(PARTITION_COLUMN, "=", partition)] if partition else [])
        table = read_parquet(path, filters=condition)
        if table.num_rows:
            found.append(table)
    return pa.concat_tables(found) if found else None


def run_partition(root: StorePath, run_id: str) -> str | None:
    """The partition (tenant suite) of a stored run, from its run summary; None if no such run."""
    for path in root.glob(f"run_summary/*/*/{RUN_COLUMN}={run_id}/data.parquet"):
        return path.parent.parent.parent.name.removeprefix(f"{PARTITION_COLUMN}=")
    compacted = _compacted_rows(root, "run_summary", run_id)
    return compacted.column(PARTITION_COLUMN)[0].as_py() if compacted else None


class RunKey(NamedTuple):
    """Where one stored run sits: its id, its suite partition and the UTC day it started."""

    run_id: str
    partition: str
    day: str


def run_keys(root: StorePath, partition: str | None = None) -> list[RunKey]:
    """Every run the store holds a summary of (only one partition's when given), sorted by run id.

    Read from the run folders' names and the compacted months' hive columns, so no run's rows are read. A run in
    both places (a compaction killed halfway) is listed once."""
    suites = f"{PARTITION_COLUMN}={partition}" if partition is not None else f"{PARTITION_COLUMN}=*"
    found: dict[str, RunKey] = {}
    for path in root.glob(f"run_summary/{suites}/{DATE_COLUMN}=*/{RUN_COLUMN}=*/data.parquet"):
        suite, day, run = (part.split("=", 1)[1] for part in path.parent.parts[-3:])
        if partition is None or suite == partition:  # a key holding `*` or `?` globs wider than itself
            found[run] = RunKey(run, suite, day)
    condition = [(PARTITION_COLUMN, "=", partition)] if partition is not None else None
    for path in sorted((root / "run_summary").glob(MONTH_FILES)):
        table = read_parquet(path, columns=list(HIVE_COLUMNS), filters=condition)
        for row in table.to_pylist():
            found.setdefault(row[RUN_COLUMN], RunKey(row[RUN_COLUMN], row[PARTITION_COLUMN], row[DATE_COLUMN]))
    return sorted(found.values())


def read_table(root: StorePath, table: Table, partition: str, run_id: str) -> pa.Table | None:
    """One run's table, from its own file or a compacted month; None if the store has no such run."""
    from kindgi_eval.store.arrow import arrow_schema

    stored = read_stored(root, table, partition, run_id)
    if stored is None:
        return None
    # a file written before a column was added to the row model lacks it, and its rows read it as the default; one
    # written before a column left the model keeps it, unread here (a kind's figure in `runs`, now in `run_metrics`)
    # unless the model reads it still (`StoredRow.former_columns`)
    wanted = [
        *arrow_schema(table.row).names,
        *sorted(getattr(table.row, "former_columns", ())),
    ]  # CalibrationRow is no StoredRow
    return stored.select([n for n in wanted if n in stored.column_names])


def read_stored(root: StorePath, table: Table, partition: str, run_id: str) -> pa.Table | None:
    """One run's table with every column as it was stored, from its own file or a compacted month; None if the store
    has no such run."""
    from kindgi_eval.store.arrow import arrow_schema

    path = find_table(root, table.asset, partition, run_id)
    if path is not None:
        return read_parquet(path)
    if _compacted_rows(root, "run_summary", run_id, partition) is None:
        return None  # every run stores a summary: without one, the run is not here
    rows = _compacted_rows(root, table.asset, run_id, partition)
    if not rows:
        return arrow_schema(table.row).empty_table()
    return rows.drop_columns(list(HIVE_COLUMNS))


def write_atomically(table: pa.Table, path: StorePath) -> None:
    """Write a run's table whole or not at all (see `put_parquet`), never over an existing one."""
    if path.exists():
        raise FileExistsError(f"{path} exists: a run's tables are never overwritten")
    put_parquet(table, path)


def put_parquet(table: pa.Table, path: StorePath, **options) -> None:
    """Write a Parquet file whole or not at all, replacing any file there.

    Locally through a hidden temporary file in the same folder, renamed over the target; at a URL as one PUT of
    the finished file, which an object store makes visible all at once (it has no rename). A `file://` URL is
    written in place, without that guarantee: name a local folder by its path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(path, UPath):
        buffer = pa.BufferOutputStream()
        pq.write_table(table, buffer, **options)
        path.fs.pipe_file(path.path, buffer.getvalue().to_pybytes())
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp, **options)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_parquet(path: StorePath, **options) -> pa.Table:
    """A Parquet file of the store: natively when local, through its filesystem at a URL."""
    import pyarrow.parquet as pq

    if isinstance(path, UPath):
        return pq.read_table(path.path, filesystem=path.fs, **options)
    return pq.read_table(path, **options)


def remove_folder(folder: StorePath) -> None:
    """Delete a folder and everything in it."""
    if isinstance(folder, UPath):
        folder.fs.rm(folder.path, recursive=True)
    else:
        shutil.rmtree(folder)


def read_rows(root: StorePath, table: Table, partition: str, run_id: str) -> list:
    """The rows one run stored in a table."""
    from kindgi_eval.store.arrow import from_table

    stored = read_table(root, table, partition, run_id)
    if stored is None:
        raise FileNotFoundError(f"run {run_id} stored no {table.asset} for suite {partition}")
    return from_table(stored, table.row)


def rows_if_stored(root: StorePath, table: Table, partition: str, run_id: str) -> list:
    """The rows one run stored in a table only some kinds of suite have; none when it stored no such table."""
    from kindgi_eval.store.arrow import from_table

    stored = read_table(root, table, partition, run_id)
    return [] if stored is None else from_table(stored, table.row)


def earlier_runs(
    root: StorePath, partition: str, before: str, started_at: str, count: int
) -> list[tuple[str, Any, list]]:
    """Up to `count` runs of a suite other than `before` that started no later than it (`started_at`), oldest
    first: (run id, summary, calibration).

    A run's day is the UTC day it started, so only the runs of the latest days up to then are read, not a year."""
    day = started_at[:10]
    keys = sorted((k for k in run_keys(root, partition) if k.run_id != before and k.day <= day), key=lambda k: k.day)
    runs = []
    for key in keys[-3 * count :]:
        (summary,) = read_rows(root, SHARED.run_summary, partition, key.run_id)
        if summary.started_at <= started_at:
            runs.append((key.run_id, summary, read_rows(root, SHARED.calibration, partition, key.run_id)))
    runs.sort(key=lambda run: (run[1].started_at, run[1].finished_at, run[0]))
    return runs[-count:] if count else []
