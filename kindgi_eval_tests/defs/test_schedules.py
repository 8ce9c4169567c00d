"""The nightly schedule and the suite-change sensor, evaluated with Dagster's own test contexts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from kindgi_eval.defs.jobs import EVALUATE, kind_selection
from kindgi_eval.defs.resources import SETTINGS_TAG
from kindgi_eval.defs.runs import open_instance
from kindgi_eval.defs.schedules import NIGHTLY_CRON, nightly_schedule, schedule_cron, schedule_timezone, suite_changes
from kindgi_eval.inputs.tenants_file import TENANTS_ENV
from kindgi_eval.rules.errors import InputError
from kindgi_eval_tests.inputs.test_tenants_file import entry, tenant_tree, write_tenants

NIGHT = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


@pytest.fixture
def tenants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """alpha with two suites (a judge), beta with one: three tenant suites."""
    from kindgi_eval_tests.conftest import GOLDEN

    tenant_tree(tmp_path, "alpha", {"golden": GOLDEN, "pricing": GOLDEN})
    tenant_tree(tmp_path, "beta")
    path = write_tenants(
        tmp_path / "tenants.toml",
        entry("alpha", suites=["evals/golden", "evals/pricing"], judge_model="openai:gpt-4o"),
        entry("beta"),
    )
    monkeypatch.setenv(TENANTS_ENV, str(path))
    return tmp_path


def test_nightly_schedule_requests_one_tagged_run_per_tenant_suite(home, tenants: Path) -> None:
    from kindgi_eval.defs.definitions import defs

    schedule = defs.resolve_schedule_def("nightly_suites")
    assert (schedule.cron_schedule, schedule.execution_timezone) == (NIGHTLY_CRON, "UTC")
    instance = open_instance(home.root)
    context = dg.build_schedule_context(instance=instance, scheduled_execution_time=NIGHT)
    requests = list(schedule(context))
    assert [(r.partition_key, r.run_key) for r in requests] == [
        ("alpha.golden", "alpha.golden@2026-12-01"),
        ("alpha.pricing", "alpha.pricing@2026-12-01"),
        ("beta.golden", "beta.golden@2026-12-01"),
    ]
    assert {k: v for k, v in requests[1].tags.items() if k != SETTINGS_TAG} == {  # beside its pinned settings
        "kindgi/tenant": "alpha",
        "kindgi/suite": "alpha.pricing",
        "kindgi/agent_provider": "mock",
        "kindgi/judge_provider": "openai",
    }
    assert "kindgi/judge_provider" not in requests[2].tags  # beta has no judge
    # the partitions exist before the runs are launched: a run of an unknown dynamic partition is refused
    assert instance.get_dynamic_partitions("suites") == ["alpha.golden", "alpha.pricing", "beta.golden"]


def test_schedule_tick_evaluates_as_the_daemon_does(home, tenants: Path) -> None:
    from kindgi_eval.defs.definitions import defs

    context = dg.build_schedule_context(
        instance=open_instance(home.root), repository_def=defs.get_repository_def(), scheduled_execution_time=NIGHT
    )
    data = defs.resolve_schedule_def("nightly_suites").evaluate_tick(context)
    assert [r.partition_key for r in data.run_requests] == ["alpha.golden", "alpha.pricing", "beta.golden"]
    assert data.skip_message is None and all(r.tags["kindgi/suite"] == r.partition_key for r in data.run_requests)
    # each run starts its own kind's stages only: a conversation suite's, none of another kind's
    own = kind_selection(EVALUATE, "conversation")
    assert all(list(r.asset_selection) == own for r in data.run_requests) and dg.AssetKey("accuracy") not in own


def test_a_tenants_file_that_cannot_be_read_as_a_whole_fails_the_tick_with_its_problems(home, tenants: Path) -> None:
    (tenants / "tenants.toml").write_text((tenants / "tenants.toml").read_text() + "\n[[tenat]]\nname = 'gamma'\n")
    context = dg.build_schedule_context(instance=open_instance(home.root), scheduled_execution_time=NIGHT)
    with pytest.raises(InputError, match="tenat: unknown key"):  # an entry misspelt as a whole belongs to no tenant
        list(nightly_schedule("UTC")(context))


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ('judge_model = "openai:gpt-4o"', "tenant[0].judge_modle"),  # a typo in one key
        ('suites = ["evals/golden", "evals/pricing"]', "outside the tenant's home"),  # a folder out of its home
    ],
)
def test_an_entry_with_a_problem_costs_its_own_tenant_the_night_and_the_others_run(
    home, tenants: Path, written, says, capfd
) -> None:
    from kindgi_eval.defs.definitions import defs

    wrong = {
        'judge_model = "openai:gpt-4o"': 'judge_modle = "openai:gpt-4o"',
        'suites = ["evals/golden", "evals/pricing"]': 'suites = ["../beta/evals/golden"]',
    }[written]
    path = tenants / "tenants.toml"
    path.write_text(path.read_text().replace(written, wrong))
    instance = open_instance(home.root)
    context = dg.build_schedule_context(
        instance=instance, repository_def=defs.get_repository_def(), scheduled_execution_time=NIGHT
    )
    data = defs.resolve_schedule_def("nightly_suites").evaluate_tick(context)
    assert [r.partition_key for r in data.run_requests] == ["beta.golden"]
    logged = capfd.readouterr()  # the tick's log, which the daemon keeps in the tick's history, goes to the console too
    (warning,) = [line for line in (logged.out + logged.err).splitlines() if "not run" in line]
    assert "not run: alpha: " in warning and says in warning  # it names the tenant and the fix
    assert instance.get_dynamic_partitions("suites") == ["beta.golden"]


def test_a_tick_whose_every_entry_has_a_problem_is_skipped_naming_each(home, tenants: Path) -> None:
    from kindgi_eval.defs.definitions import defs

    path = tenants / "tenants.toml"
    path.write_text(path.read_text().replace("agent_model", "agent_modle"))
    context = dg.build_schedule_context(
        instance=open_instance(home.root), repository_def=defs.get_repository_def(), scheduled_execution_time=NIGHT
    )
    data = defs.resolve_schedule_def("nightly_suites").evaluate_tick(context)
    assert data.run_requests == []
    assert (
        "alpha: " in data.skip_message
        and "beta: " in data.skip_message
        and "tenant[1].agent_modle" in data.skip_message
    )


def test_a_suite_the_tick_does_not_check_gets_its_run_and_that_run_fails_with_its_problems(home, tenants: Path) -> None:
    from kindgi_eval.defs.definitions import defs

    cases = tenants / "alpha" / "evals" / "pricing" / "cases.jsonl"
    cases.write_text(
        cases.read_text().replace('"must_contain"', '"must_contains"', 1)
    )  # parses as JSON; fails its check
    instance = open_instance(home.root)
    context = dg.build_schedule_context(
        instance=instance, repository_def=defs.get_repository_def(), scheduled_execution_time=NIGHT
    )
    data = defs.resolve_schedule_def("nightly_suites").evaluate_tick(context)
    assert [r.partition_key for r in data.run_requests] == ["alpha.golden", "alpha.pricing", "beta.golden"]
    request = data.run_requests[1]
    run = defs.resolve_job_def("evaluate_suite").execute_in_process(
        instance=instance,
        partition_key="alpha.pricing",
        tags=request.tags,
        asset_selection=list(request.asset_selection),
        raise_on_error=False,
    )
    assert not run.success
    (failure,) = [e for e in run.all_events if e.is_step_failure]
    assert failure.step_key == "suite" and "must_contains" in failure.step_failure_data.user_failure_data.description


def test_the_schedules_timezone_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert nightly_schedule("Europe/Lisbon").execution_timezone == "Europe/Lisbon"
    assert schedule_timezone({"KINDGI_SCHEDULE_TIMEZONE": "America/Sao_Paulo"}) == "America/Sao_Paulo"
    assert schedule_timezone({}) == "UTC"
    with pytest.raises(InputError, match="'Mars/Olympus' is not a timezone"):
        schedule_timezone({"KINDGI_SCHEDULE_TIMEZONE": "Mars/Olympus"})


def test_the_schedules_cron_is_configurable_and_a_tick_more_than_daily_keys_its_runs_by_minute(
    home, tenants: Path
) -> None:
    assert schedule_cron({}) == NIGHTLY_CRON
    assert schedule_cron({"KINDGI_SCHEDULE_CRON": "*/5 * * * *"}) == "*/5 * * * *"
    with pytest.raises(InputError, match="KINDGI_SCHEDULE_CRON.*'every night' is not a cron expression"):
        schedule_cron({"KINDGI_SCHEDULE_CRON": "every night"})
    every_minute = nightly_schedule("UTC", "* * * * *")
    assert every_minute.cron_schedule == "* * * * *"
    context = dg.build_schedule_context(
        instance=open_instance(home.root), scheduled_execution_time=NIGHT.replace(minute=7)
    )
    # two ticks of one day are two runs of each suite; the nightly cron keys by day (above), so its retried tick is not
    assert [r.run_key for r in every_minute(context)][0] == "alpha.golden@2026-12-01T02:07"


def test_sensor_fires_on_a_changed_suite_and_not_on_an_unchanged_one(home, tenants: Path, monkeypatch) -> None:
    from kindgi_eval.defs.definitions import defs

    # only beta, so one real run settles the baseline quickly
    monkeypatch.setenv(TENANTS_ENV, str(write_tenants(tenants / "beta-only.toml", entry("beta"))))
    instance = open_instance(home.root)

    def evaluate() -> dg.SensorResult:
        return suite_changes(dg.build_sensor_context(instance=instance, definitions=defs))

    never_run = evaluate()  # a suite never run counts as changed, and its partition is added with the request
    assert [r.partition_key for r in never_run.run_requests] == ["beta.golden"]
    assert never_run.run_requests[0].tags["kindgi/tenant"] == "beta"
    assert never_run.dynamic_partitions_requests[0].partition_keys == ["beta.golden"]
    instance.add_dynamic_partitions("suites", ["beta.golden"])
    run = defs.resolve_job_def("evaluate_suite").execute_in_process(instance=instance, partition_key="beta.golden")
    assert run.success

    unchanged = evaluate()
    assert unchanged.run_requests == [] and unchanged.skip_reason.skip_message == "No suite changed."

    cases = tenants / "beta" / "evals" / "golden" / "cases.jsonl"
    cases.write_text(cases.read_text().replace("real person please", "real human please"))
    changed = evaluate()
    assert [r.partition_key for r in changed.run_requests] == ["beta.golden"]
    assert changed.run_requests[0].run_key != never_run.run_requests[0].run_key

    cases.write_text(cases.read_text() + "{not json\n")  # nothing is parsed at the tick: the run says what is wrong
    broken = evaluate()
    assert [r.partition_key for r in broken.run_requests] == ["beta.golden"]
    cases.unlink()  # what cannot even be hashed is left out, named
    (cases.parent / "scenarios.jsonl").unlink()
    gone = evaluate()
    assert gone.run_requests == [] and "not run: beta.golden" in gone.skip_reason.skip_message
