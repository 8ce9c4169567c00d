"""Retention: removing runs older than a cutoff from the store and the Dagster instance, sparing replay sources."""

from __future__ import annotations

from datetime import date, timedelta
from typing import NamedTuple

from kindgi_eval.store.compaction import drop_from_months, hive_values, remove_run_folder
from kindgi_eval.store.layout import DATE_COLUMN, RUN_COLUMN, RUN_FILES, TABLES, StorePath
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


def stored_runs(root: StorePath) -> list[StoredRunRef]:
    """Every run the store holds a summary of."""
    query = f"SELECT {RUN_COLUMN}, {DATE_COLUMN}, replies_from FROM runs"
    with connect(root, query) as con:
        rows = con.execute(query).fetchall()
    return [StoredRunRef(*row) for row in rows]


def remove_runs(root: StorePath, run_ids: list[str]) -> None:
    """Delete every table those runs wrote, from their own folders and from compacted months."""
    doomed = set(run_ids)
    for table in TABLES:
        for path in (root / table.asset).glob(RUN_FILES):
            if hive_values(path)[RUN_COLUMN] in doomed:
                remove_run_folder(path.parent)
    drop_from_months(root, doomed)
