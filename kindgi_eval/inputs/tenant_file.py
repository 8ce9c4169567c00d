"""Reading a tenant configuration folder: `tenant.toml`, every problem named by file, line and field."""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from pathlib import Path
from typing import NamedTuple, NoReturn

from pydantic import ValidationError

from kindgi_eval.inputs.file_limits import CONFIG_FILE_LIMIT, FileTooLarge, read_limited
from kindgi_eval.rules import CrossReferenceError, InputError, Problem, Tenant, problems_from_validation

TENANT_FILE = "tenant.toml"
DEMO_CONFIG_DIR = Path(__file__).parents[1] / "demo_tenant"
"""The fictional demo tenant, packaged so the default works from any folder."""


class LoadedTenant(NamedTuple):
    """A parsed tenant configuration, where it came from, and the content hash recorded with every run."""

    tenant: Tenant
    config_dir: str
    hash: str


def load_tenant(config_dir: str | Path | None) -> LoadedTenant:
    """Parse `<config_dir>/tenant.toml` (the packaged demo tenant when None); InputError lists every problem."""
    folder = str(DEMO_CONFIG_DIR if config_dir is None else config_dir)
    file = os.path.join(folder, TENANT_FILE)
    if not os.path.isdir(folder):
        _refuse(folder, "no such tenant folder. Point CONFIG_DIR or --config-dir at a folder holding tenant.toml.")
    try:
        content = read_limited(file, CONFIG_FILE_LIMIT, "a tenant configuration")
    except FileTooLarge as e:
        _refuse(file, f"{e}. A tenant.toml holds one tenant's settings and copy; check that this is the right file.")
    except FileNotFoundError:
        _refuse(file, "file not found. A tenant folder must hold tenant.toml.")
    except OSError as e:
        _refuse(file, f"cannot be read: {e.strerror or e}. Check that it is a readable file.")
    tenant = parse_tenant(content, file)
    return LoadedTenant(tenant=tenant, config_dir=folder, hash=hashlib.sha256(content).hexdigest())


def parse_tenant(content: bytes, file: str) -> Tenant:
    """A tenant from the bytes of a tenant.toml; `file` is how problems name it."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as e:
        _refuse(file, f"is not UTF-8 text (byte {e.start}). Save it as UTF-8.")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError([_syntax_problem(file, str(e))]) from None
    try:
        return Tenant.model_validate(data)
    except ValidationError as e:
        raise InputError(_validation_problems(e, file, text)) from None


def _refuse(file: str, message: str) -> NoReturn:
    """Stop with one problem about the whole file."""
    raise InputError([Problem(file, None, None, message)]) from None


_AT_LINE = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _syntax_problem(file: str, message: str) -> Problem:
    """tomllib's message, with its line moved to where every problem keeps it."""
    match = _AT_LINE.search(message)
    if match is None:
        return Problem(file, None, None, f"not valid TOML: {message}. Fix the syntax.")
    what = message[: match.start()]
    what = f"{what[0].lower()}{what[1:]}" if what else "syntax error"
    return Problem(file, int(match[1]), None, f"not valid TOML: {what} at column {match[2]}. Fix the syntax there.")


def _validation_problems(error: ValidationError, file: str, text: str) -> list[Problem]:
    """One Problem per schema error, or per cross-reference problem, each on the line that holds its field."""
    lines = field_lines(text)
    errors = error.errors()
    cross = [e["ctx"]["error"] for e in errors if isinstance(e.get("ctx", {}).get("error"), CrossReferenceError)]
    if cross:
        # Cross-references are only checked once every field is valid, so these are the only errors.
        found = [(field, message) for c in cross for field, message in c.problems]
        return [Problem(file, _line_of(field, lines), field, message) for field, message in found]
    return [
        Problem(p.file, _line_of(p.field, lines), p.field, p.message)
        for p in problems_from_validation(error, file, None)
    ]


# A key at the start of a line: bare keys, dotted or not (quoted keys and array continuation lines are skipped).
_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+(?:\s*\.\s*[A-Za-z0-9_-]+)*)\s*=")
_TABLE = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\s-]+?)\s*\]\s*(?:#.*)?$")
_ARRAY_TABLE = re.compile(r"^\s*\[\[\s*([A-Za-z0-9_.\s-]+?)\s*\]\]\s*(?:#.*)?$")


def field_lines(text: str) -> dict[str, int]:
    """The 1-based line of every table header and key in a TOML text, by dotted field path (`courses[1].prices`).

    A heuristic good enough for error messages: it follows `[table]`, `[[array]]` and `key =` lines,
    which is all a tenant.toml needs, and gives up quietly on anything fancier.
    """
    found: dict[str, int] = {}
    counts: dict[str, int] = {}
    table = ""
    for number, line in enumerate(text.splitlines(), start=1):
        if match := _ARRAY_TABLE.match(line):
            parent = _resolve(_parts(match[1])[:-1], counts)
            name = _join(parent, _parts(match[1])[-1])
            counts[name] = counts.get(name, -1) + 1
            table = f"{name}[{counts[name]}]"
        elif match := _TABLE.match(line):
            table = _resolve(_parts(match[1]), counts)
        elif match := _KEY.match(line):
            field = table
            for part in _parts(match[1]):
                field = _join(field, part)
            found.setdefault(field, number)
            continue
        else:
            continue
        found.setdefault(table, number)
    return found


def _parts(dotted: str) -> list[str]:
    return [part.strip() for part in dotted.split(".")]


def _join(prefix: str, part: str) -> str:
    return f"{prefix}.{part}" if prefix else part


def _resolve(parts: list[str], counts: dict[str, int]) -> str:
    """A header's path, each array of tables resolved to its latest element: `courses.prices` is `courses[2].prices`."""
    path = ""
    for part in parts:
        path = _join(path, part)
        if path in counts:
            path = f"{path}[{counts[path]}]"
    return path


def _line_of(field: str | None, lines: dict[str, int]) -> int | None:
    """The line of a field, or of the nearest enclosing table or key that is written down."""
    if not field:
        return None
    cuts = [m.start() for m in re.finditer(r"[.\[]", field)]
    for end in [len(field), *reversed(cuts)]:
        if field[:end] in lines:
            return lines[field[:end]]
    return None
