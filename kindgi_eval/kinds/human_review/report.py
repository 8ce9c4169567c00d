"""What a human-review suite adds to the report and the `--json` summary: the queue waiting for its reviewer."""

from __future__ import annotations

from kindgi_eval.kinds.kind import KindResult


def review_lines(result: KindResult) -> list[str]:
    """One line: the items queued, for whom, and the command that writes the file to label."""
    f = result.figures
    skipped = f"; {f['review_skipped']} cases without a reply left out" if f["review_skipped"] else ""
    each = f", {(f['review_items'] or 0) // f['review_replies']} rubric items each" if f["review_replies"] else ""
    queued = f"Human review: {f['review_items']} items queued for the {f['reviewer_role']} ({f['review_replies']} replies{each}){skipped}"
    return [f"{queued}; kindgi-eval review export <run id> writes the file to label"]


def review_summary(result: KindResult) -> dict:
    """The `human_review` key of `--json`."""
    f = result.figures
    return {
        "human_review": {
            "reviewer_role": f["reviewer_role"],
            "queue": f["review_items"],
            "replies": f["review_replies"],
            "skipped": f["review_skipped"],
        }
    }
