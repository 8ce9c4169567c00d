"""What a pairwise suite adds to the report and the `--json` summary: the variants' wins, losses and ties."""

from __future__ import annotations

from kindgi_eval.store import RunRow


def pairwise_lines(run: RunRow) -> list[str]:
    """One line: not judged, nothing both answered, or the tally with its win rate and position consistency."""
    which = f"Pairwise {run.variant_a} (A) against {run.variant_b} (B)"
    if not run.pairwise_calibrated:
        return [f"{which}: not judged, the judge is not calibrated on the labelled pairs"]
    if run.win_rate is None:
        return [f"{which}: no prompt was answered by both"]
    return [f"{which}: {run.wins} wins, {run.losses} losses, {run.ties} ties; "
            f"win rate {run.win_rate:.3f} (bootstrap 95% interval {run.win_rate_low:.3f} to {run.win_rate_high:.3f}); "
            f"position consistency {run.position_consistency:.2f}"]


def pairwise_summary_json(run: RunRow) -> dict:
    """The `pairwise` key of `--json`."""
    interval = None if run.win_rate is None else {"low": run.win_rate_low, "high": run.win_rate_high, "method": "bootstrap", "level": 0.95}
    return {"pairwise": {"variant_a": run.variant_a, "variant_b": run.variant_b, "calibrated": run.pairwise_calibrated,
                         "agreement": run.pairwise_agreement, "wins": run.wins, "losses": run.losses, "ties": run.ties,
                         "win_rate": run.win_rate, "interval": interval, "position_consistency": run.position_consistency}}


def both_variants(run: RunRow) -> str:
    """What a pairwise run ran against: its two variants."""
    return f"variant A ({run.variant_a}) and variant B ({run.variant_b})"
