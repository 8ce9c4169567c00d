"""The deterministic assertions (docs/design.md#assertions): what a reply must hold that has an exact answer."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from kindgi_eval.rules.agent_protocol import AgentReply
from kindgi_eval.rules.cases import Case
from kindgi_eval.rules.emoji import strip_trailing_emoji

Assertion = Literal[
    "agent_error",
    "escalate",
    "reason",
    "must_contain",
    "must_not_contain",
    "must_end_with_question",
    "max_lines",
    "latency",
    "expected_output",
    "grader_error",
    "custom_handler",
    "handler_error",
    "contact_error",
]
"""The names of the deterministic assertions, `agent_error` for a reply that never came (docs/design.md#fail-closed), an
accuracy item's grader verdict (`expected_output`, or `grader_error` when its grader could not decide), and a custom
suite's handler verdict (`custom_handler`, or `handler_error` when the handler gave no valid answer), and a scenario
whose contact model gave no message (`contact_error`)."""

_QUOTE_LIMIT = 60
"""Longest stretch of reply text a detail quotes; reply text is untrusted (docs/design.md#model-output-is-untrusted) and
may be long."""
_ERROR_LIMIT = 200
"""Longest stretch of an agent error a detail quotes; an HTTP error may carry a whole response body."""


class AssertionResult(BaseModel):
    """One assertion of one case, checked against the agent's reply."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    assertion: Assertion
    """Which assertion this is; `must_contain` and `must_not_contain` give one result per entry."""
    held: bool
    """Whether the reply satisfied it; an agent error never holds (docs/design.md#fail-closed)."""
    detail: str
    """A sentence for a person: on failure, what was expected and what the reply did."""


def quote(text: str, *, limit: int = _QUOTE_LIMIT, keep: Literal["head", "tail"] = "head") -> str:
    """Quote text for a detail: at most `limit` characters kept, newlines and control characters escaped."""
    if len(text) > limit:
        text = text[: limit - 1] + "…" if keep == "head" else "…" + text[1 - limit :]
    return json.dumps(text, ensure_ascii=False)


def joined_reply(messages: Sequence[str]) -> str:
    """The reply as the substring assertions see it: its messages joined with one space (009)."""
    return " ".join(messages)


def message_lines(message: str) -> list[str]:
    """A message's lines: trailing whitespace removed, split on newlines; blank lines inside count."""
    return message.rstrip().split("\n")


def failures(results: Sequence[AssertionResult]) -> list[str]:
    """The details of the results that did not hold, in order."""
    return [result.detail for result in results if not result.held]


def _check_escalate(expected: bool, reply: AgentReply) -> AssertionResult:
    held = reply.escalate == expected
    if held:
        detail = "escalated, as expected" if expected else "did not escalate, as expected"
    elif expected:
        detail = "expected an escalation, got none"
    else:
        reason = f" with reason {quote(reply.reason)}" if reply.reason is not None else ""
        detail = f"expected no escalation, got one{reason}"
    return AssertionResult(assertion="escalate", held=held, detail=detail)


def _check_reason(expected: str, reply: AgentReply) -> AssertionResult:
    held = reply.reason == expected
    if held:
        detail = f"escalated with reason {quote(expected)}, as expected"
    elif reply.reason is None:
        detail = f"no escalation reason given, expected {quote(expected)}"
    else:
        detail = f"escalated with reason {quote(reply.reason)}, expected {quote(expected)}"
    return AssertionResult(assertion="reason", held=held, detail=detail)


def _check_contains(needle: str, text: str) -> AssertionResult:
    held = needle in text
    detail = f"reply contains {quote(needle)}" if held else f"reply does not contain {quote(needle)}"
    return AssertionResult(assertion="must_contain", held=held, detail=detail)


def _check_not_contains(needle: str, text: str) -> AssertionResult:
    held = needle not in text
    quoted = quote(needle)
    detail = f"reply does not contain {quoted}" if held else f"reply contains {quoted}, which is forbidden"
    return AssertionResult(assertion="must_not_contain", held=held, detail=detail)


def _check_question(expected: bool, messages: Sequence[str]) -> AssertionResult:
    if not messages:
        detail = "reply has no messages, so none ends with a question"
        return AssertionResult(assertion="must_end_with_question", held=not expected, detail=detail)
    final = messages[-1]
    ends = strip_trailing_emoji(final).endswith("?")
    if ends == expected:
        detail = "final message ends with a question" if ends else "final message does not end with a question"
    elif expected:
        detail = f"final message does not end with a question: {quote(final, keep='tail')}"
    else:
        detail = f"final message ends with a question, which it must not: {quote(final, keep='tail')}"
    return AssertionResult(assertion="must_end_with_question", held=ends == expected, detail=detail)


def _check_max_lines(limit: int, messages: Sequence[str]) -> AssertionResult:
    over = [
        f"message {number} has {count} lines, at most {limit} allowed"
        for number, message in enumerate(messages, start=1)
        if (count := len(message_lines(message))) > limit
    ]
    detail = "; ".join(over) if over else f"every message has at most {limit} lines"
    return AssertionResult(assertion="max_lines", held=not over, detail=detail)


def _check_latency(latency_ms: float, max_latency_ms: float) -> AssertionResult:
    held = latency_ms <= max_latency_ms
    # Rounded up, so a reply a fraction over a whole-millisecond deadline never reads as on it.
    took, deadline = math.ceil(latency_ms), round(max_latency_ms)
    detail = f"reply took {took} ms, {'within' if held else 'over'} the {deadline} ms deadline"
    return AssertionResult(assertion="latency", held=held, detail=detail)


def check_case(
    case: Case,
    reply: AgentReply | None,
    *,
    error: str | None,
    latency_ms: float,
    max_latency_ms: float,
) -> list[AssertionResult]:
    """Every deterministic assertion of a case against the agent's reply, held or failed, in a fixed order.

    An agent error (or no reply) is one failed `agent_error` result and nothing else: an error never
    counts as a pass (docs/design.md#fail-closed), and nothing about a reply that does not exist is checked.
    """
    if error is not None or reply is None:
        return [agent_failure(error)]
    text = joined_reply(reply.messages)
    results = [_check_escalate(case.expect.escalate, reply)]
    if case.expect.reason is not None:
        results.append(_check_reason(case.expect.reason, reply))
    results += [_check_contains(needle, text) for needle in case.must_contain]
    results += [_check_not_contains(needle, text) for needle in case.must_not_contain]
    if case.must_end_with_question is not None:
        results.append(_check_question(case.must_end_with_question, reply.messages))
    if case.max_lines is not None:
        results.append(_check_max_lines(case.max_lines, reply.messages))
    results.append(_check_latency(latency_ms, max_latency_ms))
    return results


def agent_failure(error: str | None) -> AssertionResult:
    """The one result of a case the agent failed (or never answered): nothing about a missing reply is checked."""
    cause = quote(error, limit=_ERROR_LIMIT) if error is not None else "no reply and no error recorded"
    return AssertionResult(
        assertion="agent_error", held=False, detail=f"the agent failed, so nothing was checked: {cause}"
    )
