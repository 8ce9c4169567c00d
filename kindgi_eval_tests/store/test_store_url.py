"""A store named by URL (`KINDGI_STORE`): the same runs, views, replays, compaction and prune, through fsspec."""

from __future__ import annotations

from pathlib import Path

import duckdb
import fsspec
import pyarrow as pa
import pytest
from upath import UPath

from kindgi_eval.defs.runs import open_instance, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.store.compaction import compact
from kindgi_eval.store.layout import SHARED, find_table, is_url, month_path, read_rows, store_root, write_atomically
from kindgi_eval.store.prune import remove_runs
from kindgi_eval.store.views import Views, connect, export_database
from kindgi_eval_tests.cli.test_history import ANSWERS, age_runs, run_id_of, sql_json
from kindgi_eval_tests.conftest import GOLDEN, GOLDEN_STATUSES, files_under, run_cli

GOLDEN_CASES = GOLDEN_STATUSES

KEY = "demo-academy.golden"
PER_RUN = "SELECT run_id, count(*) AS n FROM statuses GROUP BY run_id ORDER BY run_id"


@pytest.mark.parametrize(
    ("location", "url"),
    [
        ("s3://bucket/kindgi", True),
        ("gs://bucket/kindgi", True),
        ("file:///srv/kindgi-store", True),
        ("/srv/kindgi-store", False),
        ("relative/store", False),
        ("C:\\kindgi\\store", False),  # a drive letter is not a scheme: no "://"
        ("./s3:/not-a-url", False),
    ],
)
def test_is_url(location: str, url: bool) -> None:
    assert is_url(location) is url


def test_store_root_is_a_path_unless_kindgi_store_is_a_url(
    home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert store_root() == home.store and not isinstance(store_root(), UPath)
    monkeypatch.setenv("KINDGI_STORE", "elsewhere")
    monkeypatch.chdir(tmp_path)
    assert store_root() == tmp_path / "elsewhere" and not isinstance(store_root(), UPath)  # absolute, as views need
    monkeypatch.setenv("KINDGI_STORE", "file:///srv/kindgi-store")
    root = store_root(home.root)  # the variable wins over the runtime folder, for the IO manager too
    assert isinstance(root, UPath) and root.protocol == "file" and root.path == "/srv/kindgi-store"


@pytest.fixture
def memory_store(home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A store on fsspec's in-process memory filesystem: no rename, no local path, and unknown to DuckDB itself."""
    url = f"memory:///{tmp_path.name}"
    monkeypatch.setenv("KINDGI_STORE", url)
    yield store_root()
    fsspec.filesystem("memory").rm(f"/{tmp_path.name}", recursive=True)


def test_a_non_local_store_is_written_queried_compacted_and_pruned_through_fsspec(home, memory_store) -> None:
    instance = open_instance(home.root)
    settings = RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent")
    first, second = (
        run_chain(instance, home.root, settings, KEY, "conversation"),
        run_chain(instance, home.root, settings, KEY, "conversation"),
    )
    assert find_table(memory_store, "statuses", KEY, first).exists()
    assert files_under(home.store) == []
    with pytest.raises(FileExistsError):  # never overwritten, on an object store too
        write_atomically(pa.table({"x": [1]}), find_table(memory_store, "statuses", KEY, first))
    with connect(memory_store, PER_RUN) as con:  # DuckDB reads memory:// only through the registered filesystem
        assert con.execute(PER_RUN).fetchall() == sorted([(first, GOLDEN_CASES), (second, GOLDEN_CASES)])
    with duckdb.connect() as con, pytest.raises(duckdb.Error):  # without the registration, DuckDB finds nothing there
        con.execute(f"SELECT * FROM read_parquet('{memory_store}/statuses/*/*/*/data.parquet')")

    done = compact(memory_store, SHARED, "9999-12")
    assert done.runs == 2
    (month,) = done.months
    assert (
        month_path(memory_store, "statuses", month).exists()
        and find_table(memory_store, "statuses", KEY, first) is None
    )
    assert (
        len(read_rows(memory_store, SHARED.statuses, KEY, first)) == GOLDEN_CASES
    )  # a compacted run is read from its month
    remove_runs(memory_store, SHARED, [first])
    with connect(memory_store, PER_RUN) as con:
        assert con.execute(PER_RUN).fetchall() == [(second, GOLDEN_CASES)]
    remove_runs(memory_store, SHARED, [second])
    assert not month_path(memory_store, "statuses", month).exists()  # a month left empty is removed

    # the database file must be local: it goes to the runtime folder, not into the store
    assert export_database(memory_store, Views()) == home.root / "kindgi.duckdb"


@pytest.fixture
def file_url_store(home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`KINDGI_STORE=file:///…/remote-store`: a URL, so every command goes through fsspec, on a folder a test can read."""
    folder = tmp_path / "remote-store"
    monkeypatch.setenv("KINDGI_STORE", folder.as_uri())
    return folder


def test_the_cli_runs_replays_queries_compacts_and_prunes_a_store_at_a_file_url(home, file_url_store: Path) -> None:
    first = run_cli("run", "--mock")
    assert first.code == 0, first.err
    source = run_id_of(first)
    assert f"stored under {file_url_store.as_uri()}" in first.err
    assert find_table(file_url_store, "statuses", KEY, source) is not None
    assert not home.store.exists()
    assert sql_json(PER_RUN) == [{"run_id": source, "n": GOLDEN_CASES}]

    replayed = run_cli("replay", "--from", source, "--judge-model", "mock:judge")
    assert replayed.code == 0, replayed.err
    replay = run_id_of(replayed)
    assert sql_json(f"SELECT replies_from FROM runs WHERE run_id = '{replay}'") == [{"replies_from": source}]

    # the exported database sits in the runtime folder; a plain DuckDB client reads its file:// views itself
    with duckdb.connect(str(home.root / "kindgi.duckdb"), read_only=True) as con:
        assert con.execute(PER_RUN).fetchall() == sorted([(source, GOLDEN_CASES), (replay, GOLDEN_CASES)])

    age_runs(file_url_store, [source, replay], "2025-10-07")
    before = [sql_json(q) for q in ANSWERS]
    compacted = run_cli("compact")
    assert compacted.out == "compacted 2 runs of 1 months (2025-10)\n", compacted.err
    assert month_path(file_url_store, "statuses", "2025-10").is_file()
    assert [sql_json(q) for q in ANSWERS] == before

    kept = run_id_of(run_cli("run", "--mock"))
    pruned = run_cli("prune", "--keep-days", "30")
    assert pruned.out == "removed 2 runs; kept 0 older runs whose replies a kept replay uses\n", pruned.err
    assert sql_json(PER_RUN) == [{"run_id": kept, "n": GOLDEN_CASES}]
    assert not month_path(file_url_store, "statuses", "2025-10").exists()
