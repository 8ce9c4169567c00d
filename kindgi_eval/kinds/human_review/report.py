"""What a human-review suite adds to the report and the `--json` summary: the queue waiting for its reviewer."""

from __future__ import annotations

from kindgi_eval.store import RunRow


def review_lines(run: RunRow) -> list[str]:
    """One line: the items queued, for whom, and the command that writes the file to label."""
    skipped = f"; {run.review_skipped} cases without a reply left out" if run.review_skipped else ""
    each = f", {(run.review_items or 0) // run.review_replies} rubric items each" if run.review_replies else ""
    queued = f"Human review: {run.review_items} items queued for the {run.reviewer_role} ({run.review_replies} replies{each}){skipped}"
    return [f"{queued}; kindgi-eval review export <run id> writes the file to label"]


def review_summary(run: RunRow) -> dict:
    """The `human_review` key of `--json`."""
    return {"human_review": {"reviewer_role": run.reviewer_role, "queue": run.review_items, "replies": run.review_replies,
                             "skipped": run.review_skipped}}
