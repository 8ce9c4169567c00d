"""What a regression suite adds to the report and the `--json` summary: how its cases moved against the baseline."""

from __future__ import annotations

from kindgi_eval.kinds.kind import Items, KindResult, KindRows


def regression_lines(result: KindResult) -> list[str]:
    """One line: the baseline run, the cases that moved, the paired change of the pass rate."""
    f = result.figures
    moved = f"{f['improved']} improved, {f['regressed']} regressed, {f['unchanged']} unchanged"
    change = ""
    if f["pass_rate_change"] is not None:
        change = (
            f"; pass rate {f['pass_rate_change']:+.3f} (paired 95% interval {f['change_low']:+.3f} to {f['change_high']:+.3f}, "
            f"McNemar exact p = {f['mcnemar_p']:.3g})"
        )
    return [f"Regression against run {f['baseline_run']}: {moved}{change}"]


def regression_summary(result: KindResult) -> dict:
    """The `regression` key of `--json`."""
    f = result.figures
    interval = (
        None
        if f["pass_rate_change"] is None
        else {"low": f["change_low"], "high": f["change_high"], "method": "paired bootstrap", "level": 0.95}
    )
    return {
        "regression": {
            "baseline_run": f["baseline_run"],
            "improved": f["improved"],
            "regressed": f["regressed"],
            "unchanged": f["unchanged"],
            "pass_rate_change": f["pass_rate_change"],
            "interval": interval,
            "mcnemar_p": f["mcnemar_p"],
        }
    }


def regressed(result: KindResult) -> bool:
    """A case that regressed fails the run, whatever its status."""
    return (result.figures["regressed"] or 0) > 0


def regression_marks(rows: KindRows) -> dict[str, str]:
    """Under each case that moved: which way, its status in the baseline run and now."""
    return {
        r.case_id: f"{r.change}: {r.baseline_status} in baseline run {r.baseline_run[:8]}, {r.status} now"
        for r in rows.own
        if r.change != "unchanged"
    }


def regression_items(rows: KindRows) -> Items:
    """The cases that moved against the baseline."""
    return Items(
        "Cases that moved against the baseline",
        ("case", "baseline", "now", "change"),
        [(r.case_id, r.baseline_status, r.status, r.change) for r in rows.own if r.change != "unchanged"],
    )
