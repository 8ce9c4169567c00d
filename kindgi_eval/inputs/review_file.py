"""A review file a person filled in: the CSV or JSONL `kindgi-eval review export` wrote, with `label` and `note`.

The columns (and a JSONL line's keys) are `REVIEW_COLUMNS`; an import reads `run_id`, `case_id`, `rubric_item`,
`label`, `note` and, when given, `reviewer`, and needs the first five on every row. A row whose `label` and `note`
are both empty is not labelled yet and is skipped; any other row must be right (label `pass` or `fail`, the run, case
and rubric item those of a review queue in the store, each reply and item once), or the whole file is refused with
every problem named by file, line and field. Touches the one file it is given.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, NamedTuple

from kindgi_eval.inputs.file_limits import SUITE_FILE_LIMIT, FileTooLarge, read_limited
from kindgi_eval.inputs.suite_folder import json_lines
from kindgi_eval.rules import InputError, Problem

REVIEW_COLUMNS = (
    "run_id",
    "case_id",
    "rubric_item",
    "reviewer_role",
    "history",
    "message",
    "reply",
    "reviewer",
    "label",
    "note",
)
"""What an exported review file holds, in order: which reply and rubric item, who reviews, the conversation, the
contact's message, the reply as the contact saw it, and the three columns a person fills in."""
REQUIRED_COLUMNS = ("run_id", "case_id", "rubric_item", "label", "note")
"""What an import reads from every row."""
LABELS = ("pass", "fail")
Format = Literal["csv", "jsonl"]


class LabelLine(NamedTuple):
    """One labelled row of a review file."""

    line: int
    """The 1-based line its row starts on."""
    run_id: str
    case_id: str
    rubric_item: str
    reviewer: str | None
    """Who labelled it, when the file says."""
    label: Literal["pass", "fail"]
    note: str


class LabelFile(NamedTuple):
    """A review file's labelled rows, how many rows it left unlabelled, and what is wrong with its form."""

    lines: tuple[LabelLine, ...]
    """The rows that read as labels, each reply and rubric item once."""
    unlabelled: int
    """Rows with neither label nor note: not reviewed yet."""
    problems: tuple[Problem, ...]
    """Every problem of the file's form (a missing column, a label that is not pass or fail, a row given twice);
    the file is refused when there is any, or when any label names what no review queue holds (`check_labels`)."""


def file_format(path: str | Path, content: bytes) -> Format:
    """`csv` or `jsonl`, by the file's extension, else by whether its first character opens a JSON object."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    return "jsonl" if content.lstrip().startswith(b"{") else "csv"


def read_label_file(path: str | Path) -> LabelFile:
    """The labelled rows of a review file, and every problem of its form, each named by file, line and field;
    InputError when the file cannot be read at all, or when it is right and labels nothing."""
    where = str(path)
    try:
        content = read_limited(path, SUITE_FILE_LIMIT, "a review file")
        text = content.decode("utf-8-sig")
    except FileNotFoundError:
        raise InputError(
            [Problem(where, None, None, "file not found. Give the file kindgi-eval review export wrote, filled in.")]
        ) from None
    except FileTooLarge as e:
        raise InputError([Problem(where, None, None, f"{e}. Split it into several files.")]) from None
    except UnicodeDecodeError as e:
        raise InputError(
            [Problem(where, None, None, f"is not UTF-8 text (byte {e.start}). Save it as UTF-8.")]
        ) from None
    except OSError as e:
        raise InputError([Problem(where, None, None, f"cannot be read: {e.strerror or e}.")]) from None
    problems: list[Problem] = []
    rows = (
        _csv_rows(where, text, problems) if file_format(path, content) == "csv" else _jsonl_rows(where, text, problems)
    )
    lines: list[LabelLine] = []
    unlabelled = 0
    first: dict[tuple[str, str, str], int] = {}
    for number, row in rows:
        found = _label_line(where, number, row, problems)
        if found is None:
            continue
        if found == "unlabelled":
            unlabelled += 1
            continue
        key = (found.run_id, found.case_id, found.rubric_item)
        if key in first:
            problems.append(
                Problem(
                    where,
                    number,
                    "rubric_item",
                    f"this reply and rubric item are labelled already, on line {first[key]}. "
                    "Keep one row per reply and rubric item.",
                )
            )
            continue
        first[key] = number
        lines.append(found)
    if not lines and not problems:
        raise InputError(
            [
                Problem(
                    where,
                    None,
                    "label",
                    f"no row is labelled ({unlabelled} rows left empty). Write pass or fail in "
                    "the label column of the rows you reviewed.",
                )
            ]
        )
    return LabelFile(tuple(lines), unlabelled, tuple(sorted(problems, key=lambda p: p.line or 0)))


class QueueKeys(NamedTuple):
    """What one run's review queue holds, as an import checks a label against it."""

    cases: frozenset[str]
    """Its case ids."""
    items: frozenset[tuple[str, str]]
    """Its (case id, rubric item) pairs."""


def check_labels(
    path: str | Path, lines: tuple[LabelLine, ...], queues: Mapping[str, QueueKeys | None]
) -> list[Problem]:
    """Every label that names no run, no case of its run's queue, or no rubric item of it; `queues` maps each run id
    the file names to its queue, or to None when the store holds no such run (pure)."""
    where = str(path)
    problems = []
    for line in lines:
        queue = queues.get(line.run_id)
        if queue is None:
            problems.append(
                Problem(
                    where,
                    line.line,
                    "run_id",
                    f"no run {line.run_id!r} in the store. Label the file kindgi-eval review export wrote for a stored run.",
                )
            )
        elif not queue.cases:
            problems.append(
                Problem(
                    where,
                    line.line,
                    "run_id",
                    f"run {line.run_id} has no review queue: it is not a run of a human-review suite.",
                )
            )
        elif line.case_id not in queue.cases:
            problems.append(
                Problem(
                    where, line.line, "case_id", f"{line.case_id!r} is no case of run {line.run_id}'s review queue."
                )
            )
        elif (line.case_id, line.rubric_item) not in queue.items:
            problems.append(
                Problem(
                    where,
                    line.line,
                    "rubric_item",
                    f"{_short(line.rubric_item)} is no rubric item of case {line.case_id!r} in run {line.run_id}'s review queue.",
                )
            )
    return problems


def _csv_rows(where: str, text: str, problems: list[Problem]) -> list[tuple[int, dict[str, object]]]:
    """The rows of a CSV file by the line each starts on (a cell may hold newlines); a missing column is one problem."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        problems.append(
            Problem(where, None, None, "is empty. Give the file kindgi-eval review export wrote, filled in.")
        )
        return []
    except csv.Error as e:
        problems.append(Problem(where, 1, None, f"is not CSV: {e}."))
        return []
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        problems += [
            Problem(where, 1, column, "missing column. A review file's header names " + ", ".join(REVIEW_COLUMNS) + ".")
            for column in missing
        ]
        return []
    rows = []
    start = reader.line_num + 1
    try:
        for cells in reader:
            if any(cell.strip() for cell in cells):
                if len(cells) != len(header):
                    problems.append(
                        Problem(
                            where,
                            start,
                            None,
                            f"has {len(cells)} cells and the header {len(header)}. Keep every row's cells under their columns.",
                        )
                    )
                else:
                    rows.append((start, dict(zip(header, cells, strict=True))))
            start = reader.line_num + 1
    except csv.Error as e:
        problems.append(Problem(where, start, None, f"is not CSV: {e}."))
    return rows


def _jsonl_rows(where: str, text: str, problems: list[Problem]) -> list[tuple[int, dict[str, object]]]:
    """The objects of a JSONL file by line; a row lacking a column's key is a problem of that row."""
    rows = []
    for number, _, data in json_lines(where, text, problems):
        if not isinstance(data, dict):
            problems.append(
                Problem(
                    where, number, None, "each line must be one JSON object, as kindgi-eval review export wrote it."
                )
            )
            continue
        rows.append((number, data))
    return rows


def _label_line(
    where: str, number: int, row: Mapping[str, object], problems: list[Problem]
) -> LabelLine | Literal["unlabelled"] | None:
    """One row as a label, "unlabelled" when its label and note are empty, None (with its problems) when wrong."""
    found: list[Problem] = []
    values: dict[str, str | None] = {}
    for column in (*REQUIRED_COLUMNS, "reviewer"):
        value = row.get(column)
        if column not in row and column != "reviewer":
            found.append(
                Problem(
                    where,
                    number,
                    column,
                    "missing column. Every row needs run_id, case_id, rubric_item, label and note.",
                )
            )
        elif value is not None and not isinstance(value, str):
            found.append(Problem(where, number, column, f"must be a string, not {json.dumps(value)[:40]}."))
        else:
            values[column] = value.strip() if isinstance(value, str) and column in ("label", "reviewer") else value
    if values.get("label"):
        values["label"] = values["label"].lower()  # `Pass`, `FAIL`: a spreadsheet's capitals say the same
    if found:
        problems.extend(found)
        return None
    label, note = values["label"] or "", values["note"] or ""
    if not label and not note.strip():
        return "unlabelled"
    if label not in LABELS:
        problems.append(
            Problem(
                where,
                number,
                "label",
                f"{label!r} is not a label. Write pass or fail."
                if label
                else "is empty, and the row has a note. Write pass or fail, or clear the note.",
            )
        )
        return None
    empty = [
        Problem(where, number, column, "is empty. Keep the value kindgi-eval review export wrote.")
        for column in ("run_id", "case_id", "rubric_item")
        if not values[column]
    ]
    if empty:
        problems.extend(empty)
        return None
    return LabelLine(
        number,
        values["run_id"] or "",
        values["case_id"] or "",
        values["rubric_item"] or "",
        values["reviewer"] or None,
        label,
        note,
    )  # type: ignore[arg-type]


def _short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")
