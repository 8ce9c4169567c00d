"""A night's findings for one suite: its latest run against the run before it, and what got worse (pure).

The findings are named as the outside contract names them: `new_failures`, `fixed`, `pass_rate_drop`,
`judge_not_counted`, `run_failed` and `missing_run`. All but `fixed` are things that got worse, which fail
`kindgi-eval night` (exit 1) and may be sent to a tenant's webhooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from kindgi_eval.rules.calibration import GroupAgreement, judge_was_down
from kindgi_eval.rules.intervals import paired_change
from kindgi_eval.rules.statuses import FAILING, Status

FindingKind = Literal["run_failed", "missing_run", "pass_rate_drop", "new_failures", "judge_not_counted", "fixed"]
FINDINGS: tuple[FindingKind, ...] = (
    "run_failed",
    "missing_run",
    "pass_rate_drop",
    "new_failures",
    "judge_not_counted",
    "fixed",
)
"""Every kind of finding, the worst first: the order a suite's findings and a night's tenants are listed in."""
WORSE: tuple[FindingKind, ...] = ("new_failures", "pass_rate_drop", "judge_not_counted", "run_failed", "missing_run")
"""The findings that say something got worse (all but `fixed`): what `alert_on` may name, and what exits 1."""
PASSING: frozenset[Status] = frozenset({"passed", "judged-pass"})
"""The statuses a pass rate counts as passing; `reviewed` is not a pass (nothing verified it)."""
RunState = Literal["succeeded", "failed", "stopped"]
"""How a run ended: it stored its statuses, or it failed or was stopped before it could."""


class RunFacts(NamedTuple):
    """What a night's findings read of one stored run."""

    run_id: str
    """The run."""
    started_at: str
    """When it started (UTC, ISO 8601): the latest run of a suite is the one that started last."""
    state: RunState
    """How it ended."""
    error: str | None = None
    """Why it failed or stopped; None for a run that succeeded."""
    judge: str | None = None
    """Its judge model; None for a run without one."""
    statuses: Mapping[str, Status] = {}
    """Each case's status, by case id (empty for a run that did not succeed)."""
    groups: Sequence[GroupAgreement] = ()
    """Its calibration groups."""


class Finding(BaseModel):
    """One thing a night says about one suite."""

    model_config = ConfigDict(frozen=True)

    kind: FindingKind
    """What was found."""
    suite: str
    """The suite partition it is about."""
    case_ids: list[str] = []
    """The cases it names: newly failing, fixed, or (pass rate) the ones that stopped passing."""
    groups: list[str] = []
    """The calibration groups whose verdicts did not count (`judge_not_counted`)."""
    detail: str
    """What was found, in a sentence for the person who owns the suite."""
    command: str
    """The command that shows more."""
    change: float | None = None
    """The pass rate's change (`pass_rate_drop`), now minus before."""
    low: float | None = None
    """The lower bound of the change's paired bootstrap 95% interval."""
    high: float | None = None
    """Its upper bound."""


def suite_findings(suite: str, latest: RunFacts | None, before: RunFacts | None, *, night: str = "") -> list[Finding]:
    """What a suite's `latest` run of the night says against `before`, the last run before it that succeeded,
    worst first. No latest run is `missing_run` (`night` says which night); a latest run that did not succeed is
    `run_failed` and nothing else; without a run before it, only the latest run's own judge is looked at."""
    if latest is None:
        when = f" on {night}" if night else ""
        return [
            Finding(
                kind="missing_run",
                suite=suite,
                detail=f"no run of {suite}{when}.",
                command=f"kindgi-eval runs --suite {suite}",
            )
        ]
    if latest.state != "succeeded":
        said = f": {' '.join(latest.error.split())}" if latest.error else ""  # one line, however many its error has
        return [
            Finding(
                kind="run_failed",
                suite=suite,
                detail=f"run {latest.run_id} {latest.state}{said}",
                command=f"kindgi-eval sql \"SELECT state, error FROM runs WHERE run_id = '{latest.run_id}'\"",
            )
        ]
    found = []
    if before is not None:
        found += _compared(suite, latest, before)
    found += _judge(suite, latest)
    return sorted(found, key=lambda f: FINDINGS.index(f.kind))


def _compared(suite: str, latest: RunFacts, before: RunFacts) -> list[Finding]:
    shared = [c for c in latest.statuses if c in before.statuses]
    newly = [c for c in shared if latest.statuses[c] in FAILING and before.statuses[c] not in FAILING]
    fixed = [c for c in shared if before.statuses[c] in FAILING and latest.statuses[c] not in FAILING]
    diff = f"kindgi-eval diff {before.run_id} {latest.run_id}"
    found = []
    if newly:
        found.append(
            Finding(
                kind="new_failures",
                suite=suite,
                case_ids=newly,
                command=diff,
                detail=f"{len(newly)} case{'s' if len(newly) > 1 else ''} newly failing: "
                + ", ".join(f"{c} ({before.statuses[c]} -> {latest.statuses[c]})" for c in newly),
            )
        )
    if fixed:
        found.append(
            Finding(
                kind="fixed",
                suite=suite,
                case_ids=fixed,
                command=diff,
                detail=f"{len(fixed)} case{'s' if len(fixed) > 1 else ''} fixed: {', '.join(fixed)}",
            )
        )
    drop = pass_rate_drop(before.statuses, latest.statuses, shared)
    if drop is not None:
        found.append(drop.model_copy(update={"suite": suite, "command": diff}))
    return found


def pass_rate_drop(before: Mapping[str, Status], latest: Mapping[str, Status], shared: Sequence[str]) -> Finding | None:
    """A `pass_rate_drop` over the cases both runs evaluated when the pass rate fell beyond chance: the paired
    bootstrap 95% interval of the change lies wholly below zero. None when it did not (or no case is shared)."""
    if not shared:
        return None
    up = [c for c in shared if latest[c] in PASSING and before[c] not in PASSING]
    down = [c for c in shared if before[c] in PASSING and latest[c] not in PASSING]
    if len(down) <= len(up):  # the rate did not fall: the interval's upper end is at or above the estimate, not below 0
        return None
    change = paired_change(len(up), len(down), len(shared)).change
    if change.high >= 0:
        return None
    rate_before = sum(before[c] in PASSING for c in shared) / len(shared)
    rate_now = sum(latest[c] in PASSING for c in shared) / len(shared)
    detail = (
        f"pass rate {rate_before:.0%} -> {rate_now:.0%} over {len(shared)} cases "
        f"(change {change.estimate:+.1%}, 95% interval {change.low:+.1%} to {change.high:+.1%}); stopped passing: {', '.join(down)}"
    )
    return Finding(
        kind="pass_rate_drop",
        suite="",
        case_ids=down,
        detail=detail,
        command="",
        change=change.estimate,
        low=change.low,
        high=change.high,
    )


def _judge(suite: str, latest: RunFacts) -> list[Finding]:
    """`judge_not_counted` when the run had a judge and a calibration group with items did not let it count."""
    if latest.judge is None:
        return []
    refused = [g for g in latest.groups if g.items and not g.calibrated]
    if not refused:
        return []
    if judge_was_down(latest.groups):
        causes = sorted({c for g in latest.groups for c in g.invalid_causes})
        detail = f"the judge {latest.judge} gave no valid answer ({', '.join(causes) or 'every sample invalid'}), so it counted on nothing"
    else:
        detail = "the judge's verdicts did not count in " + "; ".join(f"{g.group} ({g.note})" for g in refused)
    return [
        Finding(
            kind="judge_not_counted",
            suite=suite,
            groups=[g.group for g in refused],
            detail=detail,
            command=f"kindgi-eval report {latest.run_id} --html {latest.run_id[:8]}.html",
        )
    ]


def is_worse(found: Sequence[Finding]) -> bool:
    """Whether any finding says something got worse (`WORSE`): `kindgi-eval night` exits 1."""
    return any(f.kind in WORSE for f in found)


def worst_first(blocks: Mapping[str, Sequence[Finding]]) -> list[str]:
    """The tenants (keys of `blocks`) in the order a night lists them: the one whose worst finding is the worst
    first, then the one with more findings that got worse, then by name."""

    def rank(tenant: str) -> tuple:
        found = blocks[tenant]
        worst = min((FINDINGS.index(f.kind) for f in found), default=len(FINDINGS))
        return (
            worst,
            -sum(f.kind in WORSE for f in found),
            -sum(len(f.case_ids) for f in found if f.kind in WORSE),
            tenant,
        )

    return sorted(blocks, key=rank)


def alerted(found: Sequence[Finding], alert_on: Sequence[str]) -> list[Finding]:
    """The findings a tenant's webhooks are sent: those that got worse, of the kinds `alert_on` names."""
    return [f for f in found if f.kind in WORSE and f.kind in alert_on]
