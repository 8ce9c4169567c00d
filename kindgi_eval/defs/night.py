"""The `night_findings` sensor: once a tenant's runs of the nightly schedule's latest tick have all ended (or at the
deadline, when some never did), it sends the tenant's findings to the webhooks its `alerts` name, once. Reads the
instance, the tenants file and the store; posts to webhooks (`defs.alerts`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import dagster as dg

from kindgi_eval.defs.alerts import deliver, kept, sent_key
from kindgi_eval.defs.lineage import PARENT_RUN_TAG, PARTITION_TAG
from kindgi_eval.defs.recovery import WILL_RETRY_TAG
from kindgi_eval.defs.run_ends import record_ended_runs
from kindgi_eval.defs.schedules import schedule_cron, tick_label
from kindgi_eval.inputs import TenantSuite, load_tenants
from kindgi_eval.reports import night_of
from kindgi_eval.rules import WORSE, InputError, Problem, alerted
from kindgi_eval.store import night_runs, store_root

DEADLINE_ENV = "KINDGI_NIGHT_DEADLINE"
"""How long after the schedule's tick a tenant's night is sent even if some of its runs never ended: `4h`, `90m`."""
DEFAULT_DEADLINE = "4h"
RETRY_AFTER_DEADLINE = timedelta(hours=1)
"""How long after the deadline a webhook that fails in a way a retry may mend is still tried."""
INTERVAL_S = 60
"""How often the sensor looks."""
SCHEDULE = "nightly_suites"
# Dagster 1.13 tags a run its scheduler launched with the schedule's name and the tick's time (UTC, ISO 8601).
SCHEDULE_TAG = "dagster/schedule_name"
TICK_TAG = ".dagster/scheduled_execution_time"
DONE = "done"
"""What the instance keeps under a tenant's night once nothing more will be sent for it."""


def night_deadline(environ: Mapping[str, str] | None = None) -> timedelta:
    """KINDGI_NIGHT_DEADLINE as a duration (`4h`, `90m`, `30s`); InputError when it is not one."""
    text = (os.environ if environ is None else environ).get(DEADLINE_ENV) or DEFAULT_DEADLINE
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([hms])\s*", text)
    if not found:
        raise InputError(
            [
                Problem(
                    DEADLINE_ENV,
                    None,
                    None,
                    f"{text!r} is not a duration. Write hours, minutes or seconds: 4h, 90m, 300s.",
                )
            ]
        )
    return timedelta(**{{"h": "hours", "m": "minutes", "s": "seconds"}[found[2]]: float(found[1])})


def latest_tick(instance: dg.DagsterInstance) -> datetime | None:
    """The time of the nightly schedule's latest tick that launched a run; None before its first."""
    records = instance.get_run_records(dg.RunsFilter(tags={SCHEDULE_TAG: SCHEDULE}), limit=1)
    tick = records[0].dagster_run.tags.get(TICK_TAG) if records else None
    return datetime.fromisoformat(tick) if tick else None


def night_label(instance: dg.DagsterInstance, run_id: str | None, day: str) -> str:
    """The night a tenant's findings are sent once for, the same for this sensor and `kindgi-eval night --send`: the
    label of the schedule's tick that launched `run_id` (`tick_label`, what the sensor keys a night by), else `day`
    (a run cron started, or none)."""
    run = instance.get_run_by_id(run_id) if run_id else None
    tick = run.tags.get(TICK_TAG) if run is not None else None
    return tick_label(schedule_cron(), datetime.fromisoformat(tick)) if tick else day


def runs_ended(instance: dg.DagsterInstance, suites: Sequence[TenantSuite], tick: datetime) -> tuple[bool, int]:
    """Whether every suite has a run created since `tick` and every such run has ended; and how many have not. A run
    that failed and that Dagster will retry has not ended until its retry is made: the night is its retry's."""
    waiting, missing = 0, 0
    for s in suites:
        records = instance.get_run_records(dg.RunsFilter(tags={PARTITION_TAG: s.key}, created_after=tick))
        retried = {r.dagster_run.tags.get(PARENT_RUN_TAG) for r in records}
        missing += not records
        waiting += sum(
            not r.dagster_run.is_finished
            or (r.dagster_run.tags.get(WILL_RETRY_TAG) == "true" and r.dagster_run.run_id not in retried)
            for r in records
        )
    return waiting == 0 and missing == 0, waiting + missing


def tell_tenants(
    instance: dg.DagsterInstance,
    suites: Sequence[TenantSuite],
    tick: datetime,
    now: datetime,
    cron: str,
    deadline: timedelta,
    environ: Mapping[str, str],
) -> list[str]:
    """One look at the night of `tick` for every tenant that has webhooks: a tenant whose runs have all ended, or
    every one once the deadline passed, is sent its findings (once); a line for each thing done or waited for."""
    label = tick_label(cron, tick)
    root = store_root()
    by_tenant: dict[str, list[TenantSuite]] = {}
    for s in suites:
        if s.entry.alerts:
            by_tenant.setdefault(s.tenant, []).append(s)
    lines = []
    for tenant, own in by_tenant.items():
        done_key = f"kindgi/night/{tenant}@{label}"
        if instance.run_storage.get_cursor_values({done_key}).get(done_key) == DONE:
            continue
        ended, open_runs = runs_ended(instance, own, tick)
        if not ended and now < tick + deadline:
            lines.append(
                f"{tenant}: waiting for {open_runs} run{'s' if open_runs > 1 else ''} of the night, until {(tick + deadline).isoformat(timespec='minutes')}"
            )
            continue
        record_ended_runs(instance, root, tick, {})  # a run that failed is a row of `runs` before the night is read
        found = night_of(
            [(tenant, s) for s in night_runs(root, [s.key for s in own], since=tick.isoformat(timespec="seconds"))],
            label,
            missing=True,
        )
        (block,) = found.tenants
        kinds = own[0].entry.alert_on or list(WORSE)
        if not alerted(block.findings(), kinds):
            lines.append(f"{tenant}: nothing got worse; nothing sent")
            instance.run_storage.set_cursor_values({done_key: DONE})
            continue
        lines += deliver(
            instance, block, label, own[0].entry.alerts or [], kinds, environ, tick + deadline + RETRY_AFTER_DEADLINE
        )
        states = [kept(instance, sent_key(tenant, label, v)) for v in own[0].entry.alerts or []]
        if all(d is None or d.state != "retrying" for d in states):
            instance.run_storage.set_cursor_values({done_key: DONE})
    return lines


@dg.sensor(
    name="night_findings",
    minimum_interval_seconds=INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Sends each tenant that names webhooks (alerts in the tenants file) what got worse in the nightly "
    "schedule's latest tick, once its runs have all ended or at KINDGI_NIGHT_DEADLINE (default 4 h after the tick); "
    "once per tenant and night. Each attempt and its outcome is in the tick's log.",
)
def night_findings(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    """One look at the latest tick's night for every tenant with webhooks."""
    try:
        tenants = load_tenants(partial=True)  # an entry with a typo is told by `night`, and the others are sent theirs
        deadline = night_deadline()
        cron = schedule_cron()
    except InputError as e:
        return dg.SkipReason(f"Nothing sent: {e}")
    if not any(s.entry.alerts for s in tenants.suites):
        return dg.SkipReason(f"No tenant of {tenants.source} names webhooks (alerts).")
    tick = latest_tick(context.instance)
    if tick is None:
        return dg.SkipReason("The nightly schedule has launched no run yet.")
    for left in tenants.skipped:
        context.log.warning(f"not told: {left.tenant}: its tenants-file entry does not validate: {left.reason()}")
    lines = tell_tenants(context.instance, tenants.suites, tick, datetime.now(UTC), cron, deadline, os.environ)
    for line in lines:
        context.log.info(line)
    return dg.SkipReason(
        "\n".join(lines) if lines else f"Every tenant's night of {tick.isoformat(timespec='minutes')} was told already."
    )
