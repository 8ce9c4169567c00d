"""An agent served over HTTP (`AGENT_URL`), in whatever language the tenant runs it, by DESIGN.md's protocol.

`POST AGENT_URL` with `{"tenant", "case_id", "text", "history": [{"role", "text"}], "contact":
{"funnel_stage", "course"} or null, "nudge"}`; the answer is `{"messages": [str, ...], "escalate": bool,
"reason": str or null}`. A timeout, a non-2xx answer or a body of the wrong shape fails that case with the
error recorded, and the run goes on. The building and reading of bodies is pure; only `answer` does I/O.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from kindgi_eval.inputs import DEFAULT_MODEL_TIMEOUT_S
from kindgi_eval.llm import scrub
from kindgi_eval.spec import AgentAnswer, AgentReply, AgentTurn, ReplyError, Usage, clip

_SHAPE = '{"messages": [str, ...], "escalate": bool, "reason": str or null}'
_SECRET_PARAMS = ("key", "token", "secret", "sig", "password", "auth")
_BODY_CHARS = 200


class HttpAnswer(BaseModel):
    """The answer's shape, read strictly: every field present, no others, no coerced types."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    messages: list[str]
    """The chat messages, in order."""
    escalate: bool
    """Whether the conversation is handed to a person."""
    reason: str | None
    """The escalation reason, or null."""


def request_body(turn: AgentTurn) -> dict[str, Any]:
    """The JSON body DESIGN.md fixes, field for field."""
    contact = turn.contact
    return {
        "tenant": turn.tenant,
        "case_id": turn.case_id,
        "text": turn.text,
        "history": [{"role": t.role, "text": t.text} for t in turn.history],
        "contact": None if contact is None else {"funnel_stage": contact.funnel_stage, "course": contact.course},
        "nudge": turn.nudge,
    }


def read_answer(status: int, body: str) -> AgentReply:
    """The service's answer as a reply; ReplyError naming the problem (the body kept as raw) otherwise."""
    if not 200 <= status < 300:
        raise ReplyError(f"the agent answered HTTP {status}: {clip(body, _BODY_CHARS) or '(empty body)'}", raw=body)
    try:
        found = json.loads(body)
    except (ValueError, RecursionError) as e:
        raise ReplyError(f"the agent's answer is not JSON ({e}); expected {_SHAPE}", raw=body) from None
    if not isinstance(found, dict):
        raise ReplyError(f"the agent's answer is JSON but not an object; expected {_SHAPE}", raw=body)
    try:
        answer = HttpAnswer.model_validate(found)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, x['loc'])) or 'object'}: {x['msg']}" for x in e.errors())
        raise ReplyError(f"the agent's answer has the wrong shape ({problems}); expected {_SHAPE}", raw=body) from None
    return AgentReply(messages=tuple(answer.messages), escalate=answer.escalate, reason=answer.reason)


def display_url(url: str) -> str:
    """The URL as runs record it: no user or password, and no value of a key-, token- or signature-like parameter."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    pairs = [pair.partition("=") for pair in parts.query.split("&") if pair]
    query = "&".join(
        f"{k}{eq}{'[redacted]' if eq and any(s in k.lower() for s in _SECRET_PARAMS) else v}" for k, eq, v in pairs
    )
    return scrub(urlunsplit((parts.scheme, netloc, parts.path, query, "")))


class HttpAgent:
    """A tenant's own agent, asked over HTTP; its cost is not known to us, so it is 0 and flagged."""

    def __init__(self, url: str, *, timeout_s: float = DEFAULT_MODEL_TIMEOUT_S):
        import httpx  # here, not in the first case's latency; and one TLS context, which takes ~100 ms to build

        self.url = url
        self.timeout_s = timeout_s
        self.name = display_url(url)
        self._tls = httpx.create_ssl_context()

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        """POST the turn and read the answer; ReplyError on a timeout, a refused connection or a bad answer."""
        import httpx

        try:
            async with httpx.AsyncClient(timeout=self.timeout_s, verify=self._tls, follow_redirects=False) as client:
                response = await client.post(self.url, json=request_body(turn))
        except httpx.TimeoutException:
            raise ReplyError(f"the agent at {self.name} did not answer within {self.timeout_s:g} s") from None
        except httpx.HTTPError as e:
            raise ReplyError(f"the agent at {self.name} could not be reached: {type(e).__name__}: {e}") from None
        reply = read_answer(response.status_code, response.text)
        return AgentAnswer(reply=reply, usage=Usage(cost_usd=0.0, cost_known=False))

