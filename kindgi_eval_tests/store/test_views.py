"""`kindgi-eval sql`: DuckDB's errors in its own words, and every format readable by what reads it.

These run the real CLI over a real (temporary) store; the values under test are built in SQL, as a query over
stored model output would return them."""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata

from kindgi_eval.kinds import store_views
from kindgi_eval.reports.rows_text import TABLE_COLUMN_WIDTH, format_rows
from kindgi_eval.store import view_names
from kindgi_eval_tests.conftest import run_cli


def display_width(line: str) -> int:
    """Terminal cells a line takes: two for an East Asian wide or full-width character, one for any other."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def no_constants(name: str) -> object:
    raise ValueError(f"{name} is not JSON")  # json.loads would otherwise accept NaN and Infinity


def test_the_help_names_every_view_the_store_defines(home) -> None:
    # The help is built from the views: a view a kind or the store adds is named without a word of help written.
    result = run_cli("sql", "--help")
    assert result.code == 0, result.err
    named = set(re.findall(r"\w+", result.out))
    views = view_names(store_views())
    assert len(views) > 15 and not [v for v in views if v not in named]
    assert "{views}" not in result.out


def test_a_query_error_keeps_duckdbs_hint_and_pointer(home) -> None:
    result = run_cli("sql", "SELECT * FROM runz")
    assert result.code == 2
    assert "Traceback" not in result.err
    lines = result.err.splitlines()
    assert lines[0] == "error: query: Catalog Error: Table with name runz does not exist!"
    assert 'Did you mean "runs"?' in lines  # DuckDB's hint
    line = next(x for x in lines if x.startswith("LINE 1: "))
    assert line == "LINE 1: SELECT * FROM runz"
    pointer = lines[lines.index(line) + 1]  # as DuckDB indents it: the carets stand under the unknown name
    assert pointer.strip() == "^^^^" and pointer.index("^") == line.index("runz")


def test_an_error_while_reading_rows_is_an_input_error_too(home) -> None:
    # DuckDB raises this one only when the rows are read, not when the query is bound
    result = run_cli("sql", "SELECT CAST(x AS INT) FROM (VALUES ('a'), ('b')) t(x)")
    assert result.code == 2
    assert "Traceback" not in result.err
    assert result.err.startswith("error: query: Conversion Error: Could not convert string 'a' to INT32")
    assert "LINE 1: SELECT CAST(x AS INT)" in result.err


def test_an_error_quoting_a_value_cannot_send_escape_codes(home) -> None:
    # a stored value (model output) can be quoted by an error message; it must not reach the terminal raw
    result = run_cli("sql", "SELECT error('boom' || chr(27) || '[2J') FROM range(1)")
    assert result.code == 2
    assert "\x1b" not in result.err
    assert "boom\\u001b[2J" in result.err


def test_csv_writes_nested_values_as_json(home) -> None:
    query = (
        "SELECT 'c1' AS id, {'split': false, 'votes': ['pass', 'fail'], 'at': DATE '2024-01-02'} AS c, [1, NULL] AS l"
    )
    result = run_cli("sql", query, "--format", "csv")
    assert result.code == 0, result.err
    (row,) = csv.DictReader(io.StringIO(result.out))
    assert json.loads(row["c"]) == {"split": False, "votes": ["pass", "fail"], "at": "2024-01-02"}
    assert json.loads(row["l"]) == [1, None]


def test_csv_of_the_statuses_criteria_parses_back_with_csv_and_json(home) -> None:
    assert run_cli("run", "--mock").code == 0
    result = run_cli("sql", "SELECT case_id, criteria FROM statuses ORDER BY case_id", "--format", "csv")
    assert result.code == 0, result.err
    rows = list(csv.DictReader(io.StringIO(result.out)))
    criteria = [c for row in rows for c in json.loads(row["criteria"])]
    assert criteria  # the golden suite's review entries, ungraded without a judge
    assert all(c["split"] is False and c["verdict"] == "ungraded" and c["votes"] == [] for c in criteria)


def test_json_stays_valid_with_nested_dates_decimals_and_nan(home) -> None:
    query = (
        "SELECT DATE '2024-01-02' AS d, 0.10::DECIMAL(5, 2) AS x, 'nan'::DOUBLE AS f, -'inf'::DOUBLE AS g, "
        "{'at': [TIMESTAMP '2024-01-02 03:04:05'], 'ok': true} AS s, MAP {DATE '2024-01-01': 1} AS m, NULL AS n"
    )
    result = run_cli("sql", query, "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out, parse_constant=no_constants) == [
        {
            "d": "2024-01-02",
            "x": 0.1,  # a decimal is a number
            "f": "NaN",  # JSON has no NaN or infinity: DuckDB's spelling, as text
            "g": "-Infinity",
            "s": {"at": ["2024-01-02 03:04:05"], "ok": True},
            "m": {"2024-01-01": 1},  # a map's keys are text, whatever their type
            "n": None,
        }
    ]


def test_table_stays_aligned_with_newlines_wide_values_and_cjk(home) -> None:
    query = (
        "SELECT * FROM (VALUES ('a' || chr(10) || 'b', repeat('x', 300), '価格は四五〇ドルです', NULL, 'red' || chr(27) || '[31m'), "
        "('plain', 'short', 'abc', 'z', '[bold]no markup[/bold]')) t(nl, wide, cjk, n, esc)"
    )
    result = run_cli("sql", query)
    assert result.code == 0, result.err
    *table, footer = result.out.splitlines()
    assert footer == "(2 rows)"
    assert len(table) == 4  # header, rule, two rows: each value on one line
    assert len({display_width(line) for line in table}) == 1, result.out
    assert "a\\nb" in table[2]  # the newline shown escaped
    assert "x" * (TABLE_COLUMN_WIDTH - 1) + "…" in table[2] and "x" * TABLE_COLUMN_WIDTH not in result.out
    assert "価格は四五〇ドルです" in table[2]
    assert "NULL" in table[2]
    assert "\x1b" not in result.out and "red\\u001b[31m" in table[2]
    assert "[bold]no markup[/bold]" in table[3]


def test_a_wide_cjk_value_is_cut_within_the_column() -> None:
    rows = [("価格" * 40, 1), ("x" + "価格" * 40, 2), ("short", None)]
    *table, footer = format_rows(["text", "n"], rows, "table").splitlines()
    assert footer == "(3 rows)"
    assert len({display_width(line) for line in table}) == 1
    for line in table[2:4]:
        text = line.split("  ")[0]  # the first column, before the gap of two spaces
        assert text.rstrip().endswith("…") and display_width(text.rstrip()) <= TABLE_COLUMN_WIDTH


def test_table_of_no_rows_keeps_its_header() -> None:
    assert format_rows(["n"], [], "table").splitlines() == ["n", "-", "(0 rows)"]
