"""Statuses across kinds (docs/design.md#kinds: a case is green only when something checked it): a judge-graded
accuracy item follows the review-entry rule, and a pairwise prompt's replies are `reviewed`."""

from __future__ import annotations

import pytest

from kindgi_eval.kinds import kind_named
from kindgi_eval.rules import ACCURACY_GROUP, AccuracyCase, PairwiseCase, accuracy_criterion
from kindgi_eval.steps.outcomes import outcome_rows
from kindgi_eval.steps.statuses import status_rows
from kindgi_eval.store import CalibrationRow, ReplyRow, SampleRow
from kindgi_eval_tests.rows import reply_row

REPLY = ["It is $450."]


def reply(case_id: str, error: str | None = None) -> ReplyRow:
    return reply_row(case_id, REPLY, error)


def sample(case_id: str, criterion: str, n: int, vote: str) -> SampleRow:
    return SampleRow(
        subject="case",
        subject_id=case_id,
        source="review",
        criterion=criterion,
        group=ACCURACY_GROUP,
        sample=n,
        label=None,
        vote=vote,
        evidence="$450" if vote == "fail" else "",
        reason="because",
        invalid_reason="error: down" if vote == "invalid" else None,
        raw=None,
        judge="openai:j",
        latency_ms=1.0,
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        cost_known=True,
    )


def calibration(calibrated: bool) -> CalibrationRow:
    return CalibrationRow(
        group=ACCURACY_GROUP,
        agreement=1.0 if calibrated else 0.5,
        kappa=None,
        items=2,
        pass_labels=1,
        fail_labels=1,
        calibrated=calibrated,
        note="",
        judge="openai:j",
    )


def item(adapter: str) -> AccuracyCase:
    return AccuracyCase(id="price", text="How much?", expected_output="$450", grader={"adapter": adapter})


def status_of(case, votes: list[str], *, calibrated: bool, judged: bool, error: str | None = None) -> str:
    criterion = accuracy_criterion("$450")
    samples = [sample(case.id, criterion, n, v) for n, v in enumerate(votes)]
    replies = [reply(case.id, error)]
    kind = kind_named("pairwise" if isinstance(case, PairwiseCase) else "accuracy")
    outcomes = outcome_rows([case], replies, max_latency_ms=10_000, assertions=kind.checking.assertions)
    (row,) = status_rows([case], replies, outcomes, samples, [calibration(calibrated)] if judged else [], judged=judged)
    return row.status


@pytest.mark.parametrize(
    ("votes", "calibrated", "judged", "status"),
    [
        (["pass", "pass", "pass"], True, True, "judged-pass"),
        (["pass", "pass", "fail"], True, True, "judged-pass"),  # a split pass is still a pass
        (["fail", "fail", "pass"], True, True, "judged-fail"),
        # Not graded: never green, never counted either way.
        (["pass", "pass", "pass"], False, True, "reviewed"),  # the group did not calibrate
        (["invalid", "invalid", "invalid"], True, True, "reviewed"),  # the judge was down
        (["pass", "invalid", "fail"], True, True, "reviewed"),  # no two agreeing valid samples
        ([], False, False, "reviewed"),  # no judge at all
    ],
)
def test_a_judge_graded_accuracy_item_follows_the_review_entry_rule_016(votes, calibrated, judged, status) -> None:
    assert status_of(item("judge"), votes, calibrated=calibrated, judged=judged) == status


def test_a_judge_graded_accuracy_item_the_agent_failed_is_failed_c6() -> None:
    assert status_of(item("judge"), [], calibrated=True, judged=True, error="timeout") == "failed"


@pytest.mark.parametrize("judged", [False, True])
def test_a_deterministic_accuracy_item_is_settled_by_its_grader(judged: bool) -> None:
    # `contains` found $450: its green was earned by the grader, with or without a judge in the run.
    assert status_of(item("contains"), [], calibrated=True, judged=judged) == "passed"
    assert status_of(item("exact"), [], calibrated=True, judged=judged) == "failed"  # "It is $450." is not "$450"


@pytest.mark.parametrize("judged", [False, True])
def test_a_pairwise_prompt_is_reviewed_never_green(judged: bool) -> None:
    case = PairwiseCase(id="p1-A", text="How much?", prompt_id="p1", variant="A")
    assert status_of(case, [], calibrated=True, judged=judged) == "reviewed"
    assert status_of(case, [], calibrated=True, judged=judged, error="HTTP 500") == "failed"
