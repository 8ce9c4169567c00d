"""The `conversation` kind: this project's own suites, `spec` = `{"cases": [...], "calibration": [...]}`.

Its items are checked by `inputs.check_suite_items`, the very rules a suite folder's lines are read by
(docs/design.md#cases, docs/design.md#calibration). Its consumer is the one the `conversation` kind gives the registry;
the other kinds write their suite folders in its format. Pure: reads no file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kindgi_eval.inputs import CALIBRATION_FILE, CASES_FILE, SuiteItems, check_suite_items
from kindgi_eval.registry.catalogue import Catalogue
from kindgi_eval.registry.consumers import Consumer, FolderContent, jsonl
from kindgi_eval.rules import Case, Problem

SPEC_KEYS = ("cases", "calibration")
_ITEM = {"cases": "case", "calibration": "calibration item"}
"""The fields of a conversation suite's `spec`: `cases` (required, the lines of cases.jsonl) and `calibration`
(optional, the lines of calibration.jsonl; absent means the suite has no calibration file)."""
FILE_OF = {"cases": CASES_FILE, "calibration": CALIBRATION_FILE}
"""The suite file that holds each list of the spec."""


def read_conversation(spec: Mapping[str, Any], where: str = "spec") -> SuiteItems:
    """A conversation suite's cases and calibration items, and every problem of its `spec`, each naming the item and
    its field: `spec.cases[3].must_contain`."""
    problems: list[Problem] = [
        Problem(where, None, key, f"unknown field. A conversation suite's spec holds only {' and '.join(SPEC_KEYS)}.")
        for key in sorted(set(spec) - set(SPEC_KEYS))
    ]
    lists: dict[str, list] = {}
    for key in SPEC_KEYS:
        value = spec.get(key, [])
        if key == "cases" and key not in spec:
            problems.append(
                Problem(
                    where, None, key, "required field is missing. Give the suite's cases as a list of case objects."
                )
            )
        elif not isinstance(value, list):
            problems.append(
                Problem(where, None, key, f"must be a list of {_ITEM[key]} objects, not a JSON {_json_type(value)}.")
            )
        lists[key] = value if isinstance(value, list) else []
    items = check_suite_items(lists["cases"], lists["calibration"], where)
    # "holds no cases" is said only of a list that is there and empty; a missing or mistyped one is said above
    said = {p.field for p in problems}
    found = [p for p in items.problems if not (p.field == "cases" and "cases" in said)]
    return SuiteItems(items.cases, items.calibration, tuple(problems + found))


def problem_line(problem: Problem) -> str:
    """`spec.cases[3].must_contain: unknown field (...)`: a problem of a document, by its path."""
    where = f"{problem.file}.{problem.field}" if problem.field else problem.file
    return f"{where}: {problem.message}"


def conversation_problems(spec: Mapping[str, Any], catalogue: Catalogue) -> list[str]:
    """The `conversation` consumer's check: every problem of `spec` as one line."""
    return [problem_line(p) for p in read_conversation(spec).problems]


def _json_type(value: object) -> str:
    names = {dict: "object", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def suite_files(spec: Mapping[str, Any]) -> dict[str, bytes]:
    """A spec's `cases` and `calibration` lists as the suite files that hold them, item for item."""
    return {FILE_OF[name]: jsonl(spec[name]) for name in SPEC_KEYS if name in spec}


def spec_of_files(files: Mapping[str, str]) -> dict[str, list[Any]]:
    """The `spec` a suite folder's files hold, from each file's text by name: every non-blank line one item, in order.

    This is what a version's content is, and so its hash: the items, not how the files lay them out. Two folders
    that differ only in whitespace, blank lines, the order of keys within a line or a final newline hold the same
    content and are the same version; the version keeps the files it was first published with. ValueError names a
    file this kind does not read, or a line that is not JSON."""
    unknown = sorted(set(files) - set(FILE_OF.values()))
    if unknown:
        raise ValueError(
            f"{unknown[0][:80]!r}: not a file of a conversation suite, which has {' and '.join(FILE_OF.values())}."
        )
    return {key: _items(name, files[name]) for key, name in FILE_OF.items() if name in files}


def _items(name: str, text: str) -> list[Any]:
    """The JSON value of each non-blank line of one suite file, split as a suite folder's reader splits it."""
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line, parse_constant=_no_constant))
        except ValueError as e:
            said = f"{e.msg} at column {e.colno}" if isinstance(e, json.JSONDecodeError) else str(e)
            raise ValueError(f"{name}:{number}: not valid JSON: {said}.") from None
        except RecursionError:
            raise ValueError(f"{name}:{number}: nested too deeply to read.") from None
    return items


def _no_constant(name: str) -> Any:
    """NaN and Infinity are refused, as at publish: they are not JSON numbers, and no version can hold one."""
    raise ValueError(f"{name} is not a JSON number")


def conversation_folder(spec: Mapping[str, Any], catalogue: Catalogue) -> FolderContent:
    """A conversation suite as a folder: its lists, item for item."""
    return FolderContent(suite_files(spec), {})


def conversation_cases(spec: Mapping[str, Any]) -> list[tuple[str, Case]]:
    """A checked conversation spec's cases, each with its place (`spec.cases[3]`)."""
    return [(f"spec.cases[{index}]", case) for index, case in enumerate(read_conversation(spec).cases)]


CONVERSATION = Consumer(
    "conversation",
    conversation_problems,
    "kindgi-eval run",
    conversation_folder,
    spec_of_files,
    suite_files,
    cases=conversation_cases,
)
"""The consumer of conversation suites, whose folder format the other kinds write theirs in."""
