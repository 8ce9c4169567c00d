"""`kindgi-eval night`: what got worse in the night, one block per tenant, the worst first; `--send` sends each
tenant's block to its webhooks, once."""

from __future__ import annotations

import os
import re
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import click

from kindgi_eval.cli.common import EXIT_FAILED, EXIT_OK, check_output_path, input_errors, write_text_atomically
from kindgi_eval.rules import WORSE, InputError, Problem

# The store, the reports and Dagster are imported inside the command: seconds of start-up that `--help` would pay.


def night_day(text: str | None) -> str | None:
    """The night asked for (`--date`, YYYY-MM-DD); InputError when it is not a date."""
    if text is None:
        return None
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            raise ValueError(text)
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise InputError(
            [Problem("--date", None, None, f"{text!r} is not a date; write YYYY-MM-DD, e.g. 2026-12-01.")]
        ) from None


@click.command(short_help="What got worse last night, per tenant.")
@click.option(
    "--date",
    "day",
    metavar="YYYY-MM-DD",
    help="The night: each suite's latest run that started that UTC day. "
    "Default: each suite's latest run, whenever it ran.",
)
@click.option("--tenant", metavar="NAME", help="Only this tenant's suites.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Also write the findings as JSON here.")
@click.option(
    "--send",
    is_flag=True,
    help="Send each tenant's findings to the webhooks its `alerts` name, once per tenant "
    "and night (as the night_findings sensor does).",
)
@input_errors
def night(day: str | None, tenant: str | None, json_path: str | None, send: bool) -> None:
    """The night's findings across every suite the tenants file (KINDGI_TENANTS) declares, or every suite stored:
    each suite's latest run against the last run before it that succeeded. Cases newly failing and fixed, a pass-rate
    drop beyond chance, calibration groups whose judge did not count, a run that failed or stopped, and a declared
    suite with no run that night; each with the command that shows more. Exit 0 when nothing got worse, 1 when
    something did.

    \b
    Examples:
      kindgi-eval night
      kindgi-eval night --date 2026-12-01 --tenant acme --json night.json
    """
    from kindgi_eval.inputs import load_tenants, tenants_path
    from kindgi_eval.reports import night_of, render_night
    from kindgi_eval.store import night_runs, store_root

    day = night_day(day)
    check_output_path(json_path, "--json")
    tenants = (
        load_tenants(partial=True) if tenants_path() is not None else None
    )  # another tenant's typo is named, not fatal
    declared = tenants.suites if tenants is not None else None
    skipped = [
        (s.tenant, s.reason()) for s in (tenants.skipped if tenants is not None else ()) if tenant in (None, s.tenant)
    ]
    if send and not declared:
        raise InputError(
            [
                Problem(
                    "--send",
                    None,
                    None,
                    "no tenants file names webhooks. Point KINDGI_TENANTS at the tenants "
                    'file whose tenants name their webhooks with alerts = ["VARIABLE"].',
                )
            ]
        )
    if tenant is not None and declared is not None:
        known = sorted({s.tenant for s in declared})
        declared = tuple(s for s in declared if s.tenant == tenant)
        if not declared and not skipped:
            raise InputError(
                [
                    Problem(
                        "--tenant",
                        None,
                        None,
                        f"no tenant {tenant!r} in the tenants file (tenants: {', '.join(known)}).",
                    )
                ]
            )
    since, until = (day, (date.fromisoformat(day) + timedelta(days=1)).isoformat()) if day else (None, None)
    root = store_root()
    suites = night_runs(root, [s.key for s in declared] if declared is not None else None, since, until)
    if declared is not None:
        pairs = [(d.tenant, s) for d, s in zip(declared, suites, strict=True)]
    else:
        pairs = [(s.tenant or "", s) for s in suites if tenant is None or s.tenant == tenant]
        if tenant is not None and not pairs:
            raise InputError([Problem("--tenant", None, None, f"no run of tenant {tenant!r} in the store at {root}.")])
    found = night_of(pairs, day, missing=declared is not None, skipped=skipped)
    click.echo(render_night(found), nl=False)
    if json_path:
        write_text_atomically(Path(json_path), found.model_dump_json(indent=2) + "\n")
    if send:
        _send(found, declared, day)
    sys.exit(EXIT_FAILED if found.worse else EXIT_OK)


def _send(found, declared, day: str | None) -> None:
    """Send each tenant with webhooks its block, once per tenant and night: the night of its latest run as the
    `night_findings` sensor keys it (the schedule's tick that launched the run), else `--date`, else the run's UTC
    day. What was done goes to standard error, each webhook named by its variable."""
    from kindgi_eval.defs import deliver, night_label, open_instance
    from kindgi_eval.rules import alerted
    from kindgi_eval.store import runtime_home

    entries = {s.tenant: s.entry for s in declared}
    instance = open_instance(runtime_home())
    try:
        for block in found.tenants:
            entry = entries.get(block.tenant)
            if entry is None:  # an entry that does not validate names no webhook this can trust
                continue
            kinds = entry.alert_on or list(WORSE)
            if not entry.alerts or not alerted(block.findings(), kinds):
                continue
            latest = max((s for s in block.suites if s.started_at), key=lambda s: s.started_at, default=None)
            label = night_label(
                instance,
                latest.run_id if latest else None,
                day or (latest.started_at[:10] if latest else datetime.now(UTC).date().isoformat()),
            )
            until = datetime.now(UTC) + timedelta(hours=1)
            lines = deliver(
                instance,
                block.model_copy(update={"night": label}),
                label,
                entry.alerts,
                kinds,
                os.environ,
                until,
                patient=True,
            )
            for line in lines:
                click.echo(line, err=True)
    finally:
        instance.dispose()
