"""`kindgi-eval`: run, validate and query; a thin shell over the functions the assets call."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import click

from kindgi_eval.errors import InputError, Problem

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
        click.option("--model-timeout-s", help="Seconds one judge call may take (EVAL_MODEL_TIMEOUT_S)."),
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
    from kindgi_eval.suite_files import load_suite, suite_key
    from kindgi_eval.tenant_files import load_tenant

    settings = resolve_settings(flags)
    if mock:
        settings = settings.model_copy(update={"agent_model": MOCK_AGENT, "agent_url": None})
    loaded = load_tenant(settings.config_dir)
    load_suite(settings.eval_dir)
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


def _check_json_path(json_path: str | None) -> None:
    if json_path and not Path(json_path).absolute().parent.is_dir():
        raise InputError([Problem(json_path, None, None, "its folder does not exist. Create it or pick another --json path.")])


def _report(home: Path, key: str, run_id: str, json_path: str | None) -> int:
    """Print the stored run and write its JSON; the exit status its statuses call for."""
    from kindgi_eval.report import render, summary_json
    from kindgi_eval.statuses import FAILING
    from kindgi_eval.store import read_rows, store_root

    root = store_root(home)
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
@_input_errors
def validate(dirs: tuple[str, ...]) -> None:
    """Parse suites and calibration sets; report every problem, exit 2 if any."""
    from kindgi_eval.settings import resolve_settings
    from kindgi_eval.suite_files import load_suite

    folders = dirs or (resolve_settings({}).eval_dir,)
    problems: list[Problem] = []
    for folder in folders:
        try:
            suite = load_suite(folder)
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
    from kindgi_eval.views import connect

    with connect(store_root()) as con:
        try:
            relation = con.sql(query)
        except duckdb.Error as e:
            raise InputError([Problem("query", None, None, str(e).splitlines()[0])]) from None
        if relation is None:
            return
        if fmt == "json":
            rows = [dict(zip(relation.columns, r, strict=True)) for r in relation.fetchall()]
            click.echo(json.dumps(rows, indent=2, default=str, ensure_ascii=False))
            return
        frame = relation.df()
        click.echo(frame.to_csv(index=False) if fmt == "csv" else frame.to_string(index=False), nl=fmt != "csv")
