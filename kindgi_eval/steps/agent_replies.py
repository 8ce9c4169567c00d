"""Asking the agent every case, a bounded number at a time, timing each answer and keeping every error.

The deadline is raced. A reply that comes after the deadline, but within as long again, is kept with its
real latency and no error, so every assertion is checked on it and the `latency` one fails; a reply that has
not come by then is cancelled and the case fails as an agent error. Either way a late case fails (C6).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence

from kindgi_eval.kinds import cases_of
from kindgi_eval.llm import ModelCallError, scrub
from kindgi_eval.rules import Agent, AgentTurn, Case, Progress, ReplyError, Usage
from kindgi_eval.store import ReplyRow, SuiteRow

Record = Callable[[ReplyRow], None]
"""Where each reply goes as soon as it arrives (the run's batch writer)."""

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
) -> list[ReplyRow]:
    """One ReplyRow per turn, in order; a failure or a missed deadline is recorded, never raised.

    A turn whose case has a reply in `done` (recorded by a killed attempt of the run) is not asked again: that
    reply is its row. Every reply asked for is passed to `record` as soon as it arrives."""
    done = done or {}
    slots = asyncio.Semaphore(concurrency)
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
    except ModelCallError as e:  # a provider's fault fails its case, never the run; anything else is a bug, and stops it
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


def ask_agent(
    agent: Agent,
    suite: Sequence[SuiteRow],
    *,
    concurrency: int,
    deadline_ms: float,
    progress: Progress | None = None,
    done: Sequence[ReplyRow] = (),
    record: Record | None = None,
) -> list[ReplyRow]:
    """The `agent_replies` stage: every case of the stored suite asked of the agent, one row per case.

    `done` holds the replies a killed attempt of this run recorded: those cases are not asked again. Each new reply
    goes to `record` as it arrives, so that a run killed now keeps it."""
    turns = [turn_of(case, suite[0].tenant) for case in cases_of(suite)]
    recorded = {r.case_id: r for r in done}
    return asyncio.run(
        collect_replies(
            agent, turns, concurrency=concurrency, deadline_ms=deadline_ms, progress=progress, done=recorded, record=record
        )
    )
