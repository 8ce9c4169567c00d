"""The Dagster resources the assets take: a run's settings and what a launchpad run may set of them, and the agent,
judge and sandbox a run calls, built for those settings and the tenant the run read once."""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
from pydantic import PrivateAttr

from kindgi_eval.agents import Sandbox, deployment_settings, make_agent, make_contact, make_judge, make_sandbox
from kindgi_eval.defs.registered import suite_settings
from kindgi_eval.inputs import PER_TENANT, RunSettings, load_tenant, load_tenants, with_settings
from kindgi_eval.rules import Agent, ContactModel, Judge

SETTINGS_TAG = "kindgi/settings"
"""The run's settings as JSON, resolved where it started (the CLI, a schedule or sensor tick): used exactly as they are."""
LAUNCHPAD_FIELDS = tuple(s.field for s in PER_TENANT)
"""The settings a launchpad may set for a tenant suite's run (a replay sets judge_model); its folders come from the
tenants file, so the suite and tenant folders are not among them."""


class EvalSettings(with_settings(dg.ConfigurableResource, PER_TENANT, optional=True)):
    """Agent, judge and tuning of a run started from the launchpad, over its tenant suite's (KINDGI_TENANTS).

    Only what a user sets is config. A run started by the CLI, the schedule or the sensor carries its settings,
    resolved already, in its `kindgi/settings` tag: they are used exactly as they are, nothing set here changes them,
    and nothing is read from the environment again but where the run's model calls go (the gateway), which is the
    deployment's, never a tag's. A re-execution inherits its parent's tags, so its settings too.

    Its fields are the settings a tenant may set (`Setting.per_tenant`), each unset by default, then `replay_from`.
    """

    replay_from: str | None = None
    """A replay (judge_samples and what follows, the replay_suite job): the run of this suite whose stored suite,
    replies and outcomes are re-judged. Unset: the latest run that had succeeded before this one started."""

    _pinned: RunSettings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Read the settings the run was started with, if it carries them."""
        run = context.run
        self._pinned = pinned_settings(run.tags) if run is not None else None

    def for_partition(self, key: str) -> RunSettings:
        """The settings of one partition's run: pinned ones as they are, else its tenant suite's from the tenants file
        with the fields set here over them; either way with the gateway of the process the run executes in
        (`deployment_settings`): InputError, before any model call, when a tag names another."""
        if self._pinned is not None:
            return deployment_settings(self._pinned)
        overrides = {field: getattr(self, field) for field in LAUNCHPAD_FIELDS}
        return deployment_settings(
            suite_settings(load_tenants(partial=True).suite(key), overrides)
        )  # another's typo is no problem here

    @classmethod
    def of(cls, settings: RunSettings) -> EvalSettings:
        """A resource pinned to already-resolved settings, as a run carrying them in its tag sets it up."""
        resource = cls()
        resource._pinned = settings
        return resource


class RunClients(dg.ConfigurableResource):
    """The outside systems a run calls: the agent, the judge and a custom suite's sandbox, each built by the
    agents' `make_agent`, `make_judge`, `make_contact` and `make_sandbox` for the run's settings.

    The run's tenant.toml is read once: the first stage that needs it reads it, and every later stage of the run is
    given what that read found, so a run's stages never see two versions of the file. Under the in-process executor
    (the code location's) that is once per run; a step in a process of its own reads it once for itself. Nothing
    here is config.
    """

    _tenants: dict = PrivateAttr(default_factory=dict)
    """What `load_tenant` read this run, by config folder (None: the packaged demo tenant). Dagster builds the
    resource anew for each run, so one run's read is never another's."""

    def tenant(self, settings: RunSettings):
        """The tenant of `settings.config_dir`, as `load_tenant` read it the first time this run asked (the tenant,
        its folder and its content hash); InputError listing its problems."""
        if settings.config_dir not in self._tenants:
            self._tenants[settings.config_dir] = load_tenant(settings.config_dir)
        return self._tenants[settings.config_dir]

    def agent(self, settings: RunSettings) -> Agent:
        """The agent `settings` name, answering as the run's tenant; InputError when it cannot be made."""
        return make_agent(settings, self.tenant(settings).tenant)

    def judge(self, settings: RunSettings) -> Judge | None:
        """The judge `settings` name, None without one; InputError when it cannot be made."""
        return make_judge(settings)

    def contact(self, settings: RunSettings, *, needed: bool) -> ContactModel | None:
        """The contact model `settings` name, None without one; InputError when it cannot be made, or when `needed` (a
        persona scenario) and none is named."""
        return make_contact(settings, needed=needed)

    def sandbox(self, settings: RunSettings) -> Sandbox:
        """A sandbox for a custom suite's handler with the limits of `settings`; InputError when this machine has none."""
        return make_sandbox(settings)


def pinned_tags(settings: RunSettings) -> dict[str, str]:
    """The run tag that pins a run to already-resolved settings (the CLI's run, a schedule's or sensor's request)."""
    return {SETTINGS_TAG: settings.model_dump_json()}


def pinned_settings(tags: Mapping[str, str]) -> RunSettings | None:
    """The settings a run's tags pin it to; None for a launchpad run."""
    value = tags.get(SETTINGS_TAG)
    return RunSettings.model_validate_json(value) if value else None
