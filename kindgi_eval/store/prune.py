"""Retention: removing runs older than a cutoff from the store and the Dagster instance, sparing replay sources, and
the recordings in progress (`.partial/`) of the runs removed and of runs killed before the cutoff; and the tables a
run that finished a killed or failed one made again in its place."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import date, timedelta
from typing import NamedTuple

from kindgi_eval.store.batches import (
    area_run_id,
    claim,
    discard_area,
    find_run_areas,
    release,
)
from kindgi_eval.store.compaction import drop_from_months, hive_values, remove_run_folder
from kindgi_eval.store.layout import DATE_COLUMN, RUN_COLUMN, RUN_FILES, StorePath, Table, find_table
from kindgi_eval.store.views import connect


class StoredRunRef(NamedTuple):
    """Where a run sits in time and whose replies it judged."""

    run_id: str
    day: str
    replies_from: str


class Pruned(NamedTuple):
    """What a prune removed and what it kept although old."""

    removed: list[str]
    spared: list[str]


def plan_prune(runs: list[StoredRunRef], keep_days: int, today: date) -> Pruned:
    """Runs that started before `today - keep_days` go, unless a kept run judged their replies (pure)."""
    cutoff = (today - timedelta(days=keep_days)).isoformat()
    kept = [r for r in runs if r.day >= cutoff]
    needed = {r.replies_from for r in kept}
    old = [r.run_id for r in runs if r.day < cutoff]
    return Pruned(removed=[r for r in old if r not in needed], spared=[r for r in old if r in needed])


class AreaRef(NamedTuple):
    """A run's recordings in progress: which run, and the day it started."""

    run_id: str
    day: str


def plan_areas(areas: list[AreaRef], removed: list[str], keep_days: int, today: date) -> list[str]:
    """The runs whose recordings go (pure): every run removed, and every run that started before `today - keep_days`
    and never finished (a killed run, resumed since or not), as a stored run of that age would go."""
    cutoff = (today - timedelta(days=keep_days)).isoformat()
    doomed = set(removed)
    return [a.run_id for a in areas if a.run_id in doomed or a.day < cutoff]


def recorded_areas(root: StorePath) -> list[AreaRef]:
    """Every run's recordings in progress in the store, by run id."""
    return [AreaRef(area_run_id(a), a.parent.name.removeprefix(f"{DATE_COLUMN}=")) for a in find_run_areas(root, "")]


def remove_areas(root: StorePath, run_ids: list[str], *, dry_run: bool = False) -> list[str]:
    """Delete those runs' recordings in progress, but never those a living process records into (or resumes from):
    its lock is held. The run ids whose recordings went (or, with `dry_run`, would go)."""
    doomed = set(run_ids)
    gone = []
    for area in find_run_areas(root, ""):
        if area_run_id(area) not in doomed or not claim(area):
            continue
        if dry_run:
            release(area)
        else:
            discard_area(area)  # and its day and suite folders, when that leaves them empty
        gone.append(area_run_id(area))
    return gone


def stored_runs(root: StorePath) -> list[StoredRunRef]:
    """Every run the store holds a summary of."""
    query = f"SELECT {RUN_COLUMN}, {DATE_COLUMN}, replies_from FROM runs"
    with connect(root, query) as con:
        rows = con.execute(query).fetchall()
    return [StoredRunRef(*row) for row in rows]


def remove_runs(root: StorePath, tables: Sequence[Table], run_ids: list[str]) -> None:
    """Delete every one of `tables` those runs wrote, from their own folders and from compacted months."""
    doomed = set(run_ids)
    for table in tables:
        for path in (root / table.asset).glob(RUN_FILES):
            if hive_values(path)[RUN_COLUMN] in doomed:
                remove_run_folder(path.parent)
    drop_from_months(root, tables, doomed)


def remove_superseded(
    root: StorePath, partition: str, line: Sequence[str], unfinished: Collection[str], tables: Sequence[Table]
) -> list[str]:
    """Keep each table once in a line of runs: `line` is a run, then the killed or failed runs it finishes, nearest
    first. Of each table, the nearest run's is the one the line reads (as `defs.lineage.input_run` does); the same
    table of the runs beyond it is removed if that run is `unfinished` (killed or failed: a run that succeeded is
    never touched). A step that wrote its table and then failed (its run killed, a query of Dagster's cut off) was
    run again, and the store would otherwise hold its rows twice; a table the later runs read instead of making
    stays. `<asset>@<run id>` of each table removed."""
    gone = []
    for table in tables:
        found = [
            (run_id, path) for run_id in line if (path := find_table(root, table.asset, partition, run_id)) is not None
        ]
        for run_id, path in found[1:]:
            if run_id in unfinished:
                remove_run_folder(path.parent)
                gone.append(f"{table.asset}@{run_id}")
    return gone
