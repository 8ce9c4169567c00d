"""The nightly schedule over every declared tenant suite, and the sensor that runs a suite whose content changed."""

from __future__ import annotations

import os
from datetime import datetime
from typing import NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import dagster as dg

from kindgi_eval.defs.assets import SUITES
from kindgi_eval.defs.jobs import EVALUATE, evaluate_suite, kind_selection
from kindgi_eval.defs.registered import PlannedRun, planned_run
from kindgi_eval.defs.resources import pinned_tags
from kindgi_eval.inputs import Tenants, TenantSuite, load_tenants
from kindgi_eval.rules import InputError, Problem

NIGHTLY_CRON = "0 2 * * *"
"""02:00 every day, in the schedule's timezone."""
CRON_ENV = "KINDGI_SCHEDULE_CRON"
"""A cron expression that replaces the nightly 02:00, for a profile that must see ticks sooner (every minute, say)."""
TIMEZONE_ENV = "KINDGI_SCHEDULE_TIMEZONE"
"""The IANA timezone the nightly schedule's 02:00 is in; default UTC."""
DEFAULT_TIMEZONE = "UTC"
SENSOR_INTERVAL_S = 60
"""How often the sensor hashes every declared suite (its files' bytes, or its registered version's hash)."""


def schedule_timezone(environ: dict[str, str] | None = None) -> str:
    """The nightly schedule's timezone from KINDGI_SCHEDULE_TIMEZONE; InputError when it is not an IANA name."""
    name = (os.environ if environ is None else environ).get(TIMEZONE_ENV) or DEFAULT_TIMEZONE
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(
            [
                Problem(
                    TIMEZONE_ENV,
                    None,
                    None,
                    f"{name!r} is not a timezone. Use an IANA name such as Europe/Lisbon or UTC.",
                )
            ]
        ) from None
    return name


def schedule_cron(environ: dict[str, str] | None = None) -> str:
    """The schedule's cron expression from KINDGI_SCHEDULE_CRON, default 02:00 daily; InputError when it is not one."""
    text = (os.environ if environ is None else environ).get(CRON_ENV) or NIGHTLY_CRON
    try:
        dg.ScheduleDefinition(name="cron_check", cron_schedule=text, job=evaluate_suite)  # Dagster's own reading
    except dg.DagsterInvalidDefinitionError:
        raise InputError(
            [
                Problem(
                    CRON_ENV,
                    None,
                    None,
                    f"{text!r} is not a cron expression. Use five fields, such as "
                    f"'{NIGHTLY_CRON}' (02:00 daily) or '*/5 * * * *' (every five minutes).",
                )
            ]
        ) from None
    return text


def tick_label(cron: str, scheduled: datetime) -> str:
    """What a tick's run keys end in: its day for the nightly cron, so a tick retried never runs a suite twice a
    night; its minute for any other cron, which may tick more than once a day."""
    return scheduled.strftime("%Y-%m-%d" if cron == NIGHTLY_CRON else "%Y-%m-%dT%H:%M")


class Requests(NamedTuple):
    """A tick's run requests, and the suites left out, each as `<partition or tenant>: <problem>`."""

    runs: list[dg.RunRequest]
    refused: list[str]


def nightly_requests(tenants: Tenants, tick: str) -> Requests:
    """One run request per tenant suite, keyed by suite and tick (`tick_label`) so a tick retried never runs a suite
    twice; a tenant whose entry has problems, or a suite that cannot be found (`run_request`), is left out with its
    reason, and the others run."""
    runs, refused = [], [f"{s.tenant}: {s.reason()}" for s in tenants.skipped]
    for s in tenants.suites:
        try:
            runs.append(run_request(s, f"{s.key}@{tick}"))
        except InputError as e:
            refused.append(f"{s.key}: {e}")
    return Requests(runs, refused)


def run_request(declared: TenantSuite, run_key: str, planned: PlannedRun | None = None) -> dg.RunRequest:
    """A run of one tenant suite with its settings resolved now, at the tick, and pinned for the whole run. Only what
    is cheap to know is asked here (`planned_run`: no case parsed, no spec checked); the run checks its suite first
    and fails with the problems, so a suite costs its own run at most. InputError when the entry's suite folder or
    registered suite cannot be found."""
    planned = planned or planned_run(declared)
    tags = {**declared.tags(), **pinned_tags(planned.settings), **planned.tags}
    return dg.RunRequest(
        run_key=run_key, partition_key=declared.key, tags=tags, asset_selection=kind_selection(EVALUATE, planned.kind)
    )


def _add_partitions(instance: dg.DagsterInstance, keys: list[str]) -> None:
    missing = [k for k in keys if not instance.has_dynamic_partition(SUITES.name, k)]
    if missing:
        instance.add_dynamic_partitions(SUITES.name, missing)


def nightly_schedule(timezone: str | None = None, cron: str | None = None) -> dg.ScheduleDefinition:
    """The schedule that runs every declared tenant suite at 02:00 in `timezone` (else KINDGI_SCHEDULE_TIMEZONE),
    or at `cron` (else KINDGI_SCHEDULE_CRON)."""
    cron = cron or schedule_cron()

    @dg.schedule(
        name="nightly_suites",
        cron_schedule=cron,
        execution_timezone=timezone or schedule_timezone(),
        job=evaluate_suite,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"At {cron!r} (cron; 02:00 every night unless KINDGI_SCHEDULE_CRON says otherwise), one run per tenant suite declared in the tenants file (KINDGI_TENANTS), "
        "tagged kindgi/tenant and kindgi/suite.",
    )
    def nightly_suites(context: dg.ScheduleEvaluationContext):
        tenants = load_tenants(partial=True)  # an entry with a typo is left out, named, and the others run
        _add_partitions(context.instance, tenants.keys)
        requests = nightly_requests(tenants, tick_label(cron, context.scheduled_execution_time))
        for refused in requests.refused:
            context.log.warning(f"not run: {refused}")
        if requests.runs:
            return requests.runs
        return dg.SkipReason(
            f"No suite of {tenants.source} can run here: {'; '.join(requests.refused)}"
            if requests.refused
            else f"{tenants.source} declares no tenant suite."
        )

    return nightly_suites


def last_suite_hash(instance: dg.DagsterInstance, key: str) -> tuple[str | None, int | None]:
    """The content hash the latest `suite` materialisation of partition `key` recorded, and that event's storage id."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("suite"), asset_partitions=[key]), limit=1
    ).records
    if not records:
        return None, None
    value = records[0].asset_materialization.metadata.get("suite_hash") if records[0].asset_materialization else None
    return (str(value.value) if value is not None else None), records[0].storage_id


@dg.sensor(
    name="suite_changes",
    job=evaluate_suite,
    minimum_interval_seconds=SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Starts a run of a tenant suite whose content hash differs from the one its latest run recorded "
    "(a suite never run counts as changed).",
)
def suite_changes(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One run request per declared suite whose content changed since its latest run: its folder's files hashed, or
    its registered version in force, compared with what the run recorded. Nothing is parsed or checked here; the run
    of a change does that, and fails with the problems of a suite that does not pass."""
    tenants = load_tenants(partial=True)
    requests: list[dg.RunRequest] = []
    not_run: list[str] = []
    for left_out in tenants.skipped:
        not_run.append(left_out.tenant)
        context.log.warning(f"{left_out.tenant}: not run, its tenants-file entry has problems: {left_out.reason()}")
    for declared in tenants.suites:
        try:
            planned = planned_run(declared)  # a registered suite: its version in force
        except InputError as e:
            not_run.append(declared.key)
            context.log.warning(f"{declared.key}: not run: {e}")
            continue
        recorded, event = last_suite_hash(context.instance, declared.key)
        if planned.hash != recorded:
            # Keyed by the new hash and the materialisation it replaces: a change is run once, and changing back
            # to an older content after a newer one was run is a change again.
            requests.append(run_request(declared, f"{declared.key}@{planned.hash[:16]}@{event or 'never'}", planned))
    new = [
        r.partition_key for r in requests if not context.instance.has_dynamic_partition(SUITES.name, r.partition_key)
    ]
    skip = None if requests else ("No suite changed" + (f"; not run: {', '.join(not_run)}" if not_run else "") + ".")
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[SUITES.build_add_request(new)] if new else None,
        skip_reason=skip,
    )


nightly_suites = nightly_schedule()
