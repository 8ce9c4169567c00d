"""How often a corrected judged rate's 95% interval holds the true rate, over simulated runs at known rates and known
judge errors, for the label and reply counts a tenant has; beside the delta method's symmetric interval at the same
adjusted counts, with and without Lee et al.'s centre shift; and what one interval and one "how many labels" answer
cost.

    .venv/bin/python benchmarks/judged_rates.py [--runs 2000] [--quick]

Each simulated run draws the judge's error on fresh labels and the observed rate on fresh replies. A run whose labels
show the judge no better than a coin has no correction (none is shown) and is left out of its configuration's count.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import math
import random
import resource
import sys
import time
from itertools import accumulate
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kindgi_eval.rules.intervals import Z95  # noqa: E402
from kindgi_eval.rules.judged_rates import JudgeError, corrected_rate, labels_to_halve  # noqa: E402

RATES = (0.0, 0.02, 0.1, 0.3, 0.5, 0.9)
JUDGES = ((0.90, 0.95), (0.80, 0.80), (0.99, 0.99), (0.70, 0.90), (0.95, 0.70))
"""(sensitivity, specificity) of the simulated judges."""
LABELS = ((2, 2), (1, 3), (3, 1), (5, 5), (10, 10), (25, 25), (2, 48), (48, 2), (10, 40))
"""(fail labels, pass labels): 4 to 50 labels."""
GRADED = (20, 100, 500)


def sampler(n: int, p: float):
    """Binomial(n, p) by its inverse cumulative distribution."""
    cumulative = list(accumulate(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)))
    return lambda draw: min(n, bisect.bisect_left(cumulative, draw.random() * cumulative[-1]))


def delta_interval(fails: int, graded: int, error: JudgeError, shifted: bool = False) -> tuple[float, float]:
    """The symmetric delta-method interval of the corrected rate at the same adjusted counts, for comparison; `shifted`
    moves its centre by Lee et al.'s (2025) second-order term, 2 z**2 (rate var(se) - (1 - rate) var(sp)), as their
    construction does."""
    z2 = Z95 * Z95
    p, n = (fails + z2 / 2) / (graded + z2), graded + z2
    se, m1 = (error.caught + 1) / (error.fail_labels + 2), error.fail_labels + 2
    sp, m0 = (error.cleared + 1) / (error.pass_labels + 2), error.pass_labels + 2
    bottom = se + sp - 1
    if bottom <= 0:
        return 0.0, 1.0
    rate = (p + sp - 1) / bottom
    spread = math.sqrt(p * (1 - p) / n + (1 - rate) ** 2 * sp * (1 - sp) / m0 + rate**2 * se * (1 - se) / m1) / bottom
    if shifted:
        rate += 2 * z2 * (rate * se * (1 - se) / m1 - (1 - rate) * sp * (1 - sp) / m0)
    return max(0.0, min(1.0, rate - Z95 * spread)), min(1.0, max(0.0, rate + Z95 * spread))


def coverage(
    rate: float, judge: tuple[float, float], labels: tuple[int, int], graded: int, runs: int
) -> dict[str, float]:
    """Coverage and mean width of both intervals over `runs` simulated runs of one configuration."""
    (se, sp), (fail_labels, pass_labels) = judge, labels
    draw = random.Random(56)
    caught, cleared = sampler(fail_labels, se), sampler(pass_labels, sp)
    failed = sampler(graded, rate * se + (1 - rate) * (1 - sp))
    shown = covered = covered_delta = covered_lee = 0
    width = width_delta = width_lee = 0.0
    for _ in range(runs):
        error = JudgeError(caught(draw), fail_labels, cleared(draw), pass_labels)
        fails = failed(draw)
        result = corrected_rate(fails, graded, error)
        if result.low is None or result.high is None:
            continue
        low, high = delta_interval(fails, graded, error)
        lee_low, lee_high = delta_interval(fails, graded, error, shifted=True)
        covered_lee += lee_low <= rate <= lee_high
        width_lee += lee_high - lee_low
        shown += 1
        covered += result.low <= rate <= result.high
        covered_delta += low <= rate <= high
        width += result.high - result.low
        width_delta += high - low
    return {
        "shown": shown,
        "fieller": covered / shown,
        "delta": covered_delta / shown,
        "width": width / shown,
        "width_delta": width_delta / shown,
        "lee": covered_lee / shown,
        "width_lee": width_lee / shown,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="simulated runs per configuration")
    parser.add_argument("--quick", action="store_true", help="a few configurations, 200 runs each")
    args = parser.parse_args()
    grid = list(itertools.product(RATES, JUDGES, LABELS, GRADED))
    runs = args.runs
    if args.quick:
        grid, runs = grid[::60], 200
    started = time.perf_counter()
    results = [(config, coverage(*config, runs)) for config in grid]
    results = [
        (config, r) for config, r in results if r["shown"] >= runs // 10
    ]  # a configuration that rarely has a correction
    elapsed = time.perf_counter() - started
    for method, key, width in (
        ("fieller (the product's)", "fieller", "width"),
        ("delta method", "delta", "width_delta"),
        ("delta method with Lee et al.'s shift", "lee", "width_lee"),
    ):
        worst_config, worst = min(results, key=lambda item: item[1][key])
        below = sum(r[key] < 0.93 for _, r in results)
        print(
            f"{method}: worst coverage {worst[key]:.3f} at rate {worst_config[0]}, judge {worst_config[1]}, labels (fail, pass) "
            f"{worst_config[2]}, {worst_config[3]} graded; {below} of {len(results)} configurations below 0.93; "
            f"mean width {sum(r[width] for _, r in results) / len(results):.3f}"
        )
    print(f"{len(results)} configurations x {runs} runs in {elapsed:.1f} s")
    calls = 2000
    started = time.perf_counter()
    for n in range(calls):
        corrected_rate(n % 30, 30, JudgeError(9, 10, 19, 20))
    per_interval = (time.perf_counter() - started) / calls
    started = time.perf_counter()
    for fails in range(10):
        labels_to_halve(fails, 30, JudgeError(3, 3, 2, 2))
    per_advice = (time.perf_counter() - started) / 10
    print(
        f"one corrected rate with its interval: {per_interval * 1e6:.1f} us; one 'how many labels' answer: {per_advice * 1e3:.1f} ms"
    )
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
