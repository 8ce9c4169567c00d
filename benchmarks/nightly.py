"""A night of many tenants on the production profile (deploy/production.py): the schedule's own tick starts every
tenant's run, the daemon's queue lets them through under the instance's limits, each run is a process of its own,
the store is on the S3 API.

    .venv/bin/pip install -e '.[test]' && .venv/bin/python benchmarks/nightly.py [--tenants 50] [--cases 40] [--rpm 3000]

Every tenant has one suite of `--cases` one-turn cases and the golden calibration set; its agent and its judge are
one local OpenAI-compatible server answering after `--delay` seconds and refusing 429 beyond `--rpm` requests in any
60 s, as a provider does (so they are one provider). Every call goes through the profile's LiteLLM gateway, started
from deploy/litellm.yaml with OpenAI's budget set to half the provider's `--rpm` (docs/running.md says why half): the
gateway paces the provider, the queue bounds only the machine (`--max-concurrent-runs`) and each tenant. `--down N`
more tenants have an agent whose host refuses connections: their runs must end visibly failed while the others finish.

Printed: the wall time from the tick (the minute the schedule fires) to the last run's end; tenants per hour; what the
queue's limits allow (waves of the runs allowed at once, each as long as the slowest run) and the ratio to it; runs
in flight over time; at the provider: requests, peak in flight against the gateway's parallel requests, the busiest
second and the busiest 60 s against its limit, and requests it refused 429; where a run's time goes (the median run's seconds queued, starting its worker and loading the code
location, in its steps' reads, work, writes and Dagster's events, between steps, and ending; its slowest steps);
peak memory (RSS and PSS) of one run worker and of all of them together; runs lost or started twice; and the CPU the night took,
from the tick to the last run's end, by service (each with its descendants, the ones it reaped included: the daemon
is sampled instead: itself, its code servers, its run workers), against the machine's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for kindgi_eval_tests.fake_provider (the server's) and .gateway_config
sys.path.insert(0, str(REPO / "benchmarks"))  # its neighbours chat_server.py and whole_run.py

sys.path.insert(0, str(REPO / "deploy"))  # the profile's own script

import chat_server  # noqa: E402
import production  # noqa: E402
from whole_run import tree_pss_kb  # noqa: E402

from kindgi_eval_tests.gateway_config import with_openai_rpm  # noqa: E402

PROFILE = REPO / "deploy" / "production.py"
DEMO_TENANT = REPO / "kindgi_eval" / "demo_tenant" / "tenant.toml"
CALIBRATION = REPO / "evals" / "golden" / "calibration.jsonl"
REPLY = json.dumps(
    {
        "messages": ["The Foundation Course is $450. Would you pay upfront or in instalments?"],
        "escalate": False,
        "reason": None,
    }
)
CASE = {"text": "how much is the foundation course?", "expect": {"escalate": False}, "must_contain": ["$450"]}
KEY = "sk-bench-not-a-key"
CONCURRENCY = 4
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}


def tenants_file(root: Path, tenants: int, cases: int, down: int) -> tuple[Path, list[str]]:
    """`tenants` tenants on the fake provider and `down` on a dead host, each with one suite; the file and the dead names."""
    dead_port = production.free_port()  # nothing listens there: the agent's host refuses connections
    entries, dead = [], []
    for n in range(tenants + down):
        name = f"tenant-{n:03d}"
        home = root / name
        (home / "config").mkdir(parents=True)
        (home / "config" / "tenant.toml").write_text(
            DEMO_TENANT.read_text().replace('tenant = "demo-academy"', f'tenant = "{name}"')
        )
        suite = home / "evals" / "night"
        suite.mkdir(parents=True)
        (suite / "cases.jsonl").write_text(
            "".join(json.dumps({"id": f"case-{c:03d}", **CASE}) + "\n" for c in range(cases))
        )
        shutil.copyfile(CALIBRATION, suite / "calibration.jsonl")
        agent = 'agent_model = "openai:bench-agent"'
        if n >= tenants:
            agent = f'agent_url = "http://127.0.0.1:{dead_port}/turn"'
            dead.append(name)
        entries.append(
            f'[[tenant]]\nname = "{name}"\nhome = "{name}"\nconfig = "config"\nsuites = ["evals/night"]\n{agent}\n'
            f'judge_model = "openai:bench-judge"\nconcurrency = {CONCURRENCY}\n'
        )
    path = root / "tenants.toml"
    path.write_text("\n".join(entries))
    return path, dead


def down_statuses(env: dict[str, str], dead: list[str]) -> str:
    """How the cases of the tenants whose agent is down ended, from the store."""
    names = ", ".join(f"'{name}.night'" for name in dead)
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "kindgi-eval"),
            "sql",
            "--format",
            "csv",
            f"SELECT status, count(*) AS cases, count(error) AS with_error FROM statuses WHERE suite IN ({names}) GROUP BY 1",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    return " ".join(done.stdout.split()) if done.returncode == 0 else done.stderr.strip()


class DaemonCpu:
    """The CPU of the daemon's processes (itself, its code servers, the run workers they spawn), sampled: each process's
    user and system time as last seen, less what it had at the first sample. A process's last half second before it
    ends is missed; what a process reaped is not counted twice."""

    def __init__(self, daemon: int):
        self.daemon = daemon
        self.first: dict[int, float] = {}
        """What each process alive at the first sample had spent by then (a process born later: nothing)."""
        self.last: dict[int, tuple[str, float]] = {}
        self.sampled = False

    def sample(self, processes: dict[int, production.Process]) -> list[production.Process]:
        """Note the CPU of the daemon's processes among `processes`; its run workers among them."""
        workers = []
        for process in processes.values():
            kind = self.kind_of(process, processes)
            if kind is None:
                continue
            if kind == RUN_WORKERS:
                workers.append(process)
            self.first.setdefault(process.pid, 0.0 if self.sampled else process.cpu_s)
            self.last[process.pid] = (kind, process.cpu_s)
        self.sampled = True
        return workers

    def kind_of(self, process: production.Process, processes: dict[int, production.Process]) -> str | None:
        if process.pid == self.daemon:
            return "daemon"
        if not production.descends_from(process, self.daemon, processes):
            return None
        if production.is_run_worker(process):
            return RUN_WORKERS
        return "daemon: code servers" if production.is_code_server(process) else "daemon: its other children"

    def spent(self) -> dict[str, float]:
        totals: dict[str, float] = defaultdict(float)
        for pid, (kind, cpu) in self.last.items():
            totals[kind] += cpu - self.first.get(pid, 0.0)
        return dict(totals)


RUN_WORKERS = "daemon: run workers (sampled)"


def watch(
    instance, daemon: DaemonCpu, expected: int, timeout: float
) -> tuple[list, list[tuple[float, int]], dict[str, int]]:
    """Poll the instance until `expected` runs have ended, sampling the daemon's processes' CPU: the run records,
    (time, runs in flight) samples, and the peak memory, RSS and PSS, of one of the run workers the daemon launched
    and of all of them at once (PSS counts a page a worker shares with the other workers, or with their code server, in
    equal parts to each process sharing it; RSS counts it whole in each)."""
    from dagster import DagsterRunStatus

    in_flight: list[tuple[float, int]] = []
    peaks = dict.fromkeys(("rss", "pss", "all rss", "all pss"), 0)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = instance.get_run_records()
        running = sum(
            1 for r in records if r.dagster_run.status in (DagsterRunStatus.STARTING, DagsterRunStatus.STARTED)
        )
        in_flight.append((time.time(), running))
        workers = daemon.sample(production.running_processes())
        for kind, sizes in (("rss", [p.rss for p in workers]), ("pss", [tree_pss_kb(p.pid) * 1024 for p in workers])):
            if sizes:
                peaks[kind] = max(peaks[kind], *sizes)
                peaks[f"all {kind}"] = max(peaks[f"all {kind}"], sum(sizes))
        if len(records) >= expected and all(r.dagster_run.status.value in TERMINAL for r in records):
            return records, in_flight, peaks
        time.sleep(0.5)
    raise SystemExit(f"error: the night did not end within {timeout:.0f} s")


def tree_cpu_s(root: int, processes: dict[int, production.Process], others: set[int]) -> float:
    """User and system CPU seconds of process `root` and its living descendants, each with the children it reaped; a
    descendant in `others` (another service's root) is counted there, not here."""
    children = defaultdict(list)
    for process in processes.values():
        if process.pid not in others:
            children[process.parent].append(process)
    total, todo = 0.0, [processes[root]] if root in processes else []
    while todo:
        process = todo.pop()
        total += process.cpu_s + process.reaped_cpu_s
        todo += children[process.pid]
    return total


def machine_cpu_s() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat: all but idle and iowait)."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(v) for v in Path("/proc/stat").read_text().split()[1:9]
    )
    return (user + nice + system + irq + softirq + steal) / production.CLOCK_TICKS


def services(state: dict, provider: int) -> dict[str, int]:
    """The night's services by name and PID but the daemon (`DaemonCpu`): the profile's, its own PostgreSQL cluster's
    postmaster where it has one, the provider and this script."""
    pids = {name: pid for name, pid in state["pids"].items() if name != "daemon"}
    if cluster := state.get("own_cluster"):
        pids["postgres"] = int((Path(cluster) / "cluster" / "postmaster.pid").read_text().split()[0])
    return {**pids, "provider": provider, "this script (polling)": os.getpid()}


def cpu_by_service(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each service's process tree, and of the machine (`machine`)."""
    processes = production.running_processes()
    roots = set(pids.values())
    return {
        **{name: tree_cpu_s(pid, processes, roots - {pid}) for name, pid in pids.items()},
        "machine": machine_cpu_s(),
    }


def cpu_lines(
    before: dict[str, float], after: dict[str, float], daemon: dict[str, float], runs: int, night: float
) -> list[str]:
    """The night's CPU by service, largest first, per run and against the machine's."""
    spent = {**{name: after[name] - before[name] for name in before}, **daemon}
    machine = spent.pop("machine")
    others = machine - sum(spent.values())
    lines = [
        f"CPU from the tick to the last run's end: the machine {machine:.0f} s of {os.cpu_count()} cores x {night:.0f} s "
        f"({machine / (os.cpu_count() * night):.0%} busy), {machine / runs:.1f} s per run"
    ]
    for name, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        lines.append(f"  {name}: {seconds:.1f} s ({seconds / machine:.0%}, {seconds / runs:.2f} s per run)")
    lines.append(f"  anything else on the machine: {others:.1f} s ({others / machine:.0%})")
    return lines


PHASES = (
    "queued",
    "worker start and code location",
    "steps: resources and inputs",
    "steps: computing",
    "steps: writing outputs",
    "steps: Dagster's events",
    "between steps",
    "run end",
)
"""Where a run's wall time goes, from the instance's event log of it, each phase between two of its events."""


def phases(events) -> tuple[dict[str, float], dict[str, tuple[float, float, float, float]]]:
    """A run's seconds per phase of `PHASES`, and each step's seconds by step key (in all, reading, computing,
    writing), from its event log.

    queued: created (enqueued) to launched (RUN_STARTING); worker start and code location: launched to the worker's
    RUN_START (the process, its imports, the code location loaded); per step, from STEP_START: to its last
    LOADED_INPUT (its resources made, the store read), then to its last STEP_OUTPUT (its own work, model calls
    included), then to its last HANDLED_OUTPUT (the store written), then to STEP_SUCCESS (the materialisations and
    checks Dagster records);
    between steps: RUN_START to the run's last STEP_SUCCESS less the steps' own time; run end: to RUN_SUCCESS."""
    first: dict[tuple[str, str | None], float] = {}
    last: dict[tuple[str, str | None], float] = {}
    for e in events:
        if e.dagster_event is None:
            continue
        key = (e.dagster_event.event_type_value, e.step_key)
        first.setdefault(key, e.timestamp)
        last[key] = e.timestamp
    steps: dict[str, tuple[float, float, float, float]] = {}
    spent = dict.fromkeys(PHASES, 0.0)
    for (kind, step), started in first.items():
        if kind != "STEP_START" or ("STEP_SUCCESS", step) not in last:
            continue
        done = last[("STEP_SUCCESS", step)]
        read = last.get(("LOADED_INPUT", step), started)
        computed = max(read, last.get(("STEP_OUTPUT", step), read))
        written = max(computed, last.get(("HANDLED_OUTPUT", step), computed))
        spent["steps: resources and inputs"] += read - started
        spent["steps: computing"] += computed - read
        spent["steps: writing outputs"] += written - computed
        spent["steps: Dagster's events"] += done - written
        steps[step] = (done - started, read - started, computed - read, written - computed)
    start = first.get(("PIPELINE_START", None))
    launched = first.get(("PIPELINE_STARTING", None))
    enqueued = first.get(("PIPELINE_ENQUEUED", None), launched)
    end = last.get(("PIPELINE_SUCCESS", None)) or last.get(("PIPELINE_FAILURE", None))
    if None in (start, launched, end):
        return {}, steps
    last_step = max((last[("STEP_SUCCESS", s)] for s in steps), default=start)
    spent["queued"] = launched - enqueued
    spent["worker start and code location"] = start - launched
    spent["between steps"] = max(0.0, last_step - start - sum(t[0] for t in steps.values()))
    spent["run end"] = end - last_step
    return spent, steps


def breakdown(instance, records) -> list[str]:
    """The median run's seconds per phase, from launch to end, and its steps, as lines to print."""
    from statistics import median

    runs = [phases(instance.all_logs(r.dagster_run.run_id)) for r in records]
    runs = [(spent, steps) for spent, steps in runs if spent]
    if not runs:
        return []
    walls = [sum(v for k, v in spent.items() if k != "queued") for spent, _ in runs]
    lines = [f"a run, launch to end, median of {len(runs)}: {median(walls):.1f} s"]
    lines += [f"  {phase}: {median(spent[phase] for spent, _ in runs):.2f} s" for phase in PHASES]
    names = sorted({s for _, steps in runs for s in steps})
    by_step = {s: [median(steps[s][i] for _, steps in runs if s in steps) for i in range(4)] for s in names}
    lines.append(
        "  each step, median s (resources and inputs / computing / writing): "
        + ", ".join(
            f"{s} {t[0]:.2f} ({t[1]:.2f} / {t[2]:.2f} / {t[3]:.2f})"
            for s, t in sorted(by_step.items(), key=lambda kv: -kv[1][0])
        )
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", type=int, default=50, help="tenants on the provider (default: %(default)s)")
    parser.add_argument("--cases", type=int, default=40, help="cases in each tenant's suite (default: %(default)s)")
    parser.add_argument("--delay", type=float, default=0.2, help="the provider's answer time, s (default: %(default)s)")
    parser.add_argument(
        "--rpm", type=int, default=3000, help="the provider's requests per minute (default: %(default)s)"
    )
    parser.add_argument(
        "--max-concurrent-runs", type=int, default=8, help="runs at once on the machine (default: %(default)s)"
    )
    parser.add_argument("--down", type=int, default=1, help="tenants whose agent's host is down (default: %(default)s)")
    parser.add_argument(
        "--timeout", type=float, default=3600, help="give up after this many seconds (default: %(default)s)"
    )
    parser.add_argument(
        "--tick-after",
        type=float,
        default=20,
        help="the schedule ticks at the first whole minute this many seconds after the daemon starts: more on a "
        "machine busy enough that the profile takes longer to start (default: %(default)s)",
    )
    args = parser.parse_args()

    server, base_url = chat_server.start(args.delay, REPLY, rpm=args.rpm)
    root = Path(tempfile.mkdtemp(prefix="kindgi-nightly-"))
    folder = root / "profile"
    tenants, dead = tenants_file(root, args.tenants, args.cases, args.down)
    config, openai = with_openai_rpm(root, args.rpm // 2)  # half the provider's: docs/running.md says why
    parallel = openai["max_parallel_requests"]
    env = {
        **os.environ,
        "KINDGI_TENANTS": str(tenants),
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_MASTER_KEY": "sk-nightly-master-key",
    }
    try:
        subprocess.run(
            [
                sys.executable,
                str(PROFILE),
                "start",
                "--dir",
                str(folder),
                "--tick-once-after",
                str(args.tick_after),
                "--max-concurrent-runs",
                str(args.max_concurrent_runs),
                "--gateway-config",
                str(config),
            ],
            env=env,
            check=True,
        )
        state = json.loads((folder / "profile.json").read_text())
        tick = datetime.fromisoformat(state["tick"]).timestamp()
        os.environ.update(production.read_env(folder))
        import dagster as dg

        instance = dg.DagsterInstance.get()
        allowed = instance.get_concurrency_config().run_queue_config.max_concurrent_runs
        print(
            f"{args.tenants} tenants of {args.cases} cases (+{args.down} with the agent down); provider at {args.delay * 1000:.0f} ms, "
            f"{args.rpm} requests per minute; gateway: {args.rpm // 2} per minute; queue: max_concurrent_runs {allowed}, "
            "one per tenant; waiting for the tick",
            flush=True,
        )
        watched = services(state, server.pid)
        while time.time() < tick:  # the services idle until the tick; their start-up is not the night's
            time.sleep(0.2)
        cpu_before = cpu_by_service(watched)
        daemon = DaemonCpu(state["pids"]["daemon"])
        records, in_flight, peaks = watch(instance, daemon, args.tenants + args.down, args.timeout)
        cpu_after = cpu_by_service(watched)
        gateway_peak = peak_rss(state["pids"]["gateway"])
        down = down_statuses({**env, **production.read_env(folder)}, dead) if dead else "none"
        seen = chat_server.stats(base_url)
        spent = breakdown(instance, records)  # from the instance's event log, before the profile drops its database
    finally:
        subprocess.run([sys.executable, str(PROFILE), "stop", "--dir", str(folder)], env=env)
        server.kill()
        shutil.rmtree(root, ignore_errors=True)

    ends = {r.dagster_run.tags["kindgi/tenant"]: r.end_time for r in records}
    live = [r for r in records if r.dagster_run.tags["kindgi/tenant"] not in dead]
    slowest = max(r.end_time - r.start_time for r in records if r.start_time and r.end_time)
    night = max(e for e in ends.values() if e) - tick
    waves = math.ceil(len(records) / allowed)
    ideal = waves * slowest
    statuses = Counter(r.dagster_run.status.value for r in live)
    keys = Counter(r.dagster_run.tags.get("dagster/run_key") for r in records)
    within = seen["refused_429"] == 0 and seen["busiest_minute"] <= args.rpm and seen["peak"] <= parallel
    print(f"night: {night:.1f} s from the tick to the last run's end; {len(live) / night * 3600:.0f} tenants per hour")
    print(
        f"queue allows: {waves} waves of {allowed} x the slowest run {slowest:.1f} s = {ideal:.1f} s; "
        f"ratio {night / ideal:.2f}"
    )
    print(
        f"runs: {dict(statuses)}; down tenants' runs: {[r.dagster_run.status.value for r in records if r.dagster_run.tags['kindgi/tenant'] in dead]}, "
        f"their cases (status, cases, with an error): {down}; "
        f"lost {args.tenants + args.down - len(records)}; started twice {sum(n - 1 for n in keys.values() if n > 1)}"
    )
    print(
        f"runs in flight: peak {max(n for _, n in in_flight)}; over time (s after the tick: runs) "
        + ", ".join(f"{t - tick:.0f}:{n}" for t, n in in_flight[:: max(1, len(in_flight) // 20)] if t >= tick)
    )
    print(
        f"provider: {seen['requests']} requests answered, {seen['refused_429']} refused 429; peak in flight {seen['peak']} "
        f"(the gateway's bound {parallel}); busiest second {seen['busiest_second']}, busiest 60 s {seen['busiest_minute']} "
        f"(its limit {args.rpm}){'' if within else ' EXCEEDED'}"
    )
    print("\n".join(spent))
    print("\n".join(cpu_lines(cpu_before, cpu_after, daemon.spent(), len(records), night)))
    print(
        f"memory: peak of one run worker {peaks['rss'] / 2**20:.0f} MB RSS, {peaks['pss'] / 2**20:.0f} MB PSS; of all run workers "
        f"at once {peaks['all rss'] / 2**20:.0f} MB RSS, {peaks['all pss'] / 2**20:.0f} MB PSS; the gateway's peak {gateway_peak / 2**20:.0f} MB"
    )
    return 0 if within and len(records) == args.tenants + args.down and all(n == 1 for n in keys.values()) else 1


def peak_rss(pid: int) -> int:
    """The highest resident memory process `pid` has had, bytes (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


if __name__ == "__main__":
    sys.exit(main())
