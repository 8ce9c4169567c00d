"""Every model call: the only importer of litellm, and the client of a LiteLLM gateway. Imports rules."""

from importlib import import_module
from typing import Any

_LAZY = {
    "ModelCallError": "call_error",
    "Gateway": "gateway",
    "CREDENTIALS": "calls",
    "CallPolicy": "calls",
    "DEFAULT_POLICY": "calls",
    "WELL_KNOWN_PROVIDERS": "calls",
    "complete": "calls",
    "ModelClient": "client",
    "missing_credentials": "calls",
    "prepare": "calls",
    "provider_names": "calls",
    "scrub": "calls",
    "BATCH_PROVIDERS": "batch",
    "POLL_S": "batch",
    "run_batch": "batch",
    "start_worker": "worker",
    "stop_worker": "worker",
    "workers_for": "worker",
}
"""Names loaded on first use (PEP 562), so that `llm.spawn` can start the litellm worker before anything heavier than
the standard library is imported."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"kindgi_eval.llm.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kindgi_eval.llm' has no attribute {name!r}")


__all__ = [
    "BATCH_PROVIDERS",
    "POLL_S",
    "run_batch",
    "CREDENTIALS",
    "CallPolicy",
    "DEFAULT_POLICY",
    "WELL_KNOWN_PROVIDERS",
    "Gateway",
    "ModelCallError",
    "ModelClient",
    "complete",
    "missing_credentials",
    "prepare",
    "provider_names",
    "scrub",
    "start_worker",
    "stop_worker",
    "workers_for",
]
