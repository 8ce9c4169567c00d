"""The one place every model call is made: litellm for real providers, offline answers for `mock:*`."""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import NamedTuple

from kindgi_eval.agent import Usage
from kindgi_eval.registry import ModelRef

MOCK_JUDGE_ANSWER = '{"verdict": "pass", "evidence": "", "reason": "mock:judge passes everything."}'


class Completion(NamedTuple):
    """A model's answer: its text, what it cost and how long it took."""

    content: str | None
    usage: Usage
    latency_ms: float


def _litellm():
    """litellm, imported on first use only (its import alone takes seconds), quiet and offline-priced."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    import litellm

    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    return litellm


def forget_clients() -> None:
    """Drop litellm's cached HTTP clients, which remember a base URL read from the environment."""
    if "litellm" in sys.modules:
        sys.modules["litellm"].in_memory_llm_clients_cache.flush_cache()


async def complete(ref: ModelRef, messages: list[dict[str, str]], *, timeout_s: float) -> Completion:
    """One chat completion; raises on a provider error or timeout, and the caller records it."""
    started = time.perf_counter()
    if ref.is_mock:
        return Completion(_mock_answer(ref), Usage(), (time.perf_counter() - started) * 1000)
    litellm = _litellm()
    response = await litellm.acompletion(
        model=ref.litellm_name, messages=messages, timeout=timeout_s, num_retries=0, max_retries=0
    )
    latency_ms = (time.perf_counter() - started) * 1000
    return Completion(response.choices[0].message.content, _usage(response), latency_ms)


def _mock_answer(ref: ModelRef) -> str:
    if ref.model == "judge":
        return MOCK_JUDGE_ANSWER
    raise ValueError(f"{ref} is not an offline model; the offline models are mock:agent and mock:judge")


def _usage(response) -> Usage:
    """Tokens and price as litellm reports them; a model it cannot price costs 0 and is flagged."""
    usage = getattr(response, "usage", None)
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    return Usage(
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        cost_usd=float(cost) if cost is not None else 0.0,
        cost_known=cost is not None,
    )
