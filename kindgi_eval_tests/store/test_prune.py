"""`prune` and the recordings in progress (`.partial/`): those of the runs it removes, and of runs killed before the
cutoff, go; those of a run that may still be resumed, or that a living process holds, stay."""

from __future__ import annotations

import fcntl
import os
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from kindgi_eval.store.batches import (
    PARTIAL_FOLDER,
    BatchWriter,
    Manifest,
    run_area,
    write_manifest,
)
from kindgi_eval.store.prune import AreaRef, plan_areas
from kindgi_eval.store.rows import ReplyRow
from kindgi_eval_tests.cli.test_history import age_runs, run_id_of
from kindgi_eval_tests.conftest import run_cli

KEY = "demo-academy.golden"


@pytest.mark.parametrize(
    ("areas", "removed", "gone"),
    [
        # a run killed before the cutoff goes, as a stored run of its age would; one killed since stays (resumable)
        ([AreaRef("old", "2026-10-01"), AreaRef("new", "2026-11-29")], [], ["old"]),
        # exactly on the cutoff day is kept, as plan_prune keeps a run of that day
        ([AreaRef("edge", "2026-10-31")], [], []),
        # the recordings of a run being removed go whatever their day
        ([AreaRef("pruned", "2026-11-29"), AreaRef("new", "2026-11-29")], ["pruned"], ["pruned"]),
        # a removed run with no recordings changes nothing
        ([AreaRef("new", "2026-11-29")], ["pruned"], []),
    ],
)
def test_plan_areas(areas: list[AreaRef], removed: list[str], gone: list[str]) -> None:
    assert plan_areas(areas, removed, keep_days=30, today=date(2026, 11, 30)) == gone


def record(store: Path, run_id: str, day: str) -> Path:
    """A run's recordings as the run leaves them when it is killed: its manifest and one batch of replies."""
    area = run_area(store, KEY, day, run_id)
    write_manifest(area, Manifest(run_id=run_id, partition=KEY, settings={}, suite_hash="s", config_hash="c"))
    with BatchWriter(area / "agent_replies", ReplyRow) as batches:
        batches.add(
            ReplyRow(
                case_id="c1",
                agent="mock:agent",
                messages=["hi"],
                escalate=False,
                reason=None,
                latency_ms=1.0,
                prompt_tokens=0,
                completion_tokens=0,
                cost_usd=0.0,
                cost_known=True,
                error=None,
                raw=None,
            )
        )
    return area


def test_prune_removes_the_recordings_of_pruned_and_long_dead_runs(home) -> None:
    old = run_id_of(run_cli("run", "--mock"))
    kept = run_id_of(run_cli("run", "--mock"))
    age_runs(home.store, [old], "2025-11-01")
    today = datetime.now(UTC).date().isoformat()
    leftover = record(home.store, old, "2025-11-01")  # as if its run had stored its summary and died before tidying
    long_dead = record(home.store, "killed-long-ago", "2025-10-01")
    resumable = record(home.store, "killed-today", today)
    alive = record(home.store, "still-recording", "2025-10-01")
    lock = os.open(alive / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held, as a process recording there (or resuming it) holds it
    try:
        dry = run_cli("prune", "--keep-days", "30", "--dry-run")
        assert dry.code == 0, dry.err
        assert dry.out == (
            "would remove 1 runs; kept 0 older runs whose replies a kept replay uses\n"
            "would remove the recordings in progress of 2 runs that were pruned or never finished\n"
        )
        assert all(a.is_dir() for a in (leftover, long_dead, resumable, alive))  # a dry run removes nothing

        done = run_cli("prune", "--keep-days", "30")
        assert done.code == 0, done.err
        assert done.out == (
            "removed 1 runs; kept 0 older runs whose replies a kept replay uses\n"
            "removed the recordings in progress of 2 runs that were pruned or never finished\n"
        )
        assert not leftover.exists() and not long_dead.exists()
        assert not leftover.parent.exists()  # its day's folder went with it, once empty
        assert resumable.is_dir() and alive.is_dir()
    finally:
        os.close(lock)
    assert run_cli("sql", "SELECT run_id FROM runs", "--format", "csv").out.split() == ["run_id", kept]

    # once no process holds it, the long-dead run's recordings go at the next prune; the store keeps only what lives
    again = run_cli("prune", "--keep-days", "30")
    assert again.out.endswith("removed the recordings in progress of 1 runs that were pruned or never finished\n")
    assert [p.name for p in (home.store / PARTIAL_FOLDER).glob("*/*/*")] == ["run_id=killed-today"]


def test_a_line_of_runs_keeps_each_table_once_the_one_it_reads(tmp_path: Path) -> None:
    from kindgi_eval.store import SHARED, find_table, remove_superseded, table_path, to_table, write_atomically

    def store(asset: str, run_id: str, day: str = "2026-12-01") -> None:
        table = SHARED[[t.asset for t in SHARED].index(asset)]
        write_atomically(to_table([], table.row), table_path(tmp_path, asset, KEY, day, run_id))

    # "killed" stored suite and outcomes, then died; "failed" resumed it, every stage again, made suite and
    # agent_replies and failed; "last" re-executed "failed" from its failure after midnight (another day's folder):
    # it read suite from "failed" and made agent_replies, outcomes and run_summary
    for asset in ("suite", "outcomes"):
        store(asset, "killed")
    for asset in ("suite", "agent_replies"):
        store(asset, "failed")
    for asset in ("agent_replies", "outcomes", "run_summary"):
        store(asset, "last", day="2026-12-02")
    store("suite", "other")  # a run of the suite outside this line
    assert remove_superseded(tmp_path, KEY, ["last", "failed", "killed"], set(), SHARED) == []  # as if both succeeded
    gone = remove_superseded(tmp_path, KEY, ["last", "failed", "killed"], {"failed", "killed"}, SHARED)
    assert sorted(gone) == ["agent_replies@failed", "outcomes@killed", "suite@killed"]
    left = {
        (t.asset, run)
        for t in SHARED
        for run in ("killed", "failed", "last", "other")
        if find_table(tmp_path, t.asset, KEY, run)
    }
    # each table once in the line, the nearest run's (what "last" read or made); other runs untouched
    assert left == {
        ("suite", "failed"),
        ("agent_replies", "last"),
        ("outcomes", "last"),
        ("run_summary", "last"),
        ("suite", "other"),
    }
    assert remove_superseded(tmp_path, KEY, ["last", "failed", "killed"], {"failed", "killed"}, SHARED) == []
