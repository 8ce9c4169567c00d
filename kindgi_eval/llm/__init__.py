"""Every model call: the only importer of litellm, and the client of a LiteLLM gateway. Imports rules."""

from typing import TYPE_CHECKING

from kindgi_eval.rules import lazy_names

if TYPE_CHECKING:
    from kindgi_eval.llm.batch import BATCH_PROVIDERS, POLL_S, run_batch
    from kindgi_eval.llm.call_error import ModelCallError
    from kindgi_eval.llm.calls import (
        CREDENTIALS,
        DEFAULT_POLICY,
        WELL_KNOWN_PROVIDERS,
        CallPolicy,
        complete,
        missing_credentials,
        prepare,
        provider_names,
        scrub,
    )
    from kindgi_eval.llm.client import ModelClient
    from kindgi_eval.llm.gateway import Gateway
    from kindgi_eval.llm.worker import start_worker, stop_worker, workers_for

# Loaded on first use, so that `llm.spawn` can start the litellm worker before anything heavier than the standard
# library is imported.
__getattr__ = lazy_names(__name__, __file__)

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
