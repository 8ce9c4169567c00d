"""`kindgi-eval run`, `run --resume`, `replay` and `validate`: a suite evaluated, a killed run finished, a run's
replies judged again, and suites checked without running anything."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple, NoReturn

import click

from kindgi_eval.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    check_output_path,
    input_errors,
    kind_models,
    registry_errors,
    runs_named,
    settings_options,
    write_bytes_atomically,
    write_text_atomically,
)
from kindgi_eval.inputs import (
    CASES_FILE,
    SETTING,
    changes_since,
    check_tenants,
    default_eval_dir,
    is_packaged_golden,
    load_checked_suite,
    load_tenant,
    manifest_of,
    resolve_settings,
    resumed_settings,
    set_deployment_gateway,
    suite_key,
)
from kindgi_eval.rules import InputError, Problem, parse_model, run_failed

# The agents, litellm, the registry, the store and Dagster are imported inside the commands, each once it is known to
# be needed: seconds of start-up that `--help` and `validate` would otherwise pay.

RUN_SETTINGS = tuple(SETTING)
"""`run` takes every setting of the table as an option."""
REPLAY_SETTINGS = (
    "eval_dir",
    "config_dir",
    "gateway_url",
    "judge_model",
    "judge_batch",
    "concurrency",
    "model_timeout_s",
)
"""`replay` asks no agent and runs no handler: it takes the settings of the suite, the judge and its calls."""


class Outputs(NamedTuple):
    """The files a run writes beside its report."""

    json: str | None
    """--json: the summary as JSON."""
    junit: str | None
    """--junit: JUnit XML, one test case per case."""

    def check(self) -> None:
        """Each output's folder must exist before anything runs."""
        check_output_path(self.json, "--json")
        check_output_path(self.junit, "--junit")


def output_options(command: Callable) -> Callable:
    """The options of `Outputs`, as `run` and `replay` take them: `json_path` and `junit_path`."""
    command = click.option(
        "--junit",
        "junit_path",
        type=click.Path(dir_okay=False),
        help="Also write JUnit XML here, one test case per case, for a CI system to show.",
    )(command)
    return click.option(
        "--json", "json_path", type=click.Path(dir_okay=False), help="Also write the summary as JSON here."
    )(command)


@click.command(short_help="Evaluate one suite against the agent.")
@click.option(
    "--mock", is_flag=True, help="Use the offline demo agent (mock:agent), whatever AGENT_URL or AGENT_MODEL say."
)
@output_options
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
    "now. Read over HTTP from KINDGI_REGISTRY_URL with KINDGI_REGISTRY_TOKEN where the URL is set, else from the "
    "registry's database here. Instead of --eval-dir.",
)
@click.option(
    "--fresh-contact",
    is_flag=True,
    help="Ask the contact model for every message of a persona scenario, instead "
    "of reusing the message it wrote before at the same point of the same conversation.",
)
@settings_options(
    *RUN_SETTINGS, defaults={"eval_dir": "env: EVAL_DIR; default: evals/golden, else the golden set this package ships"}
)
@input_errors
@registry_errors
def run(
    mock: bool,
    json_path: str | None,
    junit_path: str | None,
    resume: str | None,
    registered: str | None,
    fresh_contact: bool,
    **flags: object,
) -> None:
    """Evaluate one suite: print every reply, each failure, and the summary.

    Exit status: 0 nothing failed, 1 a case failed or judged-fail, 2 bad input.

    \b
    Examples:
      kindgi-eval run --mock --judge-model mock:judge --json out/summary.json
      kindgi-eval run --resume 3f9c2a1e
      kindgi-eval run --suite acme.pricing@1.4.0 --config-dir ../acme/config --agent-model openai:gpt-4o-mini
    """
    from kindgi_eval.agents import make_agent, make_contact, make_judge

    if mock and (flags.get("agent_model") or flags.get("agent_url")):
        raise InputError(
            [
                Problem(
                    "--mock",
                    None,
                    None,
                    "names the offline demo agent, and --agent-model or --agent-url names another. Pass one of them.",
                )
            ]
        )
    if registered and (flags.get("eval_dir") or resume):
        raise InputError(
            [Problem("--suite", None, None, "names the suite, and so does --eval-dir or --resume. Pass one of them.")]
        )
    if resume is not None:
        _resume_run(resume, mock, Outputs(json_path, junit_path), flags)
    settings = resolve_settings(flags, mock=mock, defaults={"eval_dir": default_eval_dir()})
    _gateway_of_the_command_line(settings)
    _start_model_worker(settings)
    loaded = load_tenant(settings.config_dir)
    if registered:
        from kindgi_eval.kinds import consumers
        from kindgi_eval.registry import client_from_env, registered_suite_folder
        from kindgi_eval.store import runtime_home

        suite_id, _, version = registered.partition("@")
        folder = registered_suite_folder(
            runtime_home(), loaded.tenant.tenant, suite_id, version or None, "--suite", consumers(), client_from_env()
        )
        settings = settings.model_copy(update={"eval_dir": str(folder)})
    from kindgi_eval.steps import preflight
    from kindgi_eval.store import store_root

    # the suite checked, the kind's needs (a custom handler's sandbox) and the tenant's call budget held: exit 2 here,
    # nothing called
    suite, _, pins = preflight(settings, loaded, store_root(), mock=mock)
    variants = pins.variants
    if pins.note:
        click.echo(pins.note, err=True)

    from kindgi_eval.defs import RunFailed, open_instance, resolved_tags, run_chain  # while the worker imports litellm
    from kindgi_eval.steps import FRESH_CONTACT_TAG
    from kindgi_eval.store import runtime_home

    make_agent(
        settings, loaded.tenant, check_only=True, named_as=_typed(flags, "agent_model")
    )  # the run builds its own
    make_judge(settings, check_only=True, named_as=_typed(flags, "judge_model"))
    make_contact(
        settings,
        needed=any(s.moves is None for s in suite.scenarios),
        check_only=True,
        named_as=_typed(flags, "contact_model"),
    )
    outputs = Outputs(json_path, junit_path)
    outputs.check()
    for agent in dict.fromkeys(variants or (settings.agent_model,)):  # the agents actually evaluated, each once
        if settings.judge_model and settings.judge_model == agent:
            click.echo(
                f"warning: the judge is the agent's own model ({settings.judge_model}); it may favour its own replies.",
                err=True,
            )

    home = runtime_home()
    key = suite_key(loaded.tenant.tenant, settings.eval_dir)
    if is_packaged_golden(settings.eval_dir):
        click.echo(
            f"suite: {key}, the golden set this package ships ({settings.eval_dir}): this folder has no "
            "evals/golden, and neither EVAL_DIR nor --eval-dir names a suite folder",
            err=True,
        )
    instance = open_instance(home)
    made: dict[str, list] = {}
    try:
        tags = {**resolved_tags(pins), **({FRESH_CONTACT_TAG: "true"} if fresh_contact else {})}
        run_id = run_chain(instance, home, settings, key, suite.kind, tags=tags, outputs=made)  # resolved once, here
    except RunFailed as e:
        click.echo(f"error: {e}", err=True)
        _exit(EXIT_FAILED, instance)
    _end_model_calls()
    _exit(_report(home, key, run_id, outputs, made), instance)


def _typed(flags: dict[str, object], field: str) -> str | None:
    """The flag a setting was given by on this command line (`--judge-model`), for an error to name; None when it
    came from elsewhere (its variable, `--mock`)."""
    return SETTING[field].flag if flags.get(field) is not None else None


def _gateway_of_the_command_line(settings) -> None:
    """On the command line the user's own gateway is the deployment's: the one the settings resolved (`--gateway-url`
    over KINDGI_GATEWAY_URL) becomes this process's KINDGI_GATEWAY_URL, the URL the run executed here sends its model
    calls and the key KINDGI_GATEWAY_KEY to, and no other (`agents.deployment_settings`)."""
    if settings.gateway_url:
        set_deployment_gateway(settings.gateway_url)


def _start_model_worker(settings) -> None:
    """When the settings name a litellm model and no gateway, start the process that imports litellm and makes the model calls
    (`llm.start_worker`, taking the one `kindgi_eval.__main__` started ahead), so that its import runs beside Dagster's
    instead of before it; otherwise end the one started ahead, if any."""
    from kindgi_eval.llm import start_worker, stop_worker, workers_for

    names = (settings.judge_model, settings.contact_model, None if settings.agent_url else settings.agent_model)
    try:
        needed = settings.gateway_url is None and any(name and not parse_model(name).is_mock for name in names)
    except ValueError:
        needed = False  # a malformed name: make_agent or make_judge says what is wrong, and nothing is run
    if needed:
        start_worker(workers_for(settings.concurrency, os.cpu_count()))
    else:
        stop_worker()


def _end_model_calls() -> None:
    """End the litellm workers once the chain is done, and say how many made its calls, if any did."""
    from kindgi_eval.llm import stop_worker

    ran = stop_worker()
    if ran:
        click.echo(f"model calls made by {ran} litellm worker process{'es' if ran > 1 else ''}", err=True)


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


def _resume_run(prefix: str, mock: bool, outputs: Outputs, flags: dict[str, object]) -> NoReturn:
    """`run --resume`: check that the killed run may be resumed, run what it had not finished, print the report, exit.

    InputError (exit 2, nothing run) when no killed run has that id, when it completed or was finished already, when
    it is still running, or when its suite, tenant configuration or settings changed since it recorded its rows."""
    from kindgi_eval.agents import make_agent, make_judge
    from kindgi_eval.store import claim, killed_run, read_manifest, refuse_finished, runtime_home, store_root

    home = runtime_home()
    root = store_root(home)
    area, killed = killed_run(root, prefix, "--resume")
    recorded = read_manifest(area)
    if recorded is None:
        raise InputError(
            [
                Problem(
                    "--resume",
                    None,
                    None,
                    f"run {killed} recorded nothing before it stopped, so nothing of it can be reused. "
                    "Start a new run instead.",
                )
            ]
        )
    refuse_finished(root, area, recorded, "--resume")
    settings = resumed_settings(recorded, flags, mock=mock)
    _gateway_of_the_command_line(settings)
    _start_model_worker(settings)
    loaded = load_tenant(settings.config_dir)
    suite = load_checked_suite(settings.eval_dir, loaded, models_of=kind_models)
    key = suite_key(loaded.tenant.tenant, settings.eval_dir)
    now = manifest_of(
        killed, key, settings, suite_hash=suite.hash, config_hash=loaded.hash, replies_from=recorded.replies_from
    )
    problems = changes_since(recorded, now)
    if problems:
        raise InputError(problems)
    if recorded.replies_from is None:
        make_agent(settings, loaded.tenant, check_only=True)  # the run builds its own, once litellm is imported
    make_judge(settings, check_only=True)
    outputs.check()
    if not claim(area):  # held until this process ends: the killed run cannot be resumed twice at once either
        raise InputError(
            [
                Problem(
                    "--resume",
                    None,
                    None,
                    f"run {killed} is still running: a process holds {area}/lock. "
                    "Wait for it to end (or stop it), then resume it.",
                )
            ]
        )

    from kindgi_eval.defs import RunFailed, open_instance, resume_chain

    click.echo(f"resuming run {killed}", err=True)
    instance = open_instance(home)
    made: dict[str, list] = {}
    try:
        run_id = resume_chain(instance, home, settings, key, suite.kind, killed, recorded.replies_from, outputs=made)
    except RunFailed as e:
        click.echo(f"error: {e}", err=True)
        _exit(EXIT_FAILED, instance)
    _end_model_calls()
    _exit(_report(home, key, run_id, outputs, made), instance)


@click.command(short_help="Re-judge a run's stored replies with another judge.")
@click.option(
    "--from",
    "source",
    required=True,
    metavar="RUN_ID",
    help="The run whose stored replies are re-judged: its id, or a prefix naming one run.",
)
@output_options
@settings_options(
    *REPLAY_SETTINGS,
    defaults={
        "eval_dir": "default: the source run's suite folder; EVAL_DIR is not read",
        "config_dir": "default: the source run's; else env: CONFIG_DIR, else the packaged demo tenant",
    },
)
@input_errors
def replay(source: str, json_path: str | None, junit_path: str | None, **flags: object) -> None:
    """Re-judge the stored replies of RUN_ID: no agent call, a new run id, calibration as the file is now.

    Calibration is read from calibration.jsonl in the source run's suite folder (EVAL_DIR is not consulted),
    or in --eval-dir when given. The tenant configuration is the source run's too (its folder, as the run recorded
    it), unless --config-dir names another.

    \b
    Example:
      kindgi-eval replay --from 1f2e3d4c-... --judge-model openai:gpt-4o
    """
    from kindgi_eval.agents import make_judge
    from kindgi_eval.store import replay_source, runtime_home, store_root

    home = runtime_home()
    (named,) = runs_named(store_root(home), {"--from": source})  # a run id, or a prefix naming one run, as elsewhere
    source = named.run_id
    key, original = replay_source(store_root(home), source, "--from")

    from kindgi_eval.defs import RunFailed, open_instance, recorded_settings, replay_chain

    instance = open_instance(home)
    recorded = recorded_settings(instance, source)
    # The suite folder and the tenant configuration are the source run's unless --eval-dir and --config-dir say
    # otherwise; a replay asks no agent.
    flags = {
        **flags,
        "eval_dir": flags.get("eval_dir") or original.eval_dir,
        "config_dir": flags.get("config_dir") or (recorded.config_dir if recorded else None),
    }
    not_read = ("EVAL_DIR", "AGENT_MODEL", "AGENT_URL")
    settings = resolve_settings(flags, {var: value for var, value in os.environ.items() if var not in not_read})
    if settings.judge_model is None:
        raise InputError(
            [
                Problem(
                    "--judge-model", None, None, "a replay needs a judge. Pass --judge-model or set EVAL_JUDGE_MODEL."
                )
            ]
        )
    _gateway_of_the_command_line(settings)
    _start_model_worker(settings)
    make_judge(settings, check_only=True, named_as=_typed(flags, "judge_model"))  # the replay builds its own
    loaded = load_tenant(settings.config_dir)
    if loaded.tenant.tenant != original.tenant:
        raise InputError(
            [
                Problem(
                    "--config-dir",
                    None,
                    None,
                    f"run {source} evaluated tenant {original.tenant!r}, but the tenant configuration "
                    f"{loaded.config_dir} is {loaded.tenant.tenant!r}. Pass --config-dir with {original.tenant!r}'s configuration folder.",
                )
            ]
        )
    load_checked_suite(settings.eval_dir, loaded, models_of=kind_models)
    outputs = Outputs(json_path, junit_path)
    outputs.check()
    made: dict[str, list] = {}
    try:
        run_id = replay_chain(
            instance, home, settings, key, original.suite_kind, source, outputs=made
        )  # the stored replies' kind
    except RunFailed as e:
        click.echo(f"error: {e}", err=True)
        _exit(EXIT_FAILED, instance)
    _end_model_calls()
    _exit(_report(home, key, run_id, outputs, made), instance)


def _report(home: Path, key: str, run_id: str, outputs: Outputs, made: Mapping[str, list]) -> int:
    """Print the run and write its JSON; the exit status its statuses call for. The tables the run made in this process
    (`made`, by asset) are taken as it made them, not read back; the store's DuckDB database is written meanwhile."""
    from kindgi_eval.kinds import cases_of, kind_named, own_rows, result_of, scenarios_of, store_views, stored_result
    from kindgi_eval.reports import case_marks, first_error_lines, junit_xml, render, summary_json
    from kindgi_eval.store import SHARED, export_database, read_rows, rows_if_stored, store_root

    root = store_root(home)
    exporting = ThreadPoolExecutor(1, thread_name_prefix="export")  # DuckDB's work lets go of the interpreter lock
    exported = exporting.submit(export_database, root, store_views())

    def rows(table) -> list:
        made_here = made.get(table.asset)
        return list(made_here) if made_here is not None else read_rows(root, table, key, run_id)

    if SHARED.run_summary.asset in made and SHARED.run_metrics.asset in made:
        (run,) = made[SHARED.run_summary.asset]
        result = result_of(run, made[SHARED.run_metrics.asset])
    else:
        result = stored_result(root, key, run_id)
    run = result.run
    statuses = rows(SHARED.statuses)
    calibration = rows(SHARED.calibration)
    metrics = made.get(SHARED.run_metrics.asset) or rows_if_stored(root, SHARED.run_metrics, key, run_id)
    # a replay judged its source's suite, which it did not make
    suite = made.get(SHARED.suite.asset)
    suite = suite if suite is not None else read_rows(root, SHARED.suite, key, run.replies_from)
    cases = [*cases_of(suite), *scenarios_of(suite)]
    stage = kind_named(run.suite_kind).stage
    own = made.get(stage.stored.asset) if stage is not None else None
    marks = case_marks(run.suite_kind, own if own is not None else own_rows(root, key, run_id, run.suite_kind))
    click.echo(render(result, statuses, calibration, key, cases, marks, metrics), nl=False)
    for line in first_error_lines(made.get(SHARED.agent_replies.asset, []), made.get(SHARED.judge_samples.asset, [])):
        click.echo(line)
    click.echo(f"run {run_id} stored under {root}", err=True)
    if outputs.json:
        document = json.dumps(
            summary_json(run_id, result, statuses, calibration, metrics), indent=2, ensure_ascii=False
        )
        write_text_atomically(Path(outputs.json), document + "\n")
    if outputs.junit:
        write_bytes_atomically(Path(outputs.junit), junit_xml(run_id, key, run, statuses))
    exported.result()
    exporting.shutdown()
    return (
        EXIT_FAILED
        if run_failed((s.status for s in statuses), kind_named(run.suite_kind).report.failed(result))
        else EXIT_OK
    )


@click.command(short_help="Check suites and calibration sets; run nothing.")
@click.argument("dirs", nargs=-1, metavar="[PATH]...")
@settings_options("config_dir")
@click.option(
    "--tenants",
    "tenants_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Check this tenants file whole instead: every entry, its folders, its tenant.toml and its suites.",
)
@input_errors
def validate(dirs: tuple[str, ...], config_dir: str | None, tenants_file: str | None) -> None:
    """Parse suites and calibration sets, and check cases against the tenant; report every problem, exit 2 if any.

    A PATH is a suite folder, or a suite document (a JSON file, or a folder holding suite.json and no cases.jsonl, as
    `init` writes one), checked as `suites publish` checks it before sending it.

    With no DIRS, the suite folder of EVAL_DIR is checked (default evals/golden, else the golden set this package
    ships).

    With --tenants FILE, the tenants file is checked whole, as the nightly schedule will read it: every entry, its
    folders, its tenant.toml (which must name the same tenant) and every suite folder it declares.

    \b
    Examples:
      kindgi-eval validate evals/golden ../acme/evals/pricing --config-dir ../acme/config
      kindgi-eval validate --tenants tenants.toml
    """
    if tenants_file is not None:
        if dirs or config_dir:
            raise click.UsageError("give either --tenants FILE or suite folders (with --config-dir), not both.")
        for line in check_tenants(tenants_file, kind_models):
            click.echo(line)
        return
    settings = resolve_settings({"config_dir": config_dir}, defaults={"eval_dir": default_eval_dir()})
    loaded = load_tenant(settings.config_dir)
    folders = dirs or (settings.eval_dir,)
    problems: list[Problem] = []
    for folder in folders:
        try:
            document = _suite_document(Path(folder))
            if document is not None:
                click.echo(f"ok: {document}: {_checked_document(document)}")
                continue
            suite = load_checked_suite(folder, loaded, models_of=kind_models)
        except InputError as e:
            problems += e.problems
            continue
        scenarios = f", {len(suite.scenarios)} scenarios" if suite.scenarios else ""
        click.echo(f"ok: {folder}: {len(suite.cases)} cases{scenarios}, {len(suite.calibration)} calibration items")
    if problems:
        raise InputError(problems)


def _suite_document(path: Path) -> Path | None:
    """The suite document `validate` is given: a file, or a folder holding suite.json and no cases.jsonl (as `init`
    writes a registry kind's starter); None for a suite folder."""
    from kindgi_eval.registry import SUITE_DOCUMENT

    if path.is_file():
        return path
    if (path / SUITE_DOCUMENT).is_file() and not (path / CASES_FILE).exists():
        return path / SUITE_DOCUMENT
    return None


def _checked_document(path: Path) -> str:
    """A suite document checked as `suites publish` checks it before sending it, against the catalogue this package
    ships; what it is, for the line that says it passed."""
    from kindgi_eval.kinds import consumers
    from kindgi_eval.registry import ShippedCatalogue, checked_suite, read_document

    suite = checked_suite(read_document(path), str(path), consumers(), ShippedCatalogue())
    return f"{suite.kind} suite {suite.id} {suite.version} of tenant {suite.tenantId}, as the registry checks a publish"
