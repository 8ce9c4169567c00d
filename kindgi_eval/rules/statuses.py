"""The one status each case ends in, with its precedence (docs/design.md#precedence): failed, judged-fail, reviewed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from kindgi_eval.rules.criteria import Source
from kindgi_eval.rules.verdicts import FinalVerdict

Status = Literal["passed", "failed", "judged-fail", "judged-pass", "reviewed"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "judged-fail", "judged-pass", "reviewed")
"""Every status, in the order the summary counts them."""
FAILING: frozenset[Status] = frozenset({"failed", "judged-fail"})
"""The statuses that fail the run (exit status 1)."""


def case_status(*, assertions_held: bool, has_review: bool, verdicts: Sequence[tuple[Source, FinalVerdict]]) -> Status:
    """A case's status from its assertions and its criteria's final verdicts (after calibration gating).

    An asserted failure wins outright; then any failed criterion, rubric or review, is judged-fail (a known
    failure outranks a missing verdict). A review case is judged-pass only when it has review verdicts and
    every one passed, else reviewed, which is also where it lands without a judge (all entries ungraded).
    A case without review stays passed: the rubric may turn it red, never into judged-pass, and an ungraded
    rubric criterion leaves every case where the rest put it.
    """
    if not assertions_held:
        return "failed"
    if any(verdict == "fail" for _, verdict in verdicts):
        return "judged-fail"
    if not has_review:
        return "passed"
    review = [verdict for source, verdict in verdicts if source == "review"]
    return "judged-pass" if review and all(verdict == "pass" for verdict in review) else "reviewed"


def run_failed(statuses: Iterable[Status], kind_failed: bool) -> bool:
    """Whether a run fails (exit status 1): a case ended failed or judged-fail, or the suite's kind failed it by its
    own rule (`kind_failed`: a regression suite's case that moved down from its baseline run)."""
    return kind_failed or any(status in FAILING for status in statuses)
