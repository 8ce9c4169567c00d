"""A run that failed or was stopped is a row of `runs`, with its state and error: kept by the run itself and by the
`ended_runs` sensor, once."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from kindgi_eval.defs.run_ends import ended_runs, tenant_of
from kindgi_eval.defs.runs import RunFailed, open_instance, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.store import connect, newest_runs
from kindgi_eval_tests.conftest import GOLDEN

KEY = "demo-academy.golden"


def runs_rows(store: Path) -> list[tuple]:
    query = "SELECT run_id, suite, tenant, state, error, cases FROM runs ORDER BY started_at, run_id"
    with connect(store, query) as con:
        return con.execute(query).fetchall()


@pytest.mark.parametrize(
    ("partition", "tenant"),
    [("acme.golden", "acme"), ("acme@acme.pricing", "acme"), ("demo-academy.x.y", "demo-academy")],
)
def test_the_tenant_of_a_partition(partition: str, tenant: str) -> None:
    assert tenant_of(partition) == tenant


def test_a_failed_run_is_a_row_of_runs_with_its_state_and_error_and_the_sensor_keeps_it_once(
    home, tmp_path: Path
) -> None:
    from kindgi_eval.defs.definitions import defs

    instance = open_instance(home.root)
    good = run_chain(
        instance, home.root, RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent"), KEY, "conversation"
    )
    suite = tmp_path / "gone"
    shutil.copytree(GOLDEN, suite)
    settings = RunSettings(eval_dir=str(suite), agent_model="mock:agent")
    (suite / "cases.jsonl").write_text('{"id": "x"}\n')  # the run's suite step refuses it
    with pytest.raises(RunFailed) as failed:
        run_chain(instance, home.root, settings, KEY, "conversation")
    bad = str(failed.value).split()[1]
    rows = runs_rows(home.store)
    assert [r[:4] for r in rows] == [(good, KEY, "demo-academy", "succeeded"), (bad, KEY, "demo-academy", "failed")]
    assert "cases.jsonl" in rows[1][4] and rows[1][5] is None  # its error, in its own words; no counts
    # `latest` names the newest run that completed, whose tables exist
    assert newest_runs(home.store, defs_views(), limit=1, completed=True).rows[0][0] == good
    # the sensor finds it kept already, and keeps it again once its row is gone
    context = dg.build_sensor_context(instance=instance, repository_def=defs.get_repository_def())
    assert ended_runs.evaluate_tick(context).skip_message == "no run failed or was stopped"
    shutil.rmtree(home.store / "run_ends")
    context = dg.build_sensor_context(instance=instance, repository_def=defs.get_repository_def())
    assert ended_runs.evaluate_tick(context).skip_message == "kept 1 run that failed or was stopped"
    assert [r[:4] for r in runs_rows(home.store)][1] == (bad, KEY, "demo-academy", "failed")


def defs_views():
    from kindgi_eval.kinds import store_views

    return store_views()


def test_prune_forgets_old_runs_that_failed_as_it_forgets_the_others(home) -> None:
    from kindgi_eval.store import RunEndRow, record_run_end
    from kindgi_eval_tests.conftest import run_cli

    old = RunEndRow(
        tenant="acme",
        state="failed",
        error="boom",
        started_at="2020-01-01T02:00:00+00:00",
        finished_at="2020-01-01T02:01:00+00:00",
    )
    recent = old.model_copy(update={"started_at": "2999-01-01T02:00:00+00:00"})
    assert record_run_end(home.store, "acme.golden", "old-run", old) and record_run_end(
        home.store, "acme.golden", "new-run", recent
    )
    assert not record_run_end(home.store, "acme.golden", "old-run", old)  # kept once
    dry = run_cli("prune", "--keep-days", "30", "--dry-run")
    assert "would remove 1 runs that failed or were stopped" in dry.out and len(runs_rows(home.store)) == 2
    done = run_cli("prune", "--keep-days", "30")
    assert done.code == 0, done.err
    assert "removed 1 runs that failed or were stopped" in done.out
    assert [r[0] for r in runs_rows(home.store)] == ["new-run"]
