"""The asset chain in a real Dagster instance, stored as Parquet, read back through DuckDB."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import dagster as dg

from kindgi_eval.defs.assets import CHAIN
from kindgi_eval.defs.jobs import EVALUATE, kind_selection
from kindgi_eval.defs.runs import open_instance, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.store.layout import find_table
from kindgi_eval_tests.conftest import GOLDEN, GOLDEN_STATUSES, run_cli

KEY = "demo-academy.golden"


def test_definitions_load() -> None:
    from kindgi_eval.defs.definitions import defs

    assert {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()} == {
        a.key.to_user_string() for a in CHAIN
    }


def test_chain_materialises_every_stage_and_sql_spans_two_runs(home) -> None:
    instance = open_instance(home.root)
    settings = RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent")
    first = run_chain(instance, home.root, settings, KEY, "conversation")
    second = run_chain(instance, home.root, settings, KEY, "conversation")
    assert first != second
    own = kind_selection(EVALUATE, "conversation")
    for asset in CHAIN:
        name = asset.key.to_user_string()
        materialised = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=asset.key, asset_partitions=[KEY]), limit=1
        ).records
        if asset.key not in own:  # another kind's stage: not started for a conversation suite, no step, no table
            assert not materialised and all(
                find_table(home.store, name, KEY, run_id) is None for run_id in (first, second)
            )
            continue
        for run_id in (first, second):  # each run keeps its own file: history is never overwritten
            assert find_table(home.store, name, KEY, run_id) is not None
        assert materialised[0].run_id == second
    steps = {e.step_key for e in instance.all_logs(second, of_type=dg.DagsterEventType.STEP_SUCCESS)}
    assert steps == {key.to_user_string() for key in own} and "accuracy" not in steps
    result = run_cli(
        "sql", "SELECT run_id, count(*) AS n FROM statuses GROUP BY run_id ORDER BY run_id", "--format", "json"
    )
    assert result.code == 0, result.err
    rows = json.loads(result.out)
    cases = GOLDEN_STATUSES
    assert sorted(r["run_id"] for r in rows) == sorted([first, second])
    assert all(r["n"] == cases for r in rows)


def test_views_carry_run_id_and_partition(home) -> None:
    instance = open_instance(home.root)
    run_id = run_chain(
        instance, home.root, RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent"), KEY, "conversation"
    )
    today = datetime.now(UTC).date().isoformat()
    for view in ("runs", "cases", "replies", "outcomes", "judge_samples", "calibration", "statuses"):
        result = run_cli("sql", f"SELECT DISTINCT run_id, suite, date FROM {view}", "--format", "csv")
        assert result.code == 0, result.err
        if view in ("judge_samples", "calibration"):  # no judge: empty tables, but the columns are there
            assert result.out.strip() == "run_id,suite,date"
        else:
            assert result.out.splitlines() == ["run_id,suite,date", f"{run_id},{KEY},{today}"]


def test_sql_on_an_empty_store_gives_empty_views(home) -> None:
    result = run_cli("sql", "SELECT count(*) AS n FROM statuses WHERE status = 'failed'", "--format", "csv")
    assert result.code == 0, result.err
    assert result.out.splitlines() == ["n", "0"]


def test_bad_sql_is_an_input_error(home) -> None:
    result = run_cli("sql", "SELEC nonsense")
    assert result.code == 2
    assert result.err.startswith("error: query: Parser Error")


def test_runs_view_records_lineage(home) -> None:
    instance = open_instance(home.root)
    run_id = run_chain(
        instance, home.root, RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent"), KEY, "conversation"
    )
    result = run_cli("sql", "SELECT * FROM runs", "--format", "json")
    (row,) = json.loads(result.out)
    assert row["run_id"] == row["replies_from"] == run_id
    assert row["agent"] == "mock:agent" and row["judge"] is None
    assert row["failed"] == 0 and row["passed"] + row["reviewed"] == row["cases"]
    assert len(row["suite_hash"]) == len(row["config_hash"]) == 64
