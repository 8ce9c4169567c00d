"""`kindgi-eval run --resume`: a real run SIGKILLed halfway through a paid stage, resumed, pays for nothing twice and
ends with the rows an unbroken run has; what may not be resumed is refused; runs at the same moment coexist.

Every run here asks a scripted OpenAI-compatible server (kindgi_eval_tests/fake_provider.py) serving from a forked
child, slow enough per request that a kill lands mid-stage. One store and one Dagster instance serve the module.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import dagster as dg
import duckdb
import pytest

from kindgi_eval.kinds import models_of, table_named
from kindgi_eval.store.batches import (
    BATCH_ROWS,
    find_run_areas,
    read_batches,
    read_manifest,
    run_area,
    write_manifest,
)
from kindgi_eval.store.layout import SHARED, find_table, read_rows, run_keys
from kindgi_eval.store.rows import ReplyRow, SampleRow
from kindgi_eval_tests.conftest import CLI, REPO, Result, run_cli
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, criterion_of, fenced

# One worker runs the module, so the server and the unbroken run its tests compare against are made once.
pytestmark = [pytest.mark.long, pytest.mark.xdist_group("cli-resume")]
CASES = 16
CONCURRENCY = 4
AGENT_DELAY_S = 0.25
JUDGE_DELAY_S = 0.05
GROUPS = ("implicit_concession", "semantic_repetition", "answers_the_question")
KEY = "demo-academy.suite"
CHAIN = ("suite", "agent_replies", "outcomes", "judge_samples", "calibration", "statuses", "run_summary")
TIMES = {"latency_ms", "started_at", "finished_at"}
"""Fields that differ between two runs of the same answers: how long things took, and when."""
LINEAGE = {"replies_from", "resumed_from", "agent_calls_saved", "judge_calls_saved", "code_version"}
"""run_summary fields that name runs (or what a resume reused, or the code, which others may edit meanwhile), not
what was evaluated."""


def answer(request: dict[str, Any]) -> Answer:
    """The agent (model fake-agent) echoes the case's question; the judge (fake-judge) fails replies holding BAD."""
    if request["model"] == "fake-agent":
        text = fenced(request, "contact message")
        reply = {"messages": [f"You asked: {text} Which course would you like?"], "escalate": False, "reason": None}
        return Answer(json.dumps(reply), delay_s=AGENT_DELAY_S)
    reply = fenced(request, "reply")
    vote = (
        {"verdict": "fail", "evidence": "BAD", "reason": "says BAD"}
        if "BAD" in reply
        else {"verdict": "pass", "evidence": "", "reason": "fine"}
    )
    return Answer(json.dumps(vote), delay_s=JUDGE_DELAY_S)


def judge_key(request: dict[str, Any]) -> tuple[str, str]:
    """(criterion, reply) of a judge request; its three samples are three identical requests."""
    return criterion_of(request).split(":", 1)[0], fenced(request, "reply")


class World(NamedTuple):
    """One store, one Dagster instance, one scripted provider and one suite for the whole module."""

    root: Path
    store: Path
    suite: Path
    env: dict[str, str]
    server: FakeProvider


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("resume")
    suite = base / "suite"
    suite.mkdir()
    (suite / "cases.jsonl").write_text(
        "".join(
            json.dumps(
                {"id": f"case-{n:02d}", "text": f"question {n}: what do you teach?", "expect": {"escalate": False}}
            )
            + "\n"
            for n in range(CASES)
        )
    )
    calibration = []
    for group in GROUPS:
        history = [{"role": "agent", "text": "Earlier."}] if group == "semantic_repetition" else []
        for label, reply in (("pass", f"A fine reply on {group}."), ("fail", f"A BAD reply on {group}.")):
            calibration.append(
                {
                    "id": f"{group}-{label}",
                    "history": history,
                    "text": "hi",
                    "reply": [reply],
                    "criterion": group,
                    "label": label,
                }
            )
    (suite / "calibration.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calibration))
    server = FakeProvider(answer)
    child = server.serve_in_child()
    root = base / "home"
    env = {
        "KINDGI_HOME": str(root),
        "DAGSTER_HOME": str(root / "dagster"),
        "KINDGI_STORE": "",
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        "OPENAI_BASE_URL": server.base_url,
        **{
            var: ""
            for var in (
                "EVAL_DIR",
                "CONFIG_DIR",
                "AGENT_MODEL",
                "AGENT_URL",
                "EVAL_JUDGE_MODEL",
                "EVAL_MAX_LATENCY_MS",
                "EVAL_CONCURRENCY",
                "EVAL_MODEL_TIMEOUT_S",
            )
        },
    }
    yield World(root, root / "store", suite, env, server)
    os.kill(child.pid, signal.SIGKILL)
    child.join()


def run_args(world: World) -> list[str]:
    return [
        "run",
        "--eval-dir",
        str(world.suite),
        "--agent-model",
        "openai:fake-agent",
        "--judge-model",
        "openai:fake-judge",
        "--concurrency",
        str(CONCURRENCY),
    ]


def cli(world: World, *args: str) -> Result:
    return run_cli(*args, env=world.env)


def run_id_of(result: Result) -> str:
    return next(line for line in result.err.splitlines() if line.startswith("run ")).split()[1]


def tables(world: World, run_id: str) -> dict[str, list[dict]]:
    """Every table one run stored, as dicts without the fields that differ between equal runs (times, run ids)."""
    out = {}
    for asset in CHAIN:
        rows = [
            r.model_dump(exclude=TIMES | (LINEAGE if asset == "run_summary" else set()))
            for r in read_rows(world.store, table_named(asset), KEY, run_id)
        ]
        if asset == "outcomes":  # the latency assertion's sentence quotes the latency
            rows = [{**r, "detail": None} if r["assertion"] == "latency" else r for r in rows]
        out[asset] = rows
    return out


@pytest.fixture(scope="module")
def unbroken(world: World) -> tuple[str, dict[str, list[dict]]]:
    """A run nothing interrupted: its id and tables; every case passes."""
    result = cli(world, *run_args(world))
    assert result.code == 0, result.err
    run_id = run_id_of(result)
    stored = tables(world, run_id)
    assert len(stored["agent_replies"]) == CASES and len(stored["judge_samples"]) == 3 * (2 * len(GROUPS) + 2 * CASES)
    return run_id, stored


def killed_run(world: World, when: str, after: int) -> tuple[str, list[dict]]:
    """Start a run, SIGKILL it once the server has seen `after` more requests of `when` ("agent" or "judge"); the
    killed run's id and the requests it made."""
    before = len(world.server.requests_seen())
    areas = {a.name for a in find_run_areas(world.store, "")}
    process = subprocess.Popen(
        [str(CLI), *run_args(world)],
        cwd=REPO,
        env={**os.environ, **world.env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    model = f"fake-{when}"
    deadline = time.monotonic() + 120
    try:
        while sum(r["model"] == model for r in world.server.requests_seen()[before:]) < after:
            assert process.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    (area,) = [a for a in find_run_areas(world.store, "") if a.name not in areas]
    return area.name.removeprefix("run_id="), world.server.requests_seen()[before:]


def test_a_run_killed_while_asking_the_agent_resumes_without_asking_a_recorded_case_again(world, unbroken) -> None:
    killed, asked_before = killed_run(world, "agent", after=CASES // 2 + 1)
    (area,) = find_run_areas(world.store, killed)
    recorded = {r.case_id for r in read_batches(area / "agent_replies", ReplyRow)}
    assert 0 < len(recorded) < CASES  # killed mid-stage, with whole batches on disk
    assert read_rows(world.store, SHARED.suite, KEY, killed) and killed not in {
        k.run_id for k in run_keys(world.store, KEY)
    }

    mark = len(world.server.requests_seen())
    result = cli(world, "run", "--resume", killed[:8])
    assert result.code == 0, result.err
    resumed = run_id_of(result)
    asked_after = world.server.requests_seen()[mark:]

    def cases(requests: list[dict]) -> Counter[str]:
        return Counter(fenced(r, "contact message") for r in requests if r["model"] == "fake-agent")

    texts = {f"question {n}: what do you teach?": f"case-{n:02d}" for n in range(CASES)}
    before, after = cases(asked_before), cases(asked_after)
    assert not {texts[t] for t in after} & recorded  # no recorded case is asked again
    assert {texts[t] for t in after} == set(texts.values()) - recorded  # every other case is asked, once
    assert max(after.values()) == 1
    repeats = sum((before & after).values())
    assert repeats <= CONCURRENCY + BATCH_ROWS  # only calls in flight at the kill, and one batch not yet written
    assert tables(world, resumed) == unbroken[1]  # the rows of an unbroken run: none missing, none twice, same order
    (run,) = read_rows(world.store, SHARED.run_summary, KEY, resumed)
    assert (run.resumed_from, run.agent_calls_saved, run.judge_calls_saved, run.replies_from) == (
        killed,
        len(recorded),
        0,
        resumed,
    )
    assert not find_run_areas(world.store, resumed)  # a finished run keeps no recordings
    # the killed run's suite table, made again by the resume, is gone: the store holds each case once for the two
    assert find_table(world.store, "suite", KEY, killed) is None and find_table(world.store, "suite", KEY, resumed)
    with dg.DagsterInstance.from_config(str(world.root / "dagster")) as instance:  # no longer "started" in the UI
        assert instance.get_run_by_id(killed).status == dg.DagsterRunStatus.FAILURE
        assert instance.get_run_by_id(resumed).tags["kindgi/resumes"] == killed

    again = cli(world, "run", "--resume", killed)  # finished already: a second resume would pay again
    assert again.code == 2
    assert (
        again.err
        == f"error: --resume: run {killed} was finished already by run {resumed}: there is nothing to resume.\n"
    )


def test_a_run_killed_while_sampling_the_judge_resumes_without_drawing_a_recorded_sample_again(world, unbroken) -> None:
    killed, asked_before = killed_run(world, "judge", after=40)
    (area,) = find_run_areas(world.store, killed)
    samples = read_batches(area / "judge_samples", SampleRow)
    assert 0 < len(samples) < len(unbroken[1]["judge_samples"])
    replies = {r.case_id: " ".join(r.messages) for r in read_rows(world.store, SHARED.agent_replies, KEY, killed)}
    assert len(replies) == CASES  # the agent stage had finished: its table is whole
    reply_of = {
        **replies,
        **{
            f"{g}-{label}": f"A {word} reply on {g}."
            for g in GROUPS
            for label, word in (("pass", "fine"), ("fail", "BAD"))
        },
    }
    recorded = Counter((s.criterion, reply_of[s.subject_id]) for s in samples)

    mark = len(world.server.requests_seen())
    result = cli(world, "run", "--resume", killed)
    assert result.code == 0, result.err
    resumed = run_id_of(result)
    asked_after = world.server.requests_seen()[mark:]
    assert not [r for r in asked_after if r["model"] == "fake-agent"]  # every reply was stored: no agent call
    before = Counter(judge_key(r) for r in asked_before if r["model"] == "fake-judge")
    after = Counter(judge_key(r) for r in asked_after if r["model"] == "fake-judge")
    expected = Counter({k: 3 for k in before | after}) - recorded
    assert after == expected  # each criterion sampled exactly as often as it had not been recorded
    repeats = sum(before.values()) + sum(after.values()) - len(unbroken[1]["judge_samples"])
    assert repeats <= CONCURRENCY + BATCH_ROWS
    assert tables(world, resumed) == unbroken[1]
    (run,) = read_rows(world.store, SHARED.run_summary, KEY, resumed)
    assert (run.resumed_from, run.agent_calls_saved, run.judge_calls_saved) == (killed, CASES, len(samples))
    runs = json.loads(
        cli(
            world,
            "sql",
            f"SELECT resumed_from, agent_calls_saved, judge_calls_saved FROM runs WHERE run_id = '{resumed}'",
            "--format",
            "json",
        ).out
    )
    assert runs == [{"resumed_from": killed, "agent_calls_saved": CASES, "judge_calls_saved": len(samples)}]


def fake_killed_run(world: World, run_id: str, suite: Path, config: Path | None = None, **settings: object) -> Path:
    """A killed run's recordings as a run leaves them (a manifest, no batch): enough for `--resume` to check."""
    from kindgi_eval.inputs import RunSettings, load_suite, load_tenant, manifest_of

    run_settings = RunSettings(
        eval_dir=str(suite), config_dir=str(config) if config else None, agent_model="mock:agent", **settings
    )
    area = run_area(world.store, "demo-academy." + suite.name, "2026-12-01", run_id)
    write_manifest(
        area,
        manifest_of(
            run_id,
            "demo-academy." + suite.name,
            run_settings,
            suite_hash=load_suite(suite, models_of=models_of).hash,
            config_hash=load_tenant(run_settings.config_dir).hash,
        ),
    )
    return area


def test_a_resume_is_refused_naming_what_changed_since_the_run_was_killed(world, tmp_path: Path) -> None:
    suite, config = tmp_path / "golden", tmp_path / "config"
    shutil.copytree(REPO / "evals" / "golden", suite)
    shutil.copytree(REPO / "kindgi_eval" / "demo_tenant", config)
    fake_killed_run(world, "changed-0001", suite, config)
    with (suite / "cases.jsonl").open("a") as f:
        f.write('{"id": "added-later", "text": "hi", "expect": {"escalate": false}}\n')
    (config / "tenant.toml").write_text(
        (config / "tenant.toml").read_text().replace("Warm and brief", "Warm and short")
    )
    result = cli(world, "run", "--resume", "changed-0001", "--judge-model", "mock:judge", "--concurrency", "2")
    assert result.code == 2
    refused = "so its recorded replies and judge samples would not be this run's. Start a new run instead."
    assert result.err == (
        "error: --judge-model: run changed-0001 ran with none, not 'mock:judge'; a resume finishes a run with the settings it "
        "started with. Drop the flag, or start a new run.\n"
    )  # a flag is checked first; --concurrency may change
    result = cli(world, "run", "--resume", "changed-0001")
    assert result.code == 2
    assert result.err == (
        f"error: {suite}: the suite (cases.jsonl or calibration.jsonl) changed since run changed-0001 read it, {refused}\n"
        f"error: {config}/tenant.toml: the tenant configuration changed since run changed-0001 read it, {refused}\n"
    )
    assert not find_run_areas(world.store, "changed-0001")[0].joinpath("agent_replies").exists()  # nothing was run


def test_what_cannot_be_resumed_is_refused(world, unbroken, tmp_path: Path) -> None:
    finished = unbroken[0]
    assert (
        cli(world, "run", "--resume", finished).err
        == f"error: --resume: run {finished!r} completed: there is nothing to resume.\n"
    )
    assert cli(world, "run", "--resume", "no-such-run").err.startswith(
        "error: --resume: no killed run 'no-such-run' in the store"
    )
    suite = tmp_path / "golden"
    shutil.copytree(REPO / "evals" / "golden", suite)
    area = fake_killed_run(world, "alive-0001", suite)
    with (area / "lock").open("w") as lock:  # the run's process, still recording
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = cli(world, "run", "--resume", "alive-0001")
    assert result.code == 2 and "error: --resume: run alive-0001 is still running: a process holds" in result.err
    manifest = read_manifest(area)
    assert manifest is not None and manifest.run_id == "alive-0001"


def test_runs_started_at_once_complete_whole_and_a_reader_keeps_reading(world, unbroken, tmp_path: Path) -> None:
    # two runs of one suite (the nightly one and a manual one) and one of another tenant, started together
    other = tmp_path / "other-config"
    shutil.copytree(REPO / "kindgi_eval" / "demo_tenant", other)
    (other / "tenant.toml").write_text(
        (other / "tenant.toml").read_text().replace('tenant = "demo-academy"', 'tenant = "other-academy"')
    )
    database = world.store / "kindgi.duckdb"
    reader = duckdb.connect(str(database), read_only=True)
    counts, errors, stop = [], [], threading.Event()

    def read() -> None:  # a DuckDB client holding kindgi.duckdb open through the runs
        while not stop.is_set():
            try:
                counts.append(reader.execute("SELECT count(*) FROM statuses").fetchone()[0])
            except Exception as e:  # noqa: BLE001 - any failure of the reader is what this test looks for
                errors.append(e)
            time.sleep(0.05)

    thread = threading.Thread(target=read)
    thread.start()
    args = [["run", "--mock", "--eval-dir", str(world.suite)]] * 2 + [
        ["run", "--mock", "--eval-dir", str(world.suite), "--config-dir", str(other)]
    ]
    processes = [
        subprocess.Popen(
            [str(CLI), *a],
            cwd=REPO,
            env={**os.environ, **world.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for a in args
    ]
    results = [(p.wait(timeout=180), *p.communicate()) for p in processes]
    stop.set()
    thread.join()
    reader.close()
    assert [code for code, _, _ in results] == [0, 0, 0], [err for _, _, err in results]
    assert errors == [] and counts and min(counts) >= CASES
    run_ids = [run_id_of(Result(code, out, err)) for code, out, err in results]
    keys = [KEY, KEY, "other-academy.suite"]
    with duckdb.connect(str(database), read_only=True) as con:  # the exported database is whole and knows all three
        for run_id, key in zip(run_ids, keys, strict=True):
            assert con.execute("SELECT suite, replies_from, cases FROM runs WHERE run_id = ?", [run_id]).fetchall() == [
                (key, run_id, CASES)
            ]
            for view, only in (
                ("cases", "kind = 'case'"),
                ("replies", "true"),
                ("outcomes", "assertion = 'latency'"),
                ("statuses", "true"),
            ):
                assert (
                    con.execute(f"SELECT count(*) FROM {view} WHERE run_id = ? AND {only}", [run_id]).fetchone()[0]
                    == CASES
                ), view
    assert not list(world.store.glob(".kindgi.duckdb*")), "no export left a temporary file behind"


SCENARIOS = 8
MOVES = 4
SCENARIO_KEY = "demo-academy.scenarios"


def test_a_run_killed_mid_conversation_resumes_each_scenario_from_its_last_recorded_turn(world, tmp_path: Path) -> None:
    # eight scripted conversations of four turns, the agent answering each turn in AGENT_DELAY_S: a kill lands with
    # some conversations whole, some part-played and some not begun
    suite = tmp_path / "scenarios"
    suite.mkdir()
    (suite / "scenarios.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "id": f"talk-{n}",
                    "moves": [f"talk {n}, move {m}: what do you teach?" for m in range(MOVES)],
                    "expect": {"escalate": False},
                }
            )
            + "\n"
            for n in range(SCENARIOS)
        )
    )
    args = ["run", "--eval-dir", str(suite), "--agent-model", "openai:fake-agent", "--concurrency", str(CONCURRENCY)]

    def agent_calls(requests: list[dict]) -> Counter[str]:
        return Counter(fenced(r, "contact message") for r in requests if r["model"] == "fake-agent")

    def transcripts(run_id: str) -> dict[str, list[tuple]]:
        return {
            r.case_id: [(t.turn, t.contact_by, t.contact_text, tuple(t.messages)) for t in r.turns or []]
            for r in read_rows(world.store, SHARED.agent_replies, SCENARIO_KEY, run_id)
        }

    mark = len(world.server.requests_seen())
    unbroken = cli(world, *args)
    assert unbroken.code == 0, unbroken.err
    assert sum(agent_calls(world.server.requests_seen()[mark:]).values()) == SCENARIOS * MOVES

    before = len(world.server.requests_seen())
    areas = {a.name for a in find_run_areas(world.store, "")}
    process = subprocess.Popen(
        [str(CLI), *args],
        cwd=REPO,
        env={**os.environ, **world.env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    try:
        while sum(agent_calls(world.server.requests_seen()[before:]).values()) < SCENARIOS * MOVES // 2:
            assert process.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    (area,) = [a for a in find_run_areas(world.store, "") if a.name not in areas]
    killed = area.name.removeprefix("run_id=")
    asked_before = agent_calls(world.server.requests_seen()[before:])

    mark = len(world.server.requests_seen())
    resumed = cli(world, "run", "--resume", killed[:8])
    assert resumed.code == 0, resumed.err
    asked_after = agent_calls(world.server.requests_seen()[mark:])
    assert max(asked_after.values()) == 1  # no turn asked twice by the resume
    # each turn of each conversation asked once in all, but the calls in flight at the kill and a batch not yet written
    repeats = sum((asked_before & asked_after).values())
    assert repeats <= CONCURRENCY + BATCH_ROWS
    assert sum((asked_before + asked_after).values()) == SCENARIOS * MOVES + repeats
    assert 0 < sum(asked_after.values()) < SCENARIOS * MOVES  # the recorded turns were not paid again
    resumed_id = run_id_of(resumed)
    assert transcripts(resumed_id) == transcripts(run_id_of(unbroken))  # the same conversations, turn for turn
    (run,) = read_rows(world.store, SHARED.run_summary, SCENARIO_KEY, resumed_id)
    assert run.resumed_from == killed and run.agent_calls_saved == SCENARIOS * MOVES - sum(asked_after.values())
