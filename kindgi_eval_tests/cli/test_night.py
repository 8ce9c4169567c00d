"""`kindgi-eval night` over four tenants and two nights (runs of one day count as nights: the latest against the one
before): one got worse, one unchanged, one whose run failed, one with no run; and `--send` to a receiver on
127.0.0.1, once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kindgi_eval.defs.runs import RunFailed, open_instance, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval_tests.conftest import files_under, run_cli
from kindgi_eval_tests.inputs.test_tenants_file import entry, tenant_tree, write_tenants
from kindgi_eval_tests.webhook_receiver import webhook_receiver

BROKEN = "human-handoff-real-person"
"""The case alpha's second night breaks: it must now contain what the agent never says."""


def break_case(suite: Path, case_id: str) -> None:
    lines = []
    for line in (suite / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        if case["id"] == case_id:
            case["must_contain"] = ["words the agent never says"]
        lines.append(json.dumps(case))
    (suite / "cases.jsonl").write_text("\n".join(lines) + "\n")


def mock_run(home: Path) -> None:
    done = run_cli("run", "--mock", "--eval-dir", str(home / "evals" / "golden"), "--config-dir", str(home / "config"))
    assert done.code in (0, 1), done.err  # 1: a case failed


def failed_run(home: Path, state: Path, scratch: Path) -> None:
    """A run of the tenant's suite that fails in its own suite step (its cases unreadable), as a night's run can."""
    suite = scratch / "golden"
    shutil.copytree(home / "evals" / "golden", suite)
    (suite / "cases.jsonl").write_text('{"id": "x"}\n')
    instance = open_instance(state)
    with pytest.raises(RunFailed):
        run_chain(
            instance,
            state,
            RunSettings(eval_dir=str(suite), config_dir=str(home / "config"), agent_model="mock:agent"),
            f"{home.name}.golden",
            "conversation",
        )
    instance.dispose()


@pytest.fixture
def nights(home, tmp_path: Path) -> dict:
    """Four tenants over two nights; alpha's second night breaks a case, gamma's second run fails, delta never runs."""
    homes = {name: tenant_tree(tmp_path, name) for name in ("alpha", "beta", "gamma", "delta")}
    path = write_tenants(
        tmp_path / "tenants.toml",
        entry("alpha", alerts=["ALPHA_HOOK"]),
        entry("beta", alerts=["BETA_HOOK"]),
        entry("gamma", alerts=["GAMMA_HOOK"], alert_on=["run_failed"]),
        entry("delta"),
    )
    path.write_text(path.read_text() + '\n[defaults]\nalerts = ["OPS_HOOK"]\n')
    for name in ("alpha", "beta", "gamma"):
        mock_run(homes[name])
    break_case(homes["alpha"] / "evals" / "golden", BROKEN)
    mock_run(homes["alpha"])
    mock_run(homes["beta"])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    failed_run(homes["gamma"], home.root, scratch)
    return {"tenants": str(path)}


def test_the_night_names_what_got_worse_worst_first_and_sends_it_once(home, nights: dict, tmp_path: Path) -> None:
    env = {"KINDGI_TENANTS": nights["tenants"]}
    done = run_cli("night", "--json", str(tmp_path / "night.json"), env=env)
    assert done.code == 1, done.err
    lines = done.out.splitlines()
    assert lines[0] == "Night: each suite's latest run against the one before it; 3 of 4 tenants got worse."
    tenants = [line.split(":")[0] for line in lines if line and not line.startswith((" ", "Night"))]
    assert tenants == ["gamma", "delta", "alpha", "beta"]  # a failed run, a missing run, a new failure, nothing
    assert "beta: nothing to say." in lines
    assert "  gamma.golden (run " in done.out and "    run_failed: run " in done.out and "cases.jsonl" in done.out
    assert "    missing_run: no run of delta.golden." in lines
    assert f"    new_failures: 1 case newly failing: {BROKEN} (passed -> failed)" in lines
    found = json.loads((tmp_path / "night.json").read_text())
    assert (found["night"], found["worse"]) == (None, True)
    alpha = next(t for t in found["tenants"] if t["tenant"] == "alpha")
    (suite,) = alpha["suites"]
    (finding,) = suite["findings"]
    assert finding["kind"] == "new_failures" and finding["case_ids"] == [BROKEN]
    assert finding["command"] == f"kindgi-eval diff {suite['before_run_id']} {suite['run_id']}"
    # the command it names shows the case
    shown = run_cli(*finding["command"].split()[1:])
    assert f"{BROKEN}: passed -> failed (worse)" in shown.out
    # one tenant
    only = run_cli("night", "--tenant", "beta", env=env)
    assert (only.code, only.out.splitlines()[-1]) == (0, "beta: nothing to say.")
    assert run_cli("night", "--tenant", "nobody", env=env).code == 2
    # a night with no run at all: every declared suite is missing
    empty = run_cli("night", "--date", "2020-01-01", env=env)
    assert empty.code == 1 and empty.out.count("missing_run: no run of ") == 4 and "on 2020-01-01." in empty.out

    with webhook_receiver() as receiver:
        hooks = {name: receiver.url(f"/{name}") for name in ("ALPHA_HOOK", "BETA_HOOK", "GAMMA_HOOK", "OPS_HOOK")}
        sent = run_cli("night", "--send", env={**env, **hooks})
        again = run_cli("night", "--send", env={**env, **hooks})
    assert sent.code == again.code == 1
    assert {p for p, _, _ in receiver.posts} == {"/ALPHA_HOOK", "/GAMMA_HOOK", "/OPS_HOOK"}  # beta had nothing to say
    assert [receiver.tried(p) for p in ("/ALPHA_HOOK", "/GAMMA_HOOK", "/OPS_HOOK")] == [
        1,
        1,
        1,
    ]  # once, though asked twice
    (alpha_body,) = receiver.taken("/ALPHA_HOOK")
    assert alpha_body["tenant"] == "alpha" and alpha_body["suites"][0]["findings"][0]["case_ids"] == [BROKEN]
    (delta_body,) = receiver.taken("/OPS_HOOK")  # [defaults] alerts
    assert [f["kind"] for s in delta_body["suites"] for f in s["findings"]] == ["missing_run"]
    assert "alpha: ALPHA_HOOK: attempt 1: sent (200)" in sent.err
    assert "alpha: ALPHA_HOOK: sent already (200); not sent again" in again.err
    # no URL anywhere: output, errors, the store, the instance
    for result in (sent, again):
        assert f"127.0.0.1:{receiver.port}" not in result.out + result.err
    for path in files_under(home.root):
        assert f"127.0.0.1:{receiver.port}".encode() not in path.read_bytes(), path


def test_night_refuses_bad_input_with_exit_2(home, tmp_path: Path) -> None:
    assert (
        run_cli("night", "--date", "2026-02-30").err
        == "error: --date: '2026-02-30' is not a date; write YYYY-MM-DD, e.g. 2026-12-01.\n"
    )
    assert run_cli("night", "--send").code == 2  # no tenants file names webhooks
    tenant_tree(tmp_path, "alpha")
    bad = write_tenants(
        tmp_path / "tenants.toml", entry("alpha", alerts=["https://hooks.slack.com/services/T/B/xyzzy-token"])
    )
    (tmp_path / "not-toml.toml").write_text("[[tenant]\n")
    assert run_cli("night", env={"KINDGI_TENANTS": str(tmp_path / "not-toml.toml")}).code == 2  # no file to read at all
    # an entry that does not validate costs its tenant its night, which the night names; the URL is never quoted back
    done = run_cli("night", env={"KINDGI_TENANTS": str(bad)})
    assert done.code == 1, done.err
    assert "    missing_run: not run: its tenants-file entry does not validate: " in done.out
    assert "tenant[0].alerts[0]" in done.out and "holds a URL" in done.out
    assert "xyzzy" not in done.out + done.err
