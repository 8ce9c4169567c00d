"""The one place every model call is made, agent's and judge's alike, through litellm or, where the run names one,
a LiteLLM gateway (`llm.gateway`), and what real providers do handled here once, in one retry loop for both. (The
offline `mock:*` models never get here: they are entries of the agents' name-to-factory table.)

A call has one timeout for all its attempts. A rate limit (429) or a server error (5xx, or a body that is not
JSON, which litellm reports as 500) is retried with exponential backoff and jitter, waiting what Retry-After
asks; an input error (any other 4xx) is not retried, and neither is a timeout, which has used the call's
budget up. litellm's own retries are off, so the requests a provider sees are exactly the attempts made here
(litellm imports tenacity only for those, so nothing here needs it). The loop is written out rather than built
on tenacity: every decision in it is `retry_delay`'s, and tenacity would only carry that same rule through a
wrapper exception and a stop that reads the wait it computed.
A provider that has failed every attempt for a while trips its circuit: calls to it fail at once, recording
why, instead of hammering it; after a cooldown it is tried again. Errors leave this module scrubbed of keys.

The pure parts (delays, Retry-After, the circuit, scrubbing) sit above the line that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import random
import re
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any, NamedTuple

from kindgi_eval.llm.call_error import FaultCause, ModelCallError
from kindgi_eval.llm.gateway import Gateway, gateway_attempt
from kindgi_eval.llm.worker import running
from kindgi_eval.rules import (
    CACHE_BREAKS,
    NO_CREDENTIALS,
    REFUSED_CREDENTIALS,
    Completion,
    ModelRef,
    ModelRole,
    Usage,
    clip,
    unicode_text,
)

log = logging.getLogger(__name__)

Attempt = Callable[[float, bool], Awaitable[tuple[str | None, Usage]]]
"""One request of a call: given the seconds left of its timeout and whether it is the first, its content and usage."""


class RetryPolicy(NamedTuple):
    """How often and how patiently a failed attempt is tried again."""

    attempts: int = 4
    """Attempts in all, the first included."""
    base_delay_s: float = 0.5
    """The wait before the first retry; each later one doubles it."""
    max_delay_s: float = 8.0
    """The longest computed wait (a Retry-After the provider sends may ask for longer)."""


class CircuitPolicy(NamedTuple):
    """When a provider counts as down, and how long it is left alone."""

    failures: int = 5
    """Failed attempts in a row, with no success between them, before the circuit may open..."""
    window_s: float = 10.0
    """...and only once they span at least this long, so a brief blip is ridden out by retries."""
    cooldown_s: float = 30.0
    """How long calls fail at once before the provider is tried again."""


class CallPolicy(NamedTuple):
    """Everything that shapes how one model call meets a failing provider."""

    retry: RetryPolicy = RetryPolicy()
    """Retries of one call."""
    circuit: CircuitPolicy = CircuitPolicy()
    """When to stop calling the provider at all."""


DEFAULT_POLICY = CallPolicy()


class Fault(NamedTuple):
    """What went wrong with one attempt, as far as retrying is concerned."""

    cause: FaultCause
    """rate_limit (429), server (5xx), timeout, auth (401, 403, or no credentials at all: never retried), or input
    (anything else: the request itself is wrong)."""
    status: int | None
    """The HTTP status, where there is one."""
    retry_after_s: float | None
    """How long the provider asked us to wait, from Retry-After or retry-after-ms."""
    detail: str
    """The provider's message, scrubbed and clipped."""


# ---- pure: no I/O below until the line that says otherwise -------------------------------------------------

_SECRET_VAR = re.compile(r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_SECRET_PATTERNS = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]+"), r"\1 [redacted]"),
    (re.compile(r"\bsk-[A-Za-z0-9_\-*]{6,}"), "[redacted]"),
    (
        re.compile(
            r"(?i)\b(authorization|x-api-key|api[-_]?key|access[-_]?token|token|secret)"  # the name,
            r"([\"']?\s*[:=]\s*[\"']?)"  # its separator,
            r"(?!(?:bearer|basic)\s)(?!\[redacted\])[^\s\"',;&}]+"  # and a value not already handled
        ),
        r"\1\2[redacted]",
    ),
)
_DETAIL_CHARS = 300


def scrub(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every credential taken out: values of *_KEY, *_TOKEN, *_SECRET, *_PASSWORD variables,
    `Bearer ...`/`Basic ...` credentials, `sk-...` keys and `api_key=...`-style pairs. The one scrubber every
    stored or logged error goes through."""
    environ = os.environ if environ is None else environ
    for name, value in environ.items():
        if len(value) >= 8 and _SECRET_VAR.search(name):
            text = text.replace(value, "[redacted]")
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds a provider asked us to wait: `retry-after-ms`, else `Retry-After` as seconds or an HTTP date."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if (millis := _number(lowered.get("retry-after-ms"))) is not None:
        return max(0.0, millis / 1000)
    value = lowered.get("retry-after")
    if value is None:
        return None
    if (seconds := _number(value)) is not None:
        return max(0.0, seconds)
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and number == number and number != float("inf") else None


def is_retryable(fault: Fault) -> bool:
    """A rate limit or a server error may pass; an input error will not, and a timeout used the budget up."""
    return fault.cause in ("rate_limit", "server")


def retry_delay(policy: RetryPolicy, attempt: int, fault: Fault, remaining_s: float, rand: float) -> float | None:
    """How long to wait before attempt `attempt + 1`, or None when the call should give up now.

    `rand` is uniform in [0, 1). Without Retry-After the wait is exponential with equal jitter: half of
    min(max_delay, base * 2**(attempt-1)) plus up to that half again at random, so retries spread out but
    never shrink to nothing. A Retry-After is honoured, plus up to 10% so that clients told the same time do
    not return in lockstep. A wait that would outlast the call's remaining timeout is not started.
    """
    if not is_retryable(fault) or attempt >= policy.attempts:
        return None
    if fault.retry_after_s is not None:
        delay = fault.retry_after_s * (1 + 0.1 * rand)
    else:
        ceiling = min(policy.max_delay_s, policy.base_delay_s * 2 ** (attempt - 1))
        delay = ceiling * (0.5 + 0.5 * rand)
    return delay if delay < remaining_s else None


class Circuit:
    """One provider's circuit: closed (calls go out), open (calls fail at once), then tried again.

    It opens when `failures` attempts in a row have failed and the first of them is at least `window_s`
    old. After `cooldown_s` calls go out again; the failure streak is kept, so one more failure reopens it
    at once, while one success closes it and forgets the streak. Times are passed in, so this is pure.
    """

    def __init__(self, provider: str, policy: CircuitPolicy):
        self.provider = provider
        self.policy = policy
        self.streak = 0
        self.streak_since: float | None = None
        self.open_until: float | None = None
        self.last_error = ""

    def allows(self, now: float) -> bool:
        """Whether a call may go out now."""
        return self.open_until is None or now >= self.open_until

    def succeeded(self) -> None:
        """An attempt was answered: the provider is up."""
        self.streak, self.streak_since, self.open_until, self.last_error = 0, None, None, ""

    def failed(self, now: float, error: str) -> None:
        """An attempt failed; open the circuit when the provider has failed every attempt for long enough."""
        self.streak += 1
        self.streak_since = now if self.streak_since is None else self.streak_since
        self.last_error = error
        if self.streak >= self.policy.failures and now - self.streak_since >= self.policy.window_s:
            self.open_until = now + self.policy.cooldown_s

    def refusal(self, now: float) -> str:
        """Why a call was not made, for the case or sample it fails."""
        span = now - (self.streak_since if self.streak_since is not None else now)
        wait = (self.open_until or now) - now
        return (
            f"{self.provider} was not called: its circuit is open because it failed every attempt for {span:.0f} s "
            f"({self.streak} in a row; the last: {self.last_error}). It is tried again in {wait:.0f} s."
        )


BREAKPOINT = {"type": "ephemeral"}
"""The mark that ends a prefix a provider caches only where it is told to (Anthropic's `cache_control`, which litellm
passes on to Anthropic and Bedrock)."""


def takes_breakpoints(ref: ModelRef) -> bool:
    """Whether `ref`'s provider caches a repeated prefix only up to a marked breakpoint: Anthropic, and Bedrock's
    Claude and Nova models (its other models take no mark). OpenAI and the rest cache on their own, or not at all."""
    if ref.provider == "anthropic":
        return True
    return ref.provider == "bedrock" and any(name in ref.model.lower() for name in ("anthropic.", "claude", "nova"))


def with_breakpoints(ref: ModelRef, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`messages` as sent to `ref`'s provider: a message listing `CACHE_BREAKS` is split there into text blocks, each
    but the last marked as a breakpoint, for a provider that `takes_breakpoints`; for any other it is the same message
    without the key, its content one string."""
    shaped = []
    for message in messages:
        breaks = message.get(CACHE_BREAKS)
        plain = {key: value for key, value in message.items() if key != CACHE_BREAKS}
        if breaks and takes_breakpoints(ref):
            text = plain["content"]
            ends = [*breaks, len(text)]
            starts = [0, *breaks]
            plain["content"] = [
                {"type": "text", "text": text[start:end], **({"cache_control": BREAKPOINT} if end != len(text) else {})}
                for start, end in zip(starts, ends)
            ]
        shaped.append(plain)
    return shaped


def _clean(message: str) -> str:
    """litellm's message without its repeated class-name prefixes."""
    return re.sub(r"^(?:litellm\.)?\w+(?:Error|Timeout|Exception):\s*", "", re.sub(r"^litellm\.\w+:\s*", "", message))


# ---- I/O: litellm --------------------------------------------------------------------------------------------

_circuits: dict[tuple[str, CircuitPolicy], Circuit] = {}


_loaded: Any = None


def _litellm():
    """litellm, imported on first use only (its import alone takes seconds), quiet and offline-priced."""
    global _loaded
    if _loaded is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_LOG", "ERROR")
        import litellm

        litellm.suppress_debug_info = True
        logging.getLogger("LiteLLM").setLevel(logging.ERROR)
        _loaded = litellm
    return _loaded


WELL_KNOWN_PROVIDERS = frozenset(
    {
        "openai",
        "anthropic",
        "azure",
        "azure_ai",
        "ollama",
        "ollama_chat",
        "gemini",
        "vertex_ai",
        "bedrock",
        "groq",
        "mistral",
        "together_ai",
        "openrouter",
        "deepseek",
        "cohere",
        "huggingface",
        "fireworks_ai",
        "xai",
        "perplexity",
        "hosted_vllm",
        "lm_studio",
        "cerebras",
        "databricks",
        "watsonx",
        "sagemaker",
        "nvidia_nim",
        "deepinfra",
        "replicate",
        "openai_like",
        "custom_openai",
    }
)
"""Providers taken as known without asking litellm, whose whole list (`provider_names`) is had only by importing it:
seconds a run would wait before it may start. A test checks that the installed litellm routes each of them."""

CREDENTIALS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "perplexity": ("PERPLEXITYAI_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "replicate": ("REPLICATE_API_KEY",),
    "nvidia_nim": ("NVIDIA_NIM_API_KEY",),
}
"""The variable (any one of them) a provider's key is read from, checked before a run starts, without importing
litellm; a test checks each against litellm's own `validate_environment`. A provider not listed (a local server, a
cloud's own credential chain) is not checked beforehand; a refusal of its credentials is never retried."""


def missing_credentials(provider: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The variables a call to `provider` needs one of, when `environ` sets none of them; empty when it does, or
    when the provider is not one whose variables are known (`CREDENTIALS`)."""
    names = CREDENTIALS.get(provider, ())
    return () if any(environ.get(name) for name in names) else names


@functools.cache
def provider_names() -> frozenset[str]:
    """Every provider name litellm routes (`openai`, `anthropic`, `ollama`, ...); imports litellm, or asks the
    worker that did (`llm.worker`)."""
    if (worker := running()) is not None:
        return worker.ask("providers")
    return frozenset(str(getattr(p, "value", p)) for p in _litellm().provider_list)


@functools.cache
def supports_schema(model: str) -> bool:
    """Whether litellm knows `model` (its litellm name) to take a response schema; False for a model it does not know."""
    try:
        return bool(_litellm().supports_response_schema(model=model))
    except Exception:  # noqa: BLE001 - litellm raises on a name it cannot place; such a model is asked by prompt alone
        return False


def prepare() -> None:
    """Import litellm now, or wait for the worker to have, so that no call's latency or timeout pays for the import."""
    provider_names()


async def warm_up() -> None:
    """Build what litellm builds on its first call (its response types' schemas: about 0.3 s) with a call litellm
    answers itself (`mock_response`), so nothing is sent: for a process idle before its first real call."""
    await _litellm().acompletion(
        model="openai/warm-up", messages=[{"role": "user", "content": "ok"}], mock_response="ok"
    )


def forget_clients() -> None:
    """Forget what this process remembers about providers: every circuit's failure streak. (litellm's own cached
    HTTP clients are keyed by base URL and key, which it reads from the environment on each call.)"""
    _circuits.clear()


def _circuit(provider: str, policy: CircuitPolicy) -> Circuit:
    key = (provider, policy)
    if key not in _circuits:
        _circuits[key] = Circuit(provider, policy)
    return _circuits[key]


def _response_headers(error: BaseException) -> Iterator[Mapping[str, str]]:
    """The headers of each HTTP response along the exception's chain, the raised one's first: litellm raises its own
    exception while handling the openai SDK's, whose `response` is the provider's, Retry-After and all."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        headers = getattr(getattr(link, "response", None), "headers", None)
        if isinstance(headers, Mapping):
            yield headers
        link = link.__cause__ or link.__context__


def read_fault(error: BaseException) -> Fault:
    """A litellm (or openai SDK) exception as a Fault: its status, any Retry-After, and its scrubbed message."""
    litellm = sys.modules.get("litellm")
    status = getattr(error, "status_code", None)
    status = status if isinstance(status, int) else None
    detail = clip(scrub(_clean(str(error))), _DETAIL_CHARS) or type(error).__name__
    if (litellm is not None and isinstance(error, litellm.Timeout)) or isinstance(error, TimeoutError):
        return Fault("timeout", status, None, detail)
    retry_after = next((s for h in _response_headers(error) if (s := parse_retry_after(h)) is not None), None)
    if status in (401, 403) or NO_CREDENTIALS in str(error):  # litellm says a missing key with a 500
        cause: FaultCause = "auth"
    elif status == 429:
        cause = "rate_limit"
    elif status is not None and status >= 500:
        cause = "server"
    else:
        cause = "input"
    return Fault(cause, status, retry_after, detail)


async def complete(
    ref: ModelRef,
    messages: list[dict[str, Any]],
    *,
    timeout_s: float,
    role: ModelRole = "judge",
    policy: CallPolicy = DEFAULT_POLICY,
    schema: dict[str, Any] | None = None,
    gateway: Gateway | None = None,
    **params: Any,
) -> Completion:
    """One chat completion within `timeout_s` (all attempts together); ModelCallError when there is no answer.

    `role` tags the call as the agent's or the judge's in the call log; `schema` (`{"name", "schema", "strict"}`) is
    sent as a `json_schema` response format where litellm says the model supports response schemas, and left out
    otherwise; `params` go to litellm as they are (e.g. `response_format`). With a `gateway`, the call is sent there
    over HTTP (`llm.gateway`) and litellm is never imported: the schema is always sent, the gateway's litellm
    dropping it for a model that takes none. Else, with a worker started (`llm.worker`), the call is made there.
    A message's `CACHE_BREAKS` become the provider's breakpoints where it takes them (`with_breakpoints`).
    """
    messages = with_breakpoints(ref, messages)
    if gateway is not None:
        if schema is not None:
            params = {**params, "response_format": {"type": "json_schema", "json_schema": schema}}
        return await _attempts(
            ref,
            role,
            policy,
            timeout_s,
            functools.partial(gateway_attempt, gateway, ref.litellm_name, messages, params),
        )
    if (worker := running()) is not None:
        return await worker.complete(
            ref, messages, timeout_s=timeout_s, role=role, policy=policy, schema=schema, **params
        )
    litellm = _litellm()  # before the clock starts: the import's seconds are no provider's latency
    if schema is not None and supports_schema(ref.litellm_name):
        params = {**params, "response_format": {"type": "json_schema", "json_schema": schema}}

    async def attempt(remaining_s: float, first: bool) -> tuple[str | None, Usage]:
        # litellm caches its HTTP client per timeout value, so it is always given the same one; the
        # shorter budget left for a retry is enforced around the attempt instead.
        async with contextlib.nullcontext() if first else asyncio.timeout(max(remaining_s, 0.001)):
            response = await litellm.acompletion(
                model=ref.litellm_name, messages=messages, timeout=timeout_s, num_retries=0, max_retries=0, **params
            )
        return response.choices[0].message.content, _usage(response, ref.litellm_name)

    return await _attempts(ref, role, policy, timeout_s, attempt)


async def _attempts(
    ref: ModelRef, role: ModelRole, policy: CallPolicy, timeout_s: float, attempt: Attempt
) -> Completion:
    """The retry loop every call runs, litellm's or the gateway's: `attempt(remaining_s, first)` sends one request and
    returns its content and usage, or raises what `read_fault` classifies."""
    started = time.monotonic()
    circuit = _circuit(ref.provider, policy.circuit)
    deadline = started + timeout_s
    attempts = 0
    while True:
        now = time.monotonic()
        if not circuit.allows(now):
            _log_call(role, ref, attempts, started, None, "circuit open")
            raise ModelCallError(circuit.refusal(now), fault="circuit_open", attempts=attempts)
        attempts += 1
        try:
            content, usage = await attempt(deadline - now, attempts == 1)
        except Exception as e:  # every provider fault is classified; nothing raw leaves this module
            fault = read_fault(e)
            circuit.failed(time.monotonic(), f"{_status(fault)}: {fault.detail}")
            delay = retry_delay(policy.retry, attempts, fault, deadline - time.monotonic(), random.random())
            if delay is None:
                message = _give_up(ref, fault, attempts, started, timeout_s, policy.retry)
                _log_call(role, ref, attempts, started, None, message)
                raise ModelCallError(message, fault=fault.cause, attempts=attempts) from None
            await asyncio.sleep(delay)
            continue
        circuit.succeeded()
        _log_call(role, ref, attempts, started, usage, None)
        # a provider's JSON may escape half a surrogate pair inside the content; kept as U+FFFD, it can be stored
        return Completion(
            unicode_text(content) if content is not None else None, usage, (time.monotonic() - started) * 1000
        )


def _status(fault: Fault) -> str:
    return f"HTTP {fault.status}" if fault.status is not None else fault.cause


def _give_up(ref: ModelRef, fault: Fault, attempts: int, started: float, timeout_s: float, retry: RetryPolicy) -> str:
    """Why the call ended without an answer, for a person reading the case or the sample."""
    took = time.monotonic() - started
    tried = f"{attempts} attempt{'s' if attempts != 1 else ''} in {took:.1f} s"
    if fault.cause == "timeout":
        why = f"no answer within the {timeout_s:g} s call timeout"
    elif fault.cause == "auth":
        why = f"the provider {REFUSED_CREDENTIALS} ({_status(fault)}), which a retry would not change"
    elif fault.cause == "input":
        why = f"the provider refused the request ({_status(fault)}), which a retry would not change"
    elif attempts >= retry.attempts:
        why = f"{_status(fault)} on every attempt"
    elif fault.retry_after_s is not None:
        why = (
            f"{_status(fault)}, and the Retry-After of {fault.retry_after_s:g} s outlasts the {timeout_s:g} s "
            "call timeout"
        )
    else:
        why = f"{_status(fault)}, and the {timeout_s:g} s call timeout ran out before the next retry"
    return f"{ref}: {why} ({tried}): {fault.detail}"


def _log_call(
    role: ModelRole, ref: ModelRef, attempts: int, started: float, usage: Usage | None, error: str | None
) -> None:
    """One line per call, tagged agent or judge: attempts, latency, tokens and cost, or why it failed."""
    latency_ms = (time.monotonic() - started) * 1000
    if usage is None:
        log.info("%s call to %s failed after %d attempt(s), %.0f ms: %s", role, ref, attempts, latency_ms, error)
        return
    log.info(
        "%s call to %s: %d attempt(s), %.0f ms, %d+%d tokens, $%.6f%s",
        role,
        ref,
        attempts,
        latency_ms,
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.cost_usd,
        "" if usage.cost_known else " (price unknown)",
    )


def _usage(response, model: str) -> Usage:
    """Tokens and price as litellm reports them; a model it cannot price costs 0 and is flagged. Tokens read from the
    provider's cache are litellm's `prompt_tokens_details.cached_tokens` (Anthropic's `cache_read_input_tokens`, as
    litellm reports them); where the cost map holds no cached price for the model, litellm prices them at the full
    input price, and the cost is flagged as not known."""
    usage = getattr(response, "usage", None)
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or getattr(usage, "cache_read_input_tokens", None) or 0
    return Usage(
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        cached_tokens=cached,
        cost_usd=float(cost) if cost is not None else 0.0,
        cost_known=cost is not None and (not cached or knows_cached_price(model)),
    )


@functools.cache
def knows_cached_price(model: str) -> bool:
    """Whether litellm's cost map holds a price for `model`'s cached input tokens (its litellm name)."""
    try:
        return _litellm().get_model_info(model=model).get("cache_read_input_token_cost") is not None
    except Exception:  # noqa: BLE001 - litellm raises on a model it cannot place, whose price is flagged already
        return False
