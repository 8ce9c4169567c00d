"""The Parquet store: where every asset's table of every run lives, written atomically, never overwritten."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from kindgi_eval.rows import (
    CalibrationRow,
    OutcomeRow,
    ReplyRow,
    RunRow,
    SampleRow,
    StatusRow,
    SuiteRow,
)

HOME_ENV = "KINDGI_HOME"
DEFAULT_HOME = ".kindgi"
PARTITION_COLUMN = "suite"
DATE_COLUMN = "date"
RUN_COLUMN = "run_id"


class Table(NamedTuple):
    """An asset's stored table: its folder (the asset's name), its DuckDB view and its row model."""

    asset: str
    view: str
    row: type[BaseModel]


# One name per thing: asset = folder under the store; view = what `kindgi-eval sql` calls it.
TABLES = (
    Table("suite", "cases", SuiteRow),
    Table("agent_replies", "replies", ReplyRow),
    Table("outcomes", "outcomes", OutcomeRow),
    Table("judge_samples", "judge_samples", SampleRow),
    Table("calibration", "calibration", CalibrationRow),
    Table("statuses", "statuses", StatusRow),
    Table("run_summary", "runs", RunRow),
)
TABLE_OF = {t.asset: t for t in TABLES}


def runtime_home() -> Path:
    """The one git-ignored folder holding all runtime state: `$KINDGI_HOME`, else `./.kindgi`."""
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).absolute()


def store_root(home: Path | None = None) -> Path:
    """Where the Parquet tables live."""
    return (home or runtime_home()) / "store"


def table_path(root: Path, asset: str, partition: str, day: str, run_id: str) -> Path:
    """`<root>/<asset>/suite=<key>/date=<YYYY-MM-DD>/run_id=<run>/data.parquet`: hive-style, so DuckDB prunes
    by suite, by the day the run started and by run."""
    return (
        root / asset / f"{PARTITION_COLUMN}={partition}" / f"{DATE_COLUMN}={day}" / f"{RUN_COLUMN}={run_id}" / "data.parquet"
    )


def find_table(root: Path, asset: str, partition: str, run_id: str) -> Path | None:
    """The file one run wrote for one asset, whatever day it ran; None if it wrote none."""
    folder = root / asset / f"{PARTITION_COLUMN}={partition}"
    return next(folder.glob(f"{DATE_COLUMN}=*/{RUN_COLUMN}={run_id}/data.parquet"), None)


def run_partition(root: Path, run_id: str) -> str | None:
    """The partition (tenant suite) of a stored run, from its run summary's folder; None if no such run."""
    for path in root.glob(f"run_summary/*/*/{RUN_COLUMN}={run_id}/data.parquet"):
        return path.parent.parent.parent.name.removeprefix(f"{PARTITION_COLUMN}=")
    return None


def write_atomically(table: pa.Table, path: Path) -> None:
    """Write through a hidden temporary file in the same folder and rename: a killed write leaves no torn file."""
    if path.exists():
        raise FileExistsError(f"{path} exists: a run's tables are never overwritten")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_rows(root: Path, asset: str, partition: str, run_id: str) -> list:
    """The rows one run stored for one asset."""
    model = TABLE_OF[asset].row
    path = find_table(root, asset, partition, run_id)
    if path is None:
        raise FileNotFoundError(f"run {run_id} stored no {asset} for suite {partition}")
    table = pq.read_table(path)
    return [model.model_validate(r) for r in table.to_pylist()]
