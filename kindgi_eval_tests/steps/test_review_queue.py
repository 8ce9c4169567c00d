"""The review queue of a human-review run and the calibration items its labels become: rows in, rows out."""

from __future__ import annotations

from kindgi_eval.kinds import promoted_items, queue_rows, summarize_queue
from kindgi_eval.rules import Case
from kindgi_eval.store import (
    CriterionRow,
    ReplyRow,
    ReviewRow,
    StatusRow,
    SuiteRow,
    labels_in_force,
    params_json,
)
from kindgi_eval_tests.rows import reply_row

RUBRIC = ["tone", "answers"]
CASES = [
    Case.model_validate(
        {
            "id": i,
            "text": f"question {i}",
            "history": [{"role": "user", "text": "hi"}],
            "expect": {"escalate": False},
            "review": RUBRIC,
        }
    )
    for i in ("a", "b", "c")
]


def suite_row(kind: str = "human-review") -> SuiteRow:
    return SuiteRow(
        kind="case",
        id="a",
        line=1,
        text="",
        nudge=False,
        funnel_stage=None,
        course=None,
        review=[],
        body="{}",
        tenant="t",
        eval_dir="e",
        suite_hash="h",
        config_hash="c",
        suite_kind=kind,
        params=params_json({"rubric": RUBRIC, "reviewer_role": "lead"}),
    )


def reply(case_id: str, error: str | None = None) -> ReplyRow:
    return reply_row(case_id, [f"answer {case_id}", "more"], error)


def status(case_id: str, verdict: str = "pass") -> StatusRow:
    criteria = [
        CriterionRow(
            source="review",
            criterion=r,
            group="free_text",
            verdict=verdict if r == "tone" else "ungraded",
            split=False,
            votes=[],
            evidence="",
            reason="",
        )
        for r in RUBRIC
    ]
    return StatusRow(
        case_id=case_id,
        status="reviewed",
        failures=[],
        messages=[],
        escalate=False,
        reason=None,
        latency_ms=1.0,
        error=None,
        review=RUBRIC,
        criteria=criteria,
    )


def label(case_id: str, item: str, value: str, at: str, line: int = 2) -> ReviewRow:
    return ReviewRow(
        import_id=at,
        imported_at=at,
        source="f.csv",
        line=line,
        run_id="run-1234-5678",
        suite="t.s",
        case_id=case_id,
        rubric_item=item,
        reviewer_role="lead",
        reviewer=None,
        label=value,
        note="",
    )


def test_every_reply_is_queued_once_per_rubric_item_and_a_case_without_a_reply_is_skipped() -> None:
    replies = [reply("a"), reply("b", error="timeout"), reply("c")]
    queue = queue_rows([suite_row()], CASES, replies, [status("a", "fail"), status("b"), status("c")])
    assert [(q.case_id, q.rubric_item, q.judge_verdict) for q in queue] == [
        ("a", "tone", "fail"),
        ("a", "answers", "ungraded"),
        ("c", "tone", "pass"),
        ("c", "answers", "ungraded"),
    ]
    assert (
        queue[0].history == ["user: hi"] and queue[0].reply == ["answer a", "more"] and queue[0].reviewer_role == "lead"
    )
    assert tuple(summarize_queue(replies, queue)) == (4, 2, 1)  # rows, replies, skipped


def test_another_kind_has_no_queue() -> None:
    assert queue_rows([suite_row("conversation")], CASES, [reply("a")], [status("a")]) == []


def test_the_latest_import_decides_and_the_items_carry_the_stored_reply() -> None:
    labels = labels_in_force(
        [
            label("a", "tone", "pass", "2026-01-01T00:00:00.000001"),
            label("a", "tone", "fail", "2026-01-02T00:00:00.000001"),
            label("c", "answers", "pass", "2026-01-01T00:00:00.000001", line=3),
        ]
    )
    items = promoted_items("run-1234-5678", CASES, [reply("a"), reply("c")], labels)
    assert [(i.criterion, i.label, i.text, i.reply, [t.text for t in i.history]) for i in items] == [
        ("tone", "fail", "question a", ("answer a", "more"), ["hi"]),
        ("answers", "pass", "question c", ("answer c", "more"), ["hi"]),
    ]
    # the same label promoted again is the same item: its id comes from run, case and rubric item only
    again = promoted_items("run-1234-5678", CASES, [reply("a"), reply("c")], labels)
    assert [i.id for i in items] == [i.id for i in again] and items[0].id.startswith("review-run-1234-a-")
    assert len({i.id for i in items}) == 2
