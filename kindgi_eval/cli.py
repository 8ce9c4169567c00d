"""`kindgi-eval`: run, validate and query; a thin shell over the functions the assets call."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kindgi_eval.errors import InputError, Problem

if TYPE_CHECKING:
    from kindgi_eval.store import StorePath

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2


def _input_errors(command: Callable) -> Callable:
    """Bad input prints one line per problem, no traceback, and exits 2."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except InputError as e:
            for problem in e.problems:
                click.echo(f"error: {problem}", err=True)
            sys.exit(EXIT_INPUT)

    return wrapper


def _settings_options(command: Callable) -> Callable:
    options = [
        click.option("--eval-dir", help="Suite folder (EVAL_DIR); default evals/golden."),
        click.option("--config-dir", help="Tenant configuration folder (CONFIG_DIR); default the demo tenant."),
        click.option("--agent-model", help="The agent as provider:model (AGENT_MODEL)."),
        click.option("--agent-url", help="An agent served over HTTP (AGENT_URL); wins over --agent-model."),
        click.option("--judge-model", help="The judge as provider:model (EVAL_JUDGE_MODEL); unset: no judge."),
        click.option("--max-latency-ms", help="The agent's deadline per case (EVAL_MAX_LATENCY_MS)."),
        click.option("--concurrency", help="Model calls in flight at once (EVAL_CONCURRENCY)."),
        click.option("--model-timeout-s", help="Seconds one model call may take, retries included (EVAL_MODEL_TIMEOUT_S)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group()
def main() -> None:
    """Evaluate a tenant's conversational sales agent against its suite."""


@main.command()
@click.option("--mock", is_flag=True, help="Use the offline demo agent (mock:agent).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Also write the summary as JSON here.")
@_settings_options
@_input_errors
def run(mock: bool, json_path: str | None, **flags: str | None) -> None:
    """Evaluate one suite: print every reply, each failure, and the summary."""
    from kindgi_eval.agents import make_agent
    from kindgi_eval.settings import MOCK_AGENT, resolve_settings
    from kindgi_eval.suite_files import suite_key
    from kindgi_eval.tenant_files import load_tenant

    settings = resolve_settings(flags)
    if mock:
        settings = settings.model_copy(update={"agent_model": MOCK_AGENT, "agent_url": None})
    loaded = load_tenant(settings.config_dir)
    _checked_suite(settings.eval_dir, loaded)
    make_agent(settings, loaded.tenant)
    _check_json_path(json_path)
    if settings.judge_model and settings.judge_model == settings.agent_model:
        click.echo(f"warning: the judge is the agent's own model ({settings.judge_model}); it may favour its own replies.", err=True)

    from kindgi_eval.runs import RunFailed, open_instance, run_chain
    from kindgi_eval.store import runtime_home

    home = runtime_home()
    key = suite_key(loaded.tenant.tenant, settings.eval_dir)
    try:
        run_id = run_chain(open_instance(home), home, settings, key)
    except RunFailed as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_FAILED)
    sys.exit(_report(home, key, run_id, json_path))


@main.command()
@click.option("--from", "source", required=True, metavar="RUN_ID", help="The run whose stored replies are re-judged.")
@click.option("--judge-model", help="The judge as provider:model (EVAL_JUDGE_MODEL).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Also write the summary as JSON here.")
@click.option("--eval-dir", help="Where calibration.jsonl is read now; default the source run's suite folder.")
@click.option("--config-dir", help="Tenant configuration folder (CONFIG_DIR); default the demo tenant.")
@click.option("--concurrency", help="Model calls in flight at once (EVAL_CONCURRENCY).")
@click.option("--model-timeout-s", help="Seconds one model call may take, retries included (EVAL_MODEL_TIMEOUT_S).")
@_input_errors
def replay(source: str, json_path: str | None, **flags: str | None) -> None:
    """Re-judge the stored replies of RUN_ID: no agent call, a new run id, calibration as the file is now."""
    from kindgi_eval.settings import resolve_settings
    from kindgi_eval.store import read_rows, read_table, run_partition, runtime_home, store_root
    from kindgi_eval.tenant_files import load_tenant

    home = runtime_home()
    root = store_root(home)
    key = run_partition(root, source)
    if key is None:
        raise InputError([Problem("--from", None, None, f"no run {source!r} in the store at {root}. List runs with: kindgi-eval sql \"SELECT run_id, suite, finished_at FROM runs\"")])
    missing = [a for a in ("suite", "agent_replies", "outcomes") if read_table(root, a, key, source) is None]
    if missing:
        raise InputError([Problem("--from", None, None, f"run {source} has no stored {', '.join(missing)} (pruned?), so there are no replies to re-judge.")])
    (original,) = read_rows(root, "run_summary", key, source)
    settings = resolve_settings({"eval_dir": original.eval_dir, **flags, "agent_model": None, "agent_url": None})
    if settings.judge_model is None:
        raise InputError([Problem("--judge-model", None, None, "a replay needs a judge. Pass --judge-model or set EVAL_JUDGE_MODEL.")])
    _checked_suite(settings.eval_dir, load_tenant(settings.config_dir))
    _check_json_path(json_path)

    from kindgi_eval.runs import RunFailed, open_instance, replay_chain

    try:
        run_id = replay_chain(open_instance(home), home, settings, key, source)
    except RunFailed as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_FAILED)
    sys.exit(_report(home, key, run_id, json_path))


def _checked_suite(eval_dir: str, loaded):
    """The suite, parsed and checked against the tenant it runs for; InputError lists every problem."""
    from kindgi_eval.suite_files import load_suite, problems_against_tenant

    suite = load_suite(eval_dir)
    tenant = loaded.tenant
    courses = [c.id for c in tenant.courses]
    problems = problems_against_tenant(suite, tenant.stage_names(), courses, f"the tenant configuration {loaded.config_dir}")
    if problems:
        raise InputError(problems)
    return suite


def _check_json_path(json_path: str | None) -> None:
    if json_path and not Path(json_path).absolute().parent.is_dir():
        raise InputError([Problem(json_path, None, None, "its folder does not exist. Create it or pick another --json path.")])


def _report(home: Path, key: str, run_id: str, json_path: str | None) -> int:
    """Print the stored run and write its JSON; the exit status its statuses call for."""
    from kindgi_eval.report import render, summary_json
    from kindgi_eval.statuses import FAILING
    from kindgi_eval.store import read_rows, store_root

    from kindgi_eval.views import export_database

    root = store_root(home)
    export_database(root)
    (run,) = read_rows(root, "run_summary", key, run_id)
    statuses = read_rows(root, "statuses", key, run_id)
    calibration = read_rows(root, "calibration", key, run_id)
    click.echo(render(run, statuses, calibration, key), nl=False)
    click.echo(f"run {run_id} stored under {root}", err=True)
    if json_path:
        document = json.dumps(summary_json(run_id, run, statuses, calibration), indent=2, ensure_ascii=False)
        tmp = Path(json_path).with_name(f".{Path(json_path).name}.tmp")
        tmp.write_text(document + "\n", encoding="utf-8")
        os.replace(tmp, json_path)
    return EXIT_FAILED if any(s.status in FAILING for s in statuses) else EXIT_OK


@main.command()
@click.argument("dirs", nargs=-1)
@click.option("--config-dir", help="Tenant configuration the cases must match (CONFIG_DIR); default the demo tenant.")
@_input_errors
def validate(dirs: tuple[str, ...], config_dir: str | None) -> None:
    """Parse suites and calibration sets, and check cases against the tenant; report every problem, exit 2 if any."""
    from kindgi_eval.settings import resolve_settings
    from kindgi_eval.tenant_files import load_tenant

    settings = resolve_settings({"config_dir": config_dir})
    loaded = load_tenant(settings.config_dir)
    folders = dirs or (settings.eval_dir,)
    problems: list[Problem] = []
    for folder in folders:
        try:
            suite = _checked_suite(folder, loaded)
        except InputError as e:
            problems += e.problems
            continue
        click.echo(f"ok: {folder}: {len(suite.cases)} cases, {len(suite.calibration)} calibration items")
    if problems:
        raise InputError(problems)


@main.command()
@click.argument("query")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@_input_errors
def sql(query: str, fmt: str) -> None:
    """Query the store with DuckDB: views runs, cases, replies, outcomes, judge_samples, calibration, statuses."""
    import duckdb

    from kindgi_eval.store import store_root
    from kindgi_eval.views import connect, format_rows

    with connect(store_root(), query) as con:
        try:
            relation = con.sql(query)
        except duckdb.Error as e:
            raise InputError([Problem("query", None, None, str(e).splitlines()[0])]) from None
        if relation is None:
            return
        columns, rows = relation.columns, relation.fetchall()
        click.echo(format_rows(columns, rows, fmt), nl=False)

@main.command()
@click.argument("run_a")
@click.argument("run_b")
@click.option("--json", "as_json", is_flag=True, help="Print the difference as JSON.")
@_input_errors
def diff(run_a: str, run_b: str, as_json: bool) -> None:
    """What changed from RUN_A to RUN_B: statuses, criteria verdicts, calibration and cost."""
    from kindgi_eval.diff import diff_runs, render_diff
    from kindgi_eval.store import store_root

    root = store_root()
    a, b = _stored_run(root, run_a, "RUN_A"), _stored_run(root, run_b, "RUN_B")
    difference = diff_runs(a, b)
    if as_json:
        click.echo(difference.model_dump_json(indent=2))
    else:
        click.echo(render_diff(difference, a.run, b.run), nl=False)


def _stored_run(root: StorePath, run_id: str, name: str):
    from kindgi_eval.diff import StoredRun
    from kindgi_eval.store import read_rows, run_partition

    key = run_partition(root, run_id)
    if key is None:
        raise InputError([Problem(name, None, None, f"no run {run_id!r} in the store at {root}.")])
    (run,) = read_rows(root, "run_summary", key, run_id)
    return StoredRun(
        run_id=run_id,
        run=run,
        statuses=read_rows(root, "statuses", key, run_id),
        calibration=read_rows(root, "calibration", key, run_id),
        replies=read_rows(root, "agent_replies", key, run.replies_from),
    )


@main.command()
@click.option("--keep-days", type=click.IntRange(min=0), required=True, help="Keep runs that started this many days ago or later.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed, and remove nothing.")
@_input_errors
def prune(keep_days: int, dry_run: bool) -> None:
    """Remove runs older than --keep-days from the store and the Dagster instance; replay sources stay."""
    from datetime import UTC, datetime

    from kindgi_eval.prune import plan_prune, remove_runs, stored_runs
    from kindgi_eval.store import runtime_home, store_root
    from kindgi_eval.views import export_database

    home = runtime_home()
    root = store_root(home)
    plan = plan_prune(stored_runs(root), keep_days, datetime.now(UTC).date())
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {len(plan.removed)} runs; kept {len(plan.spared)} older runs whose replies a kept replay uses")
    if dry_run or not plan.removed:
        return
    from kindgi_eval.runs import open_instance

    remove_runs(root, plan.removed)
    instance = open_instance(home)
    for run_id in plan.removed:
        if instance.has_run(run_id):
            instance.delete_run(run_id)
    export_database(root)


@main.command()
@click.option("--before", metavar="YYYY-MM", help="Compact the months before this one; default the current month.")
@_input_errors
def compact(before: str | None) -> None:
    """Merge each closed month's run files into one file per table: fast queries over long histories."""
    import re
    from datetime import UTC, datetime

    from kindgi_eval.compaction import compact as compact_store
    from kindgi_eval.store import store_root
    from kindgi_eval.views import export_database

    month = before or datetime.now(UTC).strftime("%Y-%m")
    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month):
        raise InputError([Problem("--before", None, None, f"{month!r} is not a month; write YYYY-MM, e.g. 2026-11.")])
    root = store_root()
    done = compact_store(root, month)
    export_database(root)
    click.echo(f"compacted {done.runs} runs of {len(done.months)} months ({', '.join(done.months) or 'none'})")
