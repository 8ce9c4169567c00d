"""The settings of a declared tenant suite's run, with a registered suite's version in force written out first.

A tenants-file entry may name a suite of the registry (`registry = "acme.pricing"`, optionally `version`).
Where a run starts (a schedule or sensor tick, a launchpad run), the version named, else the latest, is read
once from the registry (over HTTP where KINDGI_REGISTRY_URL is set, else from the local database) and written out
as a suite folder; the run evaluates that folder and records the suite's id, version and hash, so every run traces
back to the version in force when it started.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kindgi_eval.inputs import RunSettings, TenantSuite
from kindgi_eval.kinds import consumers
from kindgi_eval.store import runtime_home


def suite_settings(declared: TenantSuite, overrides: Mapping[str, object] | None = None) -> RunSettings:
    """The run settings of one declared suite: its folder's, or the folder of its registered version in force."""
    if declared.registry is None:
        return declared.settings(overrides)
    return declared.settings({**(overrides or {}), "eval_dir": str(registered_folder(declared))})


def registered_folder(declared: TenantSuite) -> Path:
    """The suite folder of a registered suite's version in force now: the entry's `version`, else the latest."""
    # imported here, not above: the registry's storage and Alembic, which a run of a suite folder never needs
    from kindgi_eval.registry import client_from_env, registered_suite_folder

    where = f"{declared.key} (registry = {declared.registry!r})"
    return registered_suite_folder(runtime_home(), declared.tenant, declared.registry, declared.entry.version, where, consumers(),
                                   client_from_env())
