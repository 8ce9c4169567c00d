"""What a run records while it runs, so that a killed run can be finished without paying for anything twice.

Each run has a hidden area in the store, `<root>/.partial/suite=<key>/date=<day>/run_id=<run>/`, that no view,
compaction or prune glob reaches (they read `<asset>/.../data.parquet` only). It holds:
- `manifest.json`: what the run's rows were recorded under (its settings and the suite's and the tenant
  configuration's hashes), which a resume must find unchanged;
- `agent_replies/`, `judge_samples/`, `pairwise/`: the rows of the paid stages, in small batches written as they arrive, each
  batch one Parquet file written whole or not at all (a hidden temporary file, flushed to disk, renamed);
- `<asset>.sent.json`: the provider batches a stage sent through a batch API, by phase, so a resumed run reads their
  answers instead of paying for them twice;
- `lock`: held by the process recording into the area, so a run still alive is never resumed.
The area is removed when the run has stored its summary. Touches files (locally or through fsspec).
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Generic, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict
from upath import UPath

from kindgi_eval.store.arrow import from_table, to_table
from kindgi_eval.store.compaction import remove_run_folder
from kindgi_eval.store.layout import (
    DATE_COLUMN,
    PARTITION_COLUMN,
    RUN_COLUMN,
    StorePath,
)

PARTIAL_FOLDER = ".partial"
"""The store's hidden folder of runs in progress (and of runs killed before they finished)."""
MANIFEST_FILE = "manifest.json"
LOCK_FILE = "lock"
BATCH_ROWS = 5
"""A batch is written once it holds this many rows..."""
BATCH_SECONDS = 1.0
"""...or once its first row has waited this long, whichever comes first."""

Row = TypeVar("Row", bound=BaseModel)


class Manifest(BaseModel):
    """What a run's recorded rows were recorded under; a resume refuses to reuse them when any of it changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    """The run that recorded the rows."""
    partition: str
    """The tenant suite it ran."""
    settings: dict[str, str | int | float | None]
    """Its resolved settings (`RunSettings` as JSON)."""
    suite_hash: str
    """Content hash of the suite's files when the run read them."""
    config_hash: str
    """Content hash of the tenant configuration when the run read it."""
    replies_from: str | None = None
    """A replay's source run, whose stored replies it judged; None for a run that asked the agent."""
    resumes: str | None = None
    """The killed run this run finishes, whose recordings it reuses; None for a run started afresh."""


def run_area(root: StorePath, partition: str, day: str, run_id: str) -> StorePath:
    """`<root>/.partial/suite=<key>/date=<day>/run_id=<run>/`: one run's recordings in progress."""
    return root / PARTIAL_FOLDER / f"{PARTITION_COLUMN}={partition}" / f"{DATE_COLUMN}={day}" / f"{RUN_COLUMN}={run_id}"


def find_run_areas(root: StorePath, run_id_prefix: str, partition: str | None = None) -> list[StorePath]:
    """The areas of every run whose id begins with `run_id_prefix` (one partition's only when given), by run id."""
    suites = f"{PARTITION_COLUMN}={partition}" if partition is not None else f"{PARTITION_COLUMN}=*"
    folder = root / PARTIAL_FOLDER
    if not folder.exists():
        return []
    found = [
        p
        for p in folder.glob(f"{suites}/{DATE_COLUMN}=*/{RUN_COLUMN}=*")
        if p.name.removeprefix(f"{RUN_COLUMN}=").startswith(run_id_prefix)  # a prefix holding `*` is not a glob
    ]
    return sorted(found, key=lambda p: p.name)


def area_run_id(area: StorePath) -> str:
    """The run id an area belongs to."""
    return area.name.removeprefix(f"{RUN_COLUMN}=")


def write_manifest(area: StorePath, manifest: Manifest) -> None:
    """Record what the run's rows are recorded under (replacing an earlier manifest of the same run)."""
    put_durably((manifest.model_dump_json(indent=2) + "\n").encode(), area / MANIFEST_FILE)


def read_manifest(area: StorePath) -> Manifest | None:
    """The manifest of a run's area; None when it recorded none."""
    path = area / MANIFEST_FILE
    if not path.exists():
        return None
    return Manifest.model_validate(json.loads(path.read_bytes()))


def read_sent(area: StorePath, asset: str) -> dict[str, str]:
    """The provider batches `asset`'s stage sent in this area's run, by phase; empty when it sent none."""
    path = area / f"{asset}.sent.json"
    return dict(json.loads(path.read_bytes())) if path.exists() else {}


def write_sent(area: StorePath, asset: str, phase: str, batch_id: str) -> None:
    """Record, durably, that `asset`'s stage sent the provider batch `batch_id` for `phase` in this area's run."""
    sent = {**read_sent(area, asset), phase: batch_id}
    put_durably((json.dumps(sent, indent=2) + "\n").encode(), area / f"{asset}.sent.json")


def put_durably(data: bytes, path: StorePath) -> None:
    """Write a file whole or not at all, and on disk before it is visible: a hidden temporary file in the same
    folder, flushed to the disk, renamed over the target, and the folder flushed. At a URL, one PUT of the bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(path, UPath):
        path.fs.pipe_file(path.path, data)
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def parquet_bytes(rows: Sequence[BaseModel], model: type[BaseModel]) -> bytes:
    """Rows as the bytes of one Parquet file, typed by their model."""
    buffer = pa.BufferOutputStream()
    pq.write_table(to_table(rows, model), buffer)
    return buffer.getvalue().to_pybytes()


class BatchWriter(Generic[Row]):
    """Records rows in a folder as they arrive, in batches of at most `rows` rows, each written at the latest
    `seconds` after its first row arrived (a background thread sees to that when no further row comes).

    Thread-safe: `add` may be called from any thread. A write that fails is raised by the next `add` or by
    `close`. Killed at any moment, the folder holds whole batches only; the rows not yet written (fewer than
    `rows`, none older than `seconds`) are all that is lost."""

    def __init__(self, folder: StorePath, model: type[Row], *, rows: int = BATCH_ROWS, seconds: float = BATCH_SECONDS):
        self.folder = folder
        self.model = model
        self.rows = rows
        self.seconds = seconds
        self.batches = 0
        """How many batches this writer wrote."""
        self._pending: list[Row] = []
        self._oldest = 0.0
        self._error: BaseException | None = None
        self._closed = False
        self._token = uuid.uuid4().hex[:8]  # two writers of one run (a retried step) never pick the same name
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._flush_when_due, name=f"batches:{folder}", daemon=True)
        self._thread.start()

    def add(self, row: Row) -> None:
        """Record one row: buffered, and written with its batch."""
        with self._wake:
            self._raise_failure()
            if not self._pending:
                self._oldest = time.monotonic()
                self._wake.notify()
            self._pending.append(row)
            if len(self._pending) >= self.rows:
                self._write_pending()

    def flush(self) -> None:
        """Write what is buffered now."""
        with self._wake:
            self._write_pending()
            self._raise_failure()

    def close(self) -> None:
        """Write what is buffered and stop the background thread."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join()
        self.flush()

    def __enter__(self) -> BatchWriter[Row]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _flush_when_due(self) -> None:
        with self._wake:
            while not self._closed:
                due = self._oldest + self.seconds - time.monotonic() if self._pending else None
                if due is not None and due <= 0:
                    try:
                        self._write_pending()
                    except BaseException as e:  # kept for the caller: a thread's exception is otherwise lost
                        self._error = e
                        return
                    continue
                self._wake.wait(due)

    def _write_pending(self) -> None:
        """Write the buffered rows as the next batch (the caller holds the lock)."""
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        self.batches += 1
        name = f"{time.time_ns():020d}-{self._token}-{self.batches:06d}.parquet"
        try:
            put_durably(parquet_bytes(rows, self.model), self.folder / name)
        except BaseException:
            self._pending = rows + self._pending  # not written: kept for the next attempt
            self.batches -= 1
            raise

    def _raise_failure(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error


def read_batches(folder: StorePath, model: type[Row]) -> list[Row]:
    """Every row recorded in a folder's batches, batch by batch in the order written; none when it holds none.

    A batch that cannot be read (only a damaged disk makes one: each is renamed into place whole) is skipped,
    so its rows are asked again rather than trusted."""
    if not folder.exists():
        return []
    rows: list[Row] = []
    for path in sorted(folder.glob("*.parquet"), key=lambda p: p.name):
        try:
            table = pq.read_table(path.path, filesystem=path.fs) if isinstance(path, UPath) else pq.read_table(path)
        except (OSError, pa.ArrowException):
            continue
        rows += from_table(table, model)
    return rows


_HELD: dict[str, int] = {}
"""Locks this process holds, by area: kept until the area is discarded or the process ends."""


def claim(area: StorePath) -> bool:
    """Hold the area's lock from now on; False when another living process holds it (the run is not dead).

    The kernel lets go of the lock when the process ends, however it ends (SIGKILL included), so a lock that can
    be taken means no process is recording there. A store at a URL has no locks: every claim succeeds."""
    if isinstance(area, UPath):
        return True
    key = str(area)
    if key in _HELD:
        return True
    area.mkdir(parents=True, exist_ok=True)
    fd = os.open(area / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    _HELD[key] = fd
    return True


def release(area: StorePath) -> None:
    """Let go of an area's lock, if this process holds it."""
    fd = _HELD.pop(str(area), None)
    if fd is not None:
        os.close(fd)


def discard_area(area: StorePath) -> None:
    """Remove a finished run's area: its tables are stored whole, so its recordings are needed no more."""
    release(area)
    if area.exists():
        remove_run_folder(area)  # and its day and suite folders, when that leaves them empty
