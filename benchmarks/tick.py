"""The nightly schedule's tick beside one tenant's costly stored version: what the tick costs with many tenants and
one accuracy suite of many costly patterns, against the deep check of that version (its kind's check, RE2 compiling
every pattern, and its folder written out), which the tick leaves to that tenant's own run.

A tick must stay well inside Dagster's 60 s deadline whatever one tenant publishes; the deep check grows with the
version. Prints both, their ratio and the process's peak memory.

    .venv/bin/python benchmarks/tick.py [--tenants 50] [--patterns 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

COSTLY = r"[\pL\pN]{%d}"
"""A pattern RE2 takes a tenth of a second or more to compile: a class of every letter and digit, repeated."""


def tenant_tree(root: Path, name: str) -> dict:
    """`<root>/<name>/` holding the demo tenant's configuration renamed and the golden suite; its tenants-file entry."""
    from kindgi_eval.inputs.golden import GOLDEN_DIR
    from kindgi_eval.inputs.tenant_file import DEMO_CONFIG_DIR

    home = root / name
    (home / "config").mkdir(parents=True)
    toml = (DEMO_CONFIG_DIR / "tenant.toml").read_text().replace('tenant = "demo-academy"', f'tenant = "{name}"')
    (home / "config" / "tenant.toml").write_text(toml)
    shutil.copytree(GOLDEN_DIR, home / "evals" / "golden")
    return {"name": name, "home": name, "config": "config", "suites": ["evals/golden"], "agent_model": "mock:agent"}


def write_tenants(path: Path, entries: list[dict]) -> None:
    path.write_text(
        "\n".join("[[tenant]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in e.items()) for e in entries)
    )


def publish_costly(home: Path, tenant: str, patterns: int) -> None:
    """An accuracy suite of `tenant` whose every item is its own costly pattern, stored as the registry stores it."""
    from kindgi_eval.registry import EvalSuite, database_url, open_store

    cases = [{"id": f"p{n}", "input": "the code?", "expectedOutput": COSTLY % (300 + n)} for n in range(patterns)]
    suite = EvalSuite(
        id=f"{tenant}.codes",
        tenantId=tenant,
        version="1.0.0",
        kind="accuracy",
        description="",
        spec={"cases": cases, "grader": {"adapterId": "regex"}},
    )
    store = open_store(database_url(home))
    try:
        store.publish(tenant, store.issue_token(tenant, "bench").id, suite)
    finally:
        store.close()


def deep_check(home: Path, tenant: str) -> float:
    """Seconds to check the stored version by its kind and write it out: what a tick once did for it, and what its
    run does now. A version stored before today's bounds on patterns is refused by that check (its run fails naming
    each pattern), which still costs the check's time."""
    from kindgi_eval.kinds import consumers
    from kindgi_eval.registry import database_url, materialize, open_store
    from kindgi_eval.rules import InputError

    store = open_store(database_url(home))
    try:
        stored = store.latest(tenant, f"{tenant}.codes")
        started = time.perf_counter()
        try:
            materialize(stored, tenant, home, consumers(), store)
        except InputError:
            pass
        return time.perf_counter() - started
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", type=int, default=50, help="tenants with a suite folder each (default 50)")
    parser.add_argument(
        "--patterns", type=int, default=100, help="costly patterns in the one registry suite (default 100)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="ticks timed (default 3)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="kindgi-tick-") as scratch:
        root = Path(scratch)
        home = root / "kindgi-home"
        os.environ.update(
            KINDGI_HOME=str(home), DAGSTER_HOME=str(home / "dagster"), KINDGI_TENANTS=str(root / "tenants.toml")
        )
        for var in ("KINDGI_REGISTRY_URL", "KINDGI_REGISTRY_DB", "KINDGI_GATEWAY_URL"):
            os.environ.pop(var, None)

        import dagster as dg

        from kindgi_eval.defs.runs import open_instance
        from kindgi_eval.defs.schedules import nightly_schedule

        entries = [tenant_tree(root, f"tenant-{n:03d}") for n in range(args.tenants)]
        heavy = {**tenant_tree(root, "heavy"), "suites": None, "registry": "heavy.codes"}
        write_tenants(root / "tenants.toml", [*entries, {k: v for k, v in heavy.items() if v is not None}])
        publish_costly(home, "heavy", args.patterns)

        instance = open_instance(home)
        schedule = nightly_schedule("UTC")
        ticks = []
        for n in range(args.repeat):
            context = dg.build_schedule_context(
                instance=instance, scheduled_execution_time=datetime(2026, 12, 1 + n, 2, tzinfo=UTC)
            )
            started = time.perf_counter()
            requests = list(schedule(context))
            ticks.append(time.perf_counter() - started)
        assert len(requests) == args.tenants + 1, f"{len(requests)} run requests"
        checked = deep_check(home, "heavy")

    tick = statistics.median(ticks)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"tenants {args.tenants + 1} (one a registry suite of {args.patterns} costly patterns), ticks timed {args.repeat}"
    )
    print(
        f"tick (median): {tick:.3f} s for {args.tenants + 1} run requests; slowest {max(ticks):.3f} s; Dagster's deadline 60 s"
    )
    print(f"deep check of the costly version (its run's, no longer the tick's): {checked:.2f} s")
    print(f"ratio deep check / tick: {checked / tick:.0f}x")
    print(f"peak memory of this process: {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
