"""The production profile (deploy/production.py) started for real: PostgreSQL, an S3 API, dagster-daemon, the webserver
and two registry servers, each a process of its own; a nightly started by the schedule's own tick through the run
queue, each run a process of its own, its tables on the S3 API and read back by the command line; the daemon
SIGKILLed across the night's tick and again in the middle of the night, restarted each time, its code servers
SIGKILLed, PostgreSQL restarted, the object store stalled for 30 s, a run worker SIGKILLed, and the gateway SIGKILLed
and restarted under the run's retry. Each night ends with every tenant's run recorded once and every table whole, a
tenant's suite of the registry among them, read with the nightly token the profile issued itself. Each service holds
only the secrets it uses, and every run's handlers are bounded together below the machine's memory."""

from __future__ import annotations

import json
import math
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from kindgi_eval.agents.cgroups import HANDLERS_ENV, find_hierarchy, memory_limit
from kindgi_eval.store.batches import BATCH_SECONDS
from kindgi_eval_tests.conftest import GOLDEN, GOLDEN_STATUSES, REPO, files_under, run_cli
from kindgi_eval_tests.fake_provider import Answer, FakeProvider
from kindgi_eval_tests.inputs.test_tenants_file import entry, tenant_tree, write_tenants
from kindgi_eval_tests.webhook_receiver import Receiver, webhook_receiver

pytestmark = [
    pytest.mark.long,
    pytest.mark.xdist_group("production-profile"),
]  # the tests sharing `profile` start it once
PROFILE = REPO / "deploy" / "production.py"
sys.path.insert(0, str(PROFILE.parent))
import production  # noqa: E402 - the profile's own script, for its reading of its processes and its env file

TENANTS = ("north", "south", "east", "west", "inner", "outer", "upper", "lower")
"""Four waves of runs (`RUNS_AT_ONCE` at a time): runs still queue after the first faults, however fast each run is."""
REGISTERED = "outer"
"""The tenant whose suite is declared from the registry (`registry = "outer.golden"`), published once the profile is up."""
GOLDEN_CASES = sum(1 for line in (GOLDEN / "cases.jsonl").read_text().splitlines() if line.strip())
"""The golden cases alone: what the registry's version of the golden set holds (a published suite carries no scenarios)."""
SUITE = {name: f"{name}@{name}.golden" if name == REGISTERED else f"{name}.golden" for name in TENANTS}
MISTYPED = "mistyped"
"""A ninth tenant whose entry carries a typo (`judge_modle`): the tick leaves it out, and the eight run."""
"""Each tenant's suite partition: a folder's `<tenant>.<folder>`, a registry suite's `<tenant>@<id>`."""
UNPUBLISHED = "unpublished"
"""A tenth tenant, with a webhook (`alerts`), whose registry suite is never published: the tick leaves it out, and at
the night's deadline the daemon's `night_findings` sensor tells the webhook of the missing run, once."""
WEBHOOK = "UNPUBLISHED_WEBHOOK"
"""The variable holding its webhook's URL, a receiver's on 127.0.0.1: given to the daemon alone."""
NIGHT_DEADLINE_S = 60
"""KINDGI_NIGHT_DEADLINE: how long after the tick a night with a suite missing is told (while the others still run)."""
MASTER_KEY = "sk-profile-test-master-key"
"""The gateway's master key, which the profile gives the gateway alone."""
PROVIDER_KEY = "sk-profile-test-provider-key"
"""A provider's key in the caller's environment (the gateway's config reads OPENAI_API_KEY), for the gateway alone."""
RUNS_AT_ONCE = 2
"""The machine's bound on runs (`--max-concurrent-runs`), below the tenants, so that some runs wait in the queue."""
NIGHT_S = 240.0
"""The tick comes within a minute or two; eight runs of the golden suite, two at a time, follow."""


def postgres_reachable(own: bool) -> None:
    """The profile needs PostgreSQL: a server DAGSTER_PG_* name, or Debian's binaries to make its own cluster (which
    a profile whose server is restarted needs, `own`)."""
    if (os.environ.get("DAGSTER_PG_HOST") and not own) or Path("/usr/lib/postgresql").is_dir():
        return
    reason = (
        "no PostgreSQL binaries: install Debian's postgresql (.ci/run does)"
        if own
        else "no PostgreSQL: set DAGSTER_PG_HOST/PORT/USERNAME/PASSWORD or install Debian's postgresql (.ci/run does)"
    )
    if os.environ.get("KINDGI_REQUIRE_POSTGRES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@contextmanager
def started(
    root: Path, tenants: Path, own_postgres: bool = False, **variables: str
) -> Iterator[tuple[Path, dict[str, str]]]:
    """The profile started in `root/profile` with `tenants` declared and the schedule ticking once, soon; stopped after.
    `own_postgres`: on a cluster of its own, which may be restarted, even where DAGSTER_PG_* name a shared server (as
    in CI, whose server other tests use at the same time)."""
    postgres_reachable(own_postgres)
    folder = root / "profile"
    env = {**os.environ, "KINDGI_TENANTS": str(tenants), "LITELLM_MASTER_KEY": MASTER_KEY, **variables}
    if own_postgres:
        env = {k: v for k, v in env.items() if not k.startswith("DAGSTER_PG_")}
    done = subprocess.run(
        [
            sys.executable,
            str(PROFILE),
            "start",
            "--dir",
            str(folder),
            "--tick-once-after",
            "75",
            "--max-concurrent-runs",
            str(RUNS_AT_ONCE),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    running = {**env, **production.read_env(folder)} if done.returncode == 0 else env
    try:
        assert done.returncode == 0, done.stderr
        yield folder, running
    finally:
        stop_reader(running)
        bound = (
            json.loads((folder / "profile.json").read_text()).get("handlers_bound") if done.returncode == 0 else None
        )
        stopped = subprocess.run(
            [sys.executable, str(PROFILE), "stop", "--dir", str(folder)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert stopped.returncode == 0, stopped.stderr
        assert (
            bound is None or not (find_hierarchy().memory / bound).exists()
        )  # the handlers' group went with the profile


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    """The webhook receiver the profile's `UNPUBLISHED` tenant names, on 127.0.0.1."""
    with webhook_receiver() as running:
        yield running


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory, receiver: Receiver) -> Iterator[tuple[Path, dict[str, str]]]:
    """The profile with eight tenants on the mock agent, one of them (`REGISTERED`) running a suite of the registry, on a
    PostgreSQL cluster of its own (its night restarts it); a provider's key in the caller's environment."""
    root = tmp_path_factory.mktemp("night")
    for name in TENANTS:
        tenant_tree(root, name, {"golden": GOLDEN if name != REGISTERED else None})
    tenant_tree(root, MISTYPED)
    tenant_tree(root, UNPUBLISHED, {"golden": None})
    declared = [
        entry(name) if name != REGISTERED else entry(name, suites=None, registry=f"{name}.golden") for name in TENANTS
    ]
    declared.append(entry(MISTYPED, judge_modle="openai:gpt-4o"))
    declared.append(entry(UNPUBLISHED, suites=None, registry=f"{UNPUBLISHED}.golden", alerts=[WEBHOOK]))
    with started(
        root,
        write_tenants(root / "tenants.toml", *declared),
        own_postgres=True,
        OPENAI_API_KEY=PROVIDER_KEY,
        KINDGI_NIGHT_DEADLINE=f"{NIGHT_DEADLINE_S}s",
        **{WEBHOOK: receiver.url("/unpublished")},
    ) as running:
        # the tenant publishes its suite once the registry is up, before the night's tick
        _, env = running
        publisher = kindgi(env, "tokens", "issue", "--tenant", REGISTERED, "--name", "ci").strip()
        kindgi(
            {**env, "KINDGI_REGISTRY_TOKEN": publisher},
            "suites",
            "publish",
            str(GOLDEN),
            "--id",
            f"{REGISTERED}.golden",
            "--version",
            "1.0.0",
        )
        yield running


READER = """
import json, sys
import dagster as dg
instance = dg.DagsterInstance.get()
for line in sys.stdin:
    try:
        answer = {"value": eval(json.loads(line), {"instance": instance})}
    except Exception as e:
        answer = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(answer), flush=True)
"""
"""Evaluates each expression it reads (a JSON line) on the instance it opened once, answering a JSON line."""
READ_S = 120.0
_readers: dict[str, subprocess.Popen[str]] = {}
"""One reader per profile, by its DAGSTER_HOME: a process per question cost two seconds of a core (Dagster's import),
and the nights poll every two seconds for minutes."""


def read_instance(env: dict[str, str], expression: str) -> object:
    """`expression`, JSON-encoded, evaluated on the profile's instance (`instance`) by another process: the instance
    as the daemon and the webserver see it, read from PostgreSQL (each query on a connection of its own, so a restart
    of the server between two questions is not seen)."""
    reader = _readers.get(env["DAGSTER_HOME"])
    if reader is None or reader.poll() is not None:
        reader = _readers[env["DAGSTER_HOME"]] = subprocess.Popen(
            [sys.executable, "-c", READER], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
    reader.stdin.write(json.dumps(expression) + "\n")
    reader.stdin.flush()
    assert select.select([reader.stdout], [], [], READ_S)[0], (
        f"the instance did not answer {expression!r} in {READ_S:.0f} s"
    )
    line = reader.stdout.readline()
    assert line, f"the instance's reader ended (status {reader.wait()}) asked {expression!r}"
    answer = json.loads(line)
    assert "error" not in answer, f"{expression!r}: {answer['error']}"
    return answer["value"]


def stop_reader(env: dict[str, str]) -> None:
    """End the profile's reader, if it has one: its input closed, it ends."""
    reader = _readers.pop(env.get("DAGSTER_HOME", ""), None)
    if reader is not None:
        reader.stdin.close()
        reader.wait(timeout=30)


def instance_runs(env: dict[str, str]) -> list[dict]:
    """The instance's runs."""
    return read_instance(
        env, "[{'run_id': r.run_id, 'status': r.status.value, 'tags': dict(r.tags)} for r in instance.get_runs()]"
    )


def dequeue_failures(env: dict[str, str]) -> list[str]:
    """What the queue said of each run it could not hand to the code server: back into the queue, or failed."""
    return read_instance(
        env,
        "[e.message for r in instance.get_runs() for e in instance.all_logs(r.run_id) "
        "if e.message and 'dequeu' in e.message]",
    )


def schedules_seen(env: dict[str, str]) -> set[str]:
    """The schedules whose state the daemon stored in the instance: from then on it runs a tick it missed."""
    return set(read_instance(env, "[s.instigator_name for s in instance.all_instigator_state()]"))


def kindgi(env: dict[str, str], *args: str, exits: tuple[int, ...] = (0,)) -> str:
    """`kindgi-eval ARGS` with the profile's variables; its standard output, once it exited as expected."""
    done = run_cli(*args, environ=env)
    assert done.code in exits, done.err
    return done.out


def sql(env: dict[str, str], query: str) -> list[dict]:
    """The rows `kindgi-eval sql` answers `query` with, read from the profile's store."""
    return json.loads(kindgi(env, "sql", "--format", "json", query))


def night_until(env: dict[str, str], done, what: str) -> list[dict]:
    """Poll the instance's runs until `done(runs)`."""
    deadline = time.monotonic() + NIGHT_S
    while True:
        runs = instance_runs(env)
        if done(runs):
            return runs
        assert time.monotonic() < deadline, f"{what} within {NIGHT_S:.0f} s: {runs}"
        time.sleep(2)


def kill(pid: int) -> None:
    """SIGKILL `pid` and wait until it is gone: on a busy machine a killed process can outlive the signal by a moment,
    and `restart` refuses a service whose process still runs."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while pid in production.running_processes():
        assert time.monotonic() < deadline, f"process {pid} still runs 30 s after SIGKILL"
        time.sleep(0.1)


def restart(folder: Path, env: dict[str, str], service: str) -> None:
    """`deploy/production.py restart SERVICE`, once its process was killed (postgres: while it runs); what it said
    goes to the test's standard error (`-s` shows it)."""
    restarted = subprocess.run(
        [sys.executable, str(PROFILE), "restart", service, "--dir", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert restarted.returncode == 0, restarted.stderr
    print(restarted.stdout.strip(), file=sys.stderr)


def test_a_night_through_the_queue_onto_the_s3_store_survives_the_daemon_code_servers_postgres_and_store_failing(
    profile,
) -> None:
    folder, env = profile
    state = json.loads((folder / "profile.json").read_text())
    assert set(state["pids"]) == {"s3", "registry-1", "registry-2", "daemon", "webserver", "gateway", "pgbouncer"}
    assert env["KINDGI_STORE"] == "s3://kindgi/store" and env["AWS_ENDPOINT_URL"] == state["s3"]
    # the queue bounds the machine and each tenant; no limit counts runs per provider, which the gateway paces
    limits = (folder / "dagster" / "dagster.yaml").read_text()
    assert (
        f"max_concurrent_runs: {RUNS_AT_ONCE}\n" in limits and "kindgi/tenant" in limits and "_provider" not in limits
    )

    # the daemon dead across the night's tick: SIGKILLed once it has seen the schedule, started again after the tick;
    # it runs the tick it missed, once (the runs keyed by the tick's minute, checked below)
    tick = datetime.fromisoformat(state["tick"])
    while "nightly_suites" not in schedules_seen(env):
        assert time.time() < tick.timestamp() - 2, "the daemon had not stored the schedule's state by its tick"
        time.sleep(1)
    os.kill(state["pids"]["daemon"], signal.SIGKILL)
    time.sleep(max(0.0, tick.timestamp() + 5 - time.time()))
    assert instance_runs(env) == []
    restart(folder, env, "daemon")

    # PostgreSQL restarted while runs are under way and others queued: every session of the daemon, the webserver and
    # the runs ended. A run whose query it cut off fails in that step and is retried from it: the test waits for the
    # retries before the code servers' kill below (a retry needs the code location, and Dagster never tries again
    # one that could not reach it)
    night_until(
        env,
        lambda runs: any(r["status"] == "STARTED" for r in runs) and any(r["status"] == "QUEUED" for r in runs),
        "no run started while others queued",
    )
    restart(folder, env, "postgres")
    time.sleep(5)  # a query cut off fails at once; its step's failure and its run's are written as PostgreSQL is back
    night_until(
        env,
        lambda runs: all(
            r["status"] != "FAILURE" or r["run_id"] in {c["tags"].get("dagster/parent_run_id") for c in runs}
            for r in runs
        ),
        "a run failed by the restart was not retried",
    )

    # mid-night: a run is under way and others wait in the queue when the daemon is SIGKILLed, then restarted
    night_until(
        env,
        lambda runs: any(r["status"] == "STARTED" for r in runs) and any(r["status"] == "QUEUED" for r in runs),
        "no run started while others queued",
    )
    daemon = json.loads((folder / "profile.json").read_text())["pids"]["daemon"]
    kill(daemon)
    # the dead daemon's code servers then SIGKILLed, found at once: each outlives its daemon only by its heartbeat's
    # timeout (20 s), which the daemon's restart can take on a busy machine. The run workers they spawned go on without
    # them. The new daemon's code server is left alone: one killed while it launches a run, or while a failed run's
    # retry needs it, loses that tenant's night (docs/dagster.md)
    servers = production.code_servers(daemon)
    assert servers, "the dead daemon had no code server to kill"
    orphans = production.workers_of(servers)
    for server in servers:
        os.kill(server.pid, signal.SIGKILL)
    print(
        f"killed code servers {[s.pid for s in servers]}, their run workers {[p.pid for p in orphans]} left",
        file=sys.stderr,
    )
    restart(folder, env, "daemon")

    # then the object store stops answering for 30 s while a run is under way (its process stopped, so every request
    # hangs): the runs wait for it and go on, none ends short
    night_until(env, lambda runs: any(r["status"] == "STARTED" for r in runs), "no run under way after the restart")
    os.kill(state["pids"]["s3"], signal.SIGSTOP)
    try:
        time.sleep(30)
    finally:
        os.kill(state["pids"]["s3"], signal.SIGCONT)

    # no run lost, none twice: each tenant's night ended in one successful run, started by the schedule's tick (not by
    # a loop of ours) and keyed by the tick's minute; a run that failed on the way (a step whose query the PostgreSQL
    # restart cut off) is the parent of its one retry, which finished it
    def ended(runs: list[dict]) -> bool:
        retried = {r["tags"].get("dagster/parent_run_id") for r in runs}
        finished = (
            r["status"] == "SUCCESS"
            or r["status"] in ("FAILURE", "CANCELED")
            and (r["run_id"] in retried or r["tags"].get("dagster/will_retry") == "false")
            for r in runs
        )
        return len(runs) >= len(TENANTS) and all(finished)

    runs = night_until(env, ended, "the night did not end")
    # each run as tenant, status, id, parent, why it failed and whether Dagster will retry it: what a failure shows
    seen = [
        (
            r["tags"]["kindgi/tenant"],
            r["status"],
            r["run_id"][:8],
            r["tags"].get("dagster/parent_run_id", "")[:8],
            r["tags"].get("dagster/failure_reason"),
            r["tags"].get("dagster/will_retry"),
        )
        for r in runs
    ]
    night = sorted((r for r in runs if r["status"] == "SUCCESS"), key=lambda r: r["tags"]["kindgi/tenant"])
    assert [r["tags"]["kindgi/tenant"] for r in night] == sorted(TENANTS), seen
    assert {r["tags"]["dagster/schedule_name"] for r in night} == {"nightly_suites"}
    assert [r["tags"]["dagster/run_key"] for r in night] == [
        f"{SUITE[name]}@{tick:%Y-%m-%dT%H:%M}" for name in sorted(TENANTS)
    ]
    retried = [r for r in runs if r["status"] != "SUCCESS"]
    children = {r["tags"].get("dagster/parent_run_id"): r for r in night}
    assert all(
        r["status"] == "FAILURE"
        and r["run_id"] in children
        and children[r["run_id"]]["tags"]["kindgi/tenant"] == r["tags"]["kindgi/tenant"]
        for r in retried
    ), seen
    # the queue put back each run it could not hand to a dead code server, and failed none of them
    failures = dequeue_failures(env)
    print(
        f"runs retried: {[r['run_id'] for r in retried]}; the queue, of runs it could not launch: {failures}",
        file=sys.stderr,
    )
    assert all("re-submitting the run into the queue" in message for message in failures), failures

    # the tables are on the S3 API, and the command line reads them there; nothing half-written, nothing twice: the
    # runs' summaries are the night's successful runs' alone, and each tenant's cases, replies and statuses are
    # whole, each case once (a retry reads what the run it finishes stored, so a tenant's tables may be split
    # between the two, never repeated); as many assertions' outcomes for each tenant, the suite being the same
    # a folder's suite holds the golden cases and scenarios; the registry's version its cases (a published suite
    # carries no scenarios)
    cases = {name: GOLDEN_CASES if name == REGISTERED else GOLDEN_STATUSES for name in TENANTS}
    # a run that failed on the way is a row of `runs` too (state failed, no counts), one the night retried
    ended_short = sql(env, "SELECT run_id FROM runs WHERE state <> 'succeeded'")
    assert {r["run_id"] for r in ended_short} <= {r["run_id"] for r in retried}, ended_short
    assert sql(env, "SELECT run_id, suite, cases FROM runs WHERE state = 'succeeded' ORDER BY 1") == sorted(
        (
            {
                "run_id": r["run_id"],
                "suite": SUITE[r["tags"]["kindgi/tenant"]],
                "cases": cases[r["tags"]["kindgi/tenant"]],
            }
            for r in night
        ),
        key=lambda r: r["run_id"],
    )
    for view, column, where in (
        ("cases", "id", "kind IN ('case', 'scenario')"),
        ("replies", "case_id", "true"),
        ("statuses", "case_id", "true"),
    ):
        each = sql(
            env,
            f"SELECT suite, count(*) AS n, count(DISTINCT {column}) AS once FROM {view} WHERE {where} GROUP BY 1 ORDER BY 1",
        )
        expected = ({"suite": SUITE[name], "n": cases[name], "once": cases[name]} for name in TENANTS)
        assert each == sorted(expected, key=lambda r: r["suite"]), view
    outcomes = sql(env, "SELECT suite, count(*) AS n FROM outcomes GROUP BY 1 ORDER BY 1")
    assert [o["suite"] for o in outcomes] == sorted(SUITE.values()), outcomes
    assert len({o["n"] for o in outcomes if o["suite"] != SUITE[REGISTERED]}) == 1, outcomes
    # a replay re-judges a night's run from the S3 store into it (the tenant's configuration named, as for any tenant
    # but the demo), diff compares the two, report writes one of them
    folders = [r for r in night if r["tags"]["kindgi/tenant"] != REGISTERED]
    first = next(
        (r for r in folders if "dagster/parent_run_id" not in r["tags"]), folders[0]
    )  # a night not retried, if one is
    tenant = first["tags"]["kindgi/tenant"]
    replayed = kindgi(
        env,
        "replay",
        "--from",
        first["run_id"],
        "--judge-model",
        "mock:demo-judge",
        "--config-dir",
        str(folder.parent / tenant / "config"),
        "--json",
        str(folder / "replay.json"),
        exits=(1,),
    )  # the demo judge fails one golden case
    replay = json.loads((folder / "replay.json").read_text())["run_id"]
    assert replay != first["run_id"] and "judged-fail" in replayed
    assert "reviewed -> judged-pass" in kindgi(env, "diff", first["run_id"], replay)
    kindgi(env, "report", replay, "--html", str(folder / "report.html"))
    assert SUITE[tenant] in (folder / "report.html").read_text()
    assert not (folder / "home" / "store").exists()  # nothing fell back to a local folder


def test_the_tenant_whose_suite_never_ran_is_told_once_by_the_daemon_and_no_log_holds_the_url(
    profile, receiver: Receiver
) -> None:
    # the tick left the unpublished suite out; once the deadline passed, the daemon's sensor posted the tenant's
    # night to its webhook, once, through the daemon's kills and restarts and PostgreSQL's
    folder, _ = profile
    tick = datetime.fromisoformat(json.loads((folder / "profile.json").read_text())["tick"])
    due = tick.timestamp() + NIGHT_DEADLINE_S + 180  # the deadline, then the sensor's next looks (one a minute)
    while not receiver.posts:
        assert time.time() < due, "the sensor told no one of the missing run by the deadline"
        time.sleep(2)
    # another look of the sensor since the post (the night's other tests may have given it one already): nothing again
    time.sleep(max(0.0, receiver.first_post_at + 70 - time.time()))
    assert [(path, status) for path, status, _ in receiver.posts] == [("/unpublished", 200)]
    (told,) = receiver.taken("/unpublished")
    assert told["tenant"] == UNPUBLISHED and told["worse"]
    assert [(s["suite"], [f["kind"] for f in s["findings"]]) for s in told["suites"]] == [
        (f"{UNPUBLISHED}@{UNPUBLISHED}.golden", ["missing_run"])
    ]
    # the URL is in no log and not in the profile's env file; only the daemon's own record of what it was started
    # with holds it (services/daemon.json, its owner's only, for `restart`)
    address = f"127.0.0.1:{receiver.port}"
    for path in [*files_under(folder / "logs"), folder / "env", folder / "profile.json"]:
        assert address.encode() not in path.read_bytes(), path


def test_a_mistyped_entry_costs_its_own_tenant_the_night_and_nobody_else(profile) -> None:
    # the night (above) ran every other tenant once; the entry with a typo had no run, and no tick failed
    _, env = profile
    runs = instance_runs(env)
    assert {r["tags"]["kindgi/tenant"] for r in runs} == set(TENANTS)


GRAPHQL_LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) { __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } }
}
"""


def test_a_run_launched_through_the_ui_naming_another_gateway_sends_it_nothing(profile) -> None:
    # anyone who reaches the webserver may launch a run with a `kindgi/settings` tag of their own: one naming another
    # gateway fails before any call, and that address never sees the gateway's key (nor anything else)
    from kindgi_eval.defs.resources import pinned_tags
    from kindgi_eval.inputs import RunSettings

    folder, env = profile
    ui = json.loads((folder / "profile.json").read_text())["ui"]
    home = folder.parent / "north"
    with FakeProvider(lambda body: Answer(REPLY)) as foreign:
        settings = RunSettings(
            eval_dir=str(home / "evals" / "golden"),
            config_dir=str(home / "config"),
            agent_model="openai:gpt-4o-mini",
            gateway_url=foreign.base_url.removesuffix("/v1"),
        )
        tags = {"dagster/partition": SUITE["north"], "kindgi/tenant": "north", **pinned_tags(settings)}
        params = {
            "selector": {
                "repositoryLocationName": "kindgi_eval",
                "repositoryName": "__repository__",
                "jobName": "evaluate_suite",
            },
            "runConfigData": {},
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        answer = httpx.post(
            f"{ui}/graphql", json={"query": GRAPHQL_LAUNCH, "variables": {"params": params}}, timeout=60
        ).json()
        run_id = answer["data"]["launchRun"]["run"]["runId"]
        runs = night_until(
            env,
            lambda runs: any(r["run_id"] == run_id and r["status"] in ("SUCCESS", "FAILURE", "CANCELED") for r in runs),
            "the launched run did not end",
        )
        (launched,) = [r for r in runs if r["run_id"] == run_id]
        assert launched["status"] == "FAILURE"
        assert foreign.requests == []
    events = "\n".join(read_instance(env, f"[e.to_json() for e in instance.all_logs({run_id!r})]"))
    assert "the run names the gateway" in events
    assert MASTER_KEY not in events


def test_two_registry_servers_share_one_database(profile) -> None:
    folder, env = profile
    first, second = json.loads((folder / "profile.json").read_text())["registry"]
    issued = kindgi(env, "tokens", "issue", "--tenant", "north", "--name", "night")
    secret = issued.strip()  # the secret alone on stdout; what it is goes to stderr
    suite = {
        "id": "north.pricing",
        "tenantId": "north",
        "version": "1.0.0",
        "kind": "conversation",
        "spec": {"cases": [{"id": "price", "text": "How much is it?", "expect": {"escalate": False}}]},
    }
    headers = {"Authorization": f"Bearer {secret}"}
    assert httpx.post(f"{first}/v1/eval-suites", json=suite, headers=headers, timeout=30).status_code == 201
    read = httpx.get(f"{second}/v1/eval-suites/north.pricing", headers=headers, timeout=30)
    assert read.status_code == 200 and read.json()["suite"]["version"] == "1.0.0"


def test_the_instance_reaches_postgres_through_the_profile_s_pgbouncer(profile) -> None:
    import psycopg2

    folder, env = profile
    assert (
        f"listen_port = {env['DAGSTER_PG_PORT']}" in (folder / "pgbouncer" / "pgbouncer.ini").read_text().splitlines()
    )
    stored = read_instance(env, "instance.run_storage.postgres_url")
    assert stored.endswith(f"@127.0.0.1:{env['DAGSTER_PG_PORT']}/{env['DAGSTER_PG_DB']}"), stored
    console = psycopg2.connect(
        host="127.0.0.1",
        port=int(env["DAGSTER_PG_PORT"]),
        user=env["DAGSTER_PG_USERNAME"],
        password=env["DAGSTER_PG_PASSWORD"],
        dbname="pgbouncer",
    )
    console.autocommit = True  # the pooler's console takes no transactions
    try:
        with console.cursor() as cursor:
            cursor.execute("SHOW POOLS")
            names = [column[0] for column in cursor.description]
            (pool,) = [dict(zip(names, r, strict=True)) for r in cursor.fetchall() if r[0] == env["DAGSTER_PG_DB"]]
            cursor.execute("SHOW STATS")
            names = [column[0] for column in cursor.description]
            (stats,) = [dict(zip(names, r, strict=True)) for r in cursor.fetchall() if r[0] == env["DAGSTER_PG_DB"]]
    finally:
        console.close()
    # the daemon's, the webserver's and the runs' queries, on no more server connections than the pooler keeps
    assert stats["total_xact_count"] > 100, stats
    assert pool["sv_active"] + pool["sv_idle"] + pool["sv_used"] <= production.POOLER_SERVER_CONNECTIONS, pool


def environ(pid: int) -> dict[str, str]:
    """The environment process `pid` was started with (/proc/PID/environ)."""
    pairs = (item.split(b"=", 1) for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item)
    return {key.decode(): value.decode("utf-8", "replace") for key, value in pairs}


def test_each_service_holds_only_the_secrets_it_uses(profile, receiver: Receiver) -> None:
    folder, env = profile
    state = json.loads((folder / "profile.json").read_text())
    registry_db = env["KINDGI_REGISTRY_DB"]
    secrets_of = {
        "master key": MASTER_KEY,
        "provider key": PROVIDER_KEY,
        "call key": env["KINDGI_GATEWAY_KEY"],
        "postgres password": env["DAGSTER_PG_PASSWORD"],
        "registry database": registry_db,
        "nightly token": env["KINDGI_REGISTRY_TOKEN"],
        "webhook URL": receiver.url("/unpublished"),
    }
    assert env["KINDGI_GATEWAY_KEY"] != MASTER_KEY and "LITELLM_MASTER_KEY" not in production.read_env(folder)

    def held(pid: int) -> set[str]:
        found = environ(pid)
        values = "\0".join(found.values())
        return {name for name, secret in secrets_of.items() if secret in values} | (
            {"store secret"} if "AWS_SECRET_ACCESS_KEY" in found else set()
        )

    # the services' own processes, and what the daemon and the webserver started (code servers, run workers): each
    # Dagster service's process group
    processes = production.running_processes()
    groups = {name: [p.pid for p in processes.values() if p.group == pid] for name, pid in state["pids"].items()}
    assert len(groups["daemon"]) > 1 and len(groups["webserver"]) > 1, groups  # a code server each, at least
    seen = {name: {frozenset(held(pid)) for pid in pids} for name, pids in groups.items()}
    instance = {"postgres password"}
    assert seen == {
        "gateway": {frozenset({"master key", "provider key", "call key"})},
        "s3": {frozenset()},
        "pgbouncer": {frozenset()},  # the instance's password is in its users file, its owner's only
        "registry-1": {frozenset({"registry database", "postgres password"})},  # the password within its database's URL
        "registry-2": {frozenset({"registry database", "postgres password"})},
        "webserver": {frozenset(instance)},
        "daemon": {frozenset(instance | {"call key", "nightly token", "store secret", "webhook URL"})},
    }, seen
    # the call key calls models through the gateway, and nothing else there
    gateway = state["gateway"]
    call = {"Authorization": f"Bearer {env['KINDGI_GATEWAY_KEY']}"}
    assert httpx.get(f"{gateway}/v1/models", headers=call, timeout=30).status_code == 403
    assert (
        httpx.get(f"{gateway}/v1/models", headers={"Authorization": f"Bearer {MASTER_KEY}"}, timeout=30).status_code
        == 200
    )
    # the registry token the runs hold is the nightly one the profile issued, for no tenant
    tokens = json.loads(kindgi(env, "tokens", "list", "--format", "json"))
    assert [(t["tenant"], t["scope"]) for t in tokens if t["name"] == "production-profile"] == [("", "nightly")]


def test_every_run_s_handlers_are_bounded_together_below_the_machine_s_memory(profile) -> None:
    folder, env = profile
    state = json.loads((folder / "profile.json").read_text())
    hierarchy = find_hierarchy()
    if hierarchy is None:
        pytest.skip("no control group can be made on this machine")
    bound = hierarchy.memory / state["handlers_bound"]
    assert (
        environ(state["pids"]["daemon"])[HANDLERS_ENV]
        == state["handlers_bound"]
        == production.read_env(folder)[HANDLERS_ENV]
    )
    total = next(
        int(line.split()[1]) * 1024
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    services = sum(p.rss for p in production.running_processes().values() if p.group in state["pids"].values())
    assert memory_limit(bound, hierarchy) == production.handlers_memory(RUNS_AT_ONCE) < total - services
    # the machine's memory less what the services need and each run at once
    assert production.handlers_memory(2, total=24 << 30) == (24 << 30) - (
        production.SERVICES_MIB + 2 * production.RUN_WORKER_MIB << 20
    )


SLOW_CASES = 12
AGENT_S = 1.5
REPLY = json.dumps(
    {
        "messages": ["The Foundation Course is $450. Would you pay upfront or in instalments?"],
        "escalate": False,
        "reason": None,
    }
)


@pytest.mark.xdist_group(
    "production-profile-killed-worker"
)  # a profile of its own: on another worker, beside the first's night
def test_a_run_worker_killed_mid_run_is_retried_from_its_recordings_through_a_gateway_killed_and_restarted(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # one tenant whose agent answers in 1.5 s, one call at a time: the kill lands with replies recorded and more to come
    root = tmp_path_factory.mktemp("worker")
    home = tenant_tree(root, "slow", {"golden": None})
    (home / "evals" / "golden").mkdir(parents=True)
    case = {"text": "how much is the foundation course?", "expect": {"escalate": False}, "must_contain": ["$450"]}
    (home / "evals" / "golden" / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"case-{n:02d}", **case}) + "\n" for n in range(SLOW_CASES))
    )
    # a reply that waits for the gateway's restart is slower than the default 15 s deadline: the tenant's is raised, so
    # that what is checked is that nothing is lost, not how long it took
    tenants = write_tenants(
        root / "tenants.toml", entry("slow", agent_model="openai:slow-agent", concurrency=1, max_latency_ms=90000)
    )
    with (
        FakeProvider(lambda body: Answer(REPLY, delay_s=AGENT_S)) as provider,
        started(root, tenants, OPENAI_BASE_URL=provider.base_url, OPENAI_API_KEY="sk-test-not-a-real-key") as (
            folder,
            env,
        ),
    ):
        daemon = json.loads((folder / "profile.json").read_text())["pids"]["daemon"]
        deadline = time.monotonic() + NIGHT_S
        while not (len(provider.requests) >= 3 and production.run_workers(daemon)):
            assert time.monotonic() < deadline, "no run worker reached the agent"
            time.sleep(0.2)
        (worker,) = production.run_workers(daemon)
        os.kill(worker.pid, signal.SIGKILL)
        # the retry under way, the gateway is SIGKILLed and restarted: the calls wait for it
        at_kill = len(provider.requests)
        while not (len(provider.requests) >= at_kill + 2 and production.run_workers(daemon)):
            assert time.monotonic() < deadline, "the retry did not reach the agent"
            time.sleep(0.2)
        kill(json.loads((folder / "profile.json").read_text())["pids"]["gateway"])
        restart(folder, env, "gateway")
        runs = night_until(
            env,
            lambda runs: len(runs) == 2 and all(r["status"] in ("SUCCESS", "FAILURE") for r in runs),
            "the killed run was not retried to its end",
        )
        killed, retry = sorted(runs, key=lambda r: "dagster/parent_run_id" in r["tags"])
        assert (killed["status"], retry["status"]) == ("FAILURE", "SUCCESS")
        assert retry["tags"]["dagster/parent_run_id"] == killed["run_id"]
        # the retry resumed from the recordings: every case asked once, but for the call in flight at the worker's kill,
        # the replies younger than a batch's wait, not yet written (at one call per AGENT_S, at most one), and the call
        # in flight at the gateway's kill
        unwritten = math.ceil(BATCH_SECONDS / AGENT_S)
        assert SLOW_CASES <= len(provider.requests) <= SLOW_CASES + 1 + unwritten + 1, len(provider.requests)
        # and no case was lost to the gateway's restart: every one answered and passed
        counted = json.loads(
            kindgi(env, "sql", "--format", "json", "SELECT run_id, status, count(*) AS n FROM statuses GROUP BY 1, 2")
        )
        assert counted == [{"run_id": retry["run_id"], "status": "passed", "n": SLOW_CASES}]


def test_start_refuses_without_the_gateways_master_key_and_starts_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_MASTER_KEY"}
    done = subprocess.run(
        [sys.executable, str(PROFILE), "start", "--dir", str(tmp_path / "profile")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "LITELLM_MASTER_KEY is not set" in done.stderr
    assert not (tmp_path / "profile").exists()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--gateway-config", "no-such-litellm.yaml"), "no gateway config at no-such-litellm.yaml"),
        (("--max-concurrent-runs", "0"), "--max-concurrent-runs must be at least 1"),
    ],
)
def test_start_refuses_a_missing_gateway_config_or_no_runs_at_once_and_starts_nothing(
    tmp_path: Path, args, error
) -> None:
    env = {**os.environ, "LITELLM_MASTER_KEY": MASTER_KEY}
    done = subprocess.run(
        [sys.executable, str(PROFILE), "start", "--dir", str(tmp_path / "profile"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and error in done.stderr
    assert not (tmp_path / "profile").exists()


def test_restart_postgres_refuses_a_server_the_profile_was_given(tmp_path: Path) -> None:
    # a profile started on the server DAGSTER_PG_* named (CI's, shared by other tests at the same time): its state
    # names the server and no cluster of its own; restarting it is refused, and the password is not repeated
    folder = tmp_path / "profile"
    folder.mkdir()
    (folder / "profile.json").write_text(
        json.dumps(
            {
                "name": "0a1b2c3d",
                "pids": {"daemon": 1},
                "admin_url": "postgresql://kindgi:pg-secret@127.0.0.1:5432/postgres",
            }
        )
    )
    done = subprocess.run(
        [sys.executable, str(PROFILE), "restart", "postgres", "--dir", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "PostgreSQL at 127.0.0.1:5432 was given by DAGSTER_PG_HOST" in done.stderr
    assert "pg-secret" not in done.stderr + done.stdout
