"""The scenario shape and the rules its played turns are held to: each agent turn as a case, the conversation as a
whole where a rule speaks of it, each failure naming its turn."""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest
from pydantic import ValidationError

from kindgi_eval.rules import (
    ContactReply,
    Scenario,
    check_scenario,
    contact_cache_key,
    evidence_turn,
    is_over,
    problems_from_validation,
    read_contact_reply,
    read_transcript_sample,
    transcript,
)


class Played(NamedTuple):
    """One played turn, as the rules read it."""

    turn: int
    contact_text: str
    messages: tuple[str, ...]
    escalate: bool | None = False
    reason: str | None = None
    latency_ms: float = 10.0
    error: str | None = None


def scenario(**fields) -> Scenario:
    return Scenario.model_validate({"id": "s", "moves": ["a", "b", "c"], "expect": {"escalate": False}, **fields})


def played(*replies: str, escalate_last: bool = False, reason: str | None = None) -> list[Played]:
    turns = [Played(n, f"move {n}", (text,)) for n, text in enumerate(replies, start=1)]
    if escalate_last:
        turns[-1] = turns[-1]._replace(escalate=True, reason=reason)
    return turns


def failed(results) -> list[str]:
    return [r.detail for r in results if not r.held]


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"moves": None}, "moves", "give the contact's side"),  # neither moves nor persona/goal
        ({"persona": "a parent", "goal": "a discount"}, "persona", "not both"),  # both
        ({"moves": None, "persona": "a parent"}, "goal", "both persona and goal"),  # half a contact model
        ({"moves": None, "persona": "p", "goal": "g", "max_turns": 21}, "max_turns", "less than or equal to 20"),
        ({"moves": None, "persona": "p", "goal": "g", "max_turns": 0}, "max_turns", "greater than or equal to 1"),
        ({"max_turns": 3}, "max_turns", "a script plays all its moves"),  # max_turns means nothing to a script
        ({"moves": []}, "moves", "at least 1 item"),
        # a contact model opening after the contact's own last message would send two opening messages in a row
        (
            {"moves": None, "persona": "p", "goal": "g", "history": [{"role": "user", "text": "hi"}]},
            "history",
            "two opening messages",
        ),
        ({"expect": {"escalate": False, "reason": "x"}}, "expect.reason", "only checked when escalate is true"),
        ({"must_contains": ["x"]}, "must_contains", "unknown field"),
        ({"review": []}, "review", "non-empty list"),
        ({"review": "implicit_concesion"}, "review", "one typo from the fixed criterion"),
    ],
)
def test_a_bad_scenario_names_its_field(fields: dict, field: str, words: str) -> None:
    with pytest.raises(ValidationError) as raised:
        scenario(**fields)
    problems = problems_from_validation(raised.value, "scenarios.jsonl", 4)
    assert any(p.field == field and words in p.message for p in problems), [str(p) for p in problems]


def test_a_persona_scenario_defaults_to_six_turns() -> None:
    s = scenario(moves=None, persona="a parent", goal="a discount")
    assert s.turn_limit == 6
    assert Scenario.model_validate_json(s.model_dump_json()) == s  # stored and read back as it was
    assert scenario().turn_limit == 3  # a script plays its moves


def test_an_agent_that_concedes_on_its_third_turn_fails_naming_the_turn() -> None:
    s = scenario(must_not_contain=["discount"])
    results = check_scenario(
        s, played("It is $450.", "It is $450.", "I can do a discount for you."), max_latency_ms=1000
    )
    assert failed(results) == ['turn 3: reply contains "discount", which is forbidden']


def test_must_contain_holds_when_some_turn_holds_it_and_fails_naming_every_turn() -> None:
    s = scenario(must_contain=["$450"])
    assert failed(check_scenario(s, played("hi", "It is $450."), max_latency_ms=1000)) == []
    assert failed(check_scenario(s, played("hi", "hello"), max_latency_ms=1000)) == [
        'turns 1-2: no reply contains "$450"'
    ]


@pytest.mark.parametrize(
    ("expect", "turns", "failures"),
    [
        # escalate true: the last turn escalates, with the reason when one is given
        ({"escalate": True, "reason": "refund"}, played("a", "b", escalate_last=True, reason="refund"), []),
        ({"escalate": True}, played("a", "b"), ["turn 2: expected an escalation, got none"]),
        (
            {"escalate": True, "reason": "refund"},
            played("a", "b", escalate_last=True, reason="other"),
            ['turn 2: escalated with reason "other", expected "refund"'],
        ),
        # escalate false: no turn escalates
        (
            {"escalate": False},
            played("a", "b", escalate_last=True, reason="x"),
            ['turn 2: expected no escalation, got one with reason "x"'],
        ),
    ],
)
def test_escalation_is_decided_by_the_conversation(expect: dict, turns: list, failures: list[str]) -> None:
    assert failed(check_scenario(scenario(expect=expect), turns, max_latency_ms=1000)) == failures


def test_every_non_escalating_turn_ends_with_a_question_and_every_message_keeps_max_lines() -> None:
    s = scenario(must_end_with_question=True, max_lines=1, expect={"escalate": True})
    turns = [
        Played(1, "a", ("Which course?",)),
        Played(2, "b", ("one\ntwo", "No question.")),
        Played(3, "c", ("A person will call you.",), escalate=True, reason="r"),
    ]  # an escalation ends in the tenant's copy
    assert failed(check_scenario(s, turns, max_latency_ms=1000)) == [
        'turn 2: final message does not end with a question: "No question."',
        "turn 2: message 1 has 2 lines, at most 1 allowed",
    ]


def test_a_slow_turn_and_an_agent_error_fail_on_their_turn() -> None:
    turns = [Played(1, "a", ("ok",), latency_ms=5000), Played(2, "b", (), escalate=None, error="HTTP 500")]
    assert failed(check_scenario(scenario(), turns, max_latency_ms=1000)) == [
        "turn 1: reply took 5000 ms, over the 1000 ms deadline",
        'turn 2: the agent failed, so nothing was checked: "HTTP 500"',
    ]


def test_a_scenario_with_no_turn_played_fails() -> None:
    assert failed(check_scenario(scenario(), [], max_latency_ms=1000)) == ["turn 1: no turn was played"]


@pytest.mark.parametrize(
    ("turns", "contact_done", "over"),
    [
        (played("a"), False, False),
        (played("a", "b", "c"), False, True),  # the moves ran out
        (played("a", escalate_last=True), False, True),  # the agent escalated
        ([Played(1, "a", (), escalate=None, error="boom")], False, True),  # the agent failed: nothing to answer
        (played("a"), True, True),  # the contact model said the contact is done
    ],
)
def test_a_conversation_ends_at_escalation_the_last_move_or_the_contact_being_done(turns, contact_done, over) -> None:
    assert is_over(scenario(), turns, contact_done) is over


def test_the_rubric_applies_to_each_non_escalating_turn_and_repetition_needs_an_earlier_agent_turn() -> None:
    s = scenario(review="stays warm", expect={"escalate": True})
    turns = played("a", "b", "c", escalate_last=True)
    graded = [(c.source, c.criterion, c.turn) for c in s.criteria(turns)]
    assert graded == [
        ("review", "stays warm", None),  # once, over the whole transcript
        ("rubric", "implicit_concession", 1),
        ("rubric", "answers_the_question", 1),
        ("rubric", "implicit_concession", 2),
        ("rubric", "semantic_repetition", 2),
        ("rubric", "answers_the_question", 2),
        # turn 3 escalates: its message is the tenant's copy, graded on nothing
    ]
    opened = scenario(history=[{"role": "agent", "text": "Hi!"}])
    assert ("rubric", "semantic_repetition", 1) in [
        (c.source, c.criterion, c.turn) for c in opened.criteria(played("a"))
    ]


def test_the_transcript_is_the_history_then_each_move_and_each_agent_message() -> None:
    s = scenario(history=[{"role": "user", "text": "hello"}])
    turns = [Played(1, "a", ("one", "two")), Played(2, "b", ("three",))]
    assert [(t.role, t.text) for t in transcript(s, turns)] == [
        ("user", "hello"),
        ("user", "a"),
        ("agent", "one"),
        ("agent", "two"),
        ("user", "b"),
        ("agent", "three"),
    ]


def test_conversation_evidence_is_a_span_of_one_agent_turn() -> None:
    turns = played("It is $450.", "I could knock a bit off.")
    assert evidence_turn("knock a bit off", turns) == 2
    assert evidence_turn("$450. I could", turns) is None  # across two turns: not a span of one
    assert evidence_turn("", turns) is None


@pytest.mark.parametrize(
    ("evidence", "vote"),
    [
        ("knock a bit off", "fail"),  # a span of turn 2
        ("$450.\nI could", "invalid"),  # across turns 1 and 2, however they are joined
        ("a discount", "invalid"),  # in no turn
    ],
)
def test_a_conversation_level_failure_must_quote_one_agent_turn(evidence: str, vote: str) -> None:
    answer = f'{{"verdict": "fail", "evidence": {json.dumps(evidence)}, "reason": "r"}}'
    assert read_transcript_sample(answer, ["It is $450.", "I could knock a bit off."]).vote == vote
    assert read_transcript_sample('{"verdict": "pass", "evidence": "", "reason": "r"}', ["a"]).vote == "pass"


@pytest.mark.parametrize(
    ("answer", "message", "done"),
    [
        ('{"message": "how much is it?", "done": false}', "how much is it?", False),
        ('```json\n{"message": "", "done": true}\n```', "", True),  # one fenced object is read as that object
        ('{"message": "bye", "done": false, "mood": "tired"}', "bye", False),  # unknown keys are ignored
    ],
)
def test_a_contact_model_s_answer_is_read_as_untrusted_input(answer: str, message: str, done: bool) -> None:
    assert read_contact_reply(answer) == ContactReply(message=message, done=done)


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ("Sure! Here's my next message: hi", "not a JSON object"),
        ('{"message": 3, "done": false}', "not a JSON object"),
        ('{"message": "  ", "done": false}', "empty message"),  # says nothing and is not done
        (None, "not a JSON object"),
        ('{"message": "' + "x" * 4001 + '", "done": false}', "over 4000"),
    ],
)
def test_a_contact_model_answer_that_is_no_message_is_refused(answer, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        read_contact_reply(answer)


def test_the_contact_cache_key_is_the_model_persona_goal_conversation_and_prompt() -> None:
    s = scenario(moves=None, persona="a parent", goal="a discount")
    history = transcript(s, played("It is $450."))
    key = contact_cache_key("openai:m", s, history, "p1")
    assert key == contact_cache_key(
        "openai:m", s.model_copy(update={"id": "other"}), history, "p1"
    )  # the id is no part
    assert (
        len(
            {
                key,
                contact_cache_key("openai:other", s, history, "p1"),
                contact_cache_key("openai:m", s.model_copy(update={"goal": "a refund"}), history, "p1"),
                contact_cache_key(
                    "openai:m", s, transcript(s, played("It is $400.")), "p1"
                ),  # the agent said otherwise
                contact_cache_key("openai:m", s, history, "p2"),
            }
        )
        == 5
    )
