"""A tenant suite's run that failed or was stopped, kept in the store as a row of `runs` with its state and error,
and the sensor that keeps every such run of the instance. Reads the instance, writes the store."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import dagster as dg

from kindgi_eval.defs.jobs import EVALUATE, REPLAY
from kindgi_eval.defs.lineage import PARTITION_TAG
from kindgi_eval.inputs import TAG_TENANT
from kindgi_eval.store import RunEndRow, StorePath, record_run_end, store_root

ENDED = {dg.DagsterRunStatus.FAILURE: "failed", dg.DagsterRunStatus.CANCELED: "stopped"}
"""The Dagster run statuses of a run that did not complete, and the state `runs` shows for each."""
INTERVAL_S = 30
"""How often the sensor looks for runs that ended without completing."""
LOOKBACK = timedelta(days=2)
"""How far back the sensor's first look goes."""


def _moment(timestamp: float | None) -> str:
    return datetime.fromtimestamp(timestamp or datetime.now(UTC).timestamp(), UTC).isoformat(timespec="seconds")


def tenant_of(partition: str) -> str:
    """The tenant a suite partition names (`acme.golden`, `acme@acme.pricing`): the part before its first `.` or `@`."""
    return re.split(r"[.@]", partition, maxsplit=1)[0]


def failure_cause(failure: dg.DagsterEvent) -> str:
    """What failed a step, in its own words: Dagster wraps the step's exception in one of its own ("Error occurred
    while executing op ..."), which names the step and not the cause; the step is named, then the innermost cause."""
    error = failure.step_failure_data.error
    said = error.message.strip()
    while error.cause is not None:
        error = error.cause
    return said if error.message.strip() == said else f"{said} {error.message.strip()}"


def run_error(instance: dg.DagsterInstance, run_id: str, status: dg.DagsterRunStatus) -> str | None:
    """What ended a run, in its own words: the first step's failure (its cause), else the run's failure message;
    for a stopped run, that it was stopped."""
    if status == dg.DagsterRunStatus.CANCELED:
        return "the run was stopped before it completed"
    steps = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    if steps and steps[0].dagster_event is not None:
        return failure_cause(steps[0].dagster_event)
    ended = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    return (ended[0].message or None) if ended else None


def record_ended_run(instance: dg.DagsterInstance, root: StorePath, record: dg.RunRecord) -> bool:
    """Keep a run of a suite that failed or was stopped as its row of `runs` (once); whether it was written. A run
    of no suite partition, or one that completed, is not kept."""
    run = record.dagster_run
    state = ENDED.get(run.status)
    partition = run.tags.get(PARTITION_TAG)
    if state is None or partition is None:
        return False
    row = RunEndRow(
        tenant=run.tags.get(TAG_TENANT) or tenant_of(partition),
        state=state,
        error=run_error(instance, run.run_id, run.status),
        started_at=_moment(record.start_time or record.create_timestamp.timestamp()),
        finished_at=_moment(record.end_time or record.update_timestamp.timestamp()),
    )
    return record_run_end(root, partition, run.run_id, row)


def record_ended_runs(
    instance: dg.DagsterInstance, root: StorePath, since: datetime, tags: dict[str, str] | None = None
) -> int:
    """Keep every suite run of the chain's jobs updated since `since` that failed or was stopped (only those
    carrying `tags`, when given); how many were newly kept."""
    records = instance.get_run_records(
        dg.RunsFilter(job_name=None, statuses=list(ENDED), updated_after=since, tags=tags or {})
    )
    return sum(record_ended_run(instance, root, r) for r in records if r.dagster_run.job_name in (EVALUATE, REPLAY))


@dg.sensor(
    name="ended_runs",
    minimum_interval_seconds=INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Keeps every tenant suite's run that failed or was stopped as a row of the store's `runs` view, with "
    "its state and error, so that `kindgi-eval runs`, `sql` and `night` see it.",
)
def ended_runs(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    """Keep the runs that ended without completing since the last look (the cursor, a UTC timestamp)."""
    now = datetime.now(UTC)
    since = datetime.fromisoformat(context.cursor) if context.cursor else now - LOOKBACK
    kept = record_ended_runs(context.instance, store_root(), since - timedelta(seconds=INTERVAL_S))
    context.update_cursor(now.isoformat())
    return dg.SkipReason(
        f"kept {kept} run{'s' if kept != 1 else ''} that failed or was stopped"
        if kept
        else "no run failed or was stopped"
    )
