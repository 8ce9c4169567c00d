"""The human-review kind's publish check of its rubric."""

from __future__ import annotations

from kindgi_eval.kinds.human_review.check import rubric_problems


def test_a_rubric_item_one_typo_from_a_fixed_criterion_is_refused_at_publish() -> None:
    (problem,) = rubric_problems({"rubric": ["Sounds warm", "semantic_repettion"], "reviewerRole": "lead"})
    assert (problem.field, problem.message) == (
        "rubric[1]",
        "'semantic_repettion' is one typo from the fixed criterion "
        "'semantic_repetition', so it would be graded as free text. Write a rubric item in words.",
    )
