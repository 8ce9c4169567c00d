"""The `night_findings` sensor over four tenants and two ticks of the nightly schedule, with webhooks on 127.0.0.1:
exactly the tenants whose night got worse are told, once; 500 then 200 is one message; 400 is one attempt, and the
tick says so; a tenant with a run missing is told at the deadline; a restarted daemon sends nothing twice; no URL is
kept or shown anywhere."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from kindgi_eval.defs.night import SCHEDULE, SCHEDULE_TAG, TICK_TAG, night_deadline, night_findings
from kindgi_eval.defs.runs import RunFailed, open_instance, run_chain
from kindgi_eval.defs.schedules import nightly_requests, tick_label
from kindgi_eval.inputs import load_tenants
from kindgi_eval.inputs.tenants_file import TENANTS_ENV
from kindgi_eval.rules import InputError
from kindgi_eval_tests.cli.test_night import BROKEN, break_case
from kindgi_eval_tests.conftest import files_under, run_cli
from kindgi_eval_tests.inputs.test_tenants_file import entry, tenant_tree, write_tenants
from kindgi_eval_tests.webhook_receiver import webhook_receiver

CRON = "*/5 * * * *"
"""A schedule that ticks more than daily, so two ticks of one day are two nights."""


def launch_tick(home, tick: datetime, skip: tuple[str, ...] = (), before_runs=lambda: None) -> None:
    """Run the schedule's requests of `tick` as the daemon launches them (tagged with the schedule and the tick),
    but those of the tenants in `skip`; `before_runs` is called once the requests are made."""
    from kindgi_eval.defs.definitions import defs  # noqa: F401  (the code location the runs belong to)

    tenants = load_tenants()
    requests = nightly_requests(tenants, tick_label(CRON, tick)).runs
    before_runs()
    instance = open_instance(home.root)
    for request in requests:
        declared = tenants.suite(request.partition_key)
        if declared.tenant in skip:
            continue
        tags = {**request.tags, SCHEDULE_TAG: SCHEDULE, TICK_TAG: tick.isoformat()}
        try:
            run_chain(instance, home.root, declared.settings(), declared.key, "conversation", tags=tags)
        except RunFailed:
            pass
    instance.dispose()


def look(home) -> str:
    """One evaluation of the sensor as the daemon makes it, from an instance opened afresh (a daemon restarted)."""
    from kindgi_eval.defs.definitions import defs

    instance = open_instance(home.root)
    try:
        data = night_findings.evaluate_tick(
            dg.build_sensor_context(instance=instance, repository_def=defs.get_repository_def())
        )
        assert not data.run_requests
        return data.skip_message or ""
    finally:
        instance.dispose()


def test_the_night_is_told_once_to_the_tenants_whose_night_got_worse(home, tmp_path: Path, monkeypatch, capfd) -> None:
    homes = {name: tenant_tree(tmp_path, name) for name in ("alpha", "beta", "gamma", "delta")}
    path = write_tenants(
        tmp_path / "tenants.toml",
        entry("alpha", alerts=["ALPHA_HOOK"]),
        entry("beta", alerts=["BETA_HOOK"]),
        entry("gamma", alerts=["GAMMA_HOOK"]),
        entry("delta"),
    )
    path.write_text(path.read_text() + '\n[defaults]\nalerts = ["OPS_HOOK"]\n')
    monkeypatch.setenv(TENANTS_ENV, str(path))
    monkeypatch.setenv("KINDGI_SCHEDULE_CRON", CRON)
    with webhook_receiver() as receiver:
        receiver.script = {"/ALPHA_HOOK": [500, 200], "/GAMMA_HOOK": [400]}
        for name in ("ALPHA_HOOK", "BETA_HOOK", "GAMMA_HOOK", "OPS_HOOK"):
            monkeypatch.setenv(name, receiver.url(f"/{name}"))

        assert look(home) == "The nightly schedule has launched no run yet."
        first = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
        launch_tick(home, first)
        said = look(home)  # the first night: nothing to compare with, so nothing got worse
        assert said.splitlines() == [
            f"{t}: nothing got worse; nothing sent" for t in ("alpha", "beta", "gamma", "delta")
        ]
        assert receiver.posts == []

        time.sleep(1.1)  # the second tick's runs start in a later second than the first's
        second = datetime.now(UTC)
        gamma_cases = homes["gamma"] / "evals" / "golden" / "cases.jsonl"
        break_case(homes["alpha"] / "evals" / "golden", BROKEN)
        launch_tick(home, second, skip=("delta",), before_runs=lambda: gamma_cases.write_text('{"id": "x"}\n'))
        said = look(home).splitlines()
        assert said == [
            "alpha: ALPHA_HOOK: attempt 1: answered 500",
            "alpha: ALPHA_HOOK: attempt 2: sent (200)",
            "beta: nothing got worse; nothing sent",
            "gamma: GAMMA_HOOK: attempt 1: answered 400; not retried (a 4xx: check the URL the variable holds)",
            f"delta: waiting for 1 run of the night, until {(second + timedelta(hours=4)).isoformat(timespec='minutes')}",
        ]
        monkeypatch.setenv("KINDGI_NIGHT_DEADLINE", "1s")  # the deadline has passed: delta's missing run is told
        assert look(home).splitlines() == ["delta: OPS_HOOK: attempt 1: sent (200)"]
        assert look(home) == f"Every tenant's night of {second.isoformat(timespec='minutes')} was told already."

    assert [(p, s) for p, s, _ in receiver.posts] == [
        ("/ALPHA_HOOK", 500),
        ("/ALPHA_HOOK", 200),
        ("/GAMMA_HOOK", 400),
        ("/OPS_HOOK", 200),
    ]
    (alpha,) = receiver.taken("/ALPHA_HOOK")
    assert [(f["kind"], f["case_ids"]) for s in alpha["suites"] for f in s["findings"]] == [("new_failures", [BROKEN])]
    assert alpha["night"] == tick_label(CRON, second)
    gamma = receiver.posts[2][2]
    assert [f["kind"] for s in gamma["suites"] for f in s["findings"]] == ["run_failed"]
    (delta,) = receiver.taken("/OPS_HOOK")
    assert [f["kind"] for s in delta["suites"] for f in s["findings"]] == ["missing_run"]
    # no URL in any output, log, stored event or file of the instance and the store
    address = f"127.0.0.1:{receiver.port}"
    captured = capfd.readouterr()
    assert address not in captured.out + captured.err
    for path in files_under(home.root):
        assert address.encode() not in path.read_bytes(), path


def test_the_deadline_is_a_duration(monkeypatch: pytest.MonkeyPatch) -> None:
    assert night_deadline({}) == timedelta(hours=4)
    assert night_deadline({"KINDGI_NIGHT_DEADLINE": "90m"}) == timedelta(minutes=90)
    assert night_deadline({"KINDGI_NIGHT_DEADLINE": "30s"}) == timedelta(seconds=30)
    with pytest.raises(InputError, match="KINDGI_NIGHT_DEADLINE: 'soon' is not a duration"):
        night_deadline({"KINDGI_NIGHT_DEADLINE": "soon"})


def test_a_slack_webhook_is_sent_a_slack_message_and_any_other_the_json() -> None:
    from kindgi_eval.defs.alerts import body_for, is_slack
    from kindgi_eval.reports import TenantNight
    from kindgi_eval.reports.night import SuiteBlock
    from kindgi_eval.rules import Finding

    finding = Finding(
        kind="new_failures",
        suite="acme.golden",
        case_ids=["c1"],
        detail="1 case newly failing: c1 <b>",
        command="kindgi-eval diff a b",
    )
    night = TenantNight(
        tenant="acme",
        night="2026-12-01",
        worse=True,
        suites=[SuiteBlock(suite="acme.golden", run_id="b", before_run_id="a", started_at=None, findings=[finding])],
    )
    assert is_slack("https://hooks.slack.com/services/T/B/x") and not is_slack("https://hooks.example.com/slack")
    slack = body_for("https://hooks.slack.com/services/T/B/x", night, ["new_failures"])
    assert slack["text"].startswith("acme: 1 finding that got worse, in acme.golden.")
    assert slack["blocks"][0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "kindgi-eval: acme on 2026-12-01"},
    }
    section = slack["blocks"][2]["text"]["text"]
    assert "*acme.golden* `new_failures`" in section and "cases: c1" in section and "`kindgi-eval diff a b`" in section
    assert "&lt;b&gt;" in section  # Slack's control characters escaped
    other = body_for("https://hooks.example.com/slack", night, ["new_failures"])
    assert other["tenant"] == "acme" and other["suites"][0]["findings"][0]["case_ids"] == ["c1"]
    assert body_for("https://hooks.example.com/x", night, ["missing_run"])["suites"] == []  # alert_on narrows
    json.dumps(slack)


def test_a_night_sent_by_night_send_is_not_sent_again_by_the_sensor(home, tmp_path: Path, monkeypatch) -> None:
    # cron's `night --send` and the daemon's sensor on one instance key a night alike: by the tick that launched its
    # runs (here a minute, the cron ticking more than daily), so whichever comes second sends nothing
    alpha = tenant_tree(tmp_path, "alpha")
    monkeypatch.setenv(TENANTS_ENV, str(write_tenants(tmp_path / "tenants.toml", entry("alpha", alerts=["HOOK"]))))
    monkeypatch.setenv("KINDGI_SCHEDULE_CRON", CRON)
    with webhook_receiver() as receiver:
        monkeypatch.setenv("HOOK", receiver.url("/HOOK"))
        launch_tick(home, datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3))
        time.sleep(1.1)  # the second tick's runs start in a later second than the first's
        second = datetime.now(UTC)
        break_case(alpha / "evals" / "golden", BROKEN)
        launch_tick(home, second)
        sent = run_cli("night", "--send")
        assert sent.code == 1, sent.err
        assert sent.err.splitlines() == ["alpha: HOOK: attempt 1: sent (200)"]
        assert look(home).splitlines() == ["alpha: HOOK: sent already (200); not sent again"]
        again = run_cli("night", "--send")
        assert again.err.splitlines() == ["alpha: HOOK: sent already (200); not sent again"]
    (taken,) = receiver.taken("/HOOK")
    assert taken["night"] == tick_label(CRON, second)


def test_a_failed_run_dagster_will_retry_is_waited_for(home, tmp_path: Path, monkeypatch) -> None:
    # the night of a run Dagster will retry is its retry's: told once the retry is made (or Dagster decided not to)
    gamma = tenant_tree(tmp_path, "gamma")
    monkeypatch.setenv(TENANTS_ENV, str(write_tenants(tmp_path / "tenants.toml", entry("gamma", alerts=["HOOK"]))))
    monkeypatch.setenv("KINDGI_SCHEDULE_CRON", CRON)
    with webhook_receiver() as receiver:
        monkeypatch.setenv("HOOK", receiver.url("/HOOK"))
        tick = datetime.now(UTC).replace(microsecond=0)
        cases = gamma / "evals" / "golden" / "cases.jsonl"
        launch_tick(home, tick, before_runs=lambda: cases.write_text('{"id": "x"}\n'))
        instance = open_instance(home.root)
        (failed,) = instance.get_runs()
        instance.add_run_tags(failed.run_id, {"dagster/will_retry": "true"})
        assert look(home).splitlines() == [
            f"gamma: waiting for 1 run of the night, until {(tick + timedelta(hours=4)).isoformat(timespec='minutes')}"
        ]
        instance.add_run_tags(failed.run_id, {"dagster/will_retry": "false"})
        instance.dispose()
        assert look(home).splitlines() == ["gamma: HOOK: attempt 1: sent (200)"]
    (told,) = receiver.taken("/HOOK")
    assert [f["kind"] for s in told["suites"] for f in s["findings"]] == ["run_failed"]
