"""What a custom suite adds to the report and the `--json` summary: how its handler's verdicts fell."""

from __future__ import annotations

from kindgi_eval.store import RunRow


def custom_lines(run: RunRow) -> list[str]:
    """One line: the handler, its source's hash, and its verdicts counted."""
    return [f"Custom handler {run.handler_name} (source sha256 {(run.handler_hash or '')[:12]}): {run.handler_passed} passed, "
            f"{run.handler_failed} failed, {run.handler_errors} errors (no valid verdict, never a pass), "
            f"{run.handler_skipped} skipped (no reply)"]


def custom_summary(run: RunRow) -> dict:
    """The `custom` key of `--json`."""
    return {"custom": {"handler": run.handler_name, "hash": run.handler_hash, "passed": run.handler_passed,
                       "failed": run.handler_failed, "errors": run.handler_errors, "skipped": run.handler_skipped}}
