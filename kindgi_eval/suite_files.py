"""Reading a suite folder: cases.jsonl and the optional calibration.jsonl, every problem reported at once."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from collections.abc import Sequence
from typing import NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from kindgi_eval.errors import InputError, Problem, problems_from_validation
from kindgi_eval.schemas import CalibrationItem, Case

CASES_FILE = "cases.jsonl"
CALIBRATION_FILE = "calibration.jsonl"

Item = TypeVar("Item", bound=BaseModel)


class Lined(NamedTuple):
    """An item and the 1-based line it was read from."""

    line: int
    item: BaseModel


class Suite(NamedTuple):
    """A parsed suite folder and the content hash recorded with every run of it."""

    eval_dir: str
    cases: tuple[Case, ...]
    case_lines: tuple[int, ...]
    calibration: tuple[CalibrationItem, ...]
    has_calibration: bool
    hash: str


def load_suite(eval_dir: str | Path) -> Suite:
    """Parse `<eval_dir>/cases.jsonl` and, if present, `calibration.jsonl`; InputError lists every problem."""
    folder = Path(eval_dir)
    cases_path = folder / CASES_FILE
    calibration_path = folder / CALIBRATION_FILE
    problems: list[Problem] = []
    if not folder.is_dir():
        raise InputError([Problem(str(folder), None, None, "no such suite folder. Point EVAL_DIR or --eval-dir at a folder holding cases.jsonl.")])
    cases_bytes = _read(cases_path, problems, required=True)
    calibration_bytes = _read(calibration_path, problems, required=False)
    cases = _parse(cases_path, cases_bytes, Case, problems) if cases_bytes is not None else []
    calibration = (
        _parse(calibration_path, calibration_bytes, CalibrationItem, problems) if calibration_bytes is not None else []
    )
    if cases_bytes is not None and not cases and not problems:
        problems.append(Problem(str(cases_path), None, None, "holds no cases. Write one JSON object per line."))
    if problems:
        raise InputError(problems)
    digest = hashlib.sha256()
    for name, content in ((CASES_FILE, cases_bytes), (CALIBRATION_FILE, calibration_bytes)):
        digest.update(f"{name}\0{len(content) if content is not None else -1}\0".encode())
        digest.update(content or b"")
    return Suite(
        eval_dir=str(eval_dir),
        cases=tuple(c.item for c in cases),  # type: ignore[misc]
        case_lines=tuple(c.line for c in cases),
        calibration=tuple(c.item for c in calibration),  # type: ignore[misc]
        has_calibration=calibration_bytes is not None,
        hash=digest.hexdigest(),
    )


def _read(path: Path, problems: list[Problem], *, required: bool) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        if required:
            problems.append(Problem(str(path), None, None, "file not found. A suite folder must hold cases.jsonl."))
    except OSError as e:
        problems.append(Problem(str(path), None, None, f"cannot be read: {e.strerror or e}."))
    return None


def _parse(path: Path, content: bytes, model: type[Item], problems: list[Problem]) -> list[Lined]:
    """One item per non-blank line; problems named by file, line and field; ids unique within the file."""
    items: list[Lined] = []
    first_line_of: dict[str, int] = {}
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append(Problem(str(path), None, None, f"is not UTF-8 text (byte {e.start})."))
        return items
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(Problem(str(path), number, None, f"not valid JSON: {e.msg} at column {e.colno}."))
            continue
        if not isinstance(data, dict):
            problems.append(Problem(str(path), number, None, "each line must be one JSON object."))
            continue
        try:
            item = model.model_validate_json(line)
        except ValidationError as e:
            problems.extend(problems_from_validation(e, str(path), number))
            continue
        item_id = item.id  # type: ignore[attr-defined]
        if item_id in first_line_of:
            problems.append(
                Problem(str(path), number, "id", f"duplicate id {item_id!r}, first used on line {first_line_of[item_id]}. Ids must be unique in a file.")
            )
            continue
        first_line_of[item_id] = number
        items.append(Lined(number, item))
    return items


def suite_key(tenant: str, eval_dir: str | Path) -> str:
    """The partition key of a tenant suite: `<tenant>.<suite folder name>`, e.g. `demo-academy.golden`."""
    name = re.sub(r"[^a-z0-9_-]+", "-", Path(eval_dir).absolute().name.lower()).strip("-") or "suite"
    return f"{tenant}.{name}"


def problems_against_tenant(suite: Suite, stages: Sequence[str], courses: Sequence[str], config: str) -> list[Problem]:
    """Cases naming a funnel stage or course the tenant configuration does not have: a typo there would
    silently leave a stage uncovered."""
    problems = []
    path = str(Path(suite.eval_dir) / CASES_FILE)
    for case, line in zip(suite.cases, suite.case_lines, strict=True):
        if case.contact is None:
            continue
        if case.contact.funnel_stage is not None and case.contact.funnel_stage not in stages:
            known = ", ".join(stages)
            problems.append(Problem(path, line, "contact.funnel_stage", f"{case.contact.funnel_stage!r} is not a funnel stage of {config} (stages: {known})."))
        if case.contact.course is not None and case.contact.course not in courses:
            known = ", ".join(courses)
            problems.append(Problem(path, line, "contact.course", f"{case.contact.course!r} is not a course of {config} (courses: {known})."))
    return problems
