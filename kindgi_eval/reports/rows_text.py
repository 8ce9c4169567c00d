"""Rows a query returned, as a person reads them: an aligned text table, CSV, or JSON. Touches no file.

The store and the registry return rows; the commands that print them (`sql`, `runs`, `suites`, `catalogue`, `tokens`)
format them here, so every listing shows NULL, nested values and untrusted text alike."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from decimal import Decimal

from rich.cells import cell_len, set_cell_size

from kindgi_eval.rules import safe

TABLE_COLUMN_WIDTH = 60
"""The widest a table column is shown, in terminal cells; a longer value is cut and ends in `…`."""


def format_rows(columns: Sequence[str], rows: Sequence[tuple], fmt: str) -> str:
    """Query results as an aligned text table, CSV, or a JSON list of objects.

    Nested values (DuckDB structs, lists and maps) are JSON in every format, never Python's repr. NULL is shown as
    NULL in a table, an empty field in CSV and null in JSON."""
    if fmt == "json":
        objects = [{c: json_value(v) for c, v in zip(columns, r, strict=True)} for r in rows]
        return json.dumps(objects, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([_csv_cell(v) for v in r] for r in rows)
        return out.getvalue()
    return format_table(columns, rows)


def json_value(value: object) -> object:
    """A value DuckDB returned, as what `json.dumps` writes as valid JSON: a decimal as a number, a date, time, interval
    or UUID as its text, a map's keys as text, and NaN or an infinity (which JSON cannot hold) as the text DuckDB
    gives it (`"NaN"`, `"Infinity"`, `"-Infinity"`)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _NON_FINITE[str(value)]
    if isinstance(value, Decimal):
        return json_value(float(value))
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    return str(value)


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _is_nested(value: object) -> bool:
    return isinstance(value, dict | list | tuple)


def _csv_cell(value: object) -> object:
    if value is None:
        return ""
    return json.dumps(json_value(value), ensure_ascii=False) if _is_nested(value) else value


def _table_cell(value: object) -> str:
    """One value as table text on one line, at most TABLE_COLUMN_WIDTH cells: NULL, nested values as JSON, control
    characters and newlines escaped (the text may be model output, which must not reach a terminal as escape codes).

    A longer value is cut, and ends in `…`; so is one of more than three characters per cell, which only zero-width
    marks could fit, so that a long value is never measured whole."""
    if value is None:
        text = "NULL"
    elif _is_nested(value):
        text = json.dumps(json_value(value), ensure_ascii=False)
    else:
        text = str(value)
    text = safe(text).replace("\n", "\\n")
    head = text[: TABLE_COLUMN_WIDTH * 3]  # enough to fill the column, unless most characters are zero-width marks
    if head == text and cell_len(text) <= TABLE_COLUMN_WIDTH:
        return text
    return set_cell_size(head, TABLE_COLUMN_WIDTH - 1) + "…"


def format_table(columns: Sequence[str], rows: Sequence[tuple]) -> str:
    """Rows as a table aligned by display width (an East Asian wide character takes two cells, as rich measures
    them), every value on one line and cut at TABLE_COLUMN_WIDTH cells with `…`, then the row count.

    Every line is padded to the table's width, whatever the terminal, so the same rows always give the same text."""
    header = [_table_cell(name) for name in columns]
    body = [[_table_cell(v) for v in r] for r in rows]
    widths = [max(map(cell_len, cells)) for cells in zip(header, *body, strict=True)]
    lines = [_table_line(cells, widths) for cells in (header, ["-" * w for w in widths], *body)]
    return "\n".join(lines) + f"\n({len(rows)} row{'s' if len(rows) != 1 else ''})\n"


def _table_line(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(set_cell_size(cell, width) for cell, width in zip(cells, widths, strict=True))
