"""Every model call: the only importer of litellm. Imports rules."""

from kindgi_eval.llm.call_error import ModelCallError
from kindgi_eval.llm.calls import CREDENTIALS, DEFAULT_POLICY, WELL_KNOWN_PROVIDERS, CallPolicy, complete, missing_credentials, prepare, provider_names, scrub
from kindgi_eval.llm.worker import start_worker, stop_worker

__all__ = ["CREDENTIALS", "CallPolicy", "DEFAULT_POLICY", "WELL_KNOWN_PROVIDERS", "ModelCallError", "complete", "missing_credentials", "prepare", "provider_names", "scrub", "start_worker", "stop_worker"]
