"""Where a run's model calls go, and with which key, is the deployment's: a run launched through the instance with its
own `kindgi/settings` tag naming another gateway (as a launch from the UI's GraphQL may) fails before any call, and the
gateway's key is sent only to the gateway the run's process names, which still gets every call."""

from __future__ import annotations

import json
import time
from pathlib import Path

import dagster as dg
import pytest

from kindgi_eval.defs.runs import open_instance
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.llm.calls import forget_clients
from kindgi_eval_tests.defs.chain_jobs import execute, in_process_chain
from kindgi_eval_tests.defs.test_ui_browser import dev  # noqa: F401 (a fixture: `kindgi-eval ui` on 127.0.0.1)
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, scripted

KEY = "sk-gateway-master-key-0123456789-must-stay-home"
QUOTE = Answer(json.dumps({"messages": ["The Foundation Course is $450."], "escalate": False, "reason": None}))
PARTITION = "demo-academy.priced"
CASES = 2


@pytest.fixture
def gateways(home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The deployment's gateway (KINDGI_GATEWAY_URL and KINDGI_GATEWAY_KEY in the run's process) and a foreign one,
    both recording what they receive; no provider key anywhere."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    forget_clients()
    with FakeProvider(scripted(QUOTE)) as deployed, FakeProvider(scripted(QUOTE)) as foreign:
        monkeypatch.setenv("KINDGI_GATEWAY_URL", url_of(deployed))
        monkeypatch.setenv("KINDGI_GATEWAY_KEY", KEY)
        yield deployed, foreign
    forget_clients()


def url_of(server: FakeProvider) -> str:
    return server.base_url.removesuffix("/v1")


def launch(home, tmp_path: Path, gateway_url: str | None) -> dg.ExecuteJobResult:
    """`evaluate_suite` for a suite of CASES cases, launched through the instance with a `kindgi/settings` tag naming
    `gateway_url`, and executed as a run worker executes it (in this process, whose environment is the deployment's)."""
    folder = tmp_path / "priced"
    folder.mkdir(exist_ok=True)
    cases = [
        {"id": f"c{n}", "text": "how much is the foundation course?", "expect": {"escalate": False}}
        for n in range(CASES)
    ]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    settings = RunSettings(eval_dir=str(folder), agent_model="openai:gpt-4o-mini", gateway_url=gateway_url)
    return execute(in_process_chain, open_instance(home.root), settings, PARTITION, home.root, raise_on_error=False)


def everything_written(home, result: dg.ExecuteJobResult) -> str:
    """Every event the instance holds of the run, and every file under the runtime folder, as one text."""
    events = [event.to_json() for event in dg.DagsterInstance.get().all_logs(result.run_id)]
    files = [p.read_bytes().decode("utf-8", "replace") for p in home.root.rglob("*") if p.is_file()]
    return "\n".join(events + files)


def test_a_run_tagged_with_a_foreign_gateway_fails_before_any_call_and_its_key_goes_nowhere(
    home, tmp_path, gateways
) -> None:
    deployed, foreign = gateways
    result = launch(home, tmp_path, url_of(foreign))
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "suite"  # the run's first step: nothing was asked of anyone
    message = failure.step_failure_data.user_failure_data.description
    assert (
        f"the run names the gateway {url_of(foreign)}, and this deployment's gateway is {url_of(deployed)}" in message
    )
    assert "KINDGI_GATEWAY_URL" in message
    assert foreign.requests == [] and deployed.requests == []
    assert KEY not in everything_written(home, result)


def test_a_run_tagged_with_the_deployments_gateway_sends_it_every_call_with_its_key(home, tmp_path, gateways) -> None:
    deployed, foreign = gateways
    result = launch(home, tmp_path, url_of(deployed))
    assert result.success
    assert len(deployed.requests) == CASES and foreign.requests == []
    assert {h["Authorization"] for h in deployed.headers} == {f"Bearer {KEY}"}


def test_a_run_whose_tag_names_no_gateway_is_given_the_deployments(home, tmp_path, gateways) -> None:
    # a tick evaluated where KINDGI_GATEWAY_URL is not set (a daemon given only what it needs) pins no gateway
    deployed, foreign = gateways
    result = launch(home, tmp_path, None)
    assert result.success
    assert len(deployed.requests) == CASES and foreign.requests == []


def test_a_run_naming_a_gateway_where_the_deployment_names_none_is_refused(
    home, tmp_path, gateways, monkeypatch
) -> None:
    deployed, foreign = gateways
    monkeypatch.delenv("KINDGI_GATEWAY_URL")  # the key alone is set: it belongs to no URL, so it goes to none
    result = launch(home, tmp_path, url_of(foreign))
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "this deployment names no gateway" in failure.step_failure_data.user_failure_data.description
    assert foreign.requests == [] and deployed.requests == []


def launch_through_graphql(dev, home, tmp_path: Path, gateway_url: str) -> tuple[str, str]:
    """`evaluate_suite` launched through the webserver's GraphQL, as anyone who reaches the UI may, with a
    `kindgi/settings` tag of their own; its run id and final status once it ends."""
    from kindgi_eval.defs.resources import pinned_tags
    from kindgi_eval_tests.defs.test_ui_browser import LAUNCH, RUN_S, STATUS, graphql

    folder = tmp_path / "priced"
    folder.mkdir(exist_ok=True)
    (folder / "cases.jsonl").write_text(
        json.dumps({"id": "c0", "text": "how much?", "expect": {"escalate": False}}) + "\n"
    )
    settings = RunSettings(eval_dir=str(folder), agent_model="openai:gpt-4o-mini", gateway_url=gateway_url)
    open_instance(home.root).add_dynamic_partitions("suites", [PARTITION])
    tags = {"dagster/partition": PARTITION, **pinned_tags(settings)}
    params = {
        "selector": {
            "repositoryLocationName": "kindgi_eval",
            "repositoryName": "__repository__",
            "jobName": "evaluate_suite",
        },
        "runConfigData": {},
        "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
    }
    deadline = time.monotonic() + RUN_S
    while (launched := graphql(dev, LAUNCH, {"params": params})["launchRun"])["__typename"] != "LaunchRunSuccess":
        assert time.monotonic() < deadline, f"the run could not be launched: {launched}"
        time.sleep(1)  # the code location may still be loading
    run_id = launched["run"]["runId"]
    while (status := graphql(dev, STATUS, {"id": run_id})["runOrError"]["status"]) not in (
        "SUCCESS",
        "FAILURE",
        "CANCELED",
    ):
        assert time.monotonic() < deadline, f"run {run_id} still {status} after {RUN_S} s"
        time.sleep(0.5)
    return run_id, status


@pytest.mark.long
def test_a_launch_through_the_webservers_graphql_cannot_send_the_key_elsewhere(home, tmp_path, gateways, dev) -> None:
    # `gateways` comes before `dev`: the UI's code server, and so each run worker, is started with the deployment's
    # KINDGI_GATEWAY_URL and KINDGI_GATEWAY_KEY in its environment
    deployed, foreign = gateways
    run_id, status = launch_through_graphql(dev, home, tmp_path, url_of(foreign))
    assert status == "FAILURE"
    assert foreign.requests == [] and deployed.requests == []
    events = open_instance(home.root).all_logs(run_id)
    (failed,) = [e.dagster_event for e in events if e.is_dagster_event and e.dagster_event.is_step_failure]
    assert failed.step_key == "suite"
    assert f"the run names the gateway {url_of(foreign)}" in failed.step_failure_data.user_failure_data.description
    assert KEY not in "\n".join(e.to_json() for e in events)
    run_id, status = launch_through_graphql(dev, home, tmp_path, url_of(deployed))  # the deployment's own: every call
    assert status == "SUCCESS" and len(deployed.requests) == 1 and foreign.requests == []
    assert deployed.headers[0]["Authorization"] == f"Bearer {KEY}"
