"""The settings of a declared tenant suite's run, with a registered suite's version in force written out first.

A tenants-file entry may name a suite of the registry (`registry = "acme.pricing"`, optionally `version`).
Where a run starts (a schedule or sensor tick, a launchpad run), the version named, else the latest, is read
once from the registry (over HTTP where KINDGI_REGISTRY_URL is set, else from the local database). A tick only
learns which version that is (`planned_run`), what every tenant's entry can afford in one tick; the run it requests
checks the version's spec and writes it out as a suite folder (`write_pinned_version`), so a version that is costly or
fails to check costs its own run and no other tenant's. The run evaluates that folder and records the suite's id,
version and hash, so every run traces back to the version in force when it started.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from kindgi_eval.inputs import RunSettings, TenantSuite
from kindgi_eval.kinds import consumers
from kindgi_eval.rules import InputError, Problem
from kindgi_eval.steps import planned_suite
from kindgi_eval.store import runtime_home

REGISTERED_TAG = "kindgi/registered"
"""The registered version a tick pinned a run to, `<suite id>@<version>`: the run writes it out and checks it."""


def suite_settings(declared: TenantSuite, overrides: Mapping[str, object] | None = None) -> RunSettings:
    """The run settings of one declared suite: its folder's, or the folder of its registered version in force."""
    if declared.registry is None:
        return declared.settings(overrides)
    return declared.settings({**(overrides or {}), "eval_dir": str(registered_folder(declared))})


def registered_folder(declared: TenantSuite) -> Path:
    """The suite folder of a registered suite's version in force now: the entry's `version`, else the latest."""
    # imported here, not above: the registry's storage and Alembic, which a run of a suite folder never needs
    from kindgi_eval.registry import client_from_env, registered_suite_folder

    return registered_suite_folder(
        runtime_home(),
        declared.tenant,
        declared.registry,
        declared.entry.version,
        _where(declared),
        consumers(),
        client_from_env(),
    )


class PlannedRun(NamedTuple):
    """What a tick knows of one declared suite's run without checking the suite."""

    settings: RunSettings
    """The run's settings, its suite folder among them (a registered version's, whether written out yet or not)."""
    kind: str
    """The suite's kind, which picks the stages the run starts."""
    hash: str
    """The content hash the run will record: of the folder's files, or the registry's of the version."""
    tags: dict[str, str]
    """What the run is pinned to beyond its settings: the registered version in force (`REGISTERED_TAG`)."""


def planned_run(declared: TenantSuite) -> PlannedRun:
    """The run of one declared suite, from what is cheap to know: the entry, the folder's bytes, or the registry's
    version number, kind and hash. No case is parsed and no spec checked here; InputError when the entry's folder or
    the registered suite cannot be found, or the registry cannot be read."""
    if declared.registry is None:
        settings = declared.settings()
        identity = planned_suite(settings)  # the cheap part of the preflight: the run does the rest
        return PlannedRun(settings, identity.kind, identity.hash, {})
    from kindgi_eval.registry import RegistryUnreachable, client_from_env, version_folder, version_in_force

    home = runtime_home()
    try:
        stored = version_in_force(
            home,
            declared.tenant,
            declared.registry,
            declared.entry.version,
            _where(declared),
            consumers(),
            client_from_env(),
        )
    except RegistryUnreachable as e:  # the registry's trouble costs its suites this run, not the tick
        raise InputError([Problem(_where(declared), None, None, str(e))]) from None
    settings = declared.settings(
        {"eval_dir": str(version_folder(home, declared.tenant, stored.suite_id, stored.version))}
    )
    return PlannedRun(settings, stored.kind, stored.sha256, {REGISTERED_TAG: f"{stored.suite_id}@{stored.version}"})


def write_pinned_version(tags: Mapping[str, str], tenant: str, eval_dir: str) -> None:
    """For a run a tick pinned to a registered version (`REGISTERED_TAG`), write that version out as `tenant`'s suite
    folder `eval_dir`, its spec checked by its kind as at publish; nothing for any other run. InputError naming the
    suite, the version and the path when the version no longer passes its check, or is not `eval_dir`'s."""
    pinned = tags.get(REGISTERED_TAG)
    if not pinned:
        return
    from kindgi_eval.registry import client_from_env, registered_suite_folder

    suite_id, _, version = pinned.rpartition("@")
    where = f"{REGISTERED_TAG} {pinned}"
    folder = registered_suite_folder(runtime_home(), tenant, suite_id, version, where, consumers(), client_from_env())
    if folder != Path(eval_dir):
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"is written out at {folder} for tenant {tenant!r}, and the run's suite "
                    f"folder is {eval_dir}. Run the schedule and its runs with the same KINDGI_HOME, and "
                    "name each tenant in the tenants file as its tenant.toml does.",
                )
            ]
        )


def _where(declared: TenantSuite) -> str:
    return f"{declared.key} (registry = {declared.registry!r})"
