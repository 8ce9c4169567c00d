"""A run's recordings in progress (store.batches), and the store reading runs written before a column was added."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import duckdb
import pyarrow as pa

from kindgi_eval.store.arrow import to_table
from kindgi_eval.store.batches import (
    BatchWriter,
    claim,
    discard_area,
    read_batches,
    run_area,
)
from kindgi_eval.store.compaction import compact
from kindgi_eval.store.layout import SHARED, read_rows, table_path, write_atomically
from kindgi_eval.store.rows import ReplyRow, RunRow
from kindgi_eval.store.views import Views, connect, export_database
from kindgi_eval_tests.rows import reply_row, run_row

KEY = "demo-academy.golden"
NEW_RUN_COLUMNS = ["resumed_from", "agent_calls_saved", "judge_calls_saved"]


def reply(case_id: str) -> ReplyRow:
    return reply_row(case_id, [f"hi {case_id}"])


def test_a_batch_is_written_every_few_rows_and_at_the_latest_a_moment_after_its_first(tmp_path: Path) -> None:
    folder = tmp_path / "agent_replies"
    writer = BatchWriter(folder, ReplyRow, rows=3, seconds=0.3)
    for n in range(7):
        writer.add(reply(f"c{n}"))
    # 3 + 3 written at once; the seventh waits for two more rows, or for 0.3 s
    assert [r.case_id for r in read_batches(folder, ReplyRow)] == [f"c{n}" for n in range(6)]
    time.sleep(0.6)
    assert [r.case_id for r in read_batches(folder, ReplyRow)] == [f"c{n}" for n in range(7)]
    writer.add(reply("c7"))
    writer.close()  # what is buffered is written on the way out
    assert [r.case_id for r in read_batches(folder, ReplyRow)] == [f"c{n}" for n in range(8)]
    assert writer.batches == 4 and len(list(folder.iterdir())) == 4  # no temporary file is left behind


def test_a_batch_never_read_half_written(tmp_path: Path) -> None:
    folder = tmp_path / "agent_replies"
    with BatchWriter(folder, ReplyRow, rows=2) as writer:
        writer.add(reply("a"))
        writer.add(reply("b"))
    (folder / ".000-torn.tmp").write_bytes(b"PAR1 half a file")  # a write killed before its rename
    (folder / "999-damaged.parquet").write_bytes(b"not parquet")  # only a damaged disk makes one
    assert [r.case_id for r in read_batches(folder, ReplyRow)] == ["a", "b"]
    assert read_batches(tmp_path / "nothing-here", ReplyRow) == []


def test_two_writers_of_one_run_never_overwrite_each_other(tmp_path: Path) -> None:
    folder = tmp_path / "agent_replies"
    with (
        BatchWriter(folder, ReplyRow, rows=1) as first,
        BatchWriter(folder, ReplyRow, rows=1) as second,
    ):  # a retried step
        first.add(reply("a"))
        second.add(reply("b"))
    assert sorted(r.case_id for r in read_batches(folder, ReplyRow)) == ["a", "b"]


def _hold(area: str, ready, done) -> None:
    assert claim(Path(area))
    ready.set()
    done.wait(10)


def test_an_area_is_claimed_by_one_living_process_at_a_time(tmp_path: Path) -> None:
    area = run_area(tmp_path, KEY, "2026-12-01", "r1")
    context = multiprocessing.get_context("fork")
    ready, done = context.Event(), context.Event()
    holder = context.Process(target=_hold, args=(str(area), ready, done))
    holder.start()
    assert ready.wait(10)
    assert not claim(area)  # the run is alive
    done.set()
    holder.join()
    assert claim(area)  # its process ended, so its lock went with it
    discard_area(area)
    assert not area.exists() and not area.parent.exists()


def test_views_never_read_a_runs_recordings(tmp_path: Path) -> None:
    write_atomically(
        to_table([reply("stored")], ReplyRow), table_path(tmp_path, "agent_replies", KEY, "2026-12-01", "r1")
    )
    area = run_area(tmp_path, KEY, "2026-12-01", "r2")
    with BatchWriter(area / "agent_replies", ReplyRow) as writer:
        writer.add(reply("in-progress"))
    with connect(tmp_path, "SELECT case_id FROM replies") as con:
        assert con.execute("SELECT case_id, run_id FROM replies").fetchall() == [("stored", "r1")]


def test_runs_stored_before_the_resume_columns_read_alongside_new_ones(tmp_path: Path) -> None:
    # "a-old" sorts first, so a reader taking the first file's columns would drop the new ones of every later file
    old = to_table([run_row(replies_from="a-old")], RunRow).drop_columns(NEW_RUN_COLUMNS)
    write_atomically(old, table_path(tmp_path, "run_summary", KEY, "2026-10-01", "a-old"))
    new = run_row(replies_from="b-new", resumed_from="killed", agent_calls_saved=3, judge_calls_saved=9)
    write_atomically(to_table([new], RunRow), table_path(tmp_path, "run_summary", KEY, "2026-10-02", "b-new"))
    query = "SELECT run_id, resumed_from, agent_calls_saved, judge_calls_saved FROM runs ORDER BY run_id"
    expected = [("a-old", None, None, None), ("b-new", "killed", 3, 9)]
    with connect(tmp_path, query) as con:
        assert con.execute(query).fetchall() == expected
    assert read_rows(tmp_path, SHARED.run_summary, KEY, "a-old")[0].agent_calls_saved is None
    compact(tmp_path, SHARED, "2026-11")  # one month file of both shapes
    with connect(tmp_path, query) as con:
        assert con.execute(query).fetchall() == expected
    assert read_rows(tmp_path, SHARED.run_summary, KEY, "b-new") == [new]
    # a month compacted before the columns existed, with a new run compacted into it later
    month = tmp_path / "run_summary" / "month=2026-10" / "data.parquet"
    import pyarrow.parquet as pq

    pq.write_table(
        pq.read_table(month)
        .filter(pa.compute.equal(pa.compute.field("run_id"), "a-old"))
        .drop_columns(NEW_RUN_COLUMNS),
        month,
    )
    assert read_rows(tmp_path, SHARED.run_summary, KEY, "a-old")[0].resumed_from is None
    write_atomically(to_table([new], RunRow), table_path(tmp_path, "run_summary", KEY, "2026-10-03", "c-new"))
    compact(tmp_path, SHARED, "2026-11")
    with connect(tmp_path, query) as con:
        assert con.execute(query).fetchall() == [("a-old", None, None, None), ("c-new", "killed", 3, 9)]


def _export(root: str, times: int) -> None:
    for _ in range(times):
        export_database(Path(root), Views())


def test_exports_at_the_same_moment_each_leave_a_whole_database(tmp_path: Path) -> None:
    write_atomically(
        to_table([reply("stored")], ReplyRow), table_path(tmp_path, "agent_replies", KEY, "2026-12-01", "r1")
    )
    context = multiprocessing.get_context("fork")
    exporters = [context.Process(target=_export, args=(str(tmp_path), 10)) for _ in range(3)]
    for p in exporters:
        p.start()
    for p in exporters:
        p.join()
    assert [p.exitcode for p in exporters] == [0, 0, 0]
    with duckdb.connect(str(tmp_path / "kindgi.duckdb"), read_only=True) as con:
        assert con.execute("SELECT case_id FROM replies").fetchall() == [("stored",)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent_replies", "kindgi.duckdb"]
