"""Resuming a killed run: the paid stages record their rows as they arrive, and a run that finishes a killed one
(`defs.lineage.parent_of`) asks only for what the killed runs had not recorded.

Which run id a resume writes under: its own. `kindgi-eval run --resume` starts a new Dagster run tagged
`kindgi/resumes=<killed run>`, and Dagster's re-execution from failure creates one tagged
`dagster/parent_run_id`; either way the new run stores its tables under its own id, reading the killed runs'
recordings (and, for a re-execution, the tables of the steps that had succeeded) by their ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import dagster as dg

from kindgi_eval.defs.lineage import input_run, lineage, parent_of, replay_from, run_day
from kindgi_eval.inputs import (
    RunSettings,
    changes_since,
    load_suite,
    manifest_of,
)
from kindgi_eval.kinds import Stage, kinds, models_of, table_named
from kindgi_eval.rules import InputError
from kindgi_eval.steps import BatchSetup, agent_calls_saved, recorded_key, sample_key
from kindgi_eval.store import (
    BatchWriter,
    Manifest,
    StorePath,
    area_run_id,
    claim,
    find_run_areas,
    from_table,
    read_batches,
    read_manifest,
    read_sent,
    read_table,
    run_area,
    write_manifest,
    write_sent,
)

KEY_OF: dict[str, Callable[[Any], object]] = {
    "agent_replies": recorded_key,
    "judge_samples": sample_key,
    **{
        k.stage.table: k.stage.recorded_key
        for k in kinds().values()
        if k.stage is not None and k.stage.recorded_key is not None
    },
}
"""The paid stages, and what names one of their rows: a reply by its case (a scenario's by how far it got), a sample by subject, criterion and
number, and a kind's own paid stage's rows as it says (a judged pair by its prompt or labelled pair)."""


def manifest_now(context: dg.AssetExecutionContext, settings: RunSettings, config_hash: str) -> Manifest:
    """What this run's rows are recorded under: its settings, the hash of the suite files now, and `config_hash`, the
    tenant file's as this run read it."""
    return manifest_of(
        context.run.run_id,
        context.partition_key,
        settings,
        suite_hash=load_suite(settings.eval_dir, models_of=models_of).hash,
        config_hash=config_hash,
        replies_from=replay_from(context.run),
        resumes=parent_of(context.run),
    )


def area_of(root: StorePath, partition: str, run_id: str) -> StorePath | None:
    """The recordings area of one run, if it has one."""
    return next((a for a in find_run_areas(root, run_id, partition) if area_run_id(a) == run_id), None)


def recorded_rows(root: StorePath, partition: str, run_ids: list[str], asset: str, now: Manifest | None = None) -> list:
    """The rows of `asset` the given runs recorded, nearest run first, each row once: a run's whole table when it
    stored one, else the batches it recorded before it was killed.

    With `now`, a run's rows are reused only if its manifest matches: InputError naming what changed otherwise."""
    stored = table_named(asset)
    key, rows = KEY_OF[asset], {}
    for run_id in run_ids:
        area = area_of(root, partition, run_id)
        manifest = read_manifest(area) if area is not None else None
        if now is not None and manifest is not None and run_id != now.run_id:
            problems = changes_since(manifest, now)
            if problems:
                raise InputError(problems)
        table = read_table(root, stored, partition, run_id)
        found = (
            from_table(table, stored.row)
            if table is not None
            else read_batches(area / asset, stored.row)
            if area is not None
            else []
        )
        for row in found:
            rows.setdefault(key(row), row)
    return list(rows.values())


@contextmanager
def recording(
    context: dg.AssetExecutionContext, root: StorePath, asset: str, now: Manifest
) -> Iterator[tuple[list, Callable]]:
    """(what the killed runs this run finishes recorded, where to record each new row) for one paid stage.

    Holds the locks of this run's area and of the killed runs' (a run still recording cannot be resumed, nor
    resumed twice at once), writes this run's manifest, and flushes the last batch on the way out."""
    ids = lineage(context.instance, context.run)
    partition = context.partition_key
    for run_id in ids[1:]:
        area = area_of(root, partition, run_id)
        if area is not None and not claim(area):
            raise dg.Failure(
                f"run {run_id} is still running (a process holds {area}/lock); resume it once it has ended."
            )
    try:
        done = recorded_rows(root, partition, ids, asset, now)
    except InputError as e:
        raise dg.Failure(description="\n".join(str(p) for p in e.problems)) from None
    own = run_area(root, partition, run_day(context.instance, context.run.run_id), context.run.run_id)
    if not claim(own):
        raise dg.Failure(f"another process is recording run {context.run.run_id} ({own}/lock).")
    if read_manifest(own) is None:
        write_manifest(own, now)
    if len(done):
        context.log.info(
            f"{asset}: {len(done)} rows recorded by run {', '.join(ids[1:]) or 'this run'} are reused, not asked again"
        )
    with BatchWriter(own / asset, table_named(asset).row) as writer:
        yield done, writer.add


def batches_sent(context: dg.AssetExecutionContext, root: StorePath, asset: str) -> BatchSetup:
    """Where `asset`'s stage records each provider batch it sends (this run's area), and the batches the killed runs
    this run finishes had sent, the nearest run's for a phase they both sent, so that none is sent again."""
    partition = context.partition_key
    sent: dict[str, str] = {}
    for run_id in reversed(lineage(context.instance, context.run)):
        if (area := area_of(root, partition, run_id)) is not None:
            sent.update(read_sent(area, asset))
    own = run_area(root, partition, run_day(context.instance, context.run.run_id), context.run.run_id)

    def remember(phase: str, batch_id: str) -> None:
        write_sent(own, asset, phase, batch_id)
        context.log.info(f"the {phase} requests went as batch {batch_id}; a resume of this run reads it back")

    return BatchSetup(sent, remember)


def resume_summary(
    context: dg.AssetExecutionContext, root: StorePath, replies: list, samples: list, stage: Stage | None
) -> tuple[str | None, int, int]:
    """(the killed run this run finished, agent calls saved, judge calls saved): how many of this run's replies,
    samples and the rows of its kind's own paid stage (so many judge calls each: a pair judged in both orders, two)
    the killed runs had recorded. (None, 0, 0) for a run that started afresh."""
    ids = lineage(context.instance, context.run)
    if len(ids) == 1:
        return None, 0, 0
    earlier = ids[1:]

    def saved(asset: str, rows: list) -> int:
        recorded = {KEY_OF[asset](r) for r in recorded_rows(root, context.partition_key, earlier, asset)}
        return sum(KEY_OF[asset](r) in recorded for r in rows)

    judge_calls = saved("judge_samples", samples)
    if stage is not None and stage.recorded_key is not None:
        source = input_run(context.instance, root, stage.table, context.partition_key, context.run)
        own = from_table(read_table(root, stage.stored, context.partition_key, source), stage.row)
        judge_calls += stage.judge_calls_per_row * saved(stage.table, own)
    return (
        ids[1],
        agent_calls_saved(replies, recorded_rows(root, context.partition_key, earlier, "agent_replies")),
        judge_calls,
    )
