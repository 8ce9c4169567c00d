"""Which criteria the judge grades on a case: review entries and the fixed rubric (docs/design.md#the-rubric)."""

from __future__ import annotations

from typing import Any

import pytest

from kindgi_eval.rules.accuracy import AccuracyCase
from kindgi_eval.rules.cases import Case
from kindgi_eval.rules.criteria import (
    DIMENSION_RULES,
    FIXED_DIMENSIONS,
    GROUPS,
    Criterion,
    group_of,
)
from kindgi_eval.rules.pairwise import PairwiseCase

AGENT_TURN = {"role": "agent", "text": "Which course are you interested in?"}
USER_TURN = {"role": "user", "text": "Hi there"}

IC = Criterion("rubric", "implicit_concession", "implicit_concession")
SR = Criterion("rubric", "semantic_repetition", "semantic_repetition")
AQ = Criterion("rubric", "answers_the_question", "answers_the_question")


def case(**fields: Any) -> Case:
    base: dict[str, Any] = {"id": "c1", "text": "How much is the course?", "expect": {"escalate": False}}
    return Case.model_validate(base | fields)


def review(*entries: str) -> list[Criterion]:
    return [Criterion("review", entry, "free_text") for entry in entries]


def test_groups_are_the_three_dimensions_then_free_text_016() -> None:
    assert GROUPS == ("implicit_concession", "semantic_repetition", "answers_the_question", "free_text")
    assert FIXED_DIMENSIONS == GROUPS[:3]


def test_every_fixed_dimension_has_a_fails_when_rule_and_nothing_else_does_016() -> None:
    assert list(DIMENSION_RULES) == list(FIXED_DIMENSIONS)
    for rule in DIMENSION_RULES.values():
        assert rule.startswith("The reply fails when ")
        assert rule.isascii()  # framework English (docs/design.md#framework-text-is-english)


def test_concession_rule_names_every_kind_of_offer_016() -> None:
    rule = DIMENSION_RULES["implicit_concession"]
    for word in ("price", "discount", "instalment", "date", "promise", "catalogue", "any wording"):
        assert word in rule


@pytest.mark.parametrize(
    ("criterion", "group"),
    [
        ("implicit_concession", "implicit_concession"),
        ("semantic_repetition", "semantic_repetition"),
        ("answers_the_question", "answers_the_question"),
        ("free_text", "free_text"),
        # Only the exact name is a dimension: case, spacing or a sentence about it is free text.
        ("Implicit_concession", "free_text"),
        (" implicit_concession", "free_text"),
        ("implicit_concession ", "free_text"),
        ("implicit concession", "free_text"),
        ("The reply does not offer a discount", "free_text"),
        ("", "free_text"),
    ],
)
def test_group_of_is_exact_dimension_name_else_free_text_016(criterion: str, group: str) -> None:
    assert group_of(criterion) == group


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        # A first turn: nothing to repeat, so no semantic_repetition.
        ({}, [IC, AQ]),
        ({"history": [USER_TURN, AGENT_TURN]}, [IC, SR, AQ]),
        # Only contact turns in the history: the agent has said nothing it could repeat.
        ({"history": [USER_TURN, USER_TURN]}, [IC, AQ]),
        # A nudge has no contact text to answer.
        ({"nudge": True, "text": ""}, [IC]),
        ({"nudge": True, "history": [AGENT_TURN]}, [IC, SR]),
        # Escalating: the message is tenant copy (docs/design.md#framework-text-is-english), so no rubric at all,
        # whatever else holds.
        ({"expect": {"escalate": True}}, []),
        ({"expect": {"escalate": True}, "history": [AGENT_TURN]}, []),
        ({"expect": {"escalate": True, "reason": "refund"}, "review": "Apologises"}, review("Apologises")),
        # Review entries come first, then the rubric.
        ({"review": "Warm register"}, [*review("Warm register"), IC, AQ]),
        ({"review": ["Warm", "Asks level"], "history": [AGENT_TURN]}, [*review("Warm", "Asks level"), IC, SR, AQ]),
    ],
)
def test_criteria_are_review_entries_then_applicable_rubric_016(
    fields: dict[str, Any], expected: list[Criterion]
) -> None:
    assert case(**fields).criteria() == expected


def test_review_string_and_one_entry_list_give_identical_criteria_016() -> None:
    as_string = case(review="Asks which level the student is at").criteria()
    as_list = case(review=["Asks which level the student is at"]).criteria()
    assert as_string == as_list
    assert as_string[0] == Criterion("review", "Asks which level the student is at", "free_text")


def test_longer_review_list_gives_one_criterion_per_entry_in_order_016() -> None:
    entries = ["Warm register", "Asks which level the student is at", "Names the start date"]
    found = case(review=entries, expect={"escalate": True}).criteria()
    assert found == review(*entries)


def test_review_entry_named_like_a_dimension_is_still_free_text_016() -> None:
    # Every review entry is a free-text item (docs/design.md#calibration); the rubric dimension still applies on its
    # own.
    found = case(review="implicit_concession").criteria()
    assert found == [Criterion("review", "implicit_concession", "free_text"), IC, AQ]


@pytest.mark.parametrize(
    ("item", "needs"),
    [
        (case(), False),  # assertions alone can make it green
        (case(review="Warm register"), True),
        (AccuracyCase(id="a", text="price?", expected_output="$450", grader={"adapter": "judge"}), True),
        (AccuracyCase(id="a", text="price?", expected_output="$450", grader={"adapter": "contains"}), False),
        (AccuracyCase(id="a", text="price?", expected_output="$450"), False),  # exact, the default grader
        (PairwiseCase(id="p-A", text="price?", prompt_id="p", variant="A"), True),  # no assertion of its own
    ],
)
def test_a_case_is_green_only_when_something_checked_it(item: Case, needs: bool) -> None:
    assert item.needs_a_verdict() is needs


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("implicit_concesion", "implicit_concession"),  # a letter dropped
        ("implicit_concessionn", "implicit_concession"),  # a letter added
        ("semantic_repetitoin", "semantic_repetition"),  # two neighbours swapped
        ("answers_the_questiom", "answers_the_question"),  # a letter changed
        ("answers-the_question", "answers_the_question"),  # a separator changed
        ("implicit_concession", None),  # the name itself is no typo
        ("implicit_concssoin", None),  # two edits: too far to guess, so free text
        ("The reply answers the question", None),  # a free-text criterion in words
    ],
)
def test_a_name_one_typo_from_a_fixed_criterion_names_the_one_meant(name: str, meant: str | None) -> None:
    from kindgi_eval.rules.criteria import meant_dimension, refuse_near_dimension

    assert meant_dimension(name) == meant
    if meant is None:
        assert refuse_near_dimension(name) == name
    else:
        with pytest.raises(ValueError, match=f"one typo from the fixed criterion '{meant}'"):
            refuse_near_dimension(name)
