"""`kindgi-eval`: run, validate and query; a thin shell over the functions the assets call."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from kindgi_eval.spec import InputError, Problem

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


def _setting_option(field: str, default_shown: str | None = None) -> Callable:
    """The option of one run setting, with its type, range, variable and default from the settings table (or, where
    a command resolves it otherwise, `default_shown`, which then says where its value comes from)."""
    from kindgi_eval.inputs import SETTING

    s = SETTING[field]
    types = {
        "int": click.IntRange(s.low, s.high),
        "float": click.FloatRange(min=s.low, min_open=s.low_open),
        "folder": click.Path(file_okay=False),
        "model": str,
        "url": str,
    }
    metavars = {"model": "PROVIDER:MODEL", "url": "URL"}
    default = "unset" if s.default is None else f"{s.default:g}" if isinstance(s.default, float) else str(s.default)
    where = default_shown or f"env: {s.var}; default: {default}"
    return click.option(
        s.flag, type=types[s.kind], metavar=metavars.get(s.kind), help=f"{s.help} [{where}]"
    )


def _settings_options(*fields: str, defaults: dict[str, str] | None = None) -> Callable:
    """The options of the named run settings, in the settings table's order; `defaults` names the default a command
    shows where it is not the table's."""
    from kindgi_eval.inputs import SETTINGS

    def decorate(command: Callable) -> Callable:
        for s in reversed(SETTINGS):
            if s.field in fields:
                command = _setting_option(s.field, (defaults or {}).get(s.field))(command)
        return command

    return decorate


RUN_SETTINGS = (
    "eval_dir", "config_dir", "agent_model", "agent_url", "judge_model", "max_latency_ms", "concurrency", "model_timeout_s",
    "handler_timeout_s", "handler_run_s", "handler_memory_mib",
)
REPLAY_SETTINGS = ("eval_dir", "config_dir", "judge_model", "concurrency", "model_timeout_s")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.version_option(package_name="kindgi-eval", prog_name="kindgi-eval")
def main() -> None:
    """Evaluate a tenant's conversational sales agent against its suite.

    Each flag overrides its environment variable, which overrides the default.
    """


@main.command(short_help="Evaluate one suite against the agent.")
@click.option("--mock", is_flag=True, help="Use the offline demo agent (mock:agent), whatever AGENT_URL or AGENT_MODEL say.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Also write the summary as JSON here.")
@click.option(
    "--resume",
    "resume",
    metavar="RUN_ID",
    help="Finish a killed run (its id or a unique prefix) with the settings it started with, asking the agent and the "
    "judge only what it had not recorded. A run setting given beside it must equal the run's (--concurrency may differ).",
)
@click.option(
    "--suite",
    "registered",
    metavar="ID[@VERSION]",
    help="Evaluate a suite of the suite registry, as the tenant of the configuration: that version, else the latest "
    "now. Instead of --eval-dir.",
)
@_settings_options(*RUN_SETTINGS)
@_input_errors
def run(mock: bool, json_path: str | None, resume: str | None, registered: str | None, **flags: object) -> None:
    """Evaluate one suite: print every reply, each failure, and the summary.

    Exit status: 0 nothing failed, 1 a case failed or judged-fail, 2 bad input.

    \b
    Examples:
      kindgi-eval run --mock --judge-model mock:judge --json out/summary.json
      kindgi-eval run --resume 3f9c2a1e
      kindgi-eval run --suite acme.pricing@1.4.0 --config-dir ../acme/config --agent-model openai:gpt-4o-mini
    """
    from kindgi_eval.agents import make_agent, make_judge, make_sandbox
    from kindgi_eval.inputs import load_checked_suite, load_tenant, resolve_settings, suite_key

    if mock and (flags.get("agent_model") or flags.get("agent_url")):
        raise InputError([Problem("--mock", None, None, "names the offline demo agent, and --agent-model or --agent-url names another. Pass one of them.")])
    if registered and (flags.get("eval_dir") or resume):
        raise InputError([Problem("--suite", None, None, "names the suite, and so does --eval-dir or --resume. Pass one of them.")])
    if resume is not None:
        _resume_run(resume, mock, json_path, flags)
    settings = resolve_settings(flags, mock=mock)
    _start_model_worker(settings)
    loaded = load_tenant(settings.config_dir)
    if registered:
        settings = settings.model_copy(update={"eval_dir": str(_registered_folder(registered, loaded.tenant.tenant))})
    suite = load_checked_suite(settings.eval_dir, loaded)
    if suite.kind == "custom":
        make_sandbox(settings)  # a machine that cannot sandbox the handler is exit 2 before the agent is asked anything
    baseline = _baseline(suite, loaded.tenant.tenant) if suite.kind == "regression" else None
    variants = None
    if suite.kind == "pairwise":
        from kindgi_eval.inputs import pairwise_variants, variant_settings

        variants = pairwise_variants(suite.registered, loaded.tenant.tenant)
        if mock:  # --mock replaces every agent the run would call, the variants too
            click.echo(f"--mock: variants A ({variants[0]}) and B ({variants[1]}) are both answered by the offline demo "
                       f"agent {settings.agent_model}.", err=True)
            variants = (settings.agent_model, settings.agent_model)
        for variant in variants:
            make_agent(variant_settings(settings, variant), loaded.tenant, check_only=True)

    from kindgi_eval.defs import RunFailed, open_instance, resolved_tags, run_chain  # while the worker imports litellm
    from kindgi_eval.store import runtime_home

    make_agent(settings, loaded.tenant, check_only=True)  # the run builds its own, once litellm is imported
    make_judge(settings, check_only=True)
    _check_json_path(json_path)
    for agent in dict.fromkeys(variants or (settings.agent_model,)):  # the agents actually evaluated, each once
        if settings.judge_model and settings.judge_model == agent:
            click.echo(f"warning: the judge is the agent's own model ({settings.judge_model}); it may favour its own replies.", err=True)

    home = runtime_home()
    key = suite_key(loaded.tenant.tenant, settings.eval_dir)
    instance = open_instance(home)
    try:
        run_id = run_chain(instance, home, settings, key, tags=resolved_tags(baseline, variants))  # resolved once, here
    except RunFailed as e:
        click.echo(f"error: {e}", err=True)
        _exit(EXIT_FAILED, instance)
    _exit(_report(home, key, run_id, json_path), instance)


def _start_model_worker(settings) -> None:
    """When the settings name a litellm model, start the process that imports litellm and makes the model calls
    (`llm.start_worker`), so that its import runs beside Dagster's instead of before it."""
    from kindgi_eval.llm import start_worker
    from kindgi_eval.spec import parse_model

    names = (settings.judge_model, None if settings.agent_url else settings.agent_model)
    try:
        if any(name and not parse_model(name).is_mock for name in names):
            start_worker()
    except ValueError:
        pass  # a malformed name: make_agent or make_judge says what is wrong, and nothing is run


def _exit(code: int, instance) -> NoReturn:
    """End a run's process with `code` now that it has run: its Dagster instance closed and the output flushed, what
    `sys.exit` would add is the interpreter's teardown of litellm's and Dagster's modules, seconds that write nothing.
    (litellm's exit hooks flush logging callbacks, which kindgi-eval sets none of, and close its HTTP clients.)"""
    from kindgi_eval.llm import stop_worker

    stop_worker()
    instance.dispose()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _baseline(suite, tenant: str) -> str:
    """The run a regression suite is compared with; InputError (exit 2, nothing run) when it is not stored or
    evaluated other cases."""
    from kindgi_eval.steps import resolve_baseline
    from kindgi_eval.store import store_root

    return resolve_baseline(store_root(), tenant, suite.registered, [c.id for c in suite.cases])


def _registered_folder(named: str, tenant: str) -> Path:
    """The suite folder of `ID[@VERSION]` of the registry, as `tenant`'s, written out if new."""
    from kindgi_eval.registry import database_url, materialize, open_store, resolve_version
    from kindgi_eval.store import runtime_home

    suite_id, _, version = named.partition("@")
    home = runtime_home()
    store = open_store(database_url(home))
    try:
        return materialize(resolve_version(store, tenant, suite_id, version or None, "--suite"), tenant, home)
    finally:
        store.close()


def _resume_run(prefix: str, mock: bool, json_path: str | None, flags: dict[str, object]) -> NoReturn:
    """`run --resume`: check that the killed run may be resumed, run what it had not finished, print the report, exit.

    InputError (exit 2, nothing run) when no killed run has that id, when it completed or was finished already, when
    it is still running, or when its suite, tenant configuration or settings changed since it recorded its rows."""
    from kindgi_eval.agents import make_agent, make_judge
    from kindgi_eval.inputs import changes_since, load_checked_suite, load_tenant, manifest_of, resumed_settings, suite_key
    from kindgi_eval.store import claim, read_manifest, runtime_home, store_root

    home = runtime_home()
    root = store_root(home)
    area, killed = _killed_run(root, prefix)
    recorded = read_manifest(area)
    if recorded is None:
        raise InputError([Problem("--resume", None, None, f"run {killed} recorded nothing before it stopped, so nothing of it can be reused. "
                                  "Start a new run instead.")])
    _refuse_finished(root, area, recorded)
    settings = resumed_settings(recorded, flags, mock=mock)
    _start_model_worker(settings)
    loaded = load_tenant(settings.config_dir)
    suite = load_checked_suite(settings.eval_dir, loaded)
    key = suite_key(loaded.tenant.tenant, settings.eval_dir)
    now = manifest_of(killed, key, settings, suite_hash=suite.hash, config_hash=loaded.hash, replies_from=recorded.replies_from)
    problems = changes_since(recorded, now)
    if problems:
        raise InputError(problems)
    if recorded.replies_from is None:
        make_agent(settings, loaded.tenant, check_only=True)  # the run builds its own, once litellm is imported
    make_judge(settings, check_only=True)
    _check_json_path(json_path)
    if not claim(area):  # held until this process ends: the killed run cannot be resumed twice at once either
        raise InputError([Problem("--resume", None, None, f"run {killed} is still running: a process holds {area}/lock. "
                                  "Wait for it to end (or stop it), then resume it.")])

    from kindgi_eval.defs import RunFailed, open_instance, resume_chain

    click.echo(f"resuming run {killed}", err=True)
    instance = open_instance(home)
    try:
        run_id = resume_chain(instance, home, settings, key, killed, recorded.replies_from)
    except RunFailed as e:
        click.echo(f"error: {e}", err=True)
        _exit(EXIT_FAILED, instance)
    _exit(_report(home, key, run_id, json_path), instance)


def _killed_run(root: StorePath, prefix: str):
    """(its recordings area, its id) of the killed run a run id or unique prefix names; InputError otherwise."""
    from kindgi_eval.store import area_run_id, find_run_areas, run_keys

    areas = find_run_areas(root, prefix) if prefix else []
    exact = [a for a in areas if area_run_id(a) == prefix]
    areas = exact or areas
    if len(areas) == 1:
        return areas[0], area_run_id(areas[0])
    if len(areas) > 1:
        listed = "; ".join(area_run_id(a) for a in areas)
        raise InputError([Problem("--resume", None, None, f"{prefix!r} begins {len(areas)} killed runs' ids: {listed}. Give more characters of the one you mean.")])
    if prefix and any(k.run_id.startswith(prefix) for k in run_keys(root)):
        raise InputError([Problem("--resume", None, None, f"run {prefix!r} completed: there is nothing to resume.")])
    raise InputError([Problem("--resume", None, None, f"no killed run {prefix!r} in the store at {root}. A run killed before it "
                              "asked the agent recorded nothing to resume: start it again with kindgi-eval run.")])


def _refuse_finished(root: StorePath, area, recorded) -> None:
    """InputError when the killed run was finished already, by a resume that completed or one killed in turn."""
    from kindgi_eval.store import area_run_id, connect, find_run_areas, read_manifest, run_keys

    killed = recorded.run_id
    if any(k.run_id == killed for k in run_keys(root, recorded.partition)):
        raise InputError([Problem("--resume", None, None, f"run {killed} completed: there is nothing to resume.")])
    query = "SELECT run_id FROM runs WHERE resumed_from = ? ORDER BY started_at"
    with connect(root, query) as con:
        done = [row[0] for row in con.execute(query, [killed]).fetchall()]
    if done:
        raise InputError([Problem("--resume", None, None, f"run {killed} was finished already by run {done[0]}: there is nothing to resume.")])
    later = [area_run_id(a) for a in find_run_areas(root, "", recorded.partition) if a != area and (m := read_manifest(a)) and m.resumes == killed]
    if later:
        raise InputError([Problem("--resume", None, None, f"run {killed} was resumed by run {later[-1]}, which stopped too: "
                                  f"resume that one instead (kindgi-eval run --resume {later[-1]}), so nothing it recorded is asked again.")])


@main.command(short_help="Re-judge a run's stored replies with another judge.")
@click.option("--from", "source", required=True, metavar="RUN_ID", help="The run whose stored replies are re-judged: its id, or a prefix naming one run.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Also write the summary as JSON here.")
@_settings_options(*REPLAY_SETTINGS, defaults={"eval_dir": "default: the source run's suite folder; EVAL_DIR is not read"})
@_input_errors
def replay(source: str, json_path: str | None, **flags: object) -> None:
    """Re-judge the stored replies of RUN_ID: no agent call, a new run id, calibration as the file is now.

    Calibration is read from calibration.jsonl in the source run's suite folder (EVAL_DIR is not consulted),
    or in --eval-dir when given.

    \b
    Example:
      kindgi-eval replay --from 1f2e3d4c-... --judge-model openai:gpt-4o
    """
    from kindgi_eval.agents import make_judge
    from kindgi_eval.inputs import load_checked_suite, load_tenant, resolve_settings
    from kindgi_eval.store import replay_source, runtime_home, store_root

    home = runtime_home()
    (named,) = _runs_named(store_root(home), {"--from": source})  # a run id, or a prefix naming one run, as elsewhere
    source = named.run_id
    key, original = replay_source(store_root(home), source, "--from")
    # The suite folder is the source run's unless --eval-dir says otherwise; a replay asks no agent.
    flags = {**flags, "eval_dir": flags.get("eval_dir") or original.eval_dir}
    not_read = ("EVAL_DIR", "AGENT_MODEL", "AGENT_URL")
    settings = resolve_settings(flags, {var: value for var, value in os.environ.items() if var not in not_read})
    if settings.judge_model is None:
        raise InputError([Problem("--judge-model", None, None, "a replay needs a judge. Pass --judge-model or set EVAL_JUDGE_MODEL.")])
    _start_model_worker(settings)
    make_judge(settings, check_only=True)  # the replay builds its own, once litellm is imported
    loaded = load_tenant(settings.config_dir)
    if loaded.tenant.tenant != original.tenant:
        raise InputError([Problem("--config-dir", None, None, f"run {source} evaluated tenant {original.tenant!r}, but the tenant configuration "
                                  f"{loaded.config_dir} is {loaded.tenant.tenant!r}. Pass --config-dir with {original.tenant!r}'s configuration folder.")])
    load_checked_suite(settings.eval_dir, loaded)
    _check_json_path(json_path)

    from kindgi_eval.defs import RunFailed, open_instance, replay_chain

    instance = open_instance(home)
    try:
        run_id = replay_chain(instance, home, settings, key, source)
    except RunFailed as e:
        click.echo(f"error: {e}", err=True)
        _exit(EXIT_FAILED, instance)
    _exit(_report(home, key, run_id, json_path), instance)


def _check_json_path(json_path: str | None, flag: str = "--json") -> None:
    """An output file's folder must exist before anything runs, so a run never ends unable to write it."""
    if json_path and not Path(json_path).absolute().parent.is_dir():
        raise InputError([Problem(json_path, None, None, f"its folder does not exist. Create it or pick another {flag} path.")])


def _write_atomically(path: Path, text: str) -> None:
    """Write `text` beside `path` and rename it into place, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _report(home: Path, key: str, run_id: str, json_path: str | None) -> int:
    """Print the stored run and write its JSON; the exit status its statuses call for."""
    from kindgi_eval.reports import case_marks, render, summary_json
    from kindgi_eval.spec import FAILING
    from kindgi_eval.steps import cases_of
    from kindgi_eval.store import export_database, read_rows, rows_if_stored, store_root

    root = store_root(home)
    export_database(root)
    (run,) = read_rows(root, "run_summary", key, run_id)
    statuses = read_rows(root, "statuses", key, run_id)
    calibration = read_rows(root, "calibration", key, run_id)
    cases = cases_of(read_rows(root, "suite", key, run.replies_from))  # a replay judged its source's suite
    marks = case_marks(*(rows_if_stored(root, asset, key, run_id) for asset in ("accuracy", "regressions", "custom")))
    click.echo(render(run, statuses, calibration, key, cases, marks), nl=False)
    click.echo(f"run {run_id} stored under {root}", err=True)
    if json_path:
        document = json.dumps(summary_json(run_id, run, statuses, calibration), indent=2, ensure_ascii=False)
        _write_atomically(Path(json_path), document + "\n")
    return EXIT_FAILED if any(s.status in FAILING for s in statuses) or (run.regressed or 0) > 0 else EXIT_OK


@main.command(short_help="Check suites and calibration sets; run nothing.")
@click.argument("dirs", nargs=-1)
@_settings_options("config_dir")
@_input_errors
def validate(dirs: tuple[str, ...], config_dir: str | None) -> None:
    """Parse suites and calibration sets, and check cases against the tenant; report every problem, exit 2 if any.

    With no DIRS, the suite folder of EVAL_DIR (default evals/golden) is checked.

    \b
    Example:
      kindgi-eval validate evals/golden ../acme/evals/pricing --config-dir ../acme/config
    """
    from kindgi_eval.inputs import load_checked_suite, load_tenant, resolve_settings

    settings = resolve_settings({"config_dir": config_dir})
    loaded = load_tenant(settings.config_dir)
    folders = dirs or (settings.eval_dir,)
    problems: list[Problem] = []
    for folder in folders:
        try:
            suite = load_checked_suite(folder, loaded)
        except InputError as e:
            problems += e.problems
            continue
        click.echo(f"ok: {folder}: {len(suite.cases)} cases, {len(suite.calibration)} calibration items")
    if problems:
        raise InputError(problems)


@main.command(short_help="Query the store with DuckDB.")
@click.argument("query")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@_input_errors
def sql(query: str, fmt: str) -> None:
    """Query the store with DuckDB, through its views: runs, cases, replies, outcomes, judge_samples, calibration,
    statuses, accuracy, custom, regressions, pairwise, review_queue, reviews.

    \b
    Example:
      kindgi-eval sql "SELECT case_id, status FROM statuses WHERE status = 'failed'" --format csv
    """
    import duckdb

    from kindgi_eval.spec import safe
    from kindgi_eval.store import connect, format_rows, store_root, view_names

    with connect(store_root(), query) as con:
        try:
            result = con.execute(query)  # not con.sql: its errors lose DuckDB's `LINE 1:` pointer
            if result is None or result.description is None:
                return
            columns, rows = [d[0] for d in result.description], result.fetchall()
        except duckdb.Error as e:
            # DuckDB's whole message, as it gives it: the error, its hint (`Did you mean "runs"?`), the `LINE 1:` line
            # and its `^` pointer. It may quote stored values, which can be model output: made harmless for a terminal.
            said = safe(str(e).strip())
            if isinstance(e, duckdb.CatalogException) and "does not exist" in said:
                said += f"\nThe views are: {', '.join(view_names())}."
            raise InputError([Problem("query", None, None, said)]) from None
    click.echo(format_rows(columns, rows, fmt), nl=False)

@main.command(short_help="What changed between two runs.")
@click.argument("run_a", required=False)
@click.argument("run_b", required=False)
@click.option("--suite", metavar="KEY", help="Compare this suite's latest run (B) with the one before it (A), by start time. KEY is the "
              "partition the run header names (`demo-academy.golden`, `acme@acme.pricing`), or a registry suite's id.")
@click.option("--json", "as_json", is_flag=True, help="Print the difference as JSON.")
@click.option(
    "--exit-code",
    is_flag=True,
    help="Exit 1 when a case got worse (passed, judged-pass or reviewed in A; failed or judged-fail in B), "
    "else 0. A case that is not in A never counts as worse, even when it fails in B.",
)
@_input_errors
def diff(run_a: str | None, run_b: str | None, suite: str | None, as_json: bool, exit_code: bool) -> None:
    """What changed from RUN_A to RUN_B: statuses, criteria verdicts, calibration and cost.

    RUN_A and RUN_B are run ids, or any prefix that names one run, such as the eight characters the Dagster UI
    shows. With --suite instead, A and B are the suite's last two runs.

    \b
    Examples:
      kindgi-eval diff 3f9c2a1e 8d04b7c5
      kindgi-eval diff --suite demo-academy.golden --exit-code
    """
    from kindgi_eval.reports import diff_runs, got_worse, render_diff
    from kindgi_eval.store import store_root

    if suite is not None and (run_a is not None or run_b is not None):
        raise click.UsageError("give either RUN_A and RUN_B or --suite, not both.")
    if suite is None and (run_a is None or run_b is None):
        raise click.UsageError("give RUN_A and RUN_B (run ids or unique prefixes), or --suite KEY.")
    root = store_root()
    if suite is not None:
        ref_a, ref_b = _latest_two(root, suite)
    else:
        ref_a, ref_b = _runs_named(root, {"RUN_A": run_a, "RUN_B": run_b})
    a, b = _stored_run(root, ref_a), _stored_run(root, ref_b)
    difference = diff_runs(a, b)
    if as_json:
        click.echo(difference.model_dump_json(indent=2))
    else:
        click.echo(render_diff(difference, a.run, b.run), nl=False)
    if exit_code and got_worse(difference):
        sys.exit(EXIT_FAILED)


def _runs_named(root: StorePath, prefixes: dict[str, str]) -> list:
    """The stored run (its `store.RunKey`) each argument names by run id or unique prefix; InputError lists every
    argument that names no run or several."""
    from kindgi_eval.reports import matching_run_ids
    from kindgi_eval.store import run_keys

    stored = {k.run_id: k for k in run_keys(root)}
    found, problems = [], []
    for name, prefix in prefixes.items():
        matches = matching_run_ids(prefix, stored)
        if not prefix:
            message = "an empty run id names no run; give a run id or its first characters."
            problems.append(Problem(name, None, None, message))
        elif not matches:
            hint = 'List runs with: kindgi-eval sql "SELECT run_id, suite, started_at FROM runs ORDER BY started_at"'
            problems.append(Problem(name, None, None, f"no run {prefix!r} in the store at {root}. {hint}"))
        elif len(matches) > 1:
            listed = "; ".join(f"{i} ({stored[i].partition}, {stored[i].day})" for i in matches)
            message = f"{prefix!r} begins {len(matches)} run ids: {listed}. Give more characters of the one you mean."
            problems.append(Problem(name, None, None, message))
        else:
            found.append(stored[matches[0]])
    if problems:
        raise InputError(problems)
    return found


def _latest_two(root: StorePath, suite: str):
    """The suite's run before its latest and its latest, by start time; InputError when it has fewer than two."""
    from kindgi_eval.reports import latest_pair
    from kindgi_eval.store import read_rows, run_keys

    keys = run_keys(root, suite)
    if not keys:  # a registry suite named by its id: the one partition of that id (`registry_key`), whatever the tenant
        named = sorted({k.partition for k in run_keys(root) if k.partition.partition("@")[2] == suite.lower()})
        if len(named) == 1:
            suite, keys = named[0], run_keys(root, named[0])
    if len(keys) < 2:
        known = sorted({k.partition for k in run_keys(root)}) if not keys else []
        also = f" Suites with runs: {', '.join(known)}." if known else ""
        runs = "run" if len(keys) == 1 else "runs"
        message = f"suite {suite!r} has {len(keys)} {runs} in the store at {root}; comparing needs two.{also}"
        raise InputError([Problem("--suite", None, None, message)])
    # a run's day is the UTC day it started, so the latest two start on or after the second-latest day: only
    # those runs' summaries are read, not a year of nightly ones
    since = sorted((k.day for k in keys), reverse=True)[1]
    recent = {k.run_id: k for k in keys if k.day >= since}
    pair = latest_pair({i: read_rows(root, "run_summary", suite, i)[0] for i in recent})
    return recent[pair.a], recent[pair.b]


def _stored_run(root: StorePath, ref):
    """Everything a diff compares of one stored run, `ref` being its `store.RunKey`."""
    from kindgi_eval.reports import StoredRun
    from kindgi_eval.store import read_rows

    run_id, key = ref.run_id, ref.partition
    (run,) = read_rows(root, "run_summary", key, run_id)
    return StoredRun(
        run_id=run_id,
        run=run,
        statuses=read_rows(root, "statuses", key, run_id),
        calibration=read_rows(root, "calibration", key, run_id),
        replies=read_rows(root, "agent_replies", key, run.replies_from),
    )


REPORT_HISTORY = 30
"""How many of the suite's runs, up to and including the reported one, the report's chart shows."""
KIND_ITEMS = {"accuracy": "accuracy", "regression": "regressions", "custom": "custom"}
"""The table of the items behind a kind's figure, which the report lists, by the suite's kind."""


@main.command(short_help="Write one run as a self-contained HTML page.")
@click.argument("run_id")
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False), help="Where to write the page.")
@_input_errors
def report(run_id: str, html_path: str) -> None:
    """Write RUN_ID as one HTML file that opens anywhere, with no network: its result and counts, its kind's figure
    and the items behind it, the suite's recent pass rate, calibration, and the cases (filterable to failures), each
    with the contact's side of the conversation, the reply, assertions and every judge sample.

    RUN_ID may be any unique prefix of a run id.

    \b
    Example:
      kindgi-eval report 3f9c2a1e --html out/report.html
    """
    from kindgi_eval.reports import RunPage, render_html
    from kindgi_eval.steps import cases_of
    from kindgi_eval.store import earlier_runs, read_rows, store_root

    _check_json_path(html_path, "--html")
    root = store_root()
    (ref,) = _runs_named(root, {"RUN_ID": run_id})
    key, run_id = ref.partition, ref.run_id
    (run,) = read_rows(root, "run_summary", key, run_id)
    earlier = earlier_runs(root, key, run_id, run.started_at, REPORT_HISTORY - 1)
    items = KIND_ITEMS.get(run.suite_kind)
    page = RunPage(
        run_id=run_id,
        run=run,
        statuses=read_rows(root, "statuses", key, run_id),
        outcomes=read_rows(root, "outcomes", key, run.replies_from),
        samples=read_rows(root, "judge_samples", key, run_id),
        calibration=read_rows(root, "calibration", key, run_id),
        history=[*((i, summary) for i, summary, _ in earlier), (run_id, run)],
        cases=cases_of(read_rows(root, "suite", key, run.replies_from)),
        **({items: read_rows(root, items, key, run_id)} if items else {}),
    )
    _write_atomically(Path(html_path), render_html(page, key))
    click.echo(f"wrote {html_path}: {len(page.statuses)} cases, {len(page.history)} runs in the chart", err=True)


@main.group(short_help="Publish and read suites in the registry.")
def suites() -> None:
    """Publish, list, show and pull suites of the registry at KINDGI_REGISTRY_URL, as the tenant whose token
    KINDGI_REGISTRY_TOKEN holds.

    \b
    Example:
      kindgi-eval suites publish evals/pricing --id acme.pricing --version 1.4.0
    """


def _registry_client():
    """The client the environment names; InputError saying which variable is missing."""
    from kindgi_eval.registry import TOKEN_ENV, URL_ENV, RegistryClient

    url, token = os.environ.get(URL_ENV, ""), os.environ.get(TOKEN_ENV, "")
    missing = [var for var, value in ((URL_ENV, url), (TOKEN_ENV, token)) if not value]
    if missing:
        raise InputError([Problem(var, None, None, "is not set. Set it to the registry's URL and your token (kindgi-eval tokens issue).") for var in missing])
    return RegistryClient(url, token)


def _registry_errors(command: Callable) -> Callable:
    """A registry that cannot be reached prints why and exits 1: nothing was decided."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from kindgi_eval.registry import RegistryUnreachable

        try:
            return command(*args, **kwargs)
        except RegistryUnreachable as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(EXIT_FAILED)

    return wrapper


@suites.command("publish", short_help="Publish a suite folder as a new version.")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--id", "suite_id", required=True, help="The suite's id, e.g. acme.pricing.")
@click.option("--version", required=True, help="Its semver version, greater than the latest published.")
@click.option("--tenant", help="The tenant the suite belongs to (your token's); default the id's part before its first dot.")
@click.option("--description", default="", help="What the suite is for, for a person.")
@_input_errors
@_registry_errors
def suites_publish(folder: str, suite_id: str, version: str, tenant: str | None, description: str) -> None:
    """Publish FOLDER's cases.jsonl and calibration.jsonl as a `conversation` suite; they are checked here first. The
    files' texts are kept beside the version, so `suites pull` writes them back byte for byte; a folder that differs
    from the published one only in layout (whitespace, blank lines, key order) is the same content, and the version
    keeps the files it was first published with."""
    from kindgi_eval.inputs import CALIBRATION_FILE, CASES_FILE, load_suite
    from kindgi_eval.registry import spec_of_files

    load_suite(folder)  # every problem, located by file and line, before anything is sent: each line reads as JSON
    # a suite without calibration.jsonl is published without `calibration`: absent and empty read differently
    paths = [Path(folder) / name for name in (CASES_FILE, CALIBRATION_FILE) if (Path(folder) / name).exists()]
    texts = {path.name: path.read_bytes().decode("utf-8") for path in paths}
    body = {
        "id": suite_id,
        "tenantId": tenant or suite_id.split(".", 1)[0],
        "version": version,
        "kind": "conversation",
        "description": description,
        "spec": spec_of_files(texts),
    }
    client = _registry_client()
    status, stored = client.publish(body)
    said = "published" if status == 201 else "already published, with the same content"
    click.echo(f"{said}: {stored['suite']['id']} {stored['suite']['version']} sha256 {stored['hash']}")
    _, kept = client.keep_files(suite_id, version, texts)
    if kept != texts:
        click.echo(f"note: {suite_id} {version} keeps the files it was first published with, which lay out the same content "
                   "otherwise; `suites pull` writes those.", err=True)


@suites.command("list", short_help="Your suites, the latest version of each.")
@_input_errors
@_registry_errors
def suites_list() -> None:
    """Every suite of your tenant with its latest version."""
    from kindgi_eval.store import format_rows

    rows = [(s.get("id"), s.get("version"), s.get("kind"), s.get("published_at")) for s in _registry_client().suites()]
    click.echo(format_rows(["id", "version", "kind", "published_at"], rows, "table"), nl=False)


@suites.command("show", short_help="One suite version, as JSON.")
@click.argument("suite_id")
@click.option("--version", help="The version; default the latest.")
@_input_errors
@_registry_errors
def suites_show(suite_id: str, version: str | None) -> None:
    """Print SUITE_ID's latest version (or --version) as the registry stores it."""
    click.echo(json.dumps(_registry_client().suite(suite_id, version), indent=2, ensure_ascii=False))


@suites.command("pull", short_help="Write a suite version back as a folder.")
@click.argument("suite_id")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--version", help="The version; default the latest.")
@_input_errors
@_registry_errors
def suites_pull(suite_id: str, folder: str, version: str | None) -> None:
    """Write SUITE_ID's cases.jsonl and calibration.jsonl into FOLDER (created if needed): byte for byte the files it
    was published from, or one item per line for a version published as a JSON document."""
    from kindgi_eval.inputs import CALIBRATION_FILE, CASES_FILE
    from kindgi_eval.registry import suite_files

    client = _registry_client()
    suite = client.suite(suite_id, version)["suite"]
    if suite.get("kind") != "conversation":
        raise InputError([Problem(suite_id, None, None, f"is a {suite.get('kind')!r} suite; only conversation suites are folders.")])
    texts = client.files(suite_id, suite["version"])
    if texts is None:
        texts = {name: data.decode("utf-8") for name, data in suite_files(suite["spec"]).items()}
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    written = [name for name in (CASES_FILE, CALIBRATION_FILE) if name in texts]
    for name in written:
        _write_atomically(target / name, texts[name])
    click.echo(f"wrote {' and '.join(f'{target}/{n}' for n in written)} of {suite_id} {suite['version']}")


@main.command(short_help="Forget runs older than some days.")
@click.option("--keep-days", type=click.IntRange(min=0), required=True, help="Keep runs that started this many days ago or later.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed, and remove nothing.")
@_input_errors
def prune(keep_days: int, dry_run: bool) -> None:
    """Remove runs older than --keep-days from the store and the Dagster instance; replay sources stay.

    The recordings in progress (.partial/) of the runs removed go too, and those of runs killed before the cutoff,
    unless a living process holds them.

    \b
    Example:
      kindgi-eval prune --keep-days 90 --dry-run
    """
    from datetime import UTC, datetime

    from kindgi_eval.store import (
        export_database,
        plan_areas,
        plan_prune,
        recorded_areas,
        remove_areas,
        remove_runs,
        runtime_home,
        store_root,
        stored_runs,
    )

    home = runtime_home()
    root = store_root(home)
    today = datetime.now(UTC).date()
    plan = plan_prune(stored_runs(root), keep_days, today)
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {len(plan.removed)} runs; kept {len(plan.spared)} older runs whose replies a kept replay uses")
    areas = remove_areas(root, plan_areas(recorded_areas(root), plan.removed, keep_days, today), dry_run=dry_run)
    if areas:
        click.echo(f"{verb} the recordings in progress of {len(areas)} runs that were pruned or never finished")
    if dry_run or not plan.removed:
        return
    from kindgi_eval.defs import open_instance

    remove_runs(root, plan.removed)
    instance = open_instance(home)
    for run_id in plan.removed:
        if instance.has_run(run_id):
            instance.delete_run(run_id)
    export_database(root)


@main.command(short_help="Merge closed months into one file per table.")
@click.option("--before", metavar="YYYY-MM", help="Compact the months before this one; default the current month.")
@_input_errors
def compact(before: str | None) -> None:
    """Merge each closed month's run files into one file per table: fast queries over long histories.

    \b
    Example:
      kindgi-eval compact --before 2026-11
    """
    import re
    from datetime import UTC, datetime

    from kindgi_eval.store import compact as compact_store
    from kindgi_eval.store import export_database, store_root

    month = before or datetime.now(UTC).strftime("%Y-%m")
    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month):
        raise InputError([Problem("--before", None, None, f"{month!r} is not a month; write YYYY-MM, e.g. 2026-11.")])
    root = store_root()
    done = compact_store(root, month)
    export_database(root)
    click.echo(f"compacted {done.runs} runs of {len(done.months)} months ({', '.join(done.months) or 'none'})")


def _registry_store():
    """The registry's storage, named once here at the edge: KINDGI_REGISTRY_DB, else registry.sqlite in the runtime folder."""
    from kindgi_eval.registry import database_url, open_store
    from kindgi_eval.store import runtime_home

    return open_store(database_url(runtime_home()))


@main.command(short_help="Serve the suite registry (/v1/eval-suites) over HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port to listen on.")
@_input_errors
def serve(host: str, port: int) -> None:
    """Serve the suite registry until interrupted: tenants publish, list and read their suites with bearer tokens.

    Storage is KINDGI_REGISTRY_DB, a SQLAlchemy URL (postgresql://user:password@host/dbname in production), else
    the SQLite file registry.sqlite in the runtime folder (KINDGI_HOME, default ./.kindgi); it is created and
    migrated on first use. The OpenAPI description is at /openapi.json; /healthz needs no token.

    \b
    Example:
      kindgi-eval tokens issue --tenant acme --name ci
      kindgi-eval serve --port 8765
    """
    from kindgi_eval.registry import accepted_kinds
    from kindgi_eval.registry import serve as serve_registry

    store = _registry_store()
    click.echo(f"suite registry on http://{host}:{port} (database {store.url}; kinds: {', '.join(accepted_kinds())})", err=True)
    serve_registry(store, host, port)


@main.group(short_help="Issue, list and revoke the suite registry's bearer tokens.")
def tokens() -> None:
    """The suite registry's bearer tokens: each acts for one tenant; its secret is printed once and stored only hashed.

    Tokens live in the registry's database (KINDGI_REGISTRY_DB, else registry.sqlite in the runtime folder).
    """


@tokens.command("issue", short_help="Make a token for a tenant and print its secret once.")
@click.option("--tenant", required=True, metavar="TENANT", help="The tenant every request with the token acts for.")
@click.option("--name", default="", metavar="NAME", help="What the token is for, e.g. ci or alice-laptop.")
@_input_errors
def tokens_issue(tenant: str, name: str) -> None:
    """Make a token for TENANT and print its secret on stdout, once: the registry keeps only its SHA-256.

    \b
    Example:
      export KINDGI_REGISTRY_TOKEN="$(kindgi-eval tokens issue --tenant acme --name ci)"
    """
    token = _registry_store().issue_token(tenant, name)
    click.echo(token.secret)
    named = f" ({token.name})" if token.name else ""
    click.echo(f"issued {token.id} for tenant {token.tenant}{named}; the secret above is shown only now. Keep it.", err=True)


@tokens.command("list", short_help="Show every token: id, tenant, name, created, last used, revoked.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@_input_errors
def tokens_list(fmt: str) -> None:
    """Show every token ever issued, oldest first, never a secret. `last_used` is kept to the minute.

    \b
    Example:
      kindgi-eval tokens list --format csv
    """
    from kindgi_eval.store import format_rows

    rows = [(t.id, t.tenant, t.name, t.created_at, t.last_used_at, t.revoked_at) for t in _registry_store().list_tokens()]
    click.echo(format_rows(["id", "tenant", "name", "created", "last_used", "revoked"], rows, fmt), nl=False)


@tokens.command("revoke", short_help="Revoke a token: from now on it is refused (401).")
@click.argument("token_id", metavar="ID")
@_input_errors
def tokens_revoke(token_id: str) -> None:
    """Revoke the token ID (as `tokens list` shows it): every request that carries it is refused from now on.

    \b
    Example:
      kindgi-eval tokens revoke tok_3f9c2a1e5b7d
    """
    token = _registry_store().revoke_token(token_id)
    click.echo(f"revoked {token.id} (tenant {token.tenant}) at {token.revoked_at}")


# The `review` group lives in its own module, which uses the helpers above: imported last, once they exist.
from kindgi_eval.cli.review import review

main.add_command(review)
