"""`kindgi-eval sql`, `diff`, `report`, `prune` and `compact`: the store queried, two runs compared, one run written
as a page, old runs forgotten and closed months merged."""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kindgi_eval.cli.common import EXIT_FAILED, check_output_path, input_errors, runs_named, write_text_atomically
from kindgi_eval.rules import InputError, Problem, safe

if TYPE_CHECKING:
    from kindgi_eval.store import StorePath

# DuckDB, the store, the reports and Dagster are imported inside the commands: seconds of start-up that `--help` and
# `validate` would otherwise pay.

REPORT_HISTORY = 30
"""How many of the suite's runs, up to and including the reported one, the report's chart shows."""


def views_help() -> str:
    """What `sql --help` says it queries: every view of the store (`store.view_names`), the kinds' own last, as the
    installed kinds make them."""
    from kindgi_eval.kinds import store_views
    from kindgi_eval.store import view_names

    views = store_views()
    of_kinds = [k.view for k in views.kinds]
    shared = [name for name in view_names(views) if name not in of_kinds]
    return (
        f"Query the store with DuckDB, through its views: {', '.join(shared)}. "
        f"Each kind's runs, its figures as columns: {', '.join(of_kinds)}."
    )


class ViewsCommand(click.Command):
    """A command whose help names the store's views where its text says `{views}`, built when the help is shown:
    the table of kinds is imported then, not for every `kindgi-eval` start."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The help text with `{views}` replaced by `views_help()`."""
        self.help = (self.help or "").replace("{views}", views_help())
        super().format_help_text(ctx, formatter)


@click.command(cls=ViewsCommand, short_help="Query the store with DuckDB.")
@click.argument("query")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@input_errors
def sql(query: str, fmt: str) -> None:
    """{views}

    \b
    Example:
      kindgi-eval sql "SELECT case_id, status FROM statuses WHERE status = 'failed'" --format csv
    """
    import duckdb

    from kindgi_eval.kinds import store_views
    from kindgi_eval.reports import format_rows
    from kindgi_eval.store import connect, store_root, view_names

    views = store_views()

    with connect(store_root(), query, views) as con:
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
                said += f"\nThe views are: {', '.join(view_names(views))}."
            raise InputError([Problem("query", None, None, said)]) from None
    click.echo(format_rows(columns, rows, fmt), nl=False)


@click.command(short_help="The stored runs, newest first.")
@click.option(
    "--suite", metavar="KEY", help="Only this suite partition's runs (`demo-academy.golden`, `acme@acme.pricing`)."
)
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many runs.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@input_errors
def runs(suite: str | None, limit: int, fmt: str) -> None:
    """List the stored runs, newest first: each run's id, suite, tenant, start and counts. Wherever a run id is taken
    (diff, report, replay --from, review export), the first one here may be named `latest`, and any run by a prefix of
    its id that names it alone.

    \b
    Examples:
      kindgi-eval runs
      kindgi-eval runs --suite demo-academy.golden --limit 5 --format csv
    """
    from kindgi_eval.kinds import store_views
    from kindgi_eval.reports import format_rows
    from kindgi_eval.store import newest_runs, store_root

    listing = newest_runs(store_root(), store_views(), suite, limit)
    click.echo(format_rows(listing.columns, listing.rows, fmt), nl=False)


@click.command(short_help="What changed between two runs.")
@click.argument("run_a", required=False)
@click.argument("run_b", required=False)
@click.option(
    "--suite",
    metavar="KEY",
    help="Compare this suite's latest run (B) with the one before it (A), by start time. KEY is the "
    "partition the run header names (`demo-academy.golden`, `acme@acme.pricing`), or a registry suite's id.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the difference as JSON.")
@click.option(
    "--exit-code",
    is_flag=True,
    help="Exit 1 when a case got worse (passed, judged-pass or reviewed in A; failed or judged-fail in B; or "
    "judged-pass in A and reviewed in B, its evidence lost), else 0. A case that is not in A never counts as worse, "
    "even when it fails in B.",
)
@input_errors
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
        ref_a, ref_b = runs_named(root, {"RUN_A": run_a, "RUN_B": run_b})
    a, b = _stored_run(root, ref_a), _stored_run(root, ref_b)
    difference = diff_runs(a, b)
    if as_json:
        click.echo(difference.model_dump_json(indent=2))
    else:
        click.echo(render_diff(difference, a.run, b.run), nl=False)
    if exit_code and got_worse(difference):
        sys.exit(EXIT_FAILED)


def _suite_runs(root: StorePath, suite: str):
    """The partition `suite` names (a partition, or a registry suite's id) and its stored runs (`store.RunKey`s)."""
    from kindgi_eval.store import run_keys

    keys = run_keys(root, suite)
    if not keys:  # a registry suite named by its id: the one partition of that id (`registry_key`), whatever the tenant
        named = sorted({k.partition for k in run_keys(root) if k.partition.partition("@")[2] == suite.lower()})
        if len(named) == 1:
            suite, keys = named[0], run_keys(root, named[0])
    return suite, keys


def _latest_of(root: StorePath, suite: str):
    """The suite's latest stored run (its `store.RunKey`), by start time as `diff --suite` orders them; InputError
    when it has none."""
    from kindgi_eval.store import SHARED, read_rows, run_keys

    suite, keys = _suite_runs(root, suite)
    if not keys:
        known = sorted({k.partition for k in run_keys(root)})
        also = f" Suites with runs: {', '.join(known)}." if known else ""
        raise InputError([Problem("--suite", None, None, f"suite {suite!r} has no run in the store at {root}.{also}")])
    last = max(k.day for k in keys)
    recent = {k.run_id: k for k in keys if k.day == last}
    summaries = {i: read_rows(root, SHARED.run_summary, suite, i)[0] for i in recent}
    return recent[max(summaries, key=lambda i: (summaries[i].started_at, summaries[i].finished_at, i))]


def _latest_two(root: StorePath, suite: str):
    """The suite's run before its latest and its latest, by start time; InputError when it has fewer than two."""
    from kindgi_eval.reports import latest_pair
    from kindgi_eval.store import SHARED, read_rows, run_keys

    suite, keys = _suite_runs(root, suite)
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
    pair = latest_pair({i: read_rows(root, SHARED.run_summary, suite, i)[0] for i in recent})
    return recent[pair.a], recent[pair.b]


def _stored_run(root: StorePath, ref):
    """Everything a diff compares of one stored run, `ref` being its `store.RunKey`."""
    from kindgi_eval.reports import StoredRun
    from kindgi_eval.store import SHARED, read_rows, rows_if_stored

    run_id, key = ref.run_id, ref.partition
    (run,) = read_rows(root, SHARED.run_summary, key, run_id)
    return StoredRun(
        run_id=run_id,
        run=run,
        statuses=read_rows(root, SHARED.statuses, key, run_id),
        calibration=read_rows(root, SHARED.calibration, key, run_id),
        replies=read_rows(root, SHARED.agent_replies, key, run.replies_from),
        metrics=rows_if_stored(root, SHARED.run_metrics, key, run_id),
    )


@click.command(short_help="Write one run as a self-contained HTML page.")
@click.argument("run_id", required=False)
@click.option(
    "--suite",
    metavar="KEY",
    help="Write this suite's latest run instead: a partition (`demo-academy.golden`) or a registry suite's id.",
)
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False), help="Where to write the page.")
@input_errors
def report(run_id: str | None, suite: str | None, html_path: str) -> None:
    """Write RUN_ID as one HTML file that opens anywhere, with no network: its result and counts, its kind's figure
    and the items behind it, the suite's recent pass rate, calibration, and the cases (filterable to failures), each
    with the contact's side of the conversation, the reply, assertions and every judge sample.

    RUN_ID may be any unique prefix of a run id; with --suite instead, the suite's latest run (by start time, so of
    several suites started in the same second, the one named).

    \b
    Examples:
      kindgi-eval report 3f9c2a1e --html out/report.html
      kindgi-eval report --suite demo-academy.golden --html out/report.html
    """
    from kindgi_eval.kinds import cases_of, own_rows, scenarios_of, stored_result
    from kindgi_eval.reports import RunPage, render_html
    from kindgi_eval.store import SHARED, earlier_runs, read_rows, rows_if_stored, store_root

    if (run_id is None) == (suite is None):
        raise click.UsageError("give either RUN_ID or --suite KEY.")
    check_output_path(html_path, "--html")
    root = store_root()
    (ref,) = runs_named(root, {"RUN_ID": run_id}) if run_id is not None else (_latest_of(root, suite),)
    key, run_id = ref.partition, ref.run_id
    result = stored_result(root, key, run_id)
    run = result.run
    earlier = earlier_runs(root, key, run_id, run.started_at, REPORT_HISTORY - 1)
    suite = read_rows(root, SHARED.suite, key, run.replies_from)
    page = RunPage(
        run_id=run_id,
        result=result,
        statuses=read_rows(root, SHARED.statuses, key, run_id),
        outcomes=read_rows(root, SHARED.outcomes, key, run.replies_from),
        samples=read_rows(root, SHARED.judge_samples, key, run_id),
        calibration=read_rows(root, SHARED.calibration, key, run_id),
        history=[*((i, summary) for i, summary, _ in earlier), (run_id, run)],
        cases=[*cases_of(suite), *scenarios_of(suite)],
        own=own_rows(root, key, run_id, run.suite_kind),
        metrics=rows_if_stored(root, SHARED.run_metrics, key, run_id),
    )
    write_text_atomically(Path(html_path), render_html(page, key))
    click.echo(f"wrote {html_path}: {len(page.statuses)} cases, {len(page.history)} runs in the chart", err=True)


@click.command(short_help="Forget runs older than some days.")
@click.option(
    "--keep-days", type=click.IntRange(min=0), required=True, help="Keep runs that started this many days ago or later."
)
@click.option("--dry-run", is_flag=True, help="Say what would be removed, and remove nothing.")
@input_errors
def prune(keep_days: int, dry_run: bool) -> None:
    """Remove runs older than --keep-days from the store and the Dagster instance; replay sources stay.

    The recordings in progress (.partial/) of the runs removed go too, and those of runs killed before the cutoff,
    unless a living process holds them.

    \b
    Example:
      kindgi-eval prune --keep-days 90 --dry-run
    """
    from kindgi_eval.kinds import store_views
    from kindgi_eval.store import (
        export_database,
        plan_areas,
        plan_prune,
        recorded_areas,
        remove_areas,
        remove_run_ends,
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
    ended = remove_run_ends(root, (today - timedelta(days=keep_days)).isoformat(), dry_run=dry_run)
    if ended:
        click.echo(f"{verb} {ended} runs that failed or were stopped")
    if dry_run or not plan.removed:
        return
    from kindgi_eval.defs import open_instance

    views = store_views()
    remove_runs(root, views.tables, plan.removed)
    instance = open_instance(home)
    for run_id in plan.removed:
        if instance.has_run(run_id):
            instance.delete_run(run_id)
    export_database(root, views)


@click.command(short_help="Merge closed months into one file per table.")
@click.option("--before", metavar="YYYY-MM", help="Compact the months before this one; default the current month.")
@input_errors
def compact(before: str | None) -> None:
    """Merge each closed month's run files into one file per table: fast queries over long histories.

    \b
    Example:
      kindgi-eval compact --before 2026-11
    """
    from kindgi_eval.kinds import store_views
    from kindgi_eval.store import compact as compact_store
    from kindgi_eval.store import export_database, store_root

    month = before or datetime.now(UTC).strftime("%Y-%m")
    if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", month):
        raise InputError([Problem("--before", None, None, f"{month!r} is not a month; write YYYY-MM, e.g. 2026-11.")])
    root = store_root()
    views = store_views()
    done = compact_store(root, views.tables, month)
    export_database(root, views)
    click.echo(f"compacted {done.runs} runs of {len(done.months)} months ({', '.join(done.months) or 'none'})")
