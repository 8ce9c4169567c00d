"""What a regression suite adds to the report and the `--json` summary: how its cases moved against the baseline."""

from __future__ import annotations

from kindgi_eval.kinds.kind import Items, KindRows
from kindgi_eval.store import RunRow


def regression_lines(run: RunRow) -> list[str]:
    """One line: the baseline run, the cases that moved, the paired change of the pass rate."""
    moved = f"{run.improved} improved, {run.regressed} regressed, {run.unchanged} unchanged"
    change = ""
    if run.pass_rate_change is not None:
        change = (f"; pass rate {run.pass_rate_change:+.3f} (paired 95% interval {run.change_low:+.3f} to {run.change_high:+.3f}, "
                  f"McNemar exact p = {run.mcnemar_p:.3g})")
    return [f"Regression against run {run.baseline_run}: {moved}{change}"]


def regression_summary(run: RunRow) -> dict:
    """The `regression` key of `--json`."""
    interval = None if run.pass_rate_change is None else {"low": run.change_low, "high": run.change_high, "method": "paired bootstrap", "level": 0.95}
    return {"regression": {"baseline_run": run.baseline_run, "improved": run.improved, "regressed": run.regressed,
                           "unchanged": run.unchanged, "pass_rate_change": run.pass_rate_change, "interval": interval,
                           "mcnemar_p": run.mcnemar_p}}


def regressed(run: RunRow) -> bool:
    """A case that regressed fails the run, whatever its status."""
    return (run.regressed or 0) > 0


def regression_marks(rows: KindRows) -> dict[str, str]:
    """Under each case that moved: which way, its status in the baseline run and now."""
    return {r.case_id: f"{r.change}: {r.baseline_status} in baseline run {r.baseline_run[:8]}, {r.status} now"
            for r in rows.regressions if r.change != "unchanged"}


def regression_items(rows: KindRows) -> Items:
    """The cases that moved against the baseline."""
    return Items("Cases that moved against the baseline", ("case", "baseline", "now", "change"),
                 [(r.case_id, r.baseline_status, r.status, r.change) for r in rows.regressions if r.change != "unchanged"])
