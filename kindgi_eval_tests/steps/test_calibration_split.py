"""A calibration item the judge decided 2-1 is marked split, from its stored samples as from its samples arriving."""

from __future__ import annotations

import pytest

from kindgi_eval.steps.judge_samples import graded_items
from kindgi_eval.store.rows import SampleRow


def sample(item: str, n: int, vote: str) -> SampleRow:
    return SampleRow(
        subject="calibration",
        subject_id=item,
        source="rubric",
        criterion="free_text",
        group="free_text",
        sample=n,
        label="pass",
        vote=vote,
        evidence="",
        reason="",
        invalid_reason=None if vote != "invalid" else "unparseable",
        raw=None,
        judge="mock:judge",
        latency_ms=1.0,
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        cost_known=True,
    )


@pytest.mark.parametrize(
    ("votes", "verdict", "split"),
    [
        (("pass", "pass", "pass"), "pass", False),
        (("pass", "fail", "pass"), "pass", True),  # 2-1 against a valid opposing sample
        (("pass", "invalid", "pass"), "pass", False),  # an invalid sample opposes nothing
        (("fail", "pass", "fail"), "fail", True),
    ],
)
def test_graded_items_mark_a_2_1_verdict_split(votes: tuple[str, ...], verdict: str, split: bool) -> None:
    (graded,) = graded_items([sample("item", n + 1, v) for n, v in enumerate(votes)])
    assert (graded.verdict, graded.split) == (verdict, split)
