"""What an accuracy suite adds to the report and the `--json` summary: its accuracy with its Wilson interval."""

from __future__ import annotations

from kindgi_eval.store import RunRow


def accuracy_lines(run: RunRow) -> list[str]:
    """One line: the accuracy, how many graded items were correct, the interval, the items left ungraded."""
    graded = (run.correct or 0) + (run.wrong or 0)
    if run.accuracy is None:
        figure = "n/a (no item was graded)"
    else:
        figure = f"{run.accuracy:.3f}, {run.correct} of {graded} graded items correct (95% Wilson interval {run.accuracy_low:.3f} to {run.accuracy_high:.3f})"
    return [f"Accuracy: {figure}; {run.ungraded_items} ungraded, counted on neither side"]


def accuracy_summary(run: RunRow) -> dict:
    """The `accuracy` key of `--json`."""
    interval = None if run.accuracy is None else {"low": run.accuracy_low, "high": run.accuracy_high, "method": "wilson", "level": 0.95}
    return {"accuracy": {"value": run.accuracy, "correct": run.correct, "wrong": run.wrong, "ungraded": run.ungraded_items, "interval": interval}}
