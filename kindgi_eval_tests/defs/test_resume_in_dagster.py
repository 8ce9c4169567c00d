"""Resuming and reading inputs inside Dagster: which run an input is read from, Dagster's re-execution from failure
of a run SIGKILLed halfway through the agent stage, and the chain under the multiprocess executor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from kindgi_eval.defs.lineage import input_run, latest_finished, lineage, parent_of
from kindgi_eval.defs.runs import open_instance, run_chain
from kindgi_eval.inputs import RunSettings
from kindgi_eval.kinds import table_named
from kindgi_eval.store.batches import BATCH_ROWS, find_run_areas, read_batches
from kindgi_eval.store.layout import SHARED, find_table, read_rows
from kindgi_eval.store.rows import ReplyRow
from kindgi_eval_tests.conftest import GOLDEN, REPO
from kindgi_eval_tests.defs.chain_jobs import (
    execute,
    in_process_chain,
    multiprocess_chain,
)
from kindgi_eval_tests.fake_provider import Answer, FakeProvider

KEY = "demo-academy.golden"
CHAIN = ("suite", "agent_replies", "outcomes", "judge_samples", "calibration", "statuses", "run_summary")


def test_a_run_finishes_the_killed_run_its_re_execution_from_failure_or_resume_names() -> None:
    def run(run_id: str, parent: str | None = None, **tags: str) -> dg.DagsterRun:
        return dg.DagsterRun(
            job_name="evaluate_suite", run_id=run_id, tags=tags, parent_run_id=parent, root_run_id=parent
        )

    assert parent_of(run("r")) is None
    assert parent_of(run("r", **{"kindgi/resumes": "p"})) == "p"  # kindgi-eval run --resume
    from_failure = {"dagster/parent_run_id": "p", "dagster/root_run_id": "p", "dagster/is_resume_retry": "true"}
    assert parent_of(run("r", **from_failure)) == "p"
    assert parent_of(run("r", "p", **{"dagster/is_resume_retry": "true"})) == "p"  # execute_job's re-execution
    # re-executing every step starts afresh, even with the tag it copied from a parent that was itself a resume
    assert (
        parent_of(run("r", "p", **{"dagster/parent_run_id": "p", "dagster/root_run_id": "p", "kindgi/resumes": "q"}))
        is None
    )


def test_an_input_never_comes_from_a_run_that_had_not_finished_when_this_one_started(home) -> None:
    instance = open_instance(home.root)
    settings = RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent")
    a, b, c = (run_chain(instance, home.root, settings, KEY, "conversation") for _ in range(3))
    run_b, run_c = instance.get_run_by_id(b), instance.get_run_by_id(c)
    replies = dg.AssetKey("agent_replies")
    # c ended after b started: to b, as if c were a run still going, c's tables do not exist
    assert latest_finished(instance, replies, KEY, run_b) == a
    assert latest_finished(instance, replies, KEY, run_c) == b
    assert input_run(instance, home.store, "agent_replies", KEY, run_b) == b  # its own table first
    # a run that made no such table and names no run to read (a launchpad run of some assets): the latest finished
    launched = dg.DagsterRun(job_name="evaluate_suite", run_id="launched-later")
    assert input_run(instance, home.store, "agent_replies", KEY, launched) == c
    assert lineage(instance, run_b) == [b]


def agent_answer(request: dict[str, Any]) -> Answer:
    """An agent over HTTP (AGENT_URL) that answers every case the same way, a little slowly."""
    reply = {
        "messages": [f"About {request['case_id']}: which course would you like?"],
        "escalate": False,
        "reason": None,
    }
    return Answer(raw_body=json.dumps(reply).encode(), delay_s=0.2)


@pytest.fixture
def http_agent():
    server = FakeProvider(agent_answer)
    child = server.serve_in_child()
    yield server
    os.kill(child.pid, signal.SIGKILL)
    child.join()


def test_dagster_re_execution_from_failure_finishes_a_killed_run_without_asking_a_recorded_case_again(
    home, http_agent, tmp_path: Path
) -> None:
    suite = tmp_path / "golden"
    suite.mkdir()
    (suite / "cases.jsonl").write_text(
        "".join(
            json.dumps({"id": f"case-{n:02d}", "text": f"question {n}", "expect": {"escalate": False}}) + "\n"
            for n in range(16)
        )
    )
    key = "demo-academy.golden"
    settings = RunSettings(eval_dir=str(suite), agent_url=http_agent.base_url + "/agent", concurrency=4)
    instance = open_instance(home.root)
    worker = subprocess.Popen(
        [sys.executable, "-m", "kindgi_eval_tests.defs.chain_jobs", settings.model_dump_json(), key, str(home.root)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    try:
        while http_agent.stats()["requests"] < 9:
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(worker.pid, signal.SIGKILL)  # the run worker dies; the UI shows the run as started, then failed
    finally:
        worker.wait()
    asked_before = [r["case_id"] for r in http_agent.requests_seen()]
    (killed,) = instance.get_runs()
    (area,) = find_run_areas(home.store, killed.run_id)
    recorded = {r.case_id for r in read_batches(area / "agent_replies", ReplyRow)}
    assert 0 < len(recorded) < 16
    instance.report_run_failed(killed)  # what run monitoring does to a run whose worker is gone

    # the UI's "Re-execute from failure": a new run tagged with its parent, running only the steps that did not succeed
    result = execute(
        in_process_chain,
        instance,
        settings,
        key,
        home.root,
        reexecution_options=dg.ReexecutionOptions.from_failure(killed.run_id, instance),
        tags={"dagster/is_resume_retry": "true"},
    )
    assert result.success
    resumed = result.run_id
    after = [r["case_id"] for r in http_agent.requests_seen()][len(asked_before) :]
    assert sorted(after) == sorted(
        {f"case-{n:02d}" for n in range(16)} - recorded
    )  # only what was not recorded, once each
    assert len(set(asked_before) & set(after)) <= 4 + BATCH_ROWS  # in flight at the kill, or not yet written
    assert (
        find_table(home.store, "suite", key, resumed) is None
    )  # the suite step had succeeded: read from the killed run
    (run,) = read_rows(home.store, SHARED.run_summary, key, resumed)
    assert (run.resumed_from, run.agent_calls_saved, run.replies_from, run.cases, run.failed) == (
        killed.run_id,
        len(recorded),
        resumed,
        16,
        0,
    )
    assert len(read_rows(home.store, SHARED.agent_replies, key, resumed)) == 16
    assert not find_run_areas(home.store, resumed)


@pytest.mark.long
def test_the_chain_runs_with_every_step_in_its_own_process(home) -> None:
    instance = open_instance(home.root)
    settings = RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent", judge_model="mock:judge")
    result = execute(multiprocess_chain, instance, settings, KEY, home.root)
    assert result.success
    pids = {e.pid for e in result.all_events if e.is_step_start}
    assert len(pids) == len({e.step_key for e in result.all_events if e.is_step_start})  # one process per step
    in_one = run_chain(instance, home.root, settings, KEY, "conversation")
    ignore = {
        name: True for name in ("latency_ms", "started_at", "finished_at", "replies_from", "code_version")
    }  # the source may change between runs
    ignore["turns"] = {"__all__": {"latency_ms"}}  # a scenario's turns are timed too
    for asset in CHAIN:
        one = [r.model_dump(exclude=ignore) for r in read_rows(home.store, table_named(asset), KEY, in_one)]
        many = [r.model_dump(exclude=ignore) for r in read_rows(home.store, table_named(asset), KEY, result.run_id)]
        if asset == "outcomes":
            one, many = (
                [{**r, "detail": None} if r["assertion"] == "latency" else r for r in rows] for rows in (one, many)
            )
        assert many == one, asset
