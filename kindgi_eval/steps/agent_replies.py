"""Asking the agent every case, and playing every scenario turn by turn, a bounded number of calls at a time, timing
each answer and keeping every error.

The deadline is raced. A reply that comes after the deadline, but within as long again, is kept with its
real latency and no error, so every assertion is checked on it and the `latency` one fails; a reply that has
not come by then is cancelled and the case fails as an agent error. Either way a late case fails
(docs/design.md#fail-closed).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import NamedTuple

from kindgi_eval.kinds import cases_of, scenarios_of
from kindgi_eval.llm import ModelCallError, scrub
from kindgi_eval.prompts import contact_messages, contact_prompt_hash
from kindgi_eval.rules import (
    SCRIPT,
    Agent,
    AgentTurn,
    Case,
    ContactModel,
    Progress,
    ReplyError,
    Scenario,
    Turn,
    Usage,
    contact_cache_key,
    is_over,
    read_contact_reply,
    transcript,
)
from kindgi_eval.store import CachedContact, ReplyRow, StorePath, SuiteRow, TurnRow, cache_contact, cached_contact

Record = Callable[[ReplyRow], None]
"""Where each reply goes as soon as it arrives (the run's batch writer)."""

FRESH_CONTACT_TAG = "kindgi/fresh-contact"
"""The run tag (`true`) of a run that asks the contact model afresh rather than reusing stored messages (`--fresh-contact`)."""

LATE_REPLY_GRACE = 1.0
"""How much longer than the deadline a late reply is waited for, as a multiple of the deadline."""


def turn_of(case: Case, tenant: str) -> AgentTurn:
    """What the agent is given for a case; a nudge carries no contact text."""
    return AgentTurn(
        tenant=tenant,
        case_id=case.id,
        text="" if case.nudge else case.text,
        history=case.history,
        contact=case.contact,
        nudge=case.nudge,
    )


async def collect_replies(
    agent: Agent,
    turns: Sequence[AgentTurn],
    *,
    concurrency: int,
    deadline_ms: float,
    progress: Progress | None = None,
    done: Mapping[str, ReplyRow] | None = None,
    record: Record | None = None,
    slots: asyncio.Semaphore | None = None,
) -> list[ReplyRow]:
    """One ReplyRow per turn, in order; a failure or a missed deadline is recorded, never raised.

    A turn whose case has a reply in `done` (recorded by a killed attempt of the run) is not asked again: that
    reply is its row. Every reply asked for is passed to `record` as soon as it arrives. `slots` bounds the calls
    in flight when they are shared with other callers (a run's scenarios); else `concurrency` does."""
    done = done or {}
    slots = slots or asyncio.Semaphore(concurrency)
    answered = sum(t.case_id in done for t in turns)

    async def one(turn: AgentTurn) -> ReplyRow:
        nonlocal answered
        if turn.case_id in done:
            return done[turn.case_id]
        async with slots:
            row = await _ask(agent, turn, deadline_ms)
        if record:
            record(row)
        answered += 1
        if progress:
            progress("cases answered", answered, len(turns))
        return row

    return list(await asyncio.gather(*(one(t) for t in turns)))


async def _ask(agent: Agent, turn: AgentTurn, deadline_ms: float) -> ReplyRow:
    started = time.perf_counter()
    hard_stop_ms = deadline_ms * (1 + LATE_REPLY_GRACE)
    try:
        async with asyncio.timeout(hard_stop_ms / 1000):  # in this task: no extra task per case to schedule
            answer = await agent.answer(turn)
    except TimeoutError:
        error = (
            f"no reply within {hard_stop_ms:.0f} ms: the {deadline_ms:.0f} ms deadline, "
            "and as long again for a late reply"
        )
        return _failed(turn, agent, _since(started), error)
    except ReplyError as e:
        return _failed(turn, agent, _since(started), str(e), raw=e.raw, usage=e.usage)
    except (
        ModelCallError
    ) as e:  # a provider's fault fails its case, never the run; anything else is a bug, and stops it
        return _failed(turn, agent, _since(started), str(e))
    reply, usage = answer.reply, answer.usage
    return ReplyRow(
        case_id=turn.case_id,
        agent=agent.name,
        messages=list(reply.messages),
        escalate=reply.escalate,
        reason=reply.reason,
        latency_ms=_since(started),
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cached_tokens=usage.cached_tokens,
        cost_usd=usage.cost_usd,
        cost_known=usage.cost_known,
        error=None,
        raw=None,
    )


def _since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _failed(
    turn: AgentTurn, agent: Agent, latency_ms: float, error: str, raw: str | None = None, usage: Usage | None = None
) -> ReplyRow:
    """A case without a usable reply; the error and raw output scrubbed of credentials before they are stored."""
    usage = usage or Usage()
    return ReplyRow(
        case_id=turn.case_id,
        agent=agent.name,
        messages=[],
        escalate=None,
        reason=None,
        latency_ms=latency_ms,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cached_tokens=usage.cached_tokens,
        cost_usd=usage.cost_usd,
        cost_known=usage.cost_known,
        error=scrub(error),
        raw=scrub(raw) if raw is not None else None,
    )


class ContactMessage(NamedTuple):
    """The contact's next message in a scenario, or None when the contact is done."""

    text: str | None
    """What the contact says; None: the contact has nothing more to say, and the conversation ends."""
    by: str
    """Who wrote it: `script`, or the contact model's name."""
    cost_usd: float = 0.0
    """What writing it cost (0 for a move, and for a message the contact cache already held)."""


ContactSide = Callable[[Scenario, tuple[Turn, ...]], Awaitable[ContactMessage]]
"""Who plays a persona scenario's contact: its next message from the scenario and the transcript so far; raises
ModelCallError or ValueError (an answer that is no contact message) when it gives none."""


def contact_side(model: ContactModel, *, catalogue: str, timeout_s: float, cache: StorePath | None) -> ContactSide:
    """A persona scenario's contact played by `model`: each message asked for with the scenario's own persona, goal
    and contact, the catalogue and the conversation so far, its answer read as untrusted input. With `cache` (a
    store), a message the model already wrote at the same point of the same conversation is reused, not paid for
    again, and each new one is kept; None asks afresh every time (`--fresh-contact`) and keeps nothing."""
    prompt = contact_prompt_hash()

    async def next_message(scenario: Scenario, history: tuple[Turn, ...]) -> ContactMessage:
        key = contact_cache_key(model.name, scenario, history, prompt)
        if cache is not None and (kept := cached_contact(cache, key)) is not None and kept.model == model.name:
            return ContactMessage(None if kept.done else kept.message, model.name)
        assert scenario.persona is not None and scenario.goal is not None
        asked = contact_messages(
            persona=scenario.persona, goal=scenario.goal, contact=scenario.contact, catalogue=catalogue, history=history
        )
        completion = await model.write(asked, timeout_s=timeout_s)
        reply = read_contact_reply(completion.content)
        if cache is not None:
            cache_contact(
                cache,
                key,
                CachedContact(
                    model=model.name, message=reply.message, done=reply.done, cost_usd=completion.usage.cost_usd
                ),
            )
        return ContactMessage(None if reply.done else reply.message, model.name, completion.usage.cost_usd)

    return next_message


async def play(
    agent: Agent,
    scenario: Scenario,
    tenant: str,
    *,
    slots: asyncio.Semaphore,
    deadline_ms: float,
    contact: ContactSide | None = None,
    started: ReplyRow | None = None,
    record: Record | None = None,
) -> ReplyRow:
    """A scenario played turn by turn: the contact's message (a move, or the contact model's), the agent asked with
    the conversation so far, its reply becoming the history, until the conversation ends (`is_over`). Each agent
    call waits for one of `slots`. `started` is the scenario as a killed run left it: play goes on from its last turn.
    Every turn played is passed to `record` as the scenario's row so far, so that a run killed now keeps it."""
    turns = list(started.turns or ()) if started is not None else []
    done, spent, failed = False, started.contact_usd if started is not None else 0.0, None
    while not is_over(scenario, turns, done):
        history = transcript(scenario, turns)
        if scenario.moves is not None:
            message = ContactMessage(scenario.moves[len(turns)], SCRIPT)
        else:
            assert contact is not None, "a persona scenario is played only with a contact model"
            try:
                async with slots:
                    message = await contact(scenario, history)
            except (ModelCallError, ValueError) as e:
                # no message: the conversation cannot go on, and fails (docs/design.md#fail-closed)
                failed = f"turn {len(turns) + 1}: the contact model gave no message: {scrub(str(e))}"
                break
            spent += message.cost_usd
        if message.text is None:
            done = True
            break
        asked = AgentTurn(
            tenant=tenant, case_id=scenario.id, text=message.text, history=history, contact=scenario.contact
        )
        async with slots:
            answer = await _ask(agent, asked, deadline_ms)
        turns.append(
            TurnRow(
                turn=len(turns) + 1,
                contact_by=message.by,
                contact_text=message.text,
                messages=answer.messages,
                escalate=answer.escalate,
                reason=answer.reason,
                latency_ms=answer.latency_ms,
                prompt_tokens=answer.prompt_tokens,
                completion_tokens=answer.completion_tokens,
                cost_usd=answer.cost_usd,
                cost_known=answer.cost_known,
                error=answer.error,
                contact_usd=message.cost_usd,
            )
        )
        if record and not is_over(scenario, turns):
            record(scenario_row(scenario, agent.name, turns, ended=None, contact_usd=spent))
    ended = "contact_error" if failed else ending(scenario, turns, done)
    return scenario_row(scenario, agent.name, turns, ended=ended, contact_usd=spent, contact_error=failed)


def ending(scenario: Scenario, turns: Sequence[TurnRow], contact_done: bool) -> str:
    """Why a finished conversation ended, as `ReplyRow.ended` names it (but a contact model's failure)."""
    last = turns[-1] if turns else None
    if last is not None and last.error is not None:
        return "agent_error"
    if last is not None and last.escalate:
        return "escalated"
    if contact_done:
        return "contact"
    return "moves" if scenario.moves is not None else "max_turns"


def scenario_row(
    scenario: Scenario,
    agent: str,
    turns: Sequence[TurnRow],
    *,
    ended: str | None,
    contact_usd: float = 0.0,
    contact_error: str | None = None,
) -> ReplyRow:
    """A scenario's reply row: its last turn's answer, its turns' tokens, cost and agent time summed, the first agent
    error named by its turn (or the contact model's failure), what the contact model cost, and the turns themselves."""
    last = turns[-1] if turns else None
    failed = next((t for t in turns if t.error is not None), None)
    return ReplyRow(
        case_id=scenario.id,
        agent=agent,
        messages=list(last.messages) if last else [],
        escalate=last.escalate if last else None,
        reason=last.reason if last else None,
        latency_ms=sum(t.latency_ms for t in turns),
        prompt_tokens=sum(t.prompt_tokens for t in turns),
        completion_tokens=sum(t.completion_tokens for t in turns),
        cost_usd=sum(t.cost_usd for t in turns),
        cost_known=all(t.cost_known for t in turns),
        error=f"turn {failed.turn}: {failed.error}"
        if failed
        else contact_error or (None if turns else "no turn was played"),
        raw=None,
        turns=list(turns),
        ended=ended,
        contact_usd=contact_usd,
    )


def recorded_key(row: ReplyRow) -> object:
    """What names a recorded reply: its case, and for a scenario how far it had got (its turns, and whether it had
    ended), so that every turn a killed run recorded is kept and the last one is where a resume goes on from."""
    return row.case_id if row.turns is None else (row.case_id, len(row.turns), row.ended)


def agent_calls_saved(replies: Sequence[ReplyRow], recorded: Sequence[ReplyRow]) -> int:
    """How many agent calls the rows a killed run recorded saved this run: a case's reply when it was recorded, and
    every turn of a scenario that a recording held."""
    latest = latest_recorded(recorded)
    saved = 0
    for reply in replies:
        kept = latest.get(reply.case_id)
        if kept is not None:
            saved += 1 if reply.turns is None else len(kept.turns or ())
    return saved


def latest_recorded(done: Sequence[ReplyRow]) -> dict[str, ReplyRow]:
    """Per case, what a killed attempt recorded last: a case's reply, or a scenario's row with the most turns."""
    latest: dict[str, ReplyRow] = {}
    for row in done:
        kept = latest.get(row.case_id)
        if (
            kept is None
            or row.ended is not None
            or (kept.ended is None and len(row.turns or ()) > len(kept.turns or ()))
        ):
            latest[row.case_id] = row
    return latest


def ask_agent(
    agent: Agent,
    suite: Sequence[SuiteRow],
    *,
    concurrency: int,
    deadline_ms: float,
    progress: Progress | None = None,
    done: Sequence[ReplyRow] = (),
    record: Record | None = None,
    contact: ContactSide | None = None,
) -> list[ReplyRow]:
    """The `agent_replies` stage: every case of the stored suite asked of the agent, one row per case, then every
    scenario played, one row each (its turns within), under one bound on the agent calls in flight.

    `done` holds the replies a killed attempt of this run recorded: those cases are not asked again, and a scenario
    goes on from its last recorded turn. Each new reply, and each turn of a scenario, goes to `record` as it
    arrives, so that a run killed now keeps it."""
    tenant = suite[0].tenant
    turns = [turn_of(case, tenant) for case in cases_of(suite)]
    scenarios = scenarios_of(suite)
    recorded = latest_recorded(done)

    async def everything() -> list[ReplyRow]:
        slots = asyncio.Semaphore(concurrency)
        played = 0

        async def one(scenario: Scenario) -> ReplyRow:
            nonlocal played
            started = recorded.get(scenario.id)
            if started is not None and started.ended is not None:
                return started
            row = await play(
                agent,
                scenario,
                tenant,
                slots=slots,
                deadline_ms=deadline_ms,
                contact=contact,
                started=started,
                record=record,
            )
            if record:
                record(row)
            played += 1
            if progress:
                progress("scenarios played", played, len(scenarios))
            return row

        answered, conversations = await asyncio.gather(
            collect_replies(
                agent,
                turns,
                concurrency=concurrency,
                deadline_ms=deadline_ms,
                progress=progress,
                done=recorded,
                record=record,
                slots=slots,
            ),
            asyncio.gather(*(one(s) for s in scenarios)),
        )
        return [*answered, *conversations]

    return asyncio.run(everything())
