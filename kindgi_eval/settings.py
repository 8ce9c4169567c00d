"""Run settings: each flag overrides its environment variable, which overrides the default."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from kindgi_eval.errors import InputError, Problem
from kindgi_eval.registry import parse_model

DEFAULT_EVAL_DIR = "evals/golden"
DEFAULT_MAX_LATENCY_MS = 15_000
DEFAULT_CONCURRENCY = 8
DEFAULT_MODEL_TIMEOUT_S = 60.0
MOCK_AGENT = "mock:agent"

# field name -> environment variable, as DESIGN.md names them
ENV = {
    "eval_dir": "EVAL_DIR",
    "config_dir": "CONFIG_DIR",
    "agent_model": "AGENT_MODEL",
    "agent_url": "AGENT_URL",
    "judge_model": "EVAL_JUDGE_MODEL",
    "max_latency_ms": "EVAL_MAX_LATENCY_MS",
    "concurrency": "EVAL_CONCURRENCY",
    "model_timeout_s": "EVAL_MODEL_TIMEOUT_S",
}


class RunSettings(BaseModel):
    """Everything a run is told from outside: where the suite and tenant live, which agent and judge."""

    model_config = ConfigDict(frozen=True)

    eval_dir: str = DEFAULT_EVAL_DIR
    """Suite folder holding cases.jsonl and, optionally, calibration.jsonl."""
    config_dir: str | None = None
    """Tenant configuration folder; None means the packaged demo tenant."""
    agent_model: str | None = None
    """The agent as provider:model; `mock:agent` is the offline demo agent."""
    agent_url: str | None = None
    """An agent served over HTTP; takes precedence over agent_model."""
    judge_model: str | None = None
    """The judge as provider:model; None means no judge."""
    max_latency_ms: float = DEFAULT_MAX_LATENCY_MS
    """The agent's deadline per case."""
    concurrency: int = DEFAULT_CONCURRENCY
    """Model calls in flight at once."""
    model_timeout_s: float = DEFAULT_MODEL_TIMEOUT_S
    """How long one model call, the agent's or the judge's, may take with its retries."""

    @property
    def agent_name(self) -> str | None:
        """How the run records its agent: the URL when there is one, else the model."""
        return self.agent_url or self.agent_model


def resolve_settings(flags: Mapping[str, object], environ: Mapping[str, str] | None = None) -> RunSettings:
    """Merge flags over environment over defaults, and check every value; InputError lists each bad one."""
    environ = os.environ if environ is None else environ
    raw: dict[str, object] = {}
    for field, var in ENV.items():
        value = flags.get(field)
        source = f"--{field.replace('_', '-')}"
        if value is None and environ.get(var, "") != "":
            value, source = environ[var], var
        if value is not None:
            raw[field] = (value, source)
    problems: list[Problem] = []
    values: dict[str, object] = {}
    for field, (value, source) in raw.items():
        try:
            values[field] = _check(field, value)
        except ValueError as e:
            problems.append(Problem(source, None, None, str(e)))
    if problems:
        raise InputError(problems)
    return RunSettings(**values)


def _check(field: str, value: object) -> object:
    if field in ("agent_model", "judge_model"):
        parse_model(str(value))
        return str(value)
    if field in ("max_latency_ms", "model_timeout_s"):
        number = _number(value, float)
        if number <= 0:
            raise ValueError(f"{value!r} must be a positive number")
        return number
    if field == "concurrency":
        number = _number(value, int)
        if not 1 <= number <= 1024:
            raise ValueError(f"{value!r} must be a whole number from 1 to 1024")
        return number
    if field == "agent_url" and not str(value).startswith(("http://", "https://")):
        raise ValueError(f"{value!r} must be an http:// or https:// URL")
    return str(value)


def _number(value: object, kind: type) -> float | int:
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a {'whole ' if kind is int else ''}number") from None
