"""The code location's jobs: CLI runs go through them, the launchpad offers only what a user sets, and a replay
started from the launchpad names the run it re-judges."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from kindgi_eval.defs.resources import LAUNCHPAD_FIELDS
from kindgi_eval.defs.runs import open_instance, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.store.layout import SHARED, find_table, read_rows
from kindgi_eval_tests.conftest import GOLDEN, run_cli

KEY = "demo-academy.golden"
"""The one suite declared without a tenants file: evals/golden of the working folder, run by mock:agent."""
OTHER = "demo-academy.other"


def started_run_id(stderr: str) -> str:
    """The run id `kindgi-eval run` or `replay` reports on standard error."""
    return next(line for line in stderr.splitlines() if line.startswith("run ")).split()[1]


def test_command_line_runs_are_runs_of_the_named_jobs(home) -> None:
    ran = run_cli("run", "--mock")
    assert ran.code == 0, ran.err
    replayed = run_cli("replay", "--from", started_run_id(ran.err), "--judge-model", "mock:judge")
    assert replayed.code == 0, replayed.err
    instance = open_instance(home.root)
    jobs = {
        run_id: instance.get_run_by_id(run_id).job_name
        for run_id in (started_run_id(ran.err), started_run_id(replayed.err))
    }
    assert list(jobs.values()) == ["evaluate_suite", "replay_suite"]  # not __ephemeral_asset_job__


def launchpad_fields(job: str) -> set[str]:
    """The config fields the launchpad offers for the eval_settings resource of `job`, read from the repository."""
    from kindgi_eval.defs.definitions import defs

    resources = defs.resolve_job_def(job).run_config_schema.config_type.fields["resources"].config_type
    return set(resources.fields["eval_settings"].config_type.fields["config"].config_type.fields)


@pytest.mark.parametrize("job", ["evaluate_suite", "replay_suite"])
def test_the_launchpad_offers_only_what_a_user_sets(job: str) -> None:
    fields = launchpad_fields(job)
    assert fields == {*LAUNCHPAD_FIELDS, "replay_from"}
    assert not fields & {"pinned", "tenants_file", "eval_dir", "config_dir"}  # internal, or the tenants file's


def launchpad_replay(instance: dg.DagsterInstance, home: Path, replay_from: str) -> dg.ExecuteInProcessResult:
    """A run of `replay_suite` for KEY with the launchpad's config: a judge and the run to re-judge; no pinned settings."""
    from kindgi_eval.defs.definitions import defs

    config = {
        "eval_settings": {"config": {"judge_model": "mock:judge", "replay_from": replay_from}},
        "io_manager": {"config": {"home": str(home)}},
    }
    return defs.resolve_job_def("replay_suite").execute_in_process(
        run_config={"resources": config}, instance=instance, partition_key=KEY, raise_on_error=False
    )


def failure_text(result: dg.ExecuteInProcessResult) -> str:
    """The first failed step's error, with the errors it wraps."""
    (failure, *_) = [e for e in result.all_events if e.is_step_failure]
    return failure.event_specific_data.error.to_string()  # type: ignore[union-attr]


@pytest.fixture
def two_runs(home, tmp_path: Path) -> tuple[dg.DagsterInstance, str, str]:
    """(the instance, an earlier run of KEY, a later one): the later is what a replay naming no run would read."""
    instance = open_instance(home.root)
    settings = RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent")
    return (
        instance,
        run_chain(instance, home.root, settings, KEY, "conversation"),
        run_chain(instance, home.root, settings, KEY, "conversation"),
    )


def test_a_launchpad_replay_re_judges_the_run_it_names(two_runs, home) -> None:
    instance, earlier, _later = two_runs
    result = launchpad_replay(instance, home.root, earlier)
    assert result.success
    (summary,) = read_rows(home.store, SHARED.run_summary, KEY, result.run_id)
    assert summary.replies_from == earlier  # not `_later`, the latest finished run
    assert summary.judge == "mock:judge"
    assert find_table(home.store, "agent_replies", KEY, result.run_id) is None  # no agent was asked


def test_a_launchpad_replay_naming_no_stored_run_fails_saying_so(two_runs, home) -> None:
    instance, _, _ = two_runs
    result = launchpad_replay(instance, home.root, "no-such-run")
    assert not result.success
    text = failure_text(result)
    assert "resources.eval_settings.config.replay_from: no run 'no-such-run' in the store at" in text
    assert "Traceback" not in text.split("resources.eval_settings")[1].split("\n")[0]


def test_a_launchpad_replay_naming_a_run_of_another_suite_fails_naming_both(two_runs, home, tmp_path: Path) -> None:
    instance, _, _ = two_runs
    shutil.copytree(GOLDEN, tmp_path / "other")
    elsewhere = run_chain(
        instance,
        home.root,
        RunSettings(eval_dir=str(tmp_path / "other"), agent_model="mock:agent"),
        OTHER,
        "conversation",
    )
    result = launchpad_replay(instance, home.root, elsewhere)
    assert not result.success
    assert f"run {elsewhere} is a run of suite {OTHER}, not of {KEY}" in failure_text(result)
    assert find_table(home.store, "judge_samples", KEY, result.run_id) is None  # nothing was judged
