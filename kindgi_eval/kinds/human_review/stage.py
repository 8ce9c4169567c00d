"""The `review_queue` stage of a human-review suite, and what people's labels of it become: calibration items.

One queue row per reply and rubric item, in case order then rubric order; a case whose agent gave no reply (an
error) has nothing to review and is left out, counted as skipped. Labels come back later (`store.reviews`); those
in force are turned into calibration items (docs/design.md#calibration: id, history, text, reply, criterion, label) for
a promotion. Pure: rows in, rows out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from kindgi_eval.rules import CalibrationItem, Case
from kindgi_eval.store import ReplyRow, ReviewRow, StatusRow, StoredRow, SuiteRow


class QueueRow(StoredRow):
    """One reply of a human-review suite paired with one rubric item: what a person labels pass or fail."""

    case_id: str
    """The case whose reply is reviewed."""
    rubric_item: str
    """The rubric item the reply is labelled against."""
    reviewer_role: str
    """Who labels it, as the suite names the role."""
    history: list[str]
    """The conversation before the turn, one `role: text` line per earlier message."""
    text: str
    """The contact's message the reply answers (empty on a nudge)."""
    reply: list[str]
    """The agent's messages, as the contact saw them."""
    status: str
    """The case's status in the run."""
    judge_verdict: str | None
    """The judge's verdict on this rubric item as `statuses` holds it: pass, fail, or ungraded (so always without a
    judge, or where its group is not calibrated)."""


class QueueSummary(NamedTuple):
    """How big a run's review queue is."""

    items: int
    """Rows: one per reply and rubric item."""
    replies: int
    """Replies queued."""
    skipped: int
    """Cases left out because the agent gave no reply."""


def queue_rows(
    suite: Sequence[SuiteRow], cases: Sequence[Case], replies: Sequence[ReplyRow], statuses: Sequence[StatusRow]
) -> list[QueueRow]:
    """Every reply of a human-review suite paired with every rubric item, with the judge's verdict on that item when
    the run had a judge; empty for another kind."""
    first = suite[0] if suite else None
    rubric = first.param("rubric") if first is not None else None
    if first is None or first.suite_kind != "human-review" or not rubric:
        return []
    role = first.param("reviewer_role") or ""
    reply_of = {r.case_id: r for r in replies}
    status_of = {s.case_id: s for s in statuses}
    rows = []
    for case in cases:
        reply, status = reply_of.get(case.id), status_of.get(case.id)
        if reply is None or reply.error is not None or status is None:
            continue
        verdicts = {c.criterion: c.verdict for c in status.criteria if c.source == "review"}
        rows += [
            QueueRow(
                case_id=case.id,
                rubric_item=item,
                reviewer_role=role,
                history=[f"{turn.role}: {turn.text}" for turn in case.history],
                text="" if case.nudge else case.text,
                reply=list(reply.messages),
                status=status.status,
                judge_verdict=verdicts.get(item),
            )
            for item in rubric
        ]
    return rows


def summarize_queue(replies: Sequence[ReplyRow], queue: Sequence[QueueRow]) -> QueueSummary:
    """The size of a human-review run's queue: rows, replies, and the cases skipped for want of a reply."""
    return QueueSummary(
        items=len(queue), replies=len({q.case_id for q in queue}), skipped=sum(r.error is not None for r in replies)
    )


def promoted_id(run_id: str, case_id: str, rubric_item: str) -> str:
    """A calibration item's id from its run, case and rubric item: the same label promoted twice is the same item."""
    item = hashlib.sha256(rubric_item.encode("utf-8")).hexdigest()[:8]
    return f"review-{run_id[:8]}-{case_id}-{item}"


def promoted_items(
    run_id: str, cases: Sequence[Case], replies: Sequence[ReplyRow], labels: Mapping[tuple[str, str, str], ReviewRow]
) -> list[CalibrationItem]:
    """The labels in force of `run_id`'s replies as calibration items, in case order then by rubric item: the
    conversation before the turn, the contact's message, the agent's messages as stored, the rubric item as the
    criterion, and the person's label."""
    case_of = {c.id: c for c in cases}
    reply_of = {r.case_id: r for r in replies}
    found = sorted(
        (
            row
            for (run, _, _), row in labels.items()
            if run == run_id and row.case_id in case_of and reply_of.get(row.case_id)
        ),
        key=lambda r: (list(case_of).index(r.case_id), r.rubric_item),
    )
    return [
        CalibrationItem(
            id=promoted_id(run_id, row.case_id, row.rubric_item),
            history=case_of[row.case_id].history,
            text=case_of[row.case_id].text,
            reply=tuple(reply_of[row.case_id].messages),
            criterion=row.rubric_item,
            label=row.label,
        )
        for row in found
        if reply_of[row.case_id].messages
    ]
