"""What a custom suite adds to the report and the `--json` summary: how its handler's verdicts fell."""

from __future__ import annotations

from kindgi_eval.kinds.custom.stage import CustomRow
from kindgi_eval.kinds.kind import Items, KindResult, KindRows
from kindgi_eval.rules import clip

REASON_CHARS = 300
"""Where a handler's reason or error is clipped under a case."""


def custom_lines(result: KindResult) -> list[str]:
    """One line: the handler, its source's hash, and its verdicts counted."""
    f = result.figures
    return [
        f"Custom handler {f['handler_name']} (source sha256 {(f['handler_hash'] or '')[:12]}): {f['handler_passed']} passed, "
        f"{f['handler_failed']} failed, {f['handler_errors']} errors (no valid verdict, never a pass), "
        f"{f['handler_skipped']} skipped (no reply)"
    ]


def custom_summary(result: KindResult) -> dict:
    """The `custom` key of `--json`."""
    f = result.figures
    return {
        "custom": {
            "handler": f["handler_name"],
            "hash": f["handler_hash"],
            "passed": f["handler_passed"],
            "failed": f["handler_failed"],
            "errors": f["handler_errors"],
            "skipped": f["handler_skipped"],
        }
    }


def _mark(row: CustomRow) -> str:
    score = "" if row.score is None else f", score {row.score:g}"
    why = row.reason if row.error is None else row.error
    return f"handler {row.handler_name}: {row.verdict}{score}" + (f": {clip(why, REASON_CHARS)}" if why else "")


def custom_marks(rows: KindRows) -> dict[str, str]:
    """Under every case the handler graded: its verdict, with its score and its reason or error."""
    return {c.case_id: _mark(c) for c in rows.own}


def custom_items(rows: KindRows) -> Items:
    """The cases the handler did not pass."""
    return Items(
        "Cases the handler did not pass",
        ("case", "verdict", "score", "why"),
        [
            (c.case_id, c.verdict, "" if c.score is None else f"{c.score:g}", c.reason or c.error or "")
            for c in rows.own
            if c.verdict != "pass"
        ],
    )
