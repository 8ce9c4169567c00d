"""A scenario: a conversation played turn by turn against the agent, its own replies becoming the history, and the
rules its turns are held to: each agent turn checked as a case would be, the conversation as a whole where a rule
speaks of it. Pure."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kindgi_eval.rules.agent_protocol import AgentReply
from kindgi_eval.rules.assertions import AssertionResult, check_case, joined_reply, quote
from kindgi_eval.rules.cases import (
    Case,
    Contact,
    Expect,
    Turn,
    json_list_as_tuple,
    refuse_near_dimensions,
    review_as_tuple,
)
from kindgi_eval.rules.criteria import FIXED_DIMENSIONS, Criterion, review_entries
from kindgi_eval.rules.text import clip
from kindgi_eval.rules.verdicts import Sample, read_sample

DEFAULT_MAX_TURNS = 6
"""How many contact messages a persona scenario plays when it names no `max_turns`."""
MOST_TURNS = 20
"""The most contact messages any scenario may play."""
SCRIPT = "script"
"""Who wrote a contact message taken from `moves`, as a turn records it."""


class Scenario(BaseModel):
    """A conversation the agent steers: the contact's side scripted (`moves`) or improvised by a contact model
    (`persona` and `goal`), and what every agent turn, and the conversation, must hold."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(min_length=1)
    """Stable identifier, unique across the suite folder's cases and scenarios."""
    contact: Contact | None = None
    """What is known about the contact as the conversation starts; absent means a new contact."""
    history: tuple[Turn, ...] = ()
    """Opening turns, oldest first, before the first contact message is played."""
    moves: tuple[str, ...] | None = Field(default=None, min_length=1, max_length=MOST_TURNS)
    """The contact's messages, played in order whatever the agent answers."""
    persona: str | None = Field(default=None, min_length=1)
    """Who the contact is, in the tenant's language: what a contact model plays."""
    goal: str | None = Field(default=None, min_length=1)
    """What the contact wants from the conversation, in the tenant's language."""
    max_turns: int | None = Field(default=None, ge=1, le=MOST_TURNS)
    """The most contact messages a contact model plays; absent means DEFAULT_MAX_TURNS."""
    expect: Expect
    """`escalate: true`: the conversation ends in an escalation (with `reason`, when given); `false`: no turn escalates."""
    must_contain: tuple[str, ...] = ()
    """Each entry appears in some agent turn (its messages joined with a space)."""
    must_not_contain: tuple[str, ...] = ()
    """No entry appears in any agent turn."""
    must_end_with_question: bool | None = None
    """Every agent turn that does not escalate ends in `?` (true) or does not (false), as for a case."""
    max_lines: int | None = Field(default=None, ge=1)
    """No message of any agent turn has more lines than this."""
    review: str | tuple[str, ...] | None = None
    """Conversation-level criteria, each graded once over the whole transcript; a string is a one-entry list."""

    _list_to_tuple = field_validator("history", "moves", "must_contain", "must_not_contain", mode="before")(
        json_list_as_tuple
    )
    _review_list = field_validator("review", mode="before")(review_as_tuple)
    _no_near_dimension = field_validator("review")(refuse_near_dimensions)

    @model_validator(mode="after")
    def _one_contact_side(self) -> Scenario:
        improvised = self.persona is not None or self.goal is not None
        if self.moves is not None and improvised:
            _refuse(
                "persona" if self.persona is not None else "goal",
                "give either moves (a script) or persona and goal (a contact model), not both",
            )
        if self.moves is None and not improvised:
            _refuse("moves", "give the contact's side: moves (a list of the contact's messages), or persona and goal")
        if improvised and (self.persona is None or self.goal is None):
            _refuse(
                "goal" if self.goal is None else "persona",
                "a contact model needs both persona and goal; give the missing one",
            )
        if improvised and self.history and self.history[-1].role == "user":
            _refuse(
                "history",
                "ends with the contact's message, and a contact model's first message would follow it: two "
                "opening messages in a row. End the history with an agent turn, or drop its last contact message",
            )
        if self.moves is not None and self.max_turns is not None:
            _refuse("max_turns", "max_turns is for a contact model; a script plays all its moves, so drop max_turns")
        return self

    @property
    def review_criteria(self) -> tuple[str, ...]:
        """The review entries as a list: a string is a one-entry list."""
        if self.review is None:
            return ()
        return (self.review,) if isinstance(self.review, str) else self.review

    @property
    def entry_stage(self) -> str | None:
        """The funnel stage the conversation enters at, if it names one."""
        return self.contact.funnel_stage if self.contact else None

    @property
    def turn_limit(self) -> int:
        """The most contact messages this scenario plays: its moves, or its `max_turns`."""
        if self.moves is not None:
            return len(self.moves)
        return self.max_turns if self.max_turns is not None else DEFAULT_MAX_TURNS

    def needs_a_verdict(self) -> bool:
        """Whether it is green only on a verdict beyond its assertions: it has review entries."""
        return bool(self.review_criteria)

    def criteria(self, turns: Sequence[PlayedTurn]) -> list[Criterion]:
        """Every criterion the judge grades on the played conversation: each review entry once, over the whole
        transcript, then the rubric of each agent turn that does not escalate (an escalation's message is the tenant's
        configured copy): `implicit_concession` and `answers_the_question` every turn, `semantic_repetition` once an
        earlier agent turn exists."""
        earlier_agent = any(turn.role == "agent" for turn in self.history)
        found = review_entries(self)
        for played in turns:
            if not played.escalate:
                applies = {
                    "implicit_concession": True,
                    "semantic_repetition": earlier_agent,
                    "answers_the_question": True,
                }
                found += [Criterion("rubric", d, d, played.turn) for d in FIXED_DIMENSIONS if applies[d]]
            earlier_agent = earlier_agent or bool(played.messages)
        return found


def _refuse(field: str, message: str) -> None:
    """A problem of the whole scenario raised against the field it names, so the error says where to look."""
    raise ValidationError.from_exception_data(
        "Scenario", [{"type": "value_error", "loc": (field,), "input": None, "ctx": {"error": ValueError(message)}}]
    )


class PlayedTurn(Protocol):
    """What the rules read of one played turn: the contact's message and the agent's answer to it."""

    turn: int
    contact_text: str
    messages: Sequence[str]
    escalate: bool | None
    reason: str | None
    latency_ms: float
    error: str | None


def transcript(scenario: Scenario, turns: Sequence[PlayedTurn]) -> tuple[Turn, ...]:
    """The conversation as history: the opening turns, then each played turn's contact message and the agent's
    messages, one agent turn per message."""
    out = list(scenario.history)
    for played in turns:
        out.append(Turn(role="user", text=played.contact_text))
        out += [Turn(role="agent", text=message) for message in played.messages]
    return tuple(out)


def is_over(scenario: Scenario, turns: Sequence[PlayedTurn], contact_done: bool = False) -> bool:
    """Whether the conversation has ended: the agent escalated or failed, the moves ran out, the contact model said
    the contact is done, or the turns reached `max_turns`."""
    if contact_done or len(turns) >= scenario.turn_limit:
        return True
    last = turns[-1] if turns else None
    return last is not None and (last.error is not None or bool(last.escalate))


def check_scenario(
    scenario: Scenario, turns: Sequence[PlayedTurn], *, max_latency_ms: float, contact_error: str | None = None
) -> list[AssertionResult]:
    """Every deterministic assertion of a scenario over its played turns, each detail naming its turn (`turn 4: ...`).

    Each agent turn is held to the case's assertions as a case would be (`check_case`): `must_not_contain`,
    `max_lines`, `must_end_with_question` unless it escalates, the latency, and escalation: no turn but the last may
    escalate, and the last must when the scenario expects it (with its reason). An agent error on a turn is that
    turn's one failure (docs/design.md#fail-closed). Then `must_contain`, over the conversation: each entry in some
    agent turn. A contact model that gave no message (`contact_error`, naming its turn) fails the scenario too: a
    conversation cut short is never a pass."""
    results: list[AssertionResult] = []
    if contact_error is not None:
        results.append(AssertionResult(assertion="contact_error", held=False, detail=clip(contact_error, 300)))
    if not turns:
        return results or [AssertionResult(assertion="agent_error", held=False, detail="turn 1: no turn was played")]
    for played in turns:
        last = played is turns[-1]
        expect = Expect(escalate=scenario.expect.escalate and last, reason=scenario.expect.reason if last else None)
        as_case = Case(
            id=scenario.id,
            text=played.contact_text,
            expect=expect,
            must_not_contain=scenario.must_not_contain,
            must_end_with_question=None if played.escalate else scenario.must_end_with_question,
            max_lines=scenario.max_lines,
        )
        reply = (
            AgentReply(messages=tuple(played.messages), escalate=played.escalate, reason=played.reason)
            if played.error is None and played.escalate is not None
            else None
        )
        checked = check_case(
            as_case, reply, error=played.error, latency_ms=played.latency_ms, max_latency_ms=max_latency_ms
        )
        results += [r.model_copy(update={"detail": f"turn {played.turn}: {r.detail}"}) for r in checked]
    said = [joined_reply(played.messages) for played in turns]
    span = "turn 1" if len(turns) == 1 else f"turns 1-{len(turns)}"
    for needle in scenario.must_contain:
        found = next((n for n, text in enumerate(said, start=1) if needle in text), None)
        detail = (
            f"turn {found}: reply contains {quote(needle)}" if found else f"{span}: no reply contains {quote(needle)}"
        )
        results.append(AssertionResult(assertion="must_contain", held=found is not None, detail=detail))
    return results


class ContactReply(BaseModel):
    """A contact model's answer: the contact's next message, or that the contact is done. Read as untrusted input."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    message: str = ""
    """What the contact says next; empty when the contact is done."""
    done: bool = False
    """True when the contact has nothing more to say (their goal met, or given up): the conversation ends."""


CONTACT_MESSAGE_CHARS = 4000
"""The longest message a contact model may send; longer is no contact's chat message."""


def read_contact_reply(content: str | None) -> ContactReply:
    """A contact model's answer (docs/design.md#model-output-is-untrusted): one JSON object with `message` (text) and
    `done` (bool), alone or inside one markdown code fence; a message that is not done must say something, and no more
    than CONTACT_MESSAGE_CHARS. ValueError saying what is wrong otherwise."""
    body = (content or "").strip()
    if body.startswith("```") and body.endswith("```"):
        body = body.split("\n", 1)[1].rsplit("```", 1)[0] if "\n" in body else ""
    try:
        reply = ContactReply.model_validate_json(body)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        raise ValueError(
            f"the contact model's answer is not a JSON object with message and done ({first['msg']})"
        ) from None
    if not reply.done and not reply.message.strip():
        raise ValueError("the contact model's answer has an empty message and is not done")
    if len(reply.message) > CONTACT_MESSAGE_CHARS:
        raise ValueError(
            f"the contact model's message is {len(reply.message)} characters, over {CONTACT_MESSAGE_CHARS}"
        )
    return reply


def contact_cache_key(model: str, scenario: Scenario, history: Sequence[Turn], prompt: str) -> str:
    """What a contact model's next message is stored under: the model, the persona, the goal, the conversation so
    far and the prompt's framework text (`prompt`, a hash of it), so an unchanged conversation reuses the message a
    run paid for and a changed one (a turn the agent answered otherwise) asks again."""
    material = [model, scenario.persona, scenario.goal, [[t.role, t.text] for t in history], prompt]
    return hashlib.sha256(json.dumps(material, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


def evidence_turn(evidence: str, turns: Sequence[PlayedTurn]) -> int | None:
    """The first agent turn whose reply holds `evidence` verbatim; None when none does (or there is no evidence)."""
    if not evidence:
        return None
    return next((t.turn for t in turns if evidence in joined_reply(t.messages)), None)


def read_transcript_sample(content: str | None, replies: Sequence[str], error: str | None = None) -> Sample:
    """A judge's answer on a conversation-level criterion, read as `read_sample` reads one on a reply, but a failure's
    evidence must be a span of one agent turn's reply (`replies`, each turn's messages joined): a span across two
    turns is unquoted, and the sample invalid."""
    sample = read_sample(content, "\n".join(replies), error)
    if sample.vote == "fail" and not any(sample.evidence in reply for reply in replies):
        return read_sample(content, "", error)  # held to no text: invalid, as an unquoted failure
    return sample
