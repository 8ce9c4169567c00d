"""One request to a LiteLLM gateway (its proxy) over the OpenAI-compatible protocol, with httpx: what a call is made of
when a run names a gateway (`KINDGI_GATEWAY_URL`), so that the run's process never imports litellm. `calls.complete`
runs these attempts in the same retry loop, circuit and timeout as litellm's.

The request is `POST {url}/v1/chat/completions` (`{url}` given with or without its `/v1`) with `Authorization: Bearer {key}` and the model as litellm names it,
`provider/model` (`openai/gpt-4o-mini` for `openai:gpt-4o-mini`), which the gateway's config routes. A reply that is
not a 2xx is raised with its status and headers, for `calls.read_fault` to classify as it classifies litellm's; a
connection that breaks, or a body that is not a chat completion, is a 500, as litellm reports them; the price is the
gateway's `x-litellm-response-cost` header, and unknown without it. A gateway that refuses the connection (it is
restarting, say) was sent nothing: it is tried again every `RECONNECT_S` while the call's time lasts, and only then
is the attempt a 500, so a gateway's restart costs its calls time, not their answers.
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any, NamedTuple

from kindgi_eval.rules import Usage

COST_HEADER = "x-litellm-response-cost"
"""The header a LiteLLM gateway prices each reply in, in USD."""
_BODY_CHARS = 2_000
"""Of a refusal's body, what is kept for its message (it is clipped further when stored)."""
RECONNECT_S = 0.5
"""How often a gateway that refuses the connection is tried again."""


class Gateway(NamedTuple):
    """Where a run's model calls go, and the key it gives there."""

    url: str
    """The gateway's base URL: `http://kindgi-gateway:4000`."""
    key: str | None
    """Its master key or a key it issued (`KINDGI_GATEWAY_KEY`); None for a gateway that asks for none."""


class GatewayRefusal(Exception):
    """A gateway's answer that is not a chat completion: its status and, where there was a reply, its headers."""

    def __init__(self, message: str, status_code: int, response: Any = None):
        super().__init__(message)
        self.status_code = status_code
        self.response = response


async def gateway_attempt(
    gateway: Gateway,
    model: str,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    remaining_s: float,
    _first: bool,
) -> tuple[str | None, Usage]:
    """One chat completion request within `remaining_s` (every attempt alike, so `_first` is not read): its content
    and usage; TimeoutError, or GatewayRefusal."""
    import httpx  # only a run that calls models needs it

    headers = {"Authorization": f"Bearer {gateway.key}"} if gateway.key else {}
    body = {"model": model, "messages": messages, **params}
    started = time.monotonic()
    deadline = started + remaining_s
    while True:
        timeout = max(deadline - time.monotonic(), 0.001)
        try:
            async with httpx.AsyncClient(timeout=timeout, verify=_tls()) as client:
                response = await client.post(completions_url(gateway.url), json=body, headers=headers)
            break
        except httpx.TimeoutException:
            raise TimeoutError(f"no answer from the gateway within {remaining_s:.1f} s") from None
        except httpx.ConnectError as e:  # nothing was sent: wait for the gateway while the call's time lasts
            left = deadline - time.monotonic()
            await asyncio.sleep(max(0.0, min(RECONNECT_S, left)))
            if left <= RECONNECT_S:
                raise GatewayRefusal(
                    f"the gateway at {gateway.url} could not be reached for {time.monotonic() - started:.1f} s: "
                    f"{type(e).__name__}: {e}",
                    500,
                ) from None
        except httpx.TransportError as e:
            raise GatewayRefusal(
                f"the gateway at {gateway.url} broke the connection: {type(e).__name__}: {e}", 500
            ) from None
    if not response.is_success:
        text = _without_key(response.text[:_BODY_CHARS], gateway.key)
        raise GatewayRefusal(
            f"the gateway answered HTTP {response.status_code}: {text}", response.status_code, response
        )
    try:
        reply = response.json()
        content = reply["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise GatewayRefusal(
            f"the gateway's reply is not a chat completion: {response.text[:200]}", 500, response
        ) from None
    return content, _usage(reply.get("usage") or {}, response.headers.get(COST_HEADER))


def completions_url(base: str) -> str:
    """The gateway's chat completions endpoint, its URL given with `/v1` (as `OPENAI_BASE_URL` takes it) or without."""
    return f"{base.rstrip('/').removesuffix('/v1')}/v1/chat/completions"


@functools.cache
def _tls() -> Any:
    """One TLS context for every call of the process: httpx builds a new one for each client otherwise, some tens of
    milliseconds of a core per call."""
    import httpx

    return httpx.create_ssl_context()


def _usage(usage: dict[str, Any], cost: str | None) -> Usage:
    """Tokens as the reply counts them (those read from the provider's cache in `prompt_tokens_details.cached_tokens`),
    and the price the gateway put in its header; without one it is flagged unknown."""
    try:
        price = float(cost) if cost is not None else None
    except ValueError:
        price = None
    return Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0),
        cost_usd=price if price is not None else 0.0,
        cost_known=price is not None,
    )


def _without_key(text: str, key: str | None) -> str:
    """`text` with the gateway's key taken out, wherever it came from (`calls.scrub` then takes out the rest)."""
    return text.replace(key, "[redacted]") if key else text
