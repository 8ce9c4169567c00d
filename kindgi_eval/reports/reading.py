"""What every view of a stored run shows alike (the Dagster UI's reports, tags and plots, and the HTML report): the
contact's side of a case above its reply, the run's result, and its pass rate. Pure: rows in, plain values out; each
view escapes the text for its own format.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from kindgi_eval.rules import FAILING, Case, Role, Scenario, clip
from kindgi_eval.store import RunRow

HISTORY_TURNS = 3
"""How many of the last turns before the reply are shown."""
TURN_CHARS = 300
"""Where an earlier turn is clipped."""
MESSAGE_CHARS = 600
"""Where the contact's message is clipped."""
NUDGE_NOTE = "(follow-up: no contact message)"
"""What stands for the contact's message on a nudge, where nobody wrote one."""

SPEAKER: dict[Role, str] = {"user": "contact", "agent": "agent"}
"""Who wrote a turn, in a reader's words: the protocol's `user` is the contact."""

Result = Literal["failing", "needs-review", "passed"]


def shown_history(case: Case | Scenario) -> list[tuple[Role, str]]:
    """The last turns before the case's reply, oldest first, each on one line and clipped: (role, text)."""
    return [(turn.role, clip(turn.text, TURN_CHARS)) for turn in case.history[-HISTORY_TURNS:]]


def shown_message(case: Case) -> str | None:
    """The contact's message the reply answers, on one line and clipped; None on a nudge, which has none."""
    return None if case.nudge else clip(case.text, MESSAGE_CHARS)


TURN_PREFIX = re.compile(r"turn (\d+): ")


def turn_failures(failures: Iterable[str]) -> dict[int, list[str]]:
    """A scenario's failures by the turn each names (`turn 4: ...`); one that names no single turn (`turns 1-6: ...`)
    is left out."""
    by_turn: dict[int, list[str]] = {}
    for failure in failures:
        if (found := TURN_PREFIX.match(failure)) is not None:
            by_turn.setdefault(int(found.group(1)), []).append(failure)
    return by_turn


def run_result(statuses: Iterable[str]) -> Result:
    """`failing` when a case failed or judged-fail; else `needs-review` when a case is `reviewed` (no check or
    calibrated judge proved it green, so a person must read it); else `passed`."""
    seen = set(statuses)
    if seen & FAILING:
        return "failing"
    return "needs-review" if "reviewed" in seen else "passed"


def pass_rate(run: RunRow) -> float:
    """(passed + judged-pass) / all cases. Failed, judged-fail and reviewed cases count among all cases and never as
    passes, so a judge that finds failures can only lower it."""
    return (run.passed + run.judged_pass) / run.cases if run.cases else 0.0
