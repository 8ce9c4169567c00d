"""Every model call: the only importer of litellm. Imports spec."""

from kindgi_eval.llm.calls import DEFAULT_POLICY, WELL_KNOWN_PROVIDERS, CallPolicy, ModelCallError, complete, prepare, provider_names, scrub
from kindgi_eval.llm.worker import start_worker, stop_worker

__all__ = ["CallPolicy", "DEFAULT_POLICY", "WELL_KNOWN_PROVIDERS", "ModelCallError", "complete", "prepare", "provider_names", "scrub", "start_worker", "stop_worker"]
