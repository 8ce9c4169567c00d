"""A stage's model requests as one batch through a provider's batch API, at its batch price: the requests written as
one JSONL file, uploaded, a batch created over it, its status polled (sleeping between polls, so a run waiting on its
batch holds no core), and its output and error files read back, one answer or one error per request.

Through litellm's files and batches API (`acreate_file`, `acreate_batch`, `aretrieve_batch`, `afile_content`); for
Anthropic, whose batches litellm reads but does not create, its Message Batches API over httpx; or, where the run
names a gateway, the gateway's OpenAI-compatible `/v1/files` and `/v1/batches` over httpx. A request the
batch answers with an error, or leaves unanswered (the batch failed, expired or was cancelled), comes back as an
error, never as an answer. The batch's id is handed to `remember` as soon as it exists, and a batch id given as `sent`
is polled instead of creating another: a run killed while its batch is out picks the same batch up again and pays
for it once. The pure parts (the file's lines, reading the output) sit above the line that says so.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from kindgi_eval.llm.call_error import ModelCallError
from kindgi_eval.llm.calls import (
    _litellm,
    is_retryable,
    knows_cached_price,
    read_fault,
    supports_schema,
    with_breakpoints,
)
from kindgi_eval.llm.gateway import Gateway, GatewayRefusal
from kindgi_eval.rules import Completion, ModelRef, Usage, clip, unicode_text

LITELLM_BATCH_PROVIDERS = frozenset({"openai", "azure", "hosted_vllm", "litellm_proxy", "mistral", "xai"})
"""The providers litellm creates a batch for from the OpenAI batch file itself, with no storage bucket of the run's
own."""
BATCH_PROVIDERS = LITELLM_BATCH_PROVIDERS | {"anthropic"}
"""Every provider a run sends its judge's batches to without a gateway (Anthropic's through its own API); through a
gateway the gateway decides."""
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_MAX_TOKENS = 4096
"""The longest answer an Anthropic batch request asks for (its API needs one); a verdict takes a hundred tokens."""
POLL_S = 30.0
"""How long a run sleeps between two looks at its batch's status."""
ENDPOINT = "/v1/chat/completions"
FINISHED = frozenset({"completed", "failed", "expired", "cancelled"})
"""The statuses after which a batch answers nothing more."""

Answers = dict[str, Completion | str]
"""Each request's answer by its id, or the error that stands in for it."""


class BatchState(NamedTuple):
    """What a look at a batch found."""

    status: str
    """The provider's word: validating, in_progress, finalizing, completed, failed, expired, cancelling, cancelled."""
    output_file_id: str | None
    """The file of its answers, once there is one."""
    error_file_id: str | None
    """The file of its failed requests, where there are any."""
    errors: str
    """Why the batch as a whole failed, where it says."""


def batch_lines(model: str, requests: Mapping[str, list[dict[str, Any]]], params: Mapping[str, Any]) -> bytes:
    """The batch's input file: one chat completion request a line, its id the request's."""
    lines = [
        json.dumps(
            {
                "custom_id": key,
                "method": "POST",
                "url": ENDPOINT,
                "body": {"model": model, "messages": messages, **params},
            }
        )
        for key, messages in requests.items()
    ]
    return ("\n".join(lines) + "\n").encode()


def read_lines(text: str, price: Callable[[dict[str, Any]], Usage]) -> Answers:
    """The answers an output or error file holds, by request id: a 2xx line's content and usage (priced by `price`),
    any other line the error it reports. A line that cannot be read is skipped (its request counts as unanswered)."""
    answers: Answers = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            key = str(entry["custom_id"])
        except (ValueError, KeyError, TypeError):
            continue
        response = entry.get("response") or {}
        body = response.get("body") or {}
        status = response.get("status_code")
        error = entry.get("error") or (body.get("error") if isinstance(body, dict) else None)
        if status is not None and 200 <= int(status) < 300 and not error:
            try:
                content = body["choices"][0]["message"]["content"]
            except (KeyError, IndexError, TypeError):
                answers[key] = "the batch's answer is not a chat completion"
                continue
            answers[key] = Completion(
                unicode_text(content) if content is not None else None, price(body.get("usage") or {}), 0.0
            )
        else:
            message = error.get("message", "") if isinstance(error, dict) else str(error or "")
            answers[key] = f"the batch reports the request failed (HTTP {status}): {clip(message, 200)}"
    return answers


def unanswered(state: BatchState) -> str:
    """The error of a request the batch ended without answering."""
    why = f": {clip(state.errors, 200)}" if state.errors else ""
    return f"the batch ended {state.status} without answering this request{why}"


# ---- I/O: litellm or the gateway --------------------------------------------------------------------------------


def read_anthropic(text: str, price: Callable[[dict[str, Any]], Usage]) -> Answers:
    """The answers an Anthropic batch's results hold, by request id: a succeeded message's text and usage (priced by
    `price`), an errored, expired or canceled one the error it stands for. A line that cannot be read is skipped."""
    answers: Answers = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            key, result = str(entry["custom_id"]), entry["result"]
            kind = result["type"]
        except (ValueError, KeyError, TypeError):
            continue
        if kind == "succeeded":
            message = result.get("message") or {}
            texts = [block.get("text", "") for block in message.get("content") or [] if block.get("type") == "text"]
            answers[key] = Completion(unicode_text("".join(texts)), price(message.get("usage") or {}), 0.0)
        else:
            error = ((result.get("error") or {}).get("error") or {}).get("message", "")
            answers[key] = f"the batch reports the request {kind}{': ' + clip(error, 200) if error else ''}"
    return answers


def anthropic_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """Anthropic's usage as litellm counts it: the cache's reads and writes among the prompt tokens."""
    read, written = int(usage.get("cache_read_input_tokens") or 0), int(usage.get("cache_creation_input_tokens") or 0)
    prompt = int(usage.get("input_tokens") or 0) + read + written
    return {
        "prompt_tokens": prompt,
        "completion_tokens": int(usage.get("output_tokens") or 0),
        "total_tokens": prompt + int(usage.get("output_tokens") or 0),
        "prompt_tokens_details": {"cached_tokens": read, "cache_creation_tokens": written},
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
    }


def batch_price(ref: ModelRef, usage: dict[str, Any]) -> Usage:
    """A batch answer's tokens (as litellm counts them) at the model's batch price in litellm's cost map; a model it
    cannot price costs 0 and is flagged, and so is one whose cached price it does not know, for cached tokens."""
    from litellm.cost_calculator import (
        batch_cost_calculator,
    )  # litellm's own batch pricing, which has no top-level name

    litellm = _litellm()
    counted = litellm.Usage(**{k: v for k, v in usage.items() if v is not None})
    cached = int(getattr(counted.prompt_tokens_details, "cached_tokens", 0) or 0)
    try:
        info = litellm.get_model_info(model=ref.litellm_name)
    except Exception:  # noqa: BLE001 - a model litellm cannot place has no price
        info = None
    cost = sum(batch_cost_calculator(counted, ref.litellm_name)) if info else 0.0
    return Usage(
        prompt_tokens=counted.prompt_tokens or 0,
        completion_tokens=counted.completion_tokens or 0,
        cached_tokens=cached,
        cost_usd=cost,
        cost_known=info is not None and (not cached or knows_cached_price(ref.litellm_name)),
    )


async def _http(method: str, url: str, headers: Mapping[str, str], **options: Any) -> Any:
    """One request of a batch API over httpx; a reply that is not a 2xx, or a broken connection (a 500), is raised as a
    GatewayRefusal, which `calls.read_fault` classifies as it classifies a call's."""
    import httpx  # only a run that sends batches over HTTP needs it

    try:
        async with httpx.AsyncClient(timeout=60) as client:
            response = await client.request(method, url, headers=dict(headers), **options)
    except httpx.TransportError as e:
        raise GatewayRefusal(f"{url} could not be reached: {type(e).__name__}: {e}", 500) from None
    if not response.is_success:
        raise GatewayRefusal(
            f"{url} answered HTTP {response.status_code}: {response.text[:300]}", response.status_code, response
        )
    return response


async def _read_files(api: _Litellm | _Gateway, state: BatchState) -> Answers:
    """The answers in a finished OpenAI-style batch's output and error files."""
    found: Answers = {}
    for file_id in (state.output_file_id, state.error_file_id):
        if file_id:
            found.update(read_lines(await api.content(file_id), api.price))
    return found


class _Litellm:
    """The files and batches API through litellm, for the provider `ref` names."""

    def __init__(self, ref: ModelRef):
        self.ref = ref
        self.litellm = _litellm()

    async def send(self, requests: Mapping[str, list[dict[str, Any]]], params: Mapping[str, Any]) -> str:
        return await self.create(await self.upload(batch_lines(self.ref.model, requests, params)))

    async def answers(self, state: BatchState) -> Answers:
        return await _read_files(self, state)

    async def upload(self, data: bytes) -> str:
        made = await self.litellm.acreate_file(
            file=("requests.jsonl", data), purpose="batch", custom_llm_provider=self.ref.provider
        )
        return made.id

    async def create(self, file_id: str) -> str:
        made = await self.litellm.acreate_batch(
            completion_window="24h", endpoint=ENDPOINT, input_file_id=file_id, custom_llm_provider=self.ref.provider
        )
        return made.id

    async def look(self, batch_id: str) -> BatchState:
        batch = await self.litellm.aretrieve_batch(batch_id=batch_id, custom_llm_provider=self.ref.provider)
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        return BatchState(
            batch.status,
            batch.output_file_id,
            batch.error_file_id,
            "; ".join(str(getattr(e, "message", e)) for e in errors),
        )

    async def content(self, file_id: str) -> str:
        return (await self.litellm.afile_content(file_id=file_id, custom_llm_provider=self.ref.provider)).text

    def price(self, usage: dict[str, Any]) -> Usage:
        return batch_price(self.ref, usage)


class _Gateway:
    """The files and batches API of a LiteLLM gateway, over its OpenAI-compatible endpoints."""

    def __init__(self, gateway: Gateway, ref: ModelRef):
        self.gateway, self.ref = gateway, ref

    async def send(self, requests: Mapping[str, list[dict[str, Any]]], params: Mapping[str, Any]) -> str:
        return await self.create(await self.upload(batch_lines(self.ref.litellm_name, requests, params)))

    async def answers(self, state: BatchState) -> Answers:
        return await _read_files(self, state)

    async def _call(self, method: str, path: str, **options: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.gateway.key}"} if self.gateway.key else {}
        return await _http(method, f"{self.gateway.url.rstrip('/')}{path}", headers, **options)

    async def upload(self, data: bytes) -> str:
        form = {"purpose": "batch", "custom_llm_provider": self.ref.provider}
        return (await self._call("POST", "/v1/files", data=form, files={"file": ("requests.jsonl", data)})).json()["id"]

    async def create(self, file_id: str) -> str:
        body = {
            "input_file_id": file_id,
            "endpoint": ENDPOINT,
            "completion_window": "24h",
            "custom_llm_provider": self.ref.provider,
        }
        return (await self._call("POST", "/v1/batches", json=body)).json()["id"]

    async def look(self, batch_id: str) -> BatchState:
        batch = (await self._call("GET", f"/v1/batches/{batch_id}")).json()
        errors = (batch.get("errors") or {}).get("data") or []
        return BatchState(
            batch["status"],
            batch.get("output_file_id"),
            batch.get("error_file_id"),
            "; ".join(str(e.get("message", e)) for e in errors),
        )

    async def content(self, file_id: str) -> str:
        return (await self._call("GET", f"/v1/files/{file_id}/content")).text

    def price(self, usage: dict[str, Any]) -> Usage:
        """Tokens as counted; the gateway prices no batch answer, so the cost is flagged as not known."""
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        return Usage(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            cached_tokens=cached,
            cost_usd=0.0,
            cost_known=False,
        )


class _Anthropic:
    """Anthropic's Message Batches API over httpx, with the key and base URL litellm reads (`ANTHROPIC_API_KEY`,
    `ANTHROPIC_API_BASE` or `ANTHROPIC_BASE_URL`), priced by litellm's cost map as `_Litellm` prices."""

    def __init__(self, ref: ModelRef):
        self.ref = ref
        self.base = (
            os.environ.get("ANTHROPIC_API_BASE") or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
        ).rstrip("/")
        self.headers = {"x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""), "anthropic-version": ANTHROPIC_VERSION}

    async def _call(self, method: str, url: str, **options: Any) -> Any:
        return await _http(method, url, self.headers, **options)

    async def send(self, requests: Mapping[str, list[dict[str, Any]]], params: Mapping[str, Any]) -> str:
        batch = [
            {
                "custom_id": key,
                "params": {
                    "model": self.ref.model,
                    "max_tokens": ANTHROPIC_MAX_TOKENS,
                    "system": "".join(m["content"] for m in messages if m["role"] == "system"),
                    "messages": [m for m in messages if m["role"] != "system"],
                },
            }
            for key, messages in requests.items()
        ]
        return (await self._call("POST", f"{self.base}/v1/messages/batches", json={"requests": batch})).json()["id"]

    async def look(self, batch_id: str) -> BatchState:
        batch = (await self._call("GET", f"{self.base}/v1/messages/batches/{batch_id}")).json()
        status = "completed" if batch["processing_status"] == "ended" else "in_progress"
        return BatchState(status, batch.get("results_url"), None, "")

    async def answers(self, state: BatchState) -> Answers:
        if not state.output_file_id:
            return {}
        return read_anthropic((await self._call("GET", state.output_file_id)).text, self.price)

    def price(self, usage: dict[str, Any]) -> Usage:
        return batch_price(self.ref, anthropic_usage(usage))


async def _finished(api: _Litellm | _Gateway | _Anthropic, batch_id: str, poll_s: float) -> BatchState:
    """The batch once it has ended, looked at every `poll_s` seconds and asleep in between. A look that meets a rate
    limit or a server error is tried again at the next poll: the batch is out and paid for, and a blip must not lose it."""
    while True:
        try:
            state = await api.look(batch_id)
        except Exception as e:  # classified as a call's fault; only a passing one is waited out
            if not is_retryable(read_fault(e)):
                raise
        else:
            if state.status in FINISHED:
                return state
        await asyncio.sleep(poll_s)


async def run_batch(
    ref: ModelRef,
    requests: Mapping[str, list[dict[str, Any]]],
    *,
    gateway: Gateway | None,
    schema: dict[str, Any] | None,
    sent: str | None,
    remember: Callable[[str], None],
    poll_s: float = POLL_S,
) -> Answers:
    """Every request's answer, or the error that stands in for it, by its id: through the batch `sent` where a killed
    attempt created one, else through a new batch whose id goes to `remember` at once. ModelCallError when the batch
    cannot be created or looked at (every request then has no answer)."""
    api = (
        _Gateway(gateway, ref)
        if gateway is not None
        else _Anthropic(ref)
        if ref.provider == "anthropic"
        else _Litellm(ref)
    )
    try:
        batch_id = sent
        if batch_id is None:
            asks_schema = schema and ref.provider != "anthropic" and (gateway or supports_schema(ref.litellm_name))
            params = {"response_format": {"type": "json_schema", "json_schema": schema}} if asks_schema else {}
            shaped = {key: with_breakpoints(ref, messages) for key, messages in requests.items()}
            batch_id = await api.send(shaped, params)
            remember(batch_id)
        state = await _finished(api, batch_id, poll_s)
        answers = await api.answers(state)
    except Exception as e:  # every provider fault is classified, as a call's is; nothing raw leaves this module
        fault = read_fault(e)
        raise ModelCallError(f"{ref}: the batch API failed: {fault.detail}", fault=fault.cause, attempts=1) from None
    return {key: answers.get(key, unanswered(state)) for key in requests}
