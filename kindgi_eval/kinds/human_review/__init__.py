"""The `human-review` kind: every reply queued with the suite's rubric for a person to label, labels importable."""

from collections.abc import Mapping

from kindgi_eval.kinds.human_review.report import review_lines, review_summary
from kindgi_eval.kinds.human_review.stage import QueueSummary, promoted_items, queue_rows, summarize_queue
from kindgi_eval.kinds.kind import KindRows, SuiteKind


def _columns(rows: KindRows) -> Mapping[str, object]:
    summary = summarize_queue(rows.replies, rows.review_queue)
    return {"reviewer_role": rows.suite[0].reviewer_role, "review_items": summary.items, "review_replies": summary.replies,
            "review_skipped": summary.skipped}


KIND = SuiteKind(name="human-review", columns=_columns, lines=review_lines, summary=review_summary)

__all__ = ["KIND", "QueueSummary", "promoted_items", "queue_rows", "summarize_queue"]
