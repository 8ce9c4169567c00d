"""What the command modules share: exit statuses, the bad-input and registry-error wrappers, the run settings'
options, output paths checked and written whole, runs named by id prefix, and the registry's client."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kindgi_eval.inputs import SETTING, SETTINGS
from kindgi_eval.rules import InputError, Problem

if TYPE_CHECKING:
    from kindgi_eval.inputs import SuiteModels
    from kindgi_eval.registry import RegistryClient
    from kindgi_eval.store import StorePath

# The store, the reports and the registry are imported inside the functions that use them: their Parquet, DuckDB and
# pydantic models are start-up time that `kindgi-eval --help` and `validate` would otherwise pay.

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2


def input_errors(command: Callable) -> Callable:
    """Bad input prints one line per problem, no traceback, and exits 2."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except InputError as e:
            for problem in e.problems:
                click.echo(f"error: {problem}", err=True)
            sys.exit(EXIT_INPUT)

    return wrapper


def registry_errors(command: Callable) -> Callable:
    """A registry that cannot be reached prints why and exits 1: nothing was decided."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from kindgi_eval.registry import RegistryUnreachable

        try:
            return command(*args, **kwargs)
        except RegistryUnreachable as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(EXIT_FAILED)

    return wrapper


def _setting_option(field: str, default_shown: str | None = None) -> Callable:
    """The option of one run setting, with its type, range, variable and default from the settings table (or, where
    a command resolves it otherwise, `default_shown`, which then says where its value comes from)."""
    s = SETTING[field]
    types = {
        "int": click.IntRange(s.low, s.high),
        "float": click.FloatRange(min=s.low, min_open=s.low_open),
        "folder": click.Path(file_okay=False),
        "model": str,
        "url": str,
        "bool": click.BOOL,
    }
    metavars = {"model": "PROVIDER:MODEL", "url": "URL"}
    default = "unset" if s.default is None else f"{s.default:g}" if isinstance(s.default, float) else str(s.default)
    where = default_shown or f"env: {s.var}; default: {default}"
    return click.option(
        s.flag, type=types[s.value_type], metavar=metavars.get(s.value_type), help=f"{s.help} [{where}]"
    )


def settings_options(*fields: str, defaults: dict[str, str] | None = None) -> Callable:
    """The options of the named run settings, in the settings table's order; `defaults` names the default a command
    shows where it is not the table's."""

    def decorate(command: Callable) -> Callable:
        for s in reversed(SETTINGS):
            if s.field in fields:
                command = _setting_option(s.field, (defaults or {}).get(s.field))(command)
        return command

    return decorate


def check_output_path(path: str | None, flag: str = "--json") -> None:
    """An output file's folder must exist before anything runs, so a run never ends unable to write it."""
    if path and not Path(path).absolute().parent.is_dir():
        raise InputError(
            [Problem(path, None, None, f"its folder does not exist. Create it or pick another {flag} path.")]
        )


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """Write `data` beside `path` and rename it into place, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_text_atomically(path: Path, text: str) -> None:
    """Write `text` as UTF-8 beside `path` and rename it into place."""
    write_bytes_atomically(path, text.encode("utf-8"))


LATEST = "latest"
"""The word that names the newest stored run wherever a run id is taken."""
LIST_RUNS = "See `kindgi-eval runs` for the stored runs, newest first."
"""What a message about a run that is not stored tells the user to do."""


def runs_named(root: StorePath, prefixes: dict[str, str]) -> list:
    """The stored run (its `store.RunKey`) each argument names by run id, unique prefix, or `latest` (the newest by
    start time, as `kindgi-eval runs` lists it first); InputError lists every argument that names no run or several."""
    from kindgi_eval.reports import matching_run_ids
    from kindgi_eval.store import run_keys

    stored = {k.run_id: k for k in run_keys(root)}
    found, problems = [], []
    for name, prefix in prefixes.items():
        matches = matching_run_ids(prefix, stored) if prefix != LATEST else _newest(root, stored)
        if not prefix:
            message = "an empty run id names no run; give a run id or its first characters."
            problems.append(Problem(name, None, None, message))
        elif not matches and prefix == LATEST:
            problems.append(
                Problem(
                    name,
                    None,
                    None,
                    f"the store at {root} holds no run yet, so `latest` names none. "
                    "Start one with: kindgi-eval run --mock",
                )
            )
        elif not matches:
            problems.append(Problem(name, None, None, f"no run {prefix!r} in the store at {root}. {LIST_RUNS}"))
        elif len(matches) > 1:
            listed = "; ".join(f"{i} ({stored[i].partition}, {stored[i].day})" for i in matches)
            message = f"{prefix!r} begins {len(matches)} run ids: {listed}. Give more characters of the one you mean."
            problems.append(Problem(name, None, None, message))
        else:
            found.append(stored[matches[0]])
    if problems:
        raise InputError(problems)
    return found


def _newest(root: StorePath, stored: dict) -> list[str]:
    """The newest stored run's id, as a one-item list; empty for an empty store."""
    from kindgi_eval.kinds import store_views
    from kindgi_eval.store import newest_runs

    if not stored:
        return []
    return [row[0] for row in newest_runs(root, store_views(), limit=1, completed=True).rows]


def kind_models(kind: str) -> SuiteModels:
    """`kinds.models_of`, the table of kinds imported on first use: a folder of one's own never asks for it, so
    `validate` of such folders does not import every kind (about 0.6 s)."""
    from kindgi_eval.kinds import models_of

    return models_of(kind)


def registry_client() -> RegistryClient:
    """The client the environment names; InputError saying which variable is missing."""
    from kindgi_eval.registry import TOKEN_ENV, URL_ENV, client_from_env

    client = client_from_env()
    if client is None:
        raise InputError(
            [
                Problem(
                    var,
                    None,
                    None,
                    "is not set. Set it to the registry's URL and your token (kindgi-eval tokens issue).",
                )
                for var in (URL_ENV, TOKEN_ENV)
                if not os.environ.get(var)
            ]
        )
    return client
