"""Nightly runs of a registered suite: each evaluates the version in force when it starts, and records it."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from kindgi_eval.defs.resources import SETTINGS_TAG, EvalSettings, pinned_settings
from kindgi_eval.defs.runs import RunFailed, open_instance, run_chain
from kindgi_eval.inputs import TENANTS_ENV
from kindgi_eval.registry import EvalSuite, database_url, open_store
from kindgi_eval.store import SHARED, read_rows, runtime_home
from kindgi_eval_tests.conftest import GOLDEN, run_cli
from kindgi_eval_tests.defs.test_schedules import NIGHT
from kindgi_eval_tests.inputs.test_tenants_file import entry, tenant_tree, write_tenants

KEY = "alpha@alpha.pricing"  # a registry suite's partition: its tenant and its id


def lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (GOLDEN / name).read_text().splitlines() if line.strip()]


def publish(store, version: str, cases: list[dict]) -> str:
    suite = EvalSuite(
        id="alpha.pricing",
        tenantId="alpha",
        version=version,
        kind="conversation",
        spec={"cases": cases, "calibration": lines("calibration.jsonl")},
    )
    token = store.issue_token("alpha", "test")
    return json.loads(store.publish("alpha", token.id, suite).body)["hash"]


@pytest.fixture
def registered(home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    tenant_tree(tmp_path, "alpha")
    path = write_tenants(tmp_path / "tenants.toml", entry("alpha", suites=None, registry="alpha.pricing"))
    monkeypatch.setenv(TENANTS_ENV, str(path))
    store = open_store(database_url(runtime_home()))
    yield store
    store.close()


def unpinned(tags: dict[str, str]) -> dict[str, str]:
    """A request's tags but its settings, which `run_chain` pins itself."""
    return {tag: value for tag, value in tags.items() if tag != SETTINGS_TAG}


def tick_and_run(home) -> tuple[str, dict]:
    """One nightly tick, and its one request run as the daemon would: its pinned settings, unchanged."""
    from kindgi_eval.defs.definitions import defs

    instance = open_instance(home.root)
    context = dg.build_schedule_context(instance=instance, scheduled_execution_time=NIGHT)
    (request,) = list(defs.resolve_schedule_def("nightly_suites")(context))
    assert request.partition_key == KEY
    settings = EvalSettings.of(pinned_settings(request.tags)).for_partition(KEY)
    run_id = run_chain(instance, home.root, settings, KEY, "conversation", tags=unpinned(request.tags))
    (run,) = read_rows(home.store, SHARED.run_summary, KEY, run_id)
    return run_id, run.model_dump()


def test_a_nightly_run_records_the_version_in_force_and_a_new_version_changes_only_later_runs(registered, home) -> None:
    cases = lines("cases.jsonl")
    first_hash = publish(registered, "1.0.0", cases)
    first_id, first = tick_and_run(home)
    assert (first["suite_id"], first["suite_version"], first["suite_hash"]) == ("alpha.pricing", "1.0.0", first_hash)
    assert first["cases"] == len(cases)
    second_hash = publish(registered, "1.1.0", cases[:10])
    second_id, second = tick_and_run(home)
    assert (second["suite_version"], second["suite_hash"], second["cases"]) == ("1.1.0", second_hash, 10)
    # what the earlier run recorded, and the cases it evaluated, are as they were
    (again,) = read_rows(home.store, SHARED.run_summary, KEY, first_id)
    assert (again.suite_version, again.suite_hash, again.cases) == ("1.0.0", first_hash, len(cases))
    assert len([r for r in read_rows(home.store, SHARED.suite, KEY, first_id) if r.kind == "case"]) == len(cases)
    # by run: `started_at` is to the second, and two runs of a few cases can start within one
    rows = json.loads(run_cli("sql", "SELECT run_id, suite_id, suite_version FROM runs", "--format", "json").out)
    assert {r["run_id"]: (r["suite_id"], r["suite_version"]) for r in rows} == {
        first_id: ("alpha.pricing", "1.0.0"),
        second_id: ("alpha.pricing", "1.1.0"),
    }


def test_a_pinned_version_is_evaluated_whatever_is_published_later(
    registered, home, tmp_path: Path, monkeypatch
) -> None:
    publish(registered, "1.0.0", lines("cases.jsonl"))
    publish(registered, "2.0.0", lines("cases.jsonl")[:5])
    path = write_tenants(
        tmp_path / "tenants.toml", entry("alpha", suites=None, registry="alpha.pricing", version="1.0.0")
    )
    monkeypatch.setenv(TENANTS_ENV, str(path))
    _, run = tick_and_run(home)
    assert run["suite_version"] == "1.0.0"


def test_a_registered_suite_that_does_not_exist_is_left_out_of_the_tick_with_what_is_missing(registered, home) -> None:
    from kindgi_eval.defs.definitions import defs

    context = dg.build_schedule_context(instance=open_instance(home.root), scheduled_execution_time=NIGHT)
    data = defs.resolve_schedule_def("nightly_suites").evaluate_tick(context)
    assert data.run_requests == []
    assert f"{KEY}: {KEY} (registry = 'alpha.pricing'): the registry at" in data.skip_message
    assert "has no suite 'alpha.pricing' of tenant 'alpha'" in data.skip_message


def test_the_sensor_fires_when_a_new_version_is_published(registered, home) -> None:
    from kindgi_eval.defs.schedules import suite_changes

    publish(registered, "1.0.0", lines("cases.jsonl"))
    instance = open_instance(home.root)
    first = suite_changes(dg.build_sensor_context(instance=instance))
    assert [r.partition_key for r in first.run_requests] == [KEY]  # never run: changed
    tick_and_run(home)
    assert suite_changes(dg.build_sensor_context(instance=instance)).run_requests == []
    publish(registered, "1.1.0", lines("cases.jsonl")[:3])
    assert [r.partition_key for r in suite_changes(dg.build_sensor_context(instance=instance)).run_requests] == [KEY]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"suites": None},
            "tenant[0].suites: tenant alpha: is missing. Name the tenant's suite folders, or a registered suite",
        ),
        ({"version": "1.0.0"}, "tenant[0].version: tenant alpha: is given without registry."),
    ],
)
def test_a_tenants_entry_names_its_suites_once(tmp_path: Path, fields: dict, message: str) -> None:
    from kindgi_eval.inputs import load_tenants
    from kindgi_eval.rules import InputError

    tenant_tree(tmp_path, "alpha")
    path = write_tenants(tmp_path / "tenants.toml", entry("alpha", **fields))
    with pytest.raises(InputError) as refused:
        load_tenants(path)
    assert message in str(refused.value)


def test_run_suite_evaluates_a_registered_version_from_the_command_line(home, tmp_path: Path) -> None:
    store = open_store(database_url(runtime_home()))
    suite = EvalSuite(
        id="demo-academy.pricing",
        tenantId="demo-academy",
        version="1.0.0",
        kind="conversation",
        spec={"cases": lines("cases.jsonl")[:4]},
    )
    store.publish("demo-academy", store.issue_token("demo-academy").id, suite)
    store.close()
    done = run_cli("run", "--mock", "--suite", "demo-academy.pricing@1.0.0")
    assert done.code == 0, done.err
    (row,) = json.loads(
        run_cli("sql", "SELECT suite, suite_id, suite_version, cases FROM runs", "--format", "json").out
    )
    assert row == {
        "suite": "demo-academy@demo-academy.pricing",
        "suite_id": "demo-academy.pricing",
        "suite_version": "1.0.0",
        "cases": 4,
    }
    missing = run_cli("run", "--mock", "--suite", "demo-academy.pricing@9.9.9")
    assert missing.code == 2 and "has no version 9.9.9 of suite 'demo-academy.pricing'" in missing.err
    both = run_cli("run", "--mock", "--suite", "demo-academy.pricing", "--eval-dir", str(GOLDEN))
    assert both.code == 2 and both.err.startswith("error: --suite: names the suite")


def test_a_custom_suite_on_a_machine_without_a_sandbox_fails_its_own_run_before_the_agent(
    registered, home, tmp_path: Path, monkeypatch
) -> None:
    from kindgi_eval.defs.definitions import defs

    source = "def grade(case, reply):\n    return {'pass': True, 'reason': 'ok'}\n"
    suite = EvalSuite(
        id="alpha.pricing",
        tenantId="alpha",
        version="1.0.0",
        kind="custom",
        spec={
            "handler": {"modulePath": "h.py", "entrypointPath": "grade", "source": source},
            "cases": lines("cases.jsonl")[:2],
        },
    )
    registered.publish("alpha", registered.issue_token("alpha", "test").id, suite)
    monkeypatch.setenv("PATH", str(tmp_path))  # neither bubblewrap nor prlimit
    instance = open_instance(home.root)
    context = dg.build_schedule_context(
        instance=instance, repository_def=defs.get_repository_def(), scheduled_execution_time=NIGHT
    )
    (request,) = (
        defs.resolve_schedule_def("nightly_suites").evaluate_tick(context).run_requests
    )  # the tick asks the machine nothing
    with pytest.raises(RunFailed, match="custom handler: bwrap and prlimit not found on PATH") as failed:
        run_chain(instance, home.root, pinned_settings(request.tags), KEY, "custom", tags=unpinned(request.tags))
    assert "suite" in str(failed.value)  # its first step: the agent was asked nothing


def test_a_stored_version_that_fails_its_check_costs_the_tick_nothing_and_fails_its_own_run(
    registered, home, tmp_path, monkeypatch
) -> None:
    from kindgi_eval.defs.definitions import defs
    from kindgi_eval.defs.schedules import suite_changes

    cases = lines("cases.jsonl")[:3]
    cases[1] = {
        **cases[1],
        "must_contains": ["a typo the check refuses"],
    }  # stored as a version no longer passing its check
    publish(registered, "1.0.0", cases)
    tenant_tree(tmp_path, "beta")  # and a tenant whose suite is fine, in the same tick
    path = write_tenants(
        tmp_path / "tenants.toml", entry("alpha", suites=None, registry="alpha.pricing"), entry("beta")
    )
    monkeypatch.setenv(TENANTS_ENV, str(path))
    instance = open_instance(home.root)
    context = dg.build_schedule_context(
        instance=instance, repository_def=defs.get_repository_def(), scheduled_execution_time=NIGHT
    )
    requests = defs.resolve_schedule_def("nightly_suites").evaluate_tick(context).run_requests
    assert [r.partition_key for r in requests] == [KEY, "beta.golden"]
    assert requests[0].tags["kindgi/registered"] == "alpha.pricing@1.0.0"
    assert not (runtime_home() / "registry-suites").exists()  # the tick wrote nothing out, so checked nothing
    assert [r.partition_key for r in suite_changes(dg.build_sensor_context(instance=instance)).run_requests] == [
        KEY,
        "beta.golden",
    ]
    with pytest.raises(RunFailed, match=r"cases\[1\].*must_contains.*no longer passes the conversation kind's check"):
        run_chain(
            instance, home.root, pinned_settings(requests[0].tags), KEY, "conversation", tags=unpinned(requests[0].tags)
        )


def test_a_registry_that_cannot_be_reached_costs_its_suites_the_tick_and_the_others_run(
    registered, home, tmp_path, monkeypatch
) -> None:
    from kindgi_eval.defs.definitions import defs

    tenant_tree(tmp_path, "beta")
    path = write_tenants(
        tmp_path / "tenants.toml", entry("alpha", suites=None, registry="alpha.pricing"), entry("beta")
    )
    monkeypatch.setenv(TENANTS_ENV, str(path))
    monkeypatch.setenv("KINDGI_REGISTRY_URL", "http://127.0.0.1:9")  # the discard port: nothing answers
    monkeypatch.setenv("KINDGI_REGISTRY_TOKEN", "kindgi_not-a-token")
    context = dg.build_schedule_context(
        instance=open_instance(home.root), repository_def=defs.get_repository_def(), scheduled_execution_time=NIGHT
    )
    assert [
        r.partition_key for r in defs.resolve_schedule_def("nightly_suites").evaluate_tick(context).run_requests
    ] == ["beta.golden"]
