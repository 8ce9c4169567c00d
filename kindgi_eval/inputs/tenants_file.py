"""The tenants file: every tenant, its folders, its suites, its agent and judge; each tenant suite is a partition.

```toml
[[tenant]]
name = "demo-academy"              # equals `tenant` in its tenant.toml; the partition key's first part
home = "tenants/demo-academy"      # everything this tenant's runs may read lives under here
config = "config"                  # folder holding tenant.toml, under home (omit only for the demo tenant)
suites = ["evals/golden"]          # suite folders under home; each is the partition `<name>.<folder name>`
agent_model = "mock:agent"         # or agent_url = "https://..."; one of the two
judge_model = "openai:gpt-4o"      # optional; unset means no judge
contact_model = "openai:gpt-4o-mini" # optional: plays the contact of persona scenarios
concurrency = 4                    # optional: also max_latency_ms, model_timeout_s
alerts = ["ACME_SLACK_WEBHOOK"]    # optional: variables holding webhook URLs the night's findings go to
alert_on = ["new_failures"]        # optional: which findings are sent; default every one that got worse

[tenant.limits]                    # optional: what one suite may ask of the models, raised over the defaults
cases = 20000                      # also criteria_per_case, criterion_chars, model_calls

[tenant.agents.champion]           # optional: agents a pairwise suite of this tenant may compare, by id
agent_model = "openai:gpt-4o-mini" # or agent_url
version = "2026-11"                # the label a suite names the variant by

[defaults]                         # optional: what a tenant that does not say otherwise takes
alerts = ["OPS_WEBHOOK"]
```

A relative `home` resolves against the tenants file's folder; `config` and `suites` resolve against `home`,
symlinks followed, and must stay inside it. Tenants' homes may not nest, so no run can read another tenant's files.
Without `KINDGI_TENANTS` the registry is the demo tenant's golden suite (`evals/golden` of the working folder)
with the offline mock agent: what `kindgi-eval run --mock` runs.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal, NamedTuple
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from kindgi_eval.inputs.file_limits import CONFIG_FILE_LIMIT, FileTooLarge, read_limited
from kindgi_eval.inputs.golden import default_eval_dir
from kindgi_eval.inputs.settings import (
    ENV,
    MOCK_AGENT,
    PER_TENANT,
    READ_FOR_TENANTS,
    RunSettings,
    resolve_settings,
    with_settings,
)
from kindgi_eval.inputs.suite_folder import registered_name, registry_key, suite_key
from kindgi_eval.inputs.tenant_file import field_lines
from kindgi_eval.inputs.tenant_limits import TENANTS_ENV
from kindgi_eval.rules import (
    DEFAULT_LIMITS,
    InputError,
    Problem,
    Slug,
    SuiteLimits,
    parse_model,
    problems_from_validation,
)

DEMO_TENANT = "demo-academy"
"""The fictional demo tenant, whose configuration ships inside the package."""

TAG_TENANT = "kindgi/tenant"
TAG_SUITE = "kindgi/suite"
TAG_AGENT_PROVIDER = "kindgi/agent_provider"
TAG_JUDGE_PROVIDER = "kindgi/judge_provider"
TAG_JUDGE_BATCH = "kindgi/judge_batch"
"""On a run whose judge's requests go through a batch API: such a run waits on its batch for minutes, so the run
queue may give these runs slots of their own (`docs/running.md#the-judge-through-a-batch-api`)."""
TAG_RESULT = "kindgi/result"
"""Run tags: kindgi_eval/dagster.yaml limits concurrent runs per tenant and per provider by these (the production
instance, whose calls the gateway paces, per tenant only)."""


class DeclaredAgent(BaseModel):
    """An agent a tenant declares for pairwise suites to compare (`[tenant.agents.<id>]`): a model or a URL, and a
    version label a suite must name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_model: str | None = None
    """The agent as provider:model."""
    agent_url: str | None = None
    """An agent served over HTTP."""
    version: str = Field(min_length=1)
    """The label of the agent's version (a prompt revision, a release), which a suite names with its id."""

    @model_validator(mode="after")
    def _one_agent(self) -> DeclaredAgent:
        if (self.agent_model is None) == (self.agent_url is None):
            raise ValueError("give exactly one of agent_model and agent_url")
        return self

    @property
    def agent(self) -> str:
        """The agent as a run names it: its URL or its model."""
        return self.agent_url or self.agent_model or ""


def _variable_name(value: str) -> str:
    if "://" in value:  # never quoted back: it is a secret that should not be in the file
        raise ValueError(
            "holds a URL; a webhook URL is a secret: put it in an environment variable and name the variable here"
        )
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise ValueError(f"{value!r} is not an environment variable's name; name one such as ACME_SLACK_WEBHOOK")
    return value


AlertVariable = Annotated[str, AfterValidator(_variable_name)]
"""The name of an environment variable holding a webhook URL."""
AlertKind = Literal["new_failures", "pass_rate_drop", "judge_not_counted", "run_failed", "missing_run"]
"""A kind of finding a tenant's webhooks may be sent (every one that says something got worse)."""


class _EntryHead(BaseModel):
    """What a `[[tenant]]` table names before its settings: the tenant, its folders and its suites."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Slug
    """The tenant's id; it must equal `tenant` in its tenant.toml."""
    home: str
    """The tenant's folder; absolute, or relative to the tenants file's folder."""
    config: str | None = None
    """Its configuration folder (holding tenant.toml), under home; omitted only for the packaged demo tenant."""
    suites: list[str] | None = Field(default=None, min_length=1)
    """Its suite folders, under home; each one is a partition. Omitted only beside `registry`."""
    registry: str | None = None
    """A suite registered in the suite registry (its id), evaluated as the partition `<name>.<id without "<name>.">`."""
    version: str | None = None
    """The registered suite's version to evaluate; unset: the latest when each run starts."""


class TenantEntry(with_settings(_EntryHead, PER_TENANT, optional=True)):
    """One `[[tenant]]` table as written in the tenants file: its tenant and folders, a key per setting a tenant may
    set (`Setting.per_tenant`; unset: its variable where the table reads one, else its default), and then what else
    a tenant declares.
    """

    agents: dict[str, DeclaredAgent] = Field(default_factory=dict)
    """Agents a pairwise suite of this tenant may compare, by id."""
    limits: SuiteLimits = DEFAULT_LIMITS
    """What one suite of this tenant may ask of the models (`[tenant.limits]`): the defaults, or what the operator raised."""
    alerts: list[AlertVariable] | None = None
    """Environment variables holding the webhook URLs the night's findings are sent to; unset: `[defaults] alerts`."""
    alert_on: list[AlertKind] | None = None
    """The findings sent (`new_failures`, `pass_rate_drop`, `judge_not_counted`, `run_failed`, `missing_run`); unset:
    `[defaults] alert_on`, else all of them."""


class Defaults(BaseModel):
    """The `[defaults]` table: what every tenant that does not say otherwise takes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alerts: list[AlertVariable] | None = None
    """Environment variables holding webhook URLs every tenant's findings are sent to."""
    alert_on: list[AlertKind] | None = None
    """The findings sent, for every tenant."""


class TenantSuite(NamedTuple):
    """One declared tenant suite: a partition and everything its run is allowed to read."""

    key: str
    """The partition key (`suite_key`, `registry_key`): `<tenant>.<suite folder name>`, or `<tenant>@<registry id>`."""
    tenant: str
    """The tenant's name."""
    eval_dir: Path
    """The suite folder, resolved."""
    config_dir: Path | None
    """The tenant's configuration folder, resolved; None for the packaged demo tenant."""
    home: Path
    """The tenant's folder, resolved; config_dir and eval_dir lie inside it."""
    entry: TenantEntry
    """The tenant's entry as written."""
    registry: str | None = None
    """The registered suite's id, when this suite is read from the registry (then eval_dir is where the run
    writes the version in force, known only when the run starts)."""

    def settings(
        self, overrides: Mapping[str, object] | None = None, environ: Mapping[str, str] | None = None
    ) -> RunSettings:
        """The run settings of this suite: overrides (a launchpad's) over the entry over the tuning variables."""
        flags: dict[str, object] = {field: getattr(self.entry, field) for field in ENV if hasattr(self.entry, field)}
        flags.update(eval_dir=str(self.eval_dir), config_dir=str(self.config_dir) if self.config_dir else None)
        overrides = {field: value for field, value in (overrides or {}).items() if value is not None}
        if "agent_model" in overrides and "agent_url" not in overrides:
            flags["agent_url"] = None  # a launchpad's agent model replaces the entry's URL, which would win
        flags.update(overrides)
        return resolve_settings(flags, environ, read_env=READ_FOR_TENANTS)

    def tags(self) -> dict[str, str]:
        """The run tags of this suite's runs: tenant, suite and the providers its agent and judge call."""
        tags = {
            TAG_TENANT: self.tenant,
            TAG_SUITE: self.key,
            TAG_AGENT_PROVIDER: provider_of(self.entry.agent_url or self.entry.agent_model),
        }
        if self.entry.judge_model:
            tags[TAG_JUDGE_PROVIDER] = provider_of(self.entry.judge_model)
        if self.entry.judge_batch:
            tags[TAG_JUDGE_BATCH] = "true"
        return tags


class Skipped(NamedTuple):
    """A tenants-file entry a partial read left out (`load_tenants(partial=True)`), and why."""

    tenant: str
    """The entry's name as written, else `tenant[<index>]`."""
    problems: tuple[Problem, ...]
    """Everything wrong with the entry, each naming the file, line and field."""

    def reason(self) -> str:
        """The entry's problems as one line, for a tick's log and its skip reason."""
        return "; ".join(str(p) for p in self.problems)


class Tenants(NamedTuple):
    """Every declared tenant suite, in file order, and where they were declared."""

    source: str
    """The tenants file, or a sentence saying the built-in default is in force."""
    suites: tuple[TenantSuite, ...]
    """Every tenant suite."""
    skipped: tuple[Skipped, ...] = ()
    """The entries a partial read left out for their problems (always empty otherwise)."""

    @property
    def keys(self) -> list[str]:
        """Every partition key, in file order."""
        return [s.key for s in self.suites]

    def suite(self, key: str) -> TenantSuite:
        """The suite of partition `key`; InputError naming the tenants file when it is not declared there."""
        for declared in self.suites:
            if declared.key == key:
                return declared
        for left_out in self.skipped:
            if key.startswith((f"{left_out.tenant}.", f"{left_out.tenant}@")):
                raise InputError(list(left_out.problems))
        raise InputError(
            [
                Problem(
                    self.source,
                    None,
                    None,
                    f"suite {key!r} is not declared here (declared: {', '.join(self.keys) or 'none'}). "
                    f"Add it to a tenant's suites, or point {TENANTS_ENV} at the file that declares it.",
                )
            ]
        )


def provider_of(agent: str | None) -> str:
    """The provider a model or URL calls: `openai` for openai:gpt-4o, the host for an HTTP agent."""
    if not agent:
        return "none"
    if agent.startswith(("http://", "https://")):
        return urlsplit(agent).hostname or "http"
    return parse_model(agent).provider


def tenants_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """The tenants file named by KINDGI_TENANTS, or None for the built-in default."""
    value = (os.environ if environ is None else environ).get(TENANTS_ENV, "")
    return Path(value) if value else None


def load_tenants(path: str | Path | None = None, *, partial: bool = False) -> Tenants:
    """The tenants file at `path` (else KINDGI_TENANTS, else the built-in default); InputError lists every problem.

    `partial`: an entry with problems is left out, with them, in `Tenants.skipped`, and the others are read, so one
    tenant's typo costs no other tenant its run (the schedule's and the sensor's ticks, a run starting). A file that
    cannot be read as a whole (not TOML, no [[tenant]], a key beside them) is still an InputError."""
    path = Path(path) if path else tenants_path()
    if path is None:
        return default_tenants()
    try:
        content = read_limited(path, CONFIG_FILE_LIMIT, "a tenants file")
    except FileTooLarge as e:
        raise InputError(
            [Problem(str(path), None, None, f"{e}. Check that {TENANTS_ENV} names the tenants file.")]
        ) from None
    except FileNotFoundError:
        raise InputError(
            [Problem(str(path), None, None, f"file not found. Point {TENANTS_ENV} at the tenants file.")]
        ) from None
    except OSError as e:
        raise InputError([Problem(str(path), None, None, f"cannot be read: {e.strerror or e}.")]) from None
    return parse_tenants(content, path, partial=partial)


def default_tenants(cwd: Path | None = None) -> Tenants:
    """The demo tenant's golden suite (`evals/golden` in the working folder, else the one this package ships), run by
    the offline mock agent, without a judge."""
    cwd = (cwd or Path.cwd()).resolve()
    folder = (cwd / default_eval_dir(cwd)).resolve()
    home = cwd if folder.is_relative_to(cwd) else folder.parent  # the shipped one lies under no working folder
    entry = TenantEntry(name=DEMO_TENANT, home=str(home), suites=[str(folder)], agent_model=MOCK_AGENT)
    where = f"the built-in default tenants ({TENANTS_ENV} is unset)"
    problems: list[Problem] = []
    suites = _suites_of(entry, cwd, where, 0, {}, problems)
    if problems:
        raise InputError(problems)
    return Tenants(where, tuple(suites))


def parse_tenants(content: bytes, file: Path, *, partial: bool = False) -> Tenants:
    """The tenants declared in the bytes of a tenants file; relative homes resolve against the file's folder.
    `partial` as for `load_tenants`."""
    name = str(file)
    try:
        text = content.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError as e:
        raise InputError(
            [Problem(name, None, None, f"is not UTF-8 text (byte {e.start}). Save it as UTF-8.")]
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise InputError([Problem(name, None, None, f"not valid TOML: {e}. Fix the syntax.")]) from None
    lines = field_lines(text)
    unknown = sorted(set(data) - {"tenant", "defaults"})
    problems = [
        Problem(name, lines.get(key), key, "unknown key; a tenants file holds only [[tenant]] tables and [defaults].")
        for key in unknown
    ]
    defaults = Defaults()
    try:
        defaults = Defaults.model_validate(data.get("defaults", {}))
    except ValidationError as e:
        for p in problems_from_validation(e, name, None):
            field = f"defaults.{p.field}" if p.field else "defaults"
            problems.append(Problem(name, _line(lines, field), field, p.message))
    raw = data.get("tenant", [])
    if not isinstance(raw, list) or not raw:
        problems.append(Problem(name, None, "tenant", "declares no tenant. Add one [[tenant]] table per tenant."))
        raise InputError(problems)
    entries: list[tuple[int, TenantEntry]] = []
    of_table: dict[int, list[Problem]] = {}
    for index, table in enumerate(raw):
        try:
            entry = TenantEntry.model_validate(table)
            entries.append(
                (
                    index,
                    entry.model_copy(
                        update={
                            "alerts": defaults.alerts if entry.alerts is None else entry.alerts,
                            "alert_on": defaults.alert_on if entry.alert_on is None else entry.alert_on,
                        }
                    ),
                )
            )
        except ValidationError as e:
            for p in problems_from_validation(e, name, None):
                field = f"tenant[{index}].{p.field}" if p.field else f"tenant[{index}]"
                of_table.setdefault(index, []).append(Problem(name, _line(lines, field), field, p.message))
    homes: dict[str, Path] = {}
    suites: list[TenantSuite] = []
    of_folders: dict[int, list[Problem]] = {}
    for index, entry in entries:
        own: list[Problem] = []
        suites += _suites_of(entry, file.parent, name, index, homes, own, lines)
        if own:
            of_folders[index] = own
    if problems or ((of_table or of_folders) and not partial):  # every problem at once: the file's, the entries'
        # tables, then their folders
        raise InputError(
            problems + [p for found in (of_table, of_folders) for index in sorted(found) for p in found[index]]
        )
    of_entry = {**of_table, **of_folders}  # an entry is either: one whose table is wrong has no folders looked at
    skipped = tuple(Skipped(_entry_name(raw[index], index), tuple(of_entry[index])) for index in sorted(of_entry))
    return Tenants(name, tuple(suites), skipped)


def _entry_name(table: object, index: int) -> str:
    """How a tick names an entry it left out: its name as written, else its place in the file."""
    name = table.get("name") if isinstance(table, dict) else None
    return name if isinstance(name, str) and name else f"tenant[{index}]"


def _suites_of(
    entry: TenantEntry,
    base: Path,
    file: str,
    index: int,
    homes: dict[str, Path],
    problems: list[Problem],
    lines: Mapping[str, int] | None = None,
) -> list[TenantSuite]:
    """Check one entry (paths inside its home, homes apart, an agent, valid models); its suites if all is well."""
    lines = lines or {}
    before = len(problems)

    def refuse(field: str, message: str) -> None:
        path = f"tenant[{index}].{field}"
        problems.append(Problem(file, _line(lines, path), path, f"tenant {entry.name}: {message}"))

    home = (base / os.path.expanduser(entry.home)).resolve()
    if not home.is_dir():
        refuse("home", f"{entry.home!r} ({home}) is not a folder. Create it or fix the path.")
        return []
    if entry.name in homes:
        refuse("name", "is declared twice. Give each tenant one [[tenant]] table.")
    for other, other_home in homes.items():
        if home == other_home or home.is_relative_to(other_home) or other_home.is_relative_to(home):
            refuse(
                "home",
                f"{home} overlaps tenant {other}'s home {other_home}, so one could read the other's files. "
                "Give each tenant a folder of its own.",
            )
    homes.setdefault(entry.name, home)

    def inside(field: str, given: str, what: str) -> Path | None:
        path = (home / os.path.expanduser(given)).resolve()
        if not path.is_relative_to(home):
            refuse(
                field,
                f"{given!r} resolves to {path}, outside the tenant's home {home}. "
                f"Keep a tenant's {what} under its home.",
            )
            return None
        if not path.is_dir():
            refuse(field, f"{given!r} ({path}) is not a folder. Create it or fix the path.")
            return None
        return path

    config_dir = None
    if entry.config is not None:
        config_dir = inside("config", entry.config, "configuration")
    elif entry.name != DEMO_TENANT:
        refuse(
            "config",
            f"is missing. Name the folder holding the tenant's tenant.toml; only {DEMO_TENANT} may leave it out.",
        )
    suite_dirs: list[tuple[int, Path]] = []
    for number, given in enumerate(entry.suites or []):
        found = inside(f"suites[{number}]", given, "suites")
        if found is not None:
            suite_dirs.append((number, found))
    keys: dict[str, int] = {}
    for number, folder in suite_dirs:
        key = suite_key(entry.name, folder)
        if key in keys:
            refuse(
                f"suites[{number}]",
                f"is a second suite with the partition key {key!r} (like suites[{keys[key]}]). "
                "Suite folders of one tenant need different names.",
            )
        keys.setdefault(key, number)
    if not entry.suites and entry.registry is None:
        refuse("suites", 'is missing. Name the tenant\'s suite folders, or a registered suite with registry = "ID".')
    if entry.version is not None and entry.registry is None:
        refuse("version", "is given without registry. A version names a version of a registered suite.")
    if entry.agent_model and entry.agent_url:
        refuse("agent_url", "is given beside agent_model. Name the agent once: agent_model or agent_url.")
    elif not (entry.agent_model or entry.agent_url):
        refuse("agent_model", "no agent named. Set agent_model (provider:model) or agent_url.")
    try:
        resolve_settings({field: getattr(entry, field) for field in ENV if hasattr(entry, field)}, environ={})
    except InputError as e:
        for p in e.problems:
            refuse(p.file.removeprefix("--").replace("-", "_"), p.message)
    if len(problems) > before:
        return []
    declared = [
        TenantSuite(suite_key(entry.name, folder), entry.name, folder, config_dir, home, entry)
        for _, folder in suite_dirs
    ]
    if entry.registry is not None:
        name = registered_name(entry.name, entry.registry)
        declared.append(
            TenantSuite(
                registry_key(entry.name, entry.registry),
                entry.name,
                home / name,
                config_dir,
                home,
                entry,
                entry.registry,
            )
        )
    return declared


def _line(lines: Mapping[str, int], field: str) -> int | None:
    """The line of a field, else of its table (`tenant[1]`)."""
    while field:
        if field in lines:
            return lines[field]
        cut = max(field.rfind("."), field.rfind("["))
        field = field[:cut] if cut > 0 else ""
    return None


def declared_variant(tenant: str, agent_id: str, version: str, where: str, path: str | Path | None = None) -> str:
    """The agent (model or URL) a tenant declares as `agent_id` at `version` in the tenants file (KINDGI_TENANTS);
    InputError naming what is declared when it is not."""
    tenants = load_tenants(path, partial=True)  # another tenant's typo is no problem of this run
    entries = [s.entry for s in tenants.suites if s.tenant == tenant]
    for left_out in tenants.skipped:
        if not entries and left_out.tenant == tenant:
            raise InputError(list(left_out.problems))
    agents = entries[0].agents if entries else {}
    declared = agents.get(agent_id)
    if declared is None or declared.version != version:
        known = ", ".join(f"{name} {a.version}" for name, a in agents.items()) or "none"
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"agent {agent_id!r} version {version!r} is not declared for tenant {tenant!r} in "
                    f"{tenants.source} (declared: {known}). Add it under [tenant.agents.{agent_id}] with agent_model or agent_url and version.",
                )
            ]
        )
    return declared.agent


def variant_settings(settings: RunSettings, agent: str) -> RunSettings:
    """The run's settings with `agent` (a declared variant's model or URL) as the agent asked."""
    is_url = agent.startswith(("http://", "https://"))
    return settings.model_copy(
        update={"agent_url": agent if is_url else None, "agent_model": None if is_url else agent}
    )
