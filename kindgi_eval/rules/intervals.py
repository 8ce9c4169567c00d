"""Confidence intervals for the numbers a suite reports: a proportion, and the change of a pass rate over paired cases.

Pure arithmetic on counts; the bootstrap draws from a generator seeded by its caller, so a run's interval is
the same every time it is computed from the same counts.
"""

from __future__ import annotations

import bisect
import math
import random
from typing import NamedTuple

Z95 = 1.959963984540054
"""The standard normal quantile of 0.975: a two-sided 95% interval."""
RESAMPLES = 10_000
"""Bootstrap resamples of the paired interval."""
SEED = 16
"""The bootstrap's seed: the interval of the same counts is the same in every run."""


class Interval(NamedTuple):
    """A point estimate and its 95% interval."""

    estimate: float
    low: float
    high: float


def wilson(successes: int, trials: int, z: float = Z95) -> Interval | None:
    """The Wilson score interval of `successes` out of `trials`; None when there are no trials.

    Unlike the normal approximation it stays inside [0, 1] and is not empty at 0/n or n/n.
    """
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be between 0 and trials, not {successes} of {trials}")
    if trials == 0:
        return None
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z / (1 + z2 / trials) * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    # at 0/n and n/n one bound is exactly the end of the range; rounding must not move it off
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return Interval(p, low, high)


class PairedChange(NamedTuple):
    """How a pass rate moved over the same cases: the flips each way and the change's interval."""

    improved: int
    """Cases that did not pass before and pass now."""
    regressed: int
    """Cases that passed before and do not now."""
    cases: int
    """Cases compared."""
    change: Interval
    """The pass rate now minus before, with a paired bootstrap 95% interval."""
    mcnemar_p: float
    """McNemar's exact two-sided p-value for the flips: the chance of a split this uneven if neither way were likelier."""


def paired_change(
    improved: int, regressed: int, cases: int, *, resamples: int = RESAMPLES, seed: int = SEED
) -> PairedChange:
    """The change of a pass rate over `cases` paired cases of which `improved` and `regressed` flipped.

    Each case contributes +1 (improved), -1 (regressed) or 0; the interval is the 2.5th and 97.5th percentile of
    the mean contribution over `resamples` resamples of the cases with replacement (a paired percentile
    bootstrap), drawn as counts from the three kinds of case.
    """
    if min(improved, regressed) < 0 or improved + regressed > cases:
        raise ValueError(f"flips must be counts within the cases, not {improved} up and {regressed} down of {cases}")
    if cases == 0:
        raise ValueError("a change needs at least one case")
    estimate = (improved - regressed) / cases
    if improved == regressed == 0:
        return PairedChange(0, 0, cases, Interval(0.0, 0.0, 0.0), 1.0)
    low, high = paired_bootstrap(improved, regressed, cases, resamples=resamples, seed=seed)
    return PairedChange(improved, regressed, cases, Interval(estimate, low, high), mcnemar_exact(improved, regressed))


def paired_bootstrap(
    improved: int, regressed: int, cases: int, *, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float]:
    """The percentile bootstrap 95% interval of the mean change over `cases` paired cases, `improved` of them +1,
    `regressed` -1 and the rest 0.

    A resample of the cases with replacement is drawn as its counts: the moved cases K ~ binomial(cases, moved/cases),
    the improved among them ~ binomial(K, improved/moved), each by inverse transform from its distribution function.
    That is the distribution drawing every case gives, in a time that does not grow with the cases (a night of
    fifty suites of hundreds of cases draws its intervals in milliseconds, not a second each)."""
    moved = improved + regressed
    draw = random.Random(seed)
    moved_cdf = _binomial_cdf(cases, moved / cases)
    up_cdfs: dict[int, list[float]] = {}
    means = []
    for _ in range(resamples):
        k = min(bisect.bisect_left(moved_cdf, draw.random()), cases)
        if k not in up_cdfs:
            up_cdfs[k] = _binomial_cdf(k, improved / moved)
        up = min(bisect.bisect_left(up_cdfs[k], draw.random()), k)
        means.append((2 * up - k) / cases)
    means.sort()
    return _percentile(means, 0.025), _percentile(means, 0.975)


def _binomial_cdf(n: int, p: float) -> list[float]:
    """P(X <= k) for k = 0..n, X binomial (n, p)."""
    if p <= 0.0 or p >= 1.0:
        return [0.0] * n + [1.0] if p >= 1.0 else [1.0] * (n + 1)
    log_p, log_q = math.log(p), math.log1p(-p)
    total, cdf = 0.0, []
    for k in range(n + 1):
        total += math.exp(
            math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q
        )
        cdf.append(total)
    return cdf


def bootstrap_mean(counts: dict[float, int], *, resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """The percentile bootstrap 95% interval of the mean of values given as {value: how many cases have it}:
    the 2.5th and 97.5th percentiles of the mean over `resamples` resamples of the cases with replacement."""
    values = [v for v, n in counts.items() if n]
    weights = [counts[v] for v in values]
    size = sum(weights)
    if size == 0:
        raise ValueError("a bootstrap needs at least one case")
    draw = random.Random(seed)
    means = sorted(sum(draw.choices(values, weights=weights, k=size)) / size for _ in range(resamples))
    return _percentile(means, 0.025), _percentile(means, 0.975)


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact two-sided p-value for `b` flips one way and `c` the other (a binomial test at 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _percentile(ordered: list[float], q: float) -> float:
    """The `q` quantile of sorted values, interpolated linearly between the two nearest (numpy's default)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)
