"""Where two runs' transcripts of one scenario part: the first turn either side said otherwise, or that one lacks."""

from __future__ import annotations

import pytest

from kindgi_eval.reports.diff import parted_at
from kindgi_eval.store import TurnRow


def turn(n: int, contact: str, reply: str, escalate: bool = False) -> TurnRow:
    return TurnRow(
        turn=n,
        contact_by="script",
        contact_text=contact,
        messages=[reply],
        escalate=escalate,
        reason=None,
        latency_ms=float(n),
        prompt_tokens=0,
        completion_tokens=0,
        cost_usd=0.0,
        cost_known=True,
        error=None,
    )


A = [turn(1, "hi", "hello"), turn(2, "price?", "$450"), turn(3, "too much", "it stays $450")]


@pytest.mark.parametrize(
    ("b", "parted"),
    [
        (A, None),  # the same transcript
        (
            [
                turn(1, "hi", "hello"),
                turn(
                    2,
                    "price?",
                    "$450",
                ),
                turn(3, "too much", "ok, $400"),
            ],
            3,
        ),  # the agent answered otherwise
        (
            [turn(1, "hi", "hello"), turn(2, "how much?", "$450"), turn(3, "too much", "it stays $450")],
            2,
        ),  # the contact said otherwise
        (A[:2], 3),  # B ended a turn earlier
        ([*A, turn(4, "ok", "great")], 4),  # B went on a turn longer
        ([turn(1, "hi", "hello", escalate=True)], 1),  # B escalated at once
        (
            [t.model_copy(update={"latency_ms": 99.0}) for t in A],
            None,
        ),  # how long a turn took is no part of what was said
    ],
)
def test_transcripts_part_at_the_first_turn_that_differs(b: list[TurnRow], parted: int | None) -> None:
    assert parted_at(A, b) == parted
