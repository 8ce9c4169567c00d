"""A run's review queue as the file a person fills in: CSV for a spreadsheet, JSONL for a script. Pure: text out.

Both hold the columns of `inputs.REVIEW_COLUMNS`, one row per reply and rubric item, `reviewer`, `label` and `note`
empty. The judge's verdict is left out on purpose, so it cannot anchor the person whose label calibrates the judge.
In JSONL, `reply` is the list of the agent's messages and `history` the list of earlier turns; in CSV each is one
cell, the messages apart by a blank line. The contact's and the agent's text are untrusted: a CSV cell that a
spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) is written after
a `'`, as OWASP advises; an import reads neither column back, so nothing of the reply is changed in the store.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from kindgi_eval.inputs import REVIEW_COLUMNS
from kindgi_eval.kinds import QueueRow

MESSAGE_BREAK = "\n\n"
"""Between two messages of a reply in one CSV cell."""
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def review_records(run_id: str, queue: Sequence[QueueRow]) -> list[dict[str, object]]:
    """One record per queue row, keyed by `REVIEW_COLUMNS`, with empty reviewer, label and note."""
    return [
        {
            "run_id": run_id,
            "case_id": row.case_id,
            "rubric_item": row.rubric_item,
            "reviewer_role": row.reviewer_role,
            "history": list(row.history),
            "message": row.text,
            "reply": list(row.reply),
            "reviewer": "",
            "label": "",
            "note": "",
        }
        for row in queue
    ]


def review_jsonl(run_id: str, queue: Sequence[QueueRow]) -> str:
    """The queue as JSON lines, one object per reply and rubric item."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in review_records(run_id, queue))


def review_csv(run_id: str, queue: Sequence[QueueRow]) -> str:
    """The queue as CSV with a header row, every cell quoted."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(REVIEW_COLUMNS)
    for record in review_records(run_id, queue):
        record["history"] = "\n".join(record["history"])  # type: ignore[arg-type]
        record["reply"] = MESSAGE_BREAK.join(record["reply"])  # type: ignore[arg-type]
        writer.writerow(
            [_cell(str(record[c])) if c in ("history", "message", "reply") else record[c] for c in REVIEW_COLUMNS]
        )
    return out.getvalue()


def _cell(text: str) -> str:
    """Untrusted text as a cell no spreadsheet evaluates."""
    return f"'{text}" if text.startswith(_FORMULA_STARTS) else text
