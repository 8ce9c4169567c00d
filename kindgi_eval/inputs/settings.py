"""Run settings: each flag overrides its environment variable, which overrides the default.

`SETTINGS` is the one table of them: a row per setting. The command line's options, the run's `RunSettings`, the
tenants file's keys (`TenantEntry`) and the launchpad's resource (`EvalSettings`) are derived from it
(`with_settings`), with their names, variables, types, ranges, defaults and help. The environment is read once, by
`resolve_settings` at the edge (a command, a schedule tick, a sensor tick, a launchpad run), and the
resolved `RunSettings` is what the run uses and records. Where a run's model calls go is the deployment's: the gateway
is read from the environment of the process that runs them (`deployment_gateway`), which the command line sets from its
own flag (`set_deployment_gateway`). Reads a mapping, touches no file.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from kindgi_eval.rules import InputError, Problem, parse_model

DEFAULT_EVAL_DIR = "evals/golden"
DEFAULT_MAX_LATENCY_MS = 15_000.0
DEFAULT_CONCURRENCY = 8
DEFAULT_MODEL_TIMEOUT_S = 60.0
DEFAULT_HANDLER_TIMEOUT_S = 120.0
"""A custom suite's handler's time per call: OpenAI's python grader allows 2 minutes."""
DEFAULT_HANDLER_RUN_S = 3600.0
"""A custom suite's handler's time over one run's replies together: an hour, thirty calls at their longest."""
DEFAULT_HANDLER_MEMORY_MIB = 2048
"""A custom suite's handler's address space: OpenAI's python grader allows 2 GB."""
MOCK_AGENT = "mock:agent"
GATEWAY_KEY = "KINDGI_GATEWAY_KEY"
"""The variable of the key a run gives its gateway: a credential, like a provider's key, so no setting (a setting is
recorded with its run) and never a flag (a command line is visible to every user of the machine)."""

ValueType = Literal["folder", "model", "url", "float", "int", "bool"]
M = TypeVar("M", bound=BaseModel)


class Setting(NamedTuple):
    """One run setting: how it is named on each face, its type and range, its default and its help."""

    field: str
    """The RunSettings field, the resource's config field and the tenants-file key."""
    var: str
    """The environment variable that sets it (docs/running.md#settings lists them all)."""
    value_type: ValueType
    """What a value must be: a folder, a `provider:model` name, an http(s) URL, a number, or true or false."""
    default: str | float | int | None
    """The value when neither flag nor variable gives one; None means unset."""
    help: str
    """One sentence for `--help`."""
    low: float | None = None
    """The smallest value allowed (numbers only)..."""
    high: float | None = None
    """...and the largest."""
    low_open: bool = False
    """True when `low` itself is not allowed (a positive number)."""
    per_tenant: bool = False
    """True when a tenants-file entry (its key is the field) and the launchpad may set it for a tenant suite's run."""
    tenant_env: bool = False
    """True when a tenant suite's run reads its variable where the entry leaves it unset (a tenant's tuning, the
    deployment's gateway); the others a tenant suite's run takes from its entry alone."""

    @property
    def flag(self) -> str:
        """The command-line option: `--max-latency-ms` for max_latency_ms."""
        return "--" + self.field.replace("_", "-")


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "eval_dir",
        "EVAL_DIR",
        "folder",
        DEFAULT_EVAL_DIR,
        "Suite folder holding cases.jsonl and optionally calibration.jsonl.",
    ),
    Setting(
        "config_dir",
        "CONFIG_DIR",
        "folder",
        None,
        "Tenant configuration folder holding tenant.toml; unset: the packaged demo tenant.",
    ),
    Setting(
        "agent_model",
        "AGENT_MODEL",
        "model",
        None,
        "The agent as provider:model; mock:agent is the offline demo agent.",
        per_tenant=True,
    ),
    Setting(
        "agent_url",
        "AGENT_URL",
        "url",
        None,
        "An agent served over HTTP; takes precedence over the agent model.",
        per_tenant=True,
    ),
    Setting(
        "gateway_url",
        "KINDGI_GATEWAY_URL",
        "url",
        None,
        "A LiteLLM gateway every model call goes to, its key in KINDGI_GATEWAY_KEY; unset: litellm in this run.",
        tenant_env=True,
    ),
    Setting(
        "judge_model",
        "EVAL_JUDGE_MODEL",
        "model",
        None,
        "The judge as provider:model; offline: mock:judge passes everything, mock:demo-judge grades the demo set by rule; unset: no judge.",
        per_tenant=True,
    ),
    Setting(
        "judge_batch",
        "EVAL_JUDGE_BATCH",
        "bool",
        False,
        "Send the judge's requests as one batch per stage through the provider's batch API, at its batch price.",
        per_tenant=True,
        tenant_env=True,
    ),
    Setting(
        "contact_model",
        "EVAL_CONTACT_MODEL",
        "model",
        None,
        "The contact model that plays a persona scenario's contact, as provider:model; offline: mock:contact; unset: none.",
        per_tenant=True,
    ),
    Setting(
        "max_latency_ms",
        "EVAL_MAX_LATENCY_MS",
        "float",
        DEFAULT_MAX_LATENCY_MS,
        "The agent's deadline per case, in milliseconds; over it the case fails.",
        low=0,
        low_open=True,
        per_tenant=True,
        tenant_env=True,
    ),
    Setting(
        "concurrency",
        "EVAL_CONCURRENCY",
        "int",
        DEFAULT_CONCURRENCY,
        "Model calls in flight at once.",
        low=1,
        high=1024,
        per_tenant=True,
        tenant_env=True,
    ),
    Setting(
        "model_timeout_s",
        "EVAL_MODEL_TIMEOUT_S",
        "float",
        DEFAULT_MODEL_TIMEOUT_S,
        "Seconds one model call (retries included) or one HTTP agent request may take.",
        low=0,
        low_open=True,
        per_tenant=True,
        tenant_env=True,
    ),
    Setting(
        "handler_timeout_s",
        "EVAL_HANDLER_TIMEOUT_S",
        "float",
        DEFAULT_HANDLER_TIMEOUT_S,
        "Seconds a custom suite's handler may run on one reply, in its sandbox; past them it is killed.",
        low=0,
        low_open=True,
    ),
    Setting(
        "handler_run_s",
        "EVAL_HANDLER_RUN_S",
        "float",
        DEFAULT_HANDLER_RUN_S,
        "Seconds a custom suite's handler may run over one run's replies in all; the cases left are errors.",
        low=0,
        low_open=True,
    ),
    Setting(
        "handler_memory_mib",
        "EVAL_HANDLER_MEMORY_MIB",
        "int",
        DEFAULT_HANDLER_MEMORY_MIB,
        "MiB of address space a custom suite's handler may use, in its sandbox.",
        low=64,
        high=65536,
    ),
)
SETTING = {s.field: s for s in SETTINGS}
ENV = {s.field: s.var for s in SETTINGS}
"""Field name -> environment variable."""


_PYTHON_TYPES: dict[ValueType, type] = {
    "folder": str,
    "model": str,
    "url": str,
    "float": float,
    "int": int,
    "bool": bool,
}


def setting_fields(rows: Iterable[Setting], *, optional: bool) -> dict[str, Any]:
    """The pydantic fields of `rows`, for `create_model`: each of its value's type, described by its help. A run's
    settings (`optional` False) default to the table's default; a face that only overrides (the tenants file, the
    launchpad: `optional` True) defaults to None, which leaves the setting to its variable and default."""
    fields: dict[str, Any] = {}
    for s in rows:
        value = _PYTHON_TYPES[s.value_type]
        unset = optional or s.default is None
        fields[s.field] = (value | None if unset else value, Field(None if optional else s.default, description=s.help))
    return fields


def with_settings(base: type[M], rows: Iterable[Setting], *, optional: bool) -> type[M]:
    """`base` with a field per row of `rows` after its own (`setting_fields`): how the run's settings, the tenants
    file's entry and the launchpad's resource each take their setting fields from the one table."""
    return create_model(  # type: ignore[call-overload]
        f"{base.__name__}Settings", __base__=base, __module__=__name__, **setting_fields(rows, optional=optional)
    )


PER_TENANT = tuple(s for s in SETTINGS if s.per_tenant)
"""The settings a tenants-file entry and the launchpad may set for a tenant suite's run."""
READ_FOR_TENANTS = tuple(s.field for s in SETTINGS if s.tenant_env)
"""The settings whose variables a tenant suite's run reads where its entry leaves them unset."""


class _Resolved(BaseModel):
    """Resolved settings are read-only and take no field the table does not have."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class RunSettings(with_settings(_Resolved, SETTINGS, optional=False)):
    """Everything a run is told from outside: where the suite and tenant live, which agent and judge, its limits; one
    field per row of `SETTINGS`. An agent URL, when there is one, is the agent and agent_model is None; a gateway's
    key is a credential, read where a call is prepared (`GATEWAY_KEY`), never a setting."""

    @property
    def agent_name(self) -> str | None:
        """How the run records its agent: the URL when there is one, else the model."""
        return self.agent_url or self.agent_model


def resolve_settings(
    flags: Mapping[str, object],
    environ: Mapping[str, str] | None = None,
    *,
    mock: bool = False,
    read_env: Collection[str] | None = None,
    defaults: Mapping[str, object] | None = None,
) -> RunSettings:
    """Merge flags over environment over defaults, and check every value; InputError lists each bad one.

    An agent URL wins over an agent model, so the settings hold only the agent that runs. `mock` is the
    command line's `--mock`: the offline demo agent, whatever AGENT_URL and AGENT_MODEL say. `read_env`
    names the only fields whose variables are read (a tenants-file suite reads just its tuning ones);
    None reads every field's. `defaults` gives a field's value where neither flag nor variable does, in place of the
    table's (the suite folder the edge found: `golden.default_eval_dir`).
    """
    environ = os.environ if environ is None else environ
    raw: dict[str, tuple[object, str]] = {}
    for s in SETTINGS:
        value, source = flags.get(s.field), s.flag
        readable = read_env is None or s.field in read_env
        if value is None and readable and environ.get(s.var, "") != "":
            value, source = environ[s.var], s.var
        if value is None and s.field in (defaults or {}):
            value, source = defaults[s.field], s.flag  # type: ignore[index]
        if value is not None:
            raw[s.field] = (value, source)
    if mock:
        raw.pop("agent_url", None)
        raw["agent_model"] = (MOCK_AGENT, "--mock")
    problems: list[Problem] = []
    values: dict[str, object] = {}
    for field, (value, source) in raw.items():
        try:
            values[field] = check_value(SETTING[field], value)
        except ValueError as e:
            problems.append(Problem(source, None, None, str(e)))
    if problems:
        raise InputError(problems)
    if values.get("agent_url"):
        values.pop("agent_model", None)
    return RunSettings(**values)


_BOOLEANS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}


def _boolean(value: object) -> bool:
    """`value` as true or false: a bool, or one of the words `_BOOLEANS` holds, in any case; ValueError else."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word not in _BOOLEANS:
        raise ValueError(f"{value!r} must be true or false")
    return _BOOLEANS[word]


def check_value(setting: Setting, value: object) -> object:
    """`value` as the setting's type, within its range; ValueError saying what is wrong."""
    if setting.value_type == "model":
        parse_model(str(value))
        return str(value)
    if setting.value_type == "url":
        if not str(value).startswith(("http://", "https://")):
            raise ValueError(f"{value!r} must be an http:// or https:// URL")
        return str(value)
    if setting.value_type == "folder":
        return str(value)
    if setting.value_type == "bool":
        return _boolean(value)
    whole = setting.value_type == "int"
    try:
        number = int(value) if whole else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a {'whole ' if whole else ''}number") from None
    if setting.high is not None:
        if not setting.low <= number <= setting.high:  # type: ignore[operator]
            raise ValueError(f"{value!r} must be a whole number from {setting.low:g} to {setting.high:g}")
    elif setting.low is not None and (number <= setting.low if setting.low_open else number < setting.low):
        raise ValueError(f"{value!r} must be a positive number")
    return number


def deployment_gateway(environ: Mapping[str, str] | None = None) -> str | None:
    """The gateway of the deployment this process runs in: KINDGI_GATEWAY_URL of its environment, beside the gateway's
    key (a run's tags, the launchpad and a suite never name it); None without one; InputError when it is not a URL."""
    return resolve_settings({}, environ, read_env=("gateway_url",)).gateway_url


def deployment_agent_url(environ: Mapping[str, str] | None = None) -> str | None:
    """The HTTP agent of the deployment this process runs in: AGENT_URL of its environment, the only agent the
    credentials beside it (`AGENT_HEADERS`) are for; None without one."""
    return resolve_settings({}, environ, read_env=("agent_url",)).agent_url


def set_deployment_gateway(url: str) -> None:
    """Make `url` this process's deployment gateway: on the command line the user's own `--gateway-url` names the
    deployment of the run it executes in its process."""
    os.environ[ENV["gateway_url"]] = url
