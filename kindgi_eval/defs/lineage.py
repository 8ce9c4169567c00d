"""Which run a run reads each of its inputs from, and which killed runs it finishes.

A run reads an upstream table from the first of:
1. itself, when it materialised that asset;
2. the killed runs it finishes, nearest first (see `parent_of`): Dagster's re-execution from failure runs only the
   steps that did not succeed, and reads the others' tables from the run that made them;
3. the run a replay names: `kindgi-eval replay --from` tags it `kindgi/replies_from`, a launchpad run sets
   `eval_settings`' `replay_from`, which must name a stored run of the same suite (`store.replay_source`);
4. otherwise (a launchpad run materialising only some assets), the latest run that materialised the asset and had
   finished successfully before this run started. A run still going, or one that failed, is never read, and every
   step of the run picks the same source however many runs finish meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime

import dagster as dg

from kindgi_eval.kinds import Pins
from kindgi_eval.store import StorePath, find_table, replay_source

SOURCE_RUN_TAG = "kindgi/replies_from"
"""A replay's source run: the run whose stored suite, replies and outcomes it judges."""
RESUMES_TAG = "kindgi/resumes"
"""The killed run `kindgi-eval run --resume` finishes."""
BASELINE_TAG = "kindgi/baseline_run"
"""The run a regression suite's run is compared with, resolved once: by `kindgi-eval run` before the run starts,
else by the run's `suite` step, which records it here; a resume or a re-execution carries it on."""
VARIANTS_TAG = "kindgi/variants"
"""The agents a pairwise suite's variants A and B are, as JSON `[A, B]`, resolved once as `BASELINE_TAG` is."""
PINNED_TAGS = (BASELINE_TAG, VARIANTS_TAG)
"""The tags a resumed run takes from the run it finishes, so that it evaluates against what that run resolved."""


def resolved_tags(pins: Pins) -> dict[str, str]:
    """The tags that pin a regression suite's baseline run and a pairwise suite's variants to a run."""
    return {
        **({BASELINE_TAG: pins.baseline} if pins.baseline else {}),
        **({VARIANTS_TAG: json.dumps(list(pins.variants))} if pins.variants else {}),
    }


def pinned_by(tags: Mapping[str, str]) -> Pins:
    """What a run's tags pin it to already (nothing for a run that starts afresh)."""
    variants = tags.get(VARIANTS_TAG)
    return Pins(baseline=tags.get(BASELINE_TAG), variants=tuple(json.loads(variants)) if variants else None)


REPLAY_FROM_CONFIG = ("resources", "eval_settings", "config", "replay_from")
"""Where a launchpad run's config names the run a replay re-judges (`EvalSettings.replay_from`)."""
REPLAY_FROM_FIELD = "resources.eval_settings.config.replay_from"
PARTITION_TAG = "dagster/partition"
"""The tenant suite a run evaluates, as Dagster tags a partitioned run."""
PARENT_RUN_TAG = "dagster/parent_run_id"
FROM_FAILURE_TAGS = ("dagster/is_resume_retry", "dagster/is_asset_resume_retry")
"""Tags Dagster sets on a re-execution from (asset) failure, and on an automatic retry of a failed run."""
LATEST_CANDIDATES = 100
"""How many latest materialisations of an asset are looked through for one made by a finished run."""


def parent_of(run: dg.DagsterRun) -> str | None:
    """The killed run this run finishes, whose recorded replies and judge samples it reuses: the parent of a Dagster
    re-execution from failure, or the run `kindgi-eval run --resume` names. A re-execution of every step starts
    afresh (even if the tags it copied from its parent name a run it resumed)."""
    parent = run.parent_run_id or run.tags.get(PARENT_RUN_TAG)  # the UI sets both; `execute_job` only the first
    if parent:
        return parent if any(run.tags.get(t) == "true" for t in FROM_FAILURE_TAGS) else None
    return run.tags.get(RESUMES_TAG)


def lineage(instance: dg.DagsterInstance, run: dg.DagsterRun) -> list[str]:
    """This run's id, then the killed run it finishes, then the one that run finished, and so on."""
    return [run_id for run_id, _ in lineage_runs(instance, run)]


def lineage_runs(instance: dg.DagsterInstance, run: dg.DagsterRun) -> list[tuple[str, dg.DagsterRun | None]]:
    """`lineage`, each id with the run the instance holds under it (None where it no longer holds it)."""
    line: list[tuple[str, dg.DagsterRun | None]] = [(run.run_id, run)]
    current: dg.DagsterRun | None = run
    while current is not None and (parent := parent_of(current)) is not None and parent not in (i for i, _ in line):
        current = instance.get_run_by_id(parent)
        line.append((parent, current))
    return line


def input_run(instance: dg.DagsterInstance, root: StorePath, asset: str, partition: str, run: dg.DagsterRun) -> str:
    """The run whose stored table of `asset` this run reads (see the module's order); FileNotFoundError if none."""
    for run_id in lineage(instance, run):
        if find_table(root, asset, partition, run_id) is not None:
            return run_id
    tagged = run.tags.get(SOURCE_RUN_TAG)
    if tagged:
        return tagged  # `kindgi-eval replay` checked it before the run started
    named = launchpad_replay_from(run)
    if named:
        replay_source(root, named, REPLAY_FROM_FIELD, partition)  # InputError unless a stored run of this suite
        return named
    return latest_finished(instance, dg.AssetKey(asset), partition, run)


def replay_from(run: dg.DagsterRun) -> str | None:
    """The run whose stored replies this run re-judges, when it is a replay that names one: the CLI's tag, else the
    launchpad's `replay_from`."""
    return run.tags.get(SOURCE_RUN_TAG) or launchpad_replay_from(run)


def launchpad_replay_from(run: dg.DagsterRun) -> str | None:
    """`eval_settings`' `replay_from` as the run's config recorded it (the IO manager reads inputs before any asset
    body sees the resource)."""
    value: object = run.run_config
    for key in REPLAY_FROM_CONFIG:
        value = value.get(key) if isinstance(value, dict) else None
    return (value.strip() or None) if isinstance(value, str) else None


def latest_finished(instance: dg.DagsterInstance, asset_key: dg.AssetKey, partition: str, run: dg.DagsterRun) -> str:
    """The latest run that materialised `asset_key` for the partition and had succeeded before `run` started."""
    started = _start_time(instance, run.run_id)
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition]), limit=LATEST_CANDIDATES
    ).records
    for record in records:
        if record.run_id == run.run_id:
            continue
        made_by = instance.get_run_record_by_id(record.run_id)
        if (
            made_by is not None
            and made_by.dagster_run.status == dg.DagsterRunStatus.SUCCESS
            and made_by.end_time is not None
            and made_by.end_time <= started
        ):
            return record.run_id
    raise FileNotFoundError(
        f"{asset_key.to_user_string()} of suite {partition} was never materialised by a run that had finished "
        "before this one started; materialise the whole chain first"
    )


def run_day(instance: dg.DagsterInstance, run_id: str) -> str:
    """The UTC day a run started, the same for every asset it writes even across midnight."""
    return datetime.fromtimestamp(_start_time(instance, run_id), UTC).date().isoformat()


def _start_time(instance: dg.DagsterInstance, run_id: str) -> float:
    record = instance.get_run_record_by_id(run_id)
    started = record.start_time if record and record.start_time else None
    return started if started else datetime.now(UTC).timestamp()
