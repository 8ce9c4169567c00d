"""Sampling the judge: three samples per criterion, calibration items first, all under one concurrency bound."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, NamedTuple

from kindgi_eval.kinds import cases_of, kind_named
from kindgi_eval.llm import ModelCallError
from kindgi_eval.prompts import judge_messages
from kindgi_eval.rules import (
    DIMENSION_RULES,
    GROUPS,
    SAMPLES,
    VERDICT_SCHEMA,
    CalibrationItem,
    Case,
    Criterion,
    Graded,
    Judge,
    Label,
    Progress,
    Turn,
    Group,
    agree_by_group,
    decide,
    group_of,
    joined_reply,
    read_sample,
)
from kindgi_eval.store import OutcomeRow, ReplyRow, SampleRow, SuiteRow

Record = Callable[[SampleRow], None]
"""Where each sample goes as soon as it is drawn (the run's batch writer)."""


class Subject(NamedTuple):
    """One reply and one criterion to grade on it."""

    row_type: Literal["case", "calibration"]
    id: str
    criterion: Criterion
    history: tuple[Turn, ...]
    text: str
    nudge: bool
    reply: tuple[str, ...]
    label: Label | None = None


def case_subjects(cases: Sequence[Case], replies: Mapping[str, Sequence[str]]) -> list[Subject]:
    """Every criterion of every given case (the caller passes only cases whose assertions held)."""
    return [
        Subject("case", case.id, c, case.history, case.text, case.nudge, tuple(replies[case.id]))
        for case in cases
        for c in case.criteria()
    ]


def calibration_subjects(items: Sequence[CalibrationItem], item_group: Callable[[str], Group] = group_of) -> list[Subject]:
    """Each calibration item's hand-written reply under its one labelled criterion, in the group its suite's kind
    counts it in (`item_group`)."""
    subjects = []
    for item in items:
        group = item_group(item.criterion)
        criterion = Criterion("rubric" if group in DIMENSION_RULES else "review", item.criterion, group)
        subjects.append(Subject("calibration", item.id, criterion, item.history, item.text, False, item.reply, item.label))
    return subjects


SampleKey = tuple[str, str, str, str, int]
"""What names one judge sample: subject kind and id, criterion source and text, sample number."""


def sample_key(row: SampleRow) -> SampleKey:
    """The sample a row holds, as `done` is keyed."""
    return (row.subject, row.subject_id, row.source, row.criterion, row.sample)


def _key_of(subject: Subject, number: int) -> SampleKey:
    return (subject.row_type, subject.id, subject.criterion.source, subject.criterion.criterion, number)


async def sample_all(
    judge: Judge,
    subjects: Sequence[Subject],
    *,
    counted: str,
    catalogue: str,
    slots: asyncio.Semaphore,
    timeout_s: float,
    progress: Progress | None = None,
    done: Mapping[SampleKey, SampleRow] | None = None,
    record: Record | None = None,
) -> list[SampleRow]:
    """SAMPLES samples of every subject; an error or a bad answer is an invalid sample, never a pass (C6).

    A sample in `done` (recorded by a killed attempt of the run) is not drawn again: that row is the sample. Every
    sample drawn is passed to `record` as soon as it arrives."""
    done = done or {}
    total = len(subjects) * SAMPLES
    drawn = sum(_key_of(s, n) in done for s in subjects for n in range(1, SAMPLES + 1))

    async def one(subject: Subject, number: int, messages: list[dict[str, str]]) -> SampleRow:
        nonlocal drawn
        if (recorded := done.get(_key_of(subject, number))) is not None:
            return recorded
        async with slots:
            row = await _sample(judge, subject, number, messages, timeout_s)
        if record:
            record(row)
        drawn += 1
        if progress:
            progress(counted, drawn, total)
        return row

    calls = []
    for subject in subjects:
        messages = judge_messages(
            source=subject.criterion.source,
            criterion=subject.criterion.criterion,
            catalogue=catalogue,
            history=subject.history,
            text=subject.text,
            reply=subject.reply,
            nudge=subject.nudge,
        )
        calls += [one(subject, n, messages) for n in range(1, SAMPLES + 1)]
    return list(await asyncio.gather(*calls))


async def _sample(
    judge: Judge, subject: Subject, number: int, messages: list[dict[str, str]], timeout_s: float
) -> SampleRow:
    reply_text = joined_reply(subject.reply)
    content, error, usage, latency_ms = None, None, None, 0.0
    try:
        completion = await judge.grade(messages, timeout_s=timeout_s, schema=VERDICT_SCHEMA)
        content, usage, latency_ms = completion
    except ModelCallError as e:  # a provider fault is an invalid sample and the run goes on; anything else is a bug
        error = f"{type(e).__name__}: {e}"
    sample = read_sample(content, reply_text, error)
    return SampleRow(
        subject=subject.row_type,
        subject_id=subject.id,
        source=subject.criterion.source,
        criterion=subject.criterion.criterion,
        group=subject.criterion.group,
        sample=number,
        label=subject.label,
        vote=sample.vote,
        evidence=sample.evidence,
        reason=sample.reason,
        invalid_reason=sample.invalid_reason,
        raw=content,
        judge=judge.name,
        latency_ms=latency_ms,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        cost_usd=usage.cost_usd if usage else 0.0,
        cost_known=usage.cost_known if usage else True,
    )


def graded_items(samples: Sequence[SampleRow]) -> list[Graded]:
    """Each calibration item's hand label beside the judge's majority verdict on it, in the order sampled."""
    by_item: dict[str, list[SampleRow]] = defaultdict(list)
    for s in samples:
        if s.subject == "calibration":
            by_item[s.subject_id].append(s)
    graded = []
    for item_samples in by_item.values():
        first = item_samples[0]
        verdict = decide([(s.sample, s.vote) for s in item_samples])[1].verdict
        graded.append(Graded(first.group, first.label, verdict, first.subject_id))  # type: ignore[arg-type]
    return graded


async def judge_suite(
    judge: Judge,
    calibration: Sequence[CalibrationItem],
    cases: Sequence[Subject],
    *,
    catalogue: str,
    concurrency: int,
    timeout_s: float,
    progress: Progress | None = None,
    done: Mapping[SampleKey, SampleRow] | None = None,
    record: Record | None = None,
    groups: Sequence[Group] = GROUPS,
    item_group: Callable[[str], Group] = group_of,
) -> list[SampleRow]:
    """Calibrate first, then sample only the case criteria whose group the judge earned in this run.

    Samples in `done` are reused, never drawn again; each new one goes to `record` as it arrives."""
    slots = asyncio.Semaphore(concurrency)
    kwargs = dict(catalogue=catalogue, slots=slots, timeout_s=timeout_s, progress=progress, done=done, record=record)
    samples = await sample_all(judge, calibration_subjects(calibration, item_group), counted="calibration samples drawn", **kwargs)
    agreement = agree_by_group(graded_items(samples), groups=tuple(groups))
    earned = {group for group, a in agreement.items() if a.calibrated}
    return samples + await sample_all(judge, [s for s in cases if s.criterion.group in earned], counted="case samples drawn", **kwargs)


def sample_judge(
    judge: Judge | None,
    suite: Sequence[SuiteRow],
    replies: Sequence[ReplyRow],
    outcomes: Sequence[OutcomeRow],
    calibration: Sequence[CalibrationItem],
    *,
    catalogue: str,
    concurrency: int,
    timeout_s: float,
    progress: Progress | None = None,
    done: Sequence[SampleRow] = (),
    record: Record | None = None,
) -> list[SampleRow]:
    """The `judge_samples` stage: no rows without a judge; else the calibration items' samples, then those of
    every case whose assertions held (an asserted failure never reaches the judge).

    `done` holds the samples a killed attempt of this run recorded: they are not drawn again. Each new sample goes
    to `record` as it arrives, so that a run killed now keeps it."""
    kind = kind_named(suite[0].suite_kind)
    if judge is None or not kind.judged_by_case:
        return []
    failed = {o.case_id for o in outcomes if not o.held}
    held = [c for c in cases_of(suite) if c.id not in failed]
    messages = {r.case_id: r.messages for r in replies}
    return asyncio.run(
        judge_suite(
            judge,
            calibration,
            case_subjects(held, messages),
            catalogue=catalogue,
            concurrency=concurrency,
            timeout_s=timeout_s,
            progress=progress,
            done={sample_key(s): s for s in done},
            record=record,
            groups=kind.groups,
            item_group=kind.item_group,
        )
    )
