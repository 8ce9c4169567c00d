"""The sensor that finishes a tenant suite's run Dagster gave up on without trying it again.

Dagster's run retries (`run_retries` in the instance) retry a failed run from its failure, but not when the retry
itself cannot be made: a run that fails while its code server is dead is marked `dagster/will_retry=false` after
"Failed to retry run", and stays failed. This sensor resumes such a run as `kindgi-eval run --resume` would, from
what it recorded, so a fault of the night's services costs no tenant its night. Reads the instance only.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import dagster as dg

from kindgi_eval.defs.jobs import EVALUATE, evaluate_suite
from kindgi_eval.defs.lineage import PARTITION_TAG, RESUMES_TAG

RECOVERY_TAG = "kindgi/recovery"
"""Which of the sensor's resumptions in its line a run is: 1 for the first the sensor started, 2 for one that resumed
that one."""
RECOVERY_LIMIT = 2
"""Resumptions by the sensor in one line: a run that keeps failing where Dagster cannot retry it is left failed."""
LOOKBACK = timedelta(days=1)
"""How far back a failed run is looked at: the night's, not last week's."""
INTERVAL_S = 60
"""How often the sensor looks; the daemon reloads a dead code server's location every 60 s."""
WILL_RETRY_TAG = "dagster/will_retry"
"""The tag Dagster's run retries set on a failed run once they have decided whether to retry it ("true" or "false")."""
AUTO_RETRY_RUN_ID_TAG = "dagster/auto_retry_run_id"
"""The tag naming the retry Dagster made of a failed run."""
RETRY_NUMBER_TAG = "dagster/retry_number"
"""The tag counting a run's place in its line of Dagster's retries."""
RUN_FAILURE_REASON_TAG = "dagster/failure_reason"
"""The tag saying why a run failed; `STEP_FAILURE` when a step of it raised."""
STEP_FAILURE = "STEP_FAILURE"
DAGSTERS = ("dagster/", ".dagster/")
"""The prefixes of Dagster's own tags (a retry's, a schedule's, its launch's), which a run it did not make must not
carry."""


def is_given_up(tags: Mapping[str, str], max_retries: int, retries_step_failures: bool) -> bool:
    """Whether a failed run was left failed by Dagster for want of a retry it could make, not for good.

    Dagster has decided (`will_retry` is "false") and made no retry of it. A step's own failure counts as for good once
    Dagster's retries were spent (a bad suite fails every time), and always where the instance does not retry step
    failures; any other failure (the run worker or its code server gone) is the machine's, and is resumed while the
    line has recoveries left."""
    if tags.get(WILL_RETRY_TAG) != "false" or AUTO_RETRY_RUN_ID_TAG in tags:
        return False
    if int(tags.get(RECOVERY_TAG, "0")) >= RECOVERY_LIMIT:
        return False
    if tags.get(RUN_FAILURE_REASON_TAG) != STEP_FAILURE:
        return True
    return retries_step_failures and int(tags.get(RETRY_NUMBER_TAG, "0")) < max_retries


def recovery_request(run: dg.DagsterRun) -> dg.RunRequest:
    """A run that resumes `run` from its recordings, with its tags (its pinned settings among them), keyed by its id so
    that it is started once however many ticks see it."""
    own = {tag: value for tag, value in run.tags.items() if not tag.startswith(DAGSTERS)}
    return dg.RunRequest(
        run_key=f"{run.run_id}@recovery",
        partition_key=run.tags[PARTITION_TAG],
        tags={**own, RESUMES_TAG: run.run_id, RECOVERY_TAG: str(int(run.tags.get(RECOVERY_TAG, "0")) + 1)},
        asset_selection=sorted(run.asset_selection, key=dg.AssetKey.to_user_string) if run.asset_selection else None,
    )


def has_later_run(instance: dg.DagsterInstance, run: dg.DagsterRun, created: datetime) -> bool:
    """Whether the same suite has a run created after `run` (a retry, a resumption, the next tick's): the latest one is
    what the suite's night hangs on."""
    later = instance.get_run_records(
        dg.RunsFilter(tags={PARTITION_TAG: run.tags[PARTITION_TAG]}, created_after=created), limit=1
    )
    return bool(later)


@dg.sensor(
    name="given_up_runs",
    job=evaluate_suite,
    minimum_interval_seconds=INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Resumes, from what it recorded, a tenant suite's run that failed where Dagster's run retries could "
    "not retry it (its code server dead at the time), at most twice in a line; only where the instance enables run "
    "retries.",
)
def given_up_runs(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One run request per suite run of the last day that Dagster left failed without a retry (`is_given_up`)."""
    instance = context.instance
    if not instance.run_retries_enabled:
        return dg.SensorResult(skip_reason="The instance does not retry runs (run_retries), so none is resumed.")
    failed = instance.get_run_records(
        dg.RunsFilter(
            job_name=EVALUATE,
            statuses=[dg.DagsterRunStatus.FAILURE],
            updated_after=datetime.now(UTC) - LOOKBACK,
            tags={WILL_RETRY_TAG: "false"},
        )
    )
    requests = [
        recovery_request(record.dagster_run)
        for record in failed
        if PARTITION_TAG in record.dagster_run.tags
        and is_given_up(
            record.dagster_run.tags, instance.run_retries_max_retries, instance.run_retries_retry_on_asset_or_op_failure
        )
        and not has_later_run(instance, record.dagster_run, record.create_timestamp)
    ]
    return dg.SensorResult(run_requests=requests, skip_reason=None if requests else "No run was given up on.")
