"""An agent served over HTTP (`AGENT_URL`), in whatever language the tenant runs it, by the protocol of
docs/running.md#evaluating-an-agent-over-http.

`POST AGENT_URL` with `{"tenant", "case_id", "text", "history": [{"role", "text"}], "contact":
{"funnel_stage", "course"} or null, "nudge"}`; the answer is `{"messages": [str, ...], "escalate": bool,
"reason": str or null}`. A timeout, a non-2xx answer or a body of the wrong shape fails that case with the
error recorded, and the run goes on. So does a body over `BODY_LIMIT`, of which no more than the limit is read.
The building and reading of bodies is pure; only `answer` does I/O.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from kindgi_eval.inputs import DEFAULT_MODEL_TIMEOUT_S, mib
from kindgi_eval.llm import scrub
from kindgi_eval.rules import AgentAnswer, AgentReply, AgentTurn, ReplyError, Usage, clip, is_text

_SHAPE = '{"messages": [str, ...], "escalate": bool, "reason": str or null}'
_SECRET_PARAMS = ("key", "token", "secret", "sig", "password", "auth")
_BODY_CHARS = 200
BODY_LIMIT = 1 << 20
"""The most an answer's body may hold, in bytes (1 MiB): a longer one fails its case, and no more of it than this
(and one read from the socket, at most 64 KiB) is ever held in memory."""
_RAW_KEPT = 4096
"""How much of a body over the limit is kept as the case's raw output, in bytes."""


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
    """The JSON body of the protocol, field for field."""
    contact = turn.contact
    return {
        "tenant": turn.tenant,
        "case_id": turn.case_id,
        "text": turn.text,
        "history": [{"role": t.role, "text": t.text} for t in turn.history],
        "contact": None if contact is None else {"funnel_stage": contact.funnel_stage, "course": contact.course},
        "nudge": turn.nudge,
    }


class Received(NamedTuple):
    """An answer as it came off the wire."""

    status: int
    """The HTTP status."""
    content: bytes
    """The whole body, at most BODY_LIMIT bytes."""
    charset: str | None
    """The Content-Type's charset parameter, if it has one."""


class Decoded(NamedTuple):
    """A body as text, and whether it was text at all."""

    text: str
    """The body in its encoding, any byte that does not decode shown as U+FFFD."""
    encoding: str
    """The encoding it was read in: the Content-Type's charset when that names a text encoding, else UTF-8."""
    bad_byte: int | None
    """The offset of the first byte that does not decode; None when the whole body is text."""


def decode_body(content: bytes | bytearray, charset: str | None = None) -> Decoded:
    """A body's bytes as text, in the declared charset when that is a text encoding, else UTF-8 (JSON's own)."""
    for encoding in (charset, "utf-8"):
        if not encoding:
            continue
        try:
            return Decoded(content.decode(encoding), encoding, None)
        except UnicodeDecodeError as e:
            return Decoded(content.decode(encoding, errors="replace"), encoding, e.start)
        except (LookupError, UnicodeError, ValueError):  # no such codec, or one that is no text encoding (`rot13`)
            continue
    raise AssertionError("utf-8 always decodes")  # pragma: no cover


def read_body(status: int, content: bytes, charset: str | None = None) -> AgentReply:
    """A whole body as it came off the wire, read as `read_answer` reads text; a 2xx body that is not text in its
    encoding fails its case (the body kept as raw, undecodable bytes shown as U+FFFD)."""
    decoded = decode_body(content, charset)
    if decoded.bad_byte is not None and 200 <= status < 300:
        raise ReplyError(
            f"the agent's answer is not {decoded.encoding} text (byte {decoded.bad_byte}), so it is not JSON; expected {_SHAPE}",
            raw=decoded.text,
        )
    return read_answer(status, decoded.text)


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
    untext = [f"messages.{i}" for i, m in enumerate(answer.messages) if not is_text(m)]
    untext += ["reason"] if answer.reason is not None and not is_text(answer.reason) else []
    if untext:  # JSON may escape half a surrogate pair (`"\ud800"`); no store, or reader, can hold that as text
        problems = "; ".join(
            f"{where}: holds a lone surrogate escape, which is not a Unicode character" for where in untext
        )
        raise ReplyError(f"the agent's answer has the wrong shape ({problems}); expected {_SHAPE}", raw=body)
    return AgentReply(messages=tuple(answer.messages), escalate=answer.escalate, reason=answer.reason)


def over_limit(
    status: int, size: int | None, content: bytes | bytearray = b"", charset: str | None = None
) -> ReplyError:
    """The error of a body over BODY_LIMIT: declared as `size` bytes, or found longer while reading (`size` None);
    the first bytes read are kept as raw."""
    held = f"is {mib(size)} ({size:,} bytes)" if size is not None else "holds more"
    raw = decode_body(content[:_RAW_KEPT], charset).text if content else None
    return ReplyError(
        f"the agent's answer (HTTP {status}) {held}, over the limit of {mib(BODY_LIMIT)} for an answer; it was read no "
        f"further. Keep the agent's answers under {mib(BODY_LIMIT)}.",
        raw=raw,
    )


def declared_length(headers: Any) -> int | None:
    """The body length a response's Content-Length declares; None when it declares none (or none that is a number)."""
    value = headers.get("content-length")
    return int(value) if value is not None and value.strip().isdigit() else None


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

    def __init__(
        self, url: str, *, timeout_s: float = DEFAULT_MODEL_TIMEOUT_S, headers: Mapping[str, str] | None = None
    ):
        import httpx  # here, not in the first case's latency; and one TLS context, which takes ~100 ms to build

        self.url = url
        self.timeout_s = timeout_s
        self._headers = dict(headers or {})  # credentials, perhaps: sent with every request, never shown
        self.name = display_url(url)
        self._tls = httpx.create_ssl_context()

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        """POST the turn and read the answer; ReplyError on a timeout, a refused connection, a broken-off or
        oversized body, or a bad answer. The timeout covers the whole request, body included."""
        import httpx

        try:
            async with asyncio.timeout(self.timeout_s):
                received = await self._post(turn)
        except (TimeoutError, httpx.TimeoutException):
            raise ReplyError(f"the agent at {self.name} did not answer within {self.timeout_s:g} s") from None
        reply = read_body(*received)
        return AgentAnswer(reply=reply, usage=Usage(cost_usd=0.0, cost_known=False))

    async def _post(self, turn: AgentTurn) -> Received:
        """The answer's status, body and charset; the body streamed, and refused once it holds more than BODY_LIMIT."""
        import httpx

        # Uncompressed, so the bytes counted against the limit are the bytes held: a compressed body can grow a
        # thousandfold as it is decoded.
        headers = {**self._headers, "Accept-Encoding": "identity"}
        async with httpx.AsyncClient(timeout=self.timeout_s, verify=self._tls, follow_redirects=False) as client:
            request = client.build_request("POST", self.url, json=request_body(turn), headers=headers)
            try:
                response = await client.send(request, stream=True)
            except httpx.TimeoutException:
                raise
            except httpx.HTTPError as e:
                raise ReplyError(f"the agent at {self.name} could not be reached: {type(e).__name__}: {e}") from None
            try:
                status, charset = response.status_code, response.charset_encoding
                coding = response.headers.get("content-encoding", "identity").strip().lower()
                if coding not in ("", "identity"):
                    raise ReplyError(
                        f"the agent answered HTTP {status} with Content-Encoding {coding!r}, though the request "
                        "asked for none (identity). Serve the answer uncompressed."
                    )
                size = declared_length(response.headers)
                if size is not None and size > BODY_LIMIT:
                    raise over_limit(status, size)
                content = bytearray()
                async for chunk in response.aiter_raw():
                    content += chunk
                    if len(content) > BODY_LIMIT:
                        raise over_limit(status, None, content, charset)
                return Received(status, bytes(content), charset)
            except httpx.TimeoutException:
                raise
            except httpx.HTTPError as e:
                raise ReplyError(f"the agent at {self.name} broke off its answer: {type(e).__name__}: {e}") from None
            finally:
                await response.aclose()
