"""Asking the agent every case, a bounded number at a time, timing each answer and keeping every error."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from kindgi_eval.agent import Agent, AgentTurn
from kindgi_eval.rows import ReplyRow

Progress = Callable[[int, int], None]


async def collect_replies(
    agent: Agent,
    turns: Sequence[AgentTurn],
    *,
    concurrency: int,
    deadline_ms: float,
    progress: Progress | None = None,
) -> list[ReplyRow]:
    """One ReplyRow per turn, in order; a failure or a missed deadline is recorded, never raised."""
    slots = asyncio.Semaphore(concurrency)
    done = 0

    async def one(turn: AgentTurn) -> ReplyRow:
        nonlocal done
        async with slots:
            row = await _ask(agent, turn, deadline_ms)
        done += 1
        if progress:
            progress(done, len(turns))
        return row

    return list(await asyncio.gather(*(one(t) for t in turns)))


async def _ask(agent: Agent, turn: AgentTurn, deadline_ms: float) -> ReplyRow:
    started = time.perf_counter()
    try:
        answer = await asyncio.wait_for(agent.answer(turn), timeout=deadline_ms / 1000)
    except TimeoutError:
        return _failed(turn, agent, deadline_ms, f"no reply within the {deadline_ms:.0f} ms deadline")
    except Exception as e:  # an agent's failure fails its case, never the run
        return _failed(turn, agent, (time.perf_counter() - started) * 1000, f"{type(e).__name__}: {e}")
    latency_ms = (time.perf_counter() - started) * 1000
    reply, usage = answer.reply, answer.usage
    return ReplyRow(
        case_id=turn.case_id,
        agent=agent.name,
        messages=list(reply.messages),
        escalate=reply.escalate,
        reason=reply.reason,
        latency_ms=latency_ms,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cost_usd=usage.cost_usd,
        cost_known=usage.cost_known,
        error=None,
        raw=None,
    )


def _failed(turn: AgentTurn, agent: Agent, latency_ms: float, error: str, raw: str | None = None) -> ReplyRow:
    return ReplyRow(
        case_id=turn.case_id,
        agent=agent.name,
        messages=[],
        escalate=None,
        reason=None,
        latency_ms=latency_ms,
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        cost_known=True,
        error=error,
        raw=raw,
    )
