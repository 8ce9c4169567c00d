"""The Dagster wiring: assets, checks, IO manager, resources, schedules, Definitions; the only importer of dagster."""

from kindgi_eval.defs.runs import RunFailed, open_instance, replay_chain, resume_chain, run_chain

__all__ = ["RunFailed", "open_instance", "replay_chain", "resume_chain", "run_chain"]
