"""Each tenant's suite limits as the tenants file raises them (`[tenant.limits]`), read on their own: the registry's
server and a run need them where the tenants' folders need not be there to check. Reads the tenants file."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from kindgi_eval.inputs.file_limits import CONFIG_FILE_LIMIT, FileTooLarge, read_limited
from kindgi_eval.rules import DEFAULT_LIMITS, InputError, Problem, SuiteLimits, problems_from_validation

TENANTS_ENV = "KINDGI_TENANTS"
"""The environment variable naming the tenants file."""


def tenants_limits(environ: Mapping[str, str] | None = None) -> dict[str, SuiteLimits]:
    """The limits of each tenant whose first `[[tenant]]` table in the tenants file (KINDGI_TENANTS) raises them;
    empty without a tenants file, every tenant having the defaults. InputError naming the file and field of a limit
    that is not a whole number of at least 1, or unknown."""
    value = (os.environ if environ is None else environ).get(TENANTS_ENV, "")
    if not value:
        return {}
    path = Path(value)
    try:
        data = tomllib.loads(read_limited(path, CONFIG_FILE_LIMIT, "a tenants file").decode("utf-8"))
    except (FileTooLarge, OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InputError(
            [
                Problem(
                    str(path),
                    None,
                    None,
                    f"cannot be read for its tenants' limits: {e}. Point {TENANTS_ENV} at the tenants file.",
                )
            ]
        ) from None
    found: dict[str, SuiteLimits] = {}
    problems: list[Problem] = []
    tables = data.get("tenant", [])
    for index, table in enumerate(tables if isinstance(tables, list) else []):
        if not isinstance(table, dict) or not isinstance(table.get("name"), str) or "limits" not in table:
            continue
        try:
            limits = SuiteLimits.model_validate(table["limits"])
        except ValidationError as e:
            problems += [
                Problem(str(path), None, f"tenant[{index}].limits{'.' + p.field if p.field else ''}", p.message)
                for p in problems_from_validation(e, str(path), None)
            ]
            continue
        found.setdefault(table["name"], limits)
    if problems:
        raise InputError(problems)
    return found


def limits_of(tenant: str, environ: Mapping[str, str] | None = None) -> SuiteLimits:
    """The suite limits of `tenant`: as the tenants file raises them, else the defaults."""
    return tenants_limits(environ).get(tenant, DEFAULT_LIMITS)
