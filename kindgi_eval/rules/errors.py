"""Input errors that name the file, the line, the field and the problem, for people rather than tracebacks."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import ValidationError


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input file."""

    file: str
    """The file, as the user named it."""
    line: int | None
    """1-based line, where the problem has one."""
    field: str | None
    """Dotted path of the offending field, where there is one."""
    message: str
    """What is wrong, and what to do about it."""

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        field = f" field {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


class InputError(Exception):
    """Bad input: every problem found, reported at once; the command exits 2 and writes nothing."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def field_path(loc: Iterable[object]) -> str:
    """`("history", 0, "role")` as `history[0].role`; a key that is not plain printable text (an unknown field named
    with a newline, say) as a quoted JSON string, `["a\\nb"]`, so a problem always stays on one line."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).isprintable() or not str(part):
            out += f"[{json.dumps(str(part))}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def problems_from_validation(error: ValidationError, file: str, line: int | None) -> list[Problem]:
    """One Problem per pydantic error, in words a suite author understands."""
    problems = []
    for e in error.errors(include_url=False):
        loc = e["loc"]
        error_type = e["type"]
        if error_type == "extra_forbidden":
            message = "unknown field (a typo? unknown fields are refused so they never pass silently)"
        elif error_type == "missing":
            message = "required field is missing"
        elif error_type == "value_error":
            message = str(e["ctx"]["error"]) if "ctx" in e else e["msg"]
        else:
            message = f"{e['msg'][0].lower()}{e['msg'][1:]} (got {_short(e.get('input'))})"
        problems.append(Problem(file, line, field_path(loc) or None, message))
    return problems


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
