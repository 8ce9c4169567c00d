"""What a pairwise suite adds to the report and the `--json` summary: the variants' wins, losses and ties."""

from __future__ import annotations

from kindgi_eval.kinds.kind import KindResult


def pairwise_lines(result: KindResult) -> list[str]:
    """One line: not judged, nothing both answered, or the tally with its win rate and position consistency."""
    f = result.figures
    which = f"Pairwise {f['variant_a']} (A) against {f['variant_b']} (B)"
    if not f["pairwise_calibrated"]:
        return [f"{which}: not judged, the judge is not calibrated on the labelled pairs"]
    if f["win_rate"] is None:
        return [f"{which}: no prompt was answered by both"]
    return [
        f"{which}: {f['wins']} wins, {f['losses']} losses, {f['ties']} ties; "
        f"win rate {f['win_rate']:.3f} (bootstrap 95% interval {f['win_rate_low']:.3f} to {f['win_rate_high']:.3f}); "
        f"position consistency {f['position_consistency']:.2f}"
    ]


def pairwise_summary_json(result: KindResult) -> dict:
    """The `pairwise` key of `--json`."""
    f = result.figures
    interval = (
        None
        if f["win_rate"] is None
        else {"low": f["win_rate_low"], "high": f["win_rate_high"], "method": "bootstrap", "level": 0.95}
    )
    return {
        "pairwise": {
            "variant_a": f["variant_a"],
            "variant_b": f["variant_b"],
            "calibrated": f["pairwise_calibrated"],
            "agreement": f["pairwise_agreement"],
            "wins": f["wins"],
            "losses": f["losses"],
            "ties": f["ties"],
            "win_rate": f["win_rate"],
            "interval": interval,
            "position_consistency": f["position_consistency"],
        }
    }


def both_variants(result: KindResult) -> str:
    """What a pairwise run ran against: its two variants."""
    return f"variant A ({result.figures['variant_a']}) and variant B ({result.figures['variant_b']})"
