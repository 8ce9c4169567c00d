"""Sampling the judge: three samples per criterion, a group's calibration items before its cases, all under one
concurrency bound; or, with the judge's batch API, the calibration items' samples as one batch and then those of the
cases of every group they calibrated as another."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from itertools import product
from typing import Any, Literal, NamedTuple, Protocol, get_args

from kindgi_eval.kinds import cases_of, kind_named, scenarios_of
from kindgi_eval.llm import POLL_S, ModelCallError
from kindgi_eval.prompts import judge_messages, transcript_messages
from kindgi_eval.rules import (
    DIMENSION_RULES,
    GROUPS,
    SAMPLES,
    VERDICT_SCHEMA,
    CalibrationItem,
    Case,
    Completion,
    Criterion,
    Graded,
    Group,
    Judge,
    Label,
    Progress,
    Scenario,
    Turn,
    agree_by_group,
    decide,
    group_of,
    joined_reply,
    read_sample,
    read_transcript_sample,
    transcript,
)
from kindgi_eval.store import OutcomeRow, ReplyRow, SampleRow, SuiteRow, TurnRow


class BatchSetup(NamedTuple):
    """How a judge stage sends its requests through the judge's batch API, and what a killed attempt sent."""

    sent: Mapping[str, str]
    """The batch a killed attempt of this run created for each phase (`calibration`, `cases`), by phase."""
    remember: Callable[[str, str], None]
    """Where the id of a batch created now goes, with its phase, the moment it exists."""
    poll_s: float = POLL_S
    """How long to sleep between two looks at a batch."""


class BatchJudge(Protocol):
    """A judge that also answers a whole batch of requests through its provider's batch API."""

    name: str

    async def grade_batch(
        self,
        requests: Mapping[str, list[dict[str, Any]]],
        *,
        schema: dict | None,
        sent: str | None,
        remember: Callable[[str], None],
        poll_s: float,
    ) -> Mapping[str, Completion | str]:
        """Each request's answer, or the error that stands in for it, by its id."""
        ...


Record = Callable[[SampleRow], None]
"""Where each sample goes as soon as it is drawn (the run's batch writer)."""
VOTES: tuple[str, ...] = get_args(SampleRow.model_fields["vote"].annotation)
"""Every vote a sample can hold, as its row declares them."""


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
    whole: bool = False
    """A scenario's review entry: `history` is the whole conversation and `reply` each agent turn's reply, apart; a
    failure's evidence must be a span of one of them."""


def case_subjects(cases: Sequence[Case], replies: Mapping[str, Sequence[str]]) -> list[Subject]:
    """Every criterion of every given case (the caller passes only cases whose assertions held)."""
    return [
        Subject("case", case.id, c, case.history, case.text, case.nudge, tuple(replies[case.id]))
        for case in cases
        for c in case.criteria()
    ]


def scenario_subjects(scenarios: Sequence[Scenario], turns: Mapping[str, Sequence[TurnRow]]) -> list[Subject]:
    """Every criterion of every given scenario (the caller passes only those whose assertions held): each review entry
    over the whole transcript, then each agent turn's rubric, that turn's reply graded after the conversation before it."""
    subjects = []
    for scenario in scenarios:
        played = turns[scenario.id]
        for c in scenario.criteria(played):
            if c.turn is None:
                replies = tuple(joined_reply(t.messages) for t in played)
                subjects.append(
                    Subject("case", scenario.id, c, transcript(scenario, played), "", False, replies, whole=True)
                )
                continue
            turn = played[c.turn - 1]
            before = transcript(scenario, played[: c.turn - 1])
            subjects.append(Subject("case", scenario.id, c, before, turn.contact_text, False, tuple(turn.messages)))
    return subjects


def calibration_subjects(
    items: Sequence[CalibrationItem], item_group: Callable[[str], Group] = group_of
) -> list[Subject]:
    """Each calibration item's hand-written reply under its one labelled criterion, in the group its suite's kind
    counts it in (`item_group`)."""
    subjects = []
    for item in items:
        group = item_group(item.criterion)
        criterion = Criterion("rubric" if group in DIMENSION_RULES else "review", item.criterion, group)
        subjects.append(
            Subject("calibration", item.id, criterion, item.history, item.text, False, item.reply, item.label)
        )
    return subjects


SampleKey = tuple[str, str, str, str, int | None, int]
"""What names one judge sample: subject kind and id, criterion source and text, the scenario turn graded, sample
number."""


def sample_key(row: SampleRow) -> SampleKey:
    """The sample a row holds, as `done` is keyed."""
    return (row.subject, row.subject_id, row.source, row.criterion, row.turn, row.sample)


def subject_messages(subject: Subject, catalogue: str) -> list[dict[str, Any]]:
    """The judge's request for one criterion of `subject`: over its whole transcript for a conversation-level criterion,
    else over its one reply."""
    if subject.whole:
        return transcript_messages(
            criterion=subject.criterion.criterion, catalogue=catalogue, history=subject.history, replies=subject.reply
        )
    return judge_messages(
        source=subject.criterion.source,
        criterion=subject.criterion.criterion,
        catalogue=catalogue,
        history=subject.history,
        text=subject.text,
        reply=subject.reply,
        nudge=subject.nudge,
    )


def _key_of(subject: Subject, number: int) -> SampleKey:
    c = subject.criterion
    return (subject.row_type, subject.id, c.source, c.criterion, c.turn, number)


def settled_verdict(votes: Sequence[str]) -> str | None:
    """The verdict a criterion's votes so far reach whatever its other samples say (two that agree already decide), or
    None while those could still change it."""
    missing = SAMPLES - len(votes)
    known = [(number, vote) for number, vote in enumerate(votes, 1)]
    reached = {
        decide(known + [(len(votes) + number, vote) for number, vote in enumerate(rest, 1)])[1].verdict
        for rest in product(VOTES, repeat=missing)
    }
    return reached.pop() if len(reached) == 1 else None


class _Sampling:
    """The judge's samples of one stage under one concurrency bound: reused from `done` where a killed attempt drew
    them, else drawn, recorded and counted as they arrive."""

    def __init__(
        self,
        judge: Judge,
        catalogue: str,
        slots: asyncio.Semaphore,
        timeout_s: float,
        progress: Progress | None,
        done: Mapping[SampleKey, SampleRow],
        record: Record | None,
    ):
        self.judge, self.catalogue, self.slots, self.timeout_s = judge, catalogue, slots, timeout_s
        self.progress, self.done, self.record = progress, done, record
        self.counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        """Per count shown (`calibration samples drawn`): samples drawn or reused so far, and samples asked for."""

    def start(self, subject: Subject, counted: str) -> list[asyncio.Task[SampleRow]]:
        """SAMPLES samples of `subject`, each a task queued now for a slot (slots are given out in the order asked)."""
        messages = subject_messages(subject, self.catalogue)
        count = self.counts[counted]
        count[1] += SAMPLES
        count[0] += sum(_key_of(subject, n) in self.done for n in range(1, SAMPLES + 1))
        return [asyncio.ensure_future(self._one(subject, n, messages, counted)) for n in range(1, SAMPLES + 1)]

    async def _one(self, subject: Subject, number: int, messages: list[dict[str, Any]], counted: str) -> SampleRow:
        if (recorded := self.done.get(_key_of(subject, number))) is not None:
            return recorded
        async with self.slots:
            row = await _sample(self.judge, subject, number, messages, self.timeout_s)
        if self.record:
            self.record(row)
        count = self.counts[counted]
        count[0] += 1
        if self.progress:
            self.progress(counted, *count)
        return row


async def _sample(
    judge: Judge, subject: Subject, number: int, messages: list[dict[str, Any]], timeout_s: float
) -> SampleRow:
    """One sample; an error or a bad answer is an invalid sample, never a pass (docs/design.md#fail-closed). A
    conversation-level failure's evidence must be a span of one agent turn."""
    try:
        answer: Completion | str = await judge.grade(messages, timeout_s=timeout_s, schema=VERDICT_SCHEMA)
    except ModelCallError as e:  # a provider fault is an invalid sample and the run goes on; anything else is a bug
        answer = f"{type(e).__name__}: {e}"
    return _sample_row(judge.name, subject, number, answer)


def _sample_row(judge: str, subject: Subject, number: int, answer: Completion | str) -> SampleRow:
    """The sample an answer makes, or the error that stands in for one: invalid, never a pass
    (docs/design.md#fail-closed)."""
    content, error, usage, latency_ms = None, None, None, 0.0
    if isinstance(answer, str):
        error = answer
    else:
        content, usage, latency_ms = answer
    sample = (
        read_transcript_sample(content, subject.reply, error)
        if subject.whole
        else read_sample(content, joined_reply(subject.reply), error)
    )
    return SampleRow(
        subject=subject.row_type,
        subject_id=subject.id,
        source=subject.criterion.source,
        criterion=subject.criterion.criterion,
        group=subject.criterion.group,
        sample=number,
        label=subject.label,
        turn=subject.criterion.turn,
        vote=sample.vote,
        evidence=sample.evidence,
        reason=sample.reason,
        invalid_reason=sample.invalid_reason,
        raw=content,
        judge=judge,
        latency_ms=latency_ms,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        cached_tokens=usage.cached_tokens if usage else 0,
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
        majority = decide([(s.sample, s.vote) for s in item_samples])[1]
        graded.append(Graded(first.group, first.label, majority.verdict, first.subject_id, majority.split))  # type: ignore[arg-type]
    return graded


async def _settled(item: Subject, samples: Sequence[asyncio.Task[SampleRow]]) -> Graded:
    """A calibration item's hand label beside the judge's verdict on it, as soon as its samples so far settle it."""
    votes: list[str] = []
    verdict = None
    for arrived in asyncio.as_completed(samples):
        votes.append((await arrived).vote)
        if (verdict := settled_verdict(votes)) is not None:
            break
    split = verdict is not None and any(v not in (verdict, "invalid") for v in votes)  # settled 2-1, not 2-0
    return Graded(item.criterion.group, item.label, verdict or "ungraded", item.id, split)  # type: ignore[arg-type]


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
    """Calibrate each group, and sample the case criteria of a group the judge earned in this run as soon as that
    group is decided: never before, and without waiting for the other groups' calibration.

    Every calibration sample is queued for a slot before any case sample, so calibration is never held up behind the
    cases; a group is decided once each of its items' samples so far settle its verdict (two that agree do), the
    items' remaining samples being drawn and kept all the same. The rows come back as before: the calibration items'
    samples, then the cases', each in the order of its subjects. Samples in `done` are reused, never drawn again;
    each new one goes to `record` as it arrives."""
    sampling = _Sampling(judge, catalogue, asyncio.Semaphore(concurrency), timeout_s, progress, done or {}, record)
    items = calibration_subjects(calibration, item_group)
    item_samples = [sampling.start(item, "calibration samples drawn") for item in items]
    case_samples: dict[int, list[asyncio.Task[SampleRow]]] = {}

    async def judge_group(group: Group) -> None:
        own = [n for n, item in enumerate(items) if item.criterion.group == group]
        graded = await asyncio.gather(*(_settled(items[n], item_samples[n]) for n in own))
        if agree_by_group(graded, groups=(group,))[group].calibrated:
            for n, subject in enumerate(cases):
                if subject.criterion.group == group:
                    case_samples[n] = sampling.start(subject, "case samples drawn")

    await asyncio.gather(*(judge_group(group) for group in groups))
    calibration_rows = [await task for tasks in item_samples for task in tasks]
    return calibration_rows + [await task for n in sorted(case_samples) for task in case_samples[n]]


PHASE_COUNTS = {"calibration": "calibration samples drawn", "cases": "case samples drawn"}
"""The count each phase's progress line shows, as `judge_suite` shows it."""


def batch_id_of(key: SampleKey) -> str:
    """A sample's request id in a batch: the same for the same sample in every attempt of the run."""
    return "sample-" + hashlib.sha256(json.dumps(key).encode()).hexdigest()[:32]


async def _batch_phase(
    judge: BatchJudge,
    subjects: Sequence[Subject],
    phase: str,
    *,
    catalogue: str,
    batch: BatchSetup,
    done: Mapping[SampleKey, SampleRow],
    record: Record | None,
    progress: Progress | None,
) -> list[SampleRow]:
    """Every sample of `subjects`, in their order: those in `done` reused, the others' requests sent as one batch (or
    read back from the batch a killed attempt sent for this phase), each new row recorded."""
    requests: dict[str, list[dict[str, Any]]] = {}
    for subject in subjects:
        missing = [n for n in range(1, SAMPLES + 1) if _key_of(subject, n) not in done]
        if missing:
            messages = subject_messages(subject, catalogue)
            requests.update((batch_id_of(_key_of(subject, n)), messages) for n in missing)
    answers: Mapping[str, Completion | str] = {}
    if requests:
        try:
            answers = await judge.grade_batch(
                requests,
                schema=VERDICT_SCHEMA,
                sent=batch.sent.get(phase),
                remember=lambda batch_id: batch.remember(phase, batch_id),
                poll_s=batch.poll_s,
            )
        except ModelCallError as e:  # no batch: every sample it was to draw is invalid, and the run goes on
            answers = dict.fromkeys(requests, f"{type(e).__name__}: {e}")
    rows = []
    for subject in subjects:
        for number in range(1, SAMPLES + 1):
            key = _key_of(subject, number)
            if (row := done.get(key)) is None:
                row = _sample_row(judge.name, subject, number, answers[batch_id_of(key)])
                if record:
                    record(row)
            rows.append(row)
    if progress and subjects:
        progress(PHASE_COUNTS[phase], len(rows), len(rows))
    return rows


async def judge_suite_in_batches(
    judge: BatchJudge,
    calibration: Sequence[CalibrationItem],
    cases: Sequence[Subject],
    *,
    catalogue: str,
    batch: BatchSetup,
    progress: Progress | None = None,
    done: Mapping[SampleKey, SampleRow] | None = None,
    record: Record | None = None,
    groups: Sequence[Group] = GROUPS,
    item_group: Callable[[str], Group] = group_of,
) -> list[SampleRow]:
    """`judge_suite` through the judge's batch API: the calibration items' samples as one batch, then the samples of the
    case criteria of every group that batch calibrated as a second. The rows, the verdicts and the calibration are
    those `judge_suite` reaches on the same answers."""
    done = done or {}
    items = calibration_subjects(calibration, item_group)
    item_rows = await _batch_phase(
        judge, items, "calibration", catalogue=catalogue, batch=batch, done=done, record=record, progress=progress
    )
    agreement = agree_by_group(graded_items(item_rows), groups=tuple(groups))
    earned = [
        subject
        for subject in cases
        if (group := agreement.get(subject.criterion.group)) is not None and group.calibrated
    ]
    return item_rows + await _batch_phase(
        judge, earned, "cases", catalogue=catalogue, batch=batch, done=done, record=record, progress=progress
    )


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
    batch: BatchSetup | None = None,
) -> list[SampleRow]:
    """The `judge_samples` stage: no rows without a judge; else the calibration items' samples, then those of
    every case whose assertions held (an asserted failure never reaches the judge). With `batch`, and a judge that
    has a batch API, they go as two batches (`judge_suite_in_batches`); an offline judge has none, and is asked as
    without.

    `done` holds the samples a killed attempt of this run recorded: they are not drawn again. Each new sample goes
    to `record` as it arrives, so that a run killed now keeps it."""
    kind = kind_named(suite[0].suite_kind)
    if judge is None or not kind.checking.judged_by_case:
        return []
    failed = {o.case_id for o in outcomes if not o.held}
    held = [c for c in cases_of(suite) if c.id not in failed]
    held_scenarios = [s for s in scenarios_of(suite) if s.id not in failed]
    messages = {r.case_id: r.messages for r in replies}
    turns = {r.case_id: r.turns or [] for r in replies}
    if batch is not None and hasattr(judge, "grade_batch"):
        return asyncio.run(
            judge_suite_in_batches(
                judge,  # type: ignore[arg-type]
                calibration,
                case_subjects(held, messages) + scenario_subjects(held_scenarios, turns),
                catalogue=catalogue,
                batch=batch,
                progress=progress,
                done={sample_key(s): s for s in done},
                record=record,
                groups=kind.checking.groups,
                item_group=kind.checking.item_group,
            )
        )
    return asyncio.run(
        judge_suite(
            judge,
            calibration,
            case_subjects(held, messages) + scenario_subjects(held_scenarios, turns),
            catalogue=catalogue,
            concurrency=concurrency,
            timeout_s=timeout_s,
            progress=progress,
            done={sample_key(s): s for s in done},
            record=record,
            groups=kind.checking.groups,
            item_group=kind.checking.item_group,
        )
    )
