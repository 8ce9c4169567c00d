"""The Dagster wiring: assets, checks, IO manager, resources, schedules, Definitions; the only importer of dagster."""

from kindgi_eval.defs.alerts import deliver
from kindgi_eval.defs.lineage import resolved_tags
from kindgi_eval.defs.night import night_label
from kindgi_eval.defs.runs import RunFailed, open_instance, recorded_settings, replay_chain, resume_chain, run_chain

__all__ = [
    "deliver",
    "night_label",
    "RunFailed",
    "open_instance",
    "recorded_settings",
    "replay_chain",
    "resolved_tags",
    "resume_chain",
    "run_chain",
]
