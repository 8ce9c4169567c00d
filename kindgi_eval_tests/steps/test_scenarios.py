"""Playing scenarios in the `agent_replies` stage: the agent asked with the growing history, the conversation ended
where the rules end it, every turn recorded, and a killed run's scenario gone on with from its last recorded turn."""

from __future__ import annotations

import json
from pathlib import Path

from kindgi_eval.agents.factory import make_agent
from kindgi_eval.defs.resume import recorded_rows
from kindgi_eval.inputs import RunSettings, load_tenant
from kindgi_eval.rules import Scenario
from kindgi_eval.steps import agent_calls_saved, ask_agent
from kindgi_eval.steps.agent_replies import latest_recorded
from kindgi_eval.store import BatchWriter, ReplyRow, SuiteRow, run_area
from kindgi_eval_tests.steps.test_resumed_stages import Counting

OBJECTIONS = ["how much is the foundation course?", "that's too expensive", "still too much", "any deal at all?"]


def suite(*scenarios: dict) -> list[SuiteRow]:
    common = dict(
        nudge=False,
        funnel_stage=None,
        course=None,
        review=[],
        tenant="demo-academy",
        eval_dir="x",
        suite_hash="h",
        config_hash="c",
    )
    return [
        SuiteRow(
            kind="scenario", id=s["id"], line=n, text="", body=Scenario.model_validate(s).model_dump_json(), **common
        )
        for n, s in enumerate(scenarios, 1)
    ]


def agent():
    return Counting(make_agent(RunSettings(agent_model="mock:agent"), load_tenant(None).tenant))


def play(rows: list[SuiteRow], **kwargs) -> tuple[list[ReplyRow], Counting]:
    counting = agent()
    return ask_agent(counting, rows, concurrency=2, deadline_ms=15_000, **kwargs), counting


def test_each_move_is_asked_after_the_agent_s_own_replies_and_the_conversation_ends_where_it_should() -> None:
    rows = suite(
        {"id": "moves", "moves": OBJECTIONS, "expect": {"escalate": False}},
        {"id": "refund", "moves": ["hi", "I want a refund", "hello?"], "expect": {"escalate": True}},
    )
    (moves, refund), counting = play(rows)
    assert [t.turn for t in moves.turns] == [1, 2, 3, 4] and moves.ended == "moves"
    assert [t.contact_text for t in moves.turns] == OBJECTIONS
    assert moves.turns[2].messages != moves.turns[1].messages  # the demo agent holds the price without repeating itself
    assert all(
        any(price in " ".join(t.messages) for price in ("$450", "3 payments of $160")) for t in moves.turns
    )  # catalogue prices only
    # the refund escalates on turn 2: the last move is never played
    assert [t.escalate for t in refund.turns] == [False, True] and refund.ended == "escalated"
    assert (refund.escalate, refund.reason) == (True, "refund_request")
    assert sorted(counting.asked) == ["moves"] * 4 + ["refund"] * 2


def test_a_killed_scenario_goes_on_from_its_last_recorded_turn(tmp_path: Path) -> None:
    rows = suite({"id": "moves", "moves": OBJECTIONS, "expect": {"escalate": False}})
    recorded: list[ReplyRow] = []
    (whole,), _ = play(rows, record=recorded.append)
    assert [len(r.turns) for r in recorded] == [
        1,
        2,
        3,
        4,
    ]  # each turn as it was played, then the finished conversation
    assert [r.ended for r in recorded] == [None, None, None, "moves"]

    area = run_area(tmp_path, "demo-academy.x", "2026-12-06", "killed")  # the killed run recorded two turns
    with BatchWriter(area / "agent_replies", ReplyRow, rows=1) as writer:
        for row in recorded[:2]:
            writer.add(row)
    done = recorded_rows(tmp_path, "demo-academy.x", ["killed"], "agent_replies")
    assert sorted(len(r.turns) for r in done) == [1, 2]  # every recorded turn is kept, not only the first
    assert len(latest_recorded(done)["moves"].turns) == 2

    (resumed,), counting = play(rows, done=done)
    assert counting.asked == ["moves", "moves"]  # turns 3 and 4 only
    assert resumed.turns[:2] == whole.turns[:2]  # the recorded turns, untouched
    assert [t.messages for t in resumed.turns] == [t.messages for t in whole.turns]
    assert agent_calls_saved([resumed], done) == 2

    (again,), counting = play(rows, done=[whole])  # a finished conversation is not played again
    assert counting.asked == [] and again == whole


def test_an_agent_error_ends_the_conversation_on_its_turn() -> None:
    class Failing:
        name = "failing"

        async def answer(self, turn):
            from kindgi_eval.rules import ReplyError

            if turn.history:
                raise ReplyError("the agent broke")
            return await agent().answer(turn)

    (row,) = ask_agent(
        Failing(),
        suite({"id": "s", "moves": OBJECTIONS, "expect": {"escalate": False}}),
        concurrency=1,
        deadline_ms=15_000,
    )
    assert [t.error for t in row.turns] == [None, "the agent broke"] and row.ended == "agent_error"
    assert row.error == "turn 2: the agent broke"
    assert json.loads(row.model_dump_json())["turns"][1]["messages"] == []


def test_a_contact_model_that_gives_no_message_fails_the_scenario_on_its_turn() -> None:
    from kindgi_eval.steps import outcome_rows
    from kindgi_eval.steps.agent_replies import ContactMessage

    async def contact(scenario, history):
        if history:
            raise ValueError("the contact model's answer is not a JSON object with message and done")
        return ContactMessage("how much is it?", "openai:contact", 0.01)

    persona = {"id": "p", "persona": "a parent", "goal": "a deal", "expect": {"escalate": False}}
    (row,), counting = play(suite(persona), contact=contact)
    assert row.ended == "contact_error" and len(row.turns) == 1 and counting.asked == ["p"]
    assert (
        row.error
        == "turn 2: the contact model gave no message: the contact model's answer is not a JSON object with message and done"
    )
    assert row.contact_usd == 0.01 and row.turns[0].contact_by == "openai:contact"
    failed = [o for o in outcome_rows([], [row], 15_000, scenarios=[Scenario.model_validate(persona)]) if not o.held]
    assert [(o.assertion, o.detail) for o in failed] == [("contact_error", row.error)]


def test_a_contact_who_is_done_ends_the_conversation_before_max_turns() -> None:
    from kindgi_eval.steps.agent_replies import ContactMessage

    async def contact(scenario, history):
        return ContactMessage(None if len(history) >= 2 else "hello", "mock:contact")

    (row,), _ = play(
        suite({"id": "p", "persona": "a", "goal": "b", "max_turns": 5, "expect": {"escalate": False}}), contact=contact
    )
    assert row.ended == "contact" and len(row.turns) == 1
