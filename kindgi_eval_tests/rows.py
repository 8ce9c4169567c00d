"""Stored rows the tests build by hand, with the fields a test does not care about filled in once."""

from __future__ import annotations

from collections.abc import Sequence

from kindgi_eval.store import ReplyRow


def reply_row(case_id: str, messages: Sequence[str] = ("hi",), error: str | None = None) -> ReplyRow:
    """The mock agent's reply to `case_id`: `messages`, no escalation and no cost; with `error`, no reply at all."""
    return ReplyRow(
        case_id=case_id,
        agent="mock:agent",
        messages=[] if error else list(messages),
        escalate=None if error else False,
        reason=None,
        latency_ms=1.0,
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        cost_known=True,
        error=error,
        raw=None,
    )
