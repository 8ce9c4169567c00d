"""The judge stage's order: a group's cases are judged once its own calibration is decided, never before, and without
waiting for the other groups' (docs/design.md#calibration: verdicts count only where the judge first agreed with hand
labels)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from kindgi_eval.rules import CalibrationItem, Completion, Criterion, Usage
from kindgi_eval.steps.judge_samples import Subject, judge_suite, settled_verdict
from kindgi_eval_tests.fake_provider import fenced

CONCESSION = "implicit_concession"
POLITE = "The reply is polite"
GROUP_OF = {CONCESSION: CONCESSION, POLITE: "free_text"}


class Timed:
    """A judge that answers each calibration reply with its hand label (or the opposite, for a group told to
    disagree) and passes every case, after the delay its group is given; it notes when each call starts and ends."""

    def __init__(
        self, labels: dict[str, tuple[str, str]], delay_s: dict[str, float], disagree: frozenset[str] = frozenset()
    ):
        self.name = "timed:judge"
        self.labels = labels
        """A calibration reply's group and hand label."""
        self.delay_s = delay_s
        self.disagree = disagree
        self.calls: list[tuple[str, str, float, float, str]] = []
        """(group, reply, start, end, vote) of each call, the case replies' group read from their text."""

    async def grade(self, messages, *, timeout_s, schema=None) -> Completion:
        reply = fenced({"messages": messages}, "reply")
        group, label = self.labels.get(reply, (reply.split()[1], "pass"))  # a case's reply: "case GROUP n"
        started = time.monotonic()
        await asyncio.sleep(self.delay_s[group])
        vote = {"pass": "fail", "fail": "pass"}[label] if group in self.disagree else label
        self.calls.append((group, reply, started, time.monotonic(), vote))
        evidence = reply[:8] if vote == "fail" else ""
        return Completion(json.dumps({"verdict": vote, "evidence": evidence, "reason": "timed"}), Usage(), 1.0)


def suite(cases_per_group: int = 4) -> tuple[list[CalibrationItem], list[Subject], dict[str, tuple[str, str]]]:
    """A pass and a fail item in each of two groups, and cases under each group's criterion."""
    items, labels = [], {}
    for criterion, group in GROUP_OF.items():
        for label in ("pass", "fail"):
            reply = f"calibration {group} {label}"
            items.append(
                CalibrationItem(id=f"{group}-{label}", text="hi", reply=(reply,), criterion=criterion, label=label)
            )
            labels[reply] = (group, label)
    source = {CONCESSION: "rubric", POLITE: "review"}
    cases = [
        Subject(
            "case",
            f"{group}-{n}",
            Criterion(source[criterion], criterion, group),
            (),
            "hi",
            False,
            (f"case {group} {n}",),
        )
        for criterion, group in GROUP_OF.items()
        for n in range(cases_per_group)
    ]
    return items, cases, labels


def judged(judge: Timed, items, cases, concurrency: int = 64):
    return asyncio.run(
        judge_suite(judge, items, cases, catalogue="", concurrency=concurrency, timeout_s=5, item_group=GROUP_OF.get)
    )


def test_a_group_is_judged_once_its_own_calibration_is_settled_not_after_every_group_016() -> None:
    items, cases, labels = suite()
    # the concession group's calibration answers fast, free text's slowly
    judge = Timed(labels, {CONCESSION: 0.01, "free_text": 0.3})
    rows = judged(judge, items, cases)
    calibration = [c for c in judge.calls if c[1].startswith("calibration")]
    case_calls = [c for c in judge.calls if c[1].startswith("case")]
    free_text_calibrated = max(end for group, _, _, end, _ in calibration if group == "free_text")
    first_concession_case = min(start for group, _, start, _, _ in case_calls if group == CONCESSION)
    assert first_concession_case < free_text_calibrated  # it did not wait for the other group
    for group, _, start, _, _ in case_calls:
        # never before its own: by then each of the group's items had two agreeing samples back, which settle it
        for item in (i for i in items if GROUP_OF[i.criterion] == group):
            back = [vote for g, reply, _, end, vote in calibration if reply == item.reply[0] and end <= start]
            assert back.count(item.label) >= 2, (group, item.id, back)
    assert len(rows) == 3 * (len(items) + len(cases))  # every calibration sample drawn, the third of each included


def test_a_group_the_judge_did_not_earn_has_no_case_judged_and_the_rows_keep_their_order_016() -> None:
    items, cases, labels = suite(cases_per_group=2)
    judge = Timed(labels, {CONCESSION: 0.02, "free_text": 0.01}, disagree=frozenset({"free_text"}))
    rows = judged(judge, items, cases, concurrency=3)
    assert {c[0] for c in judge.calls if c[1].startswith("case")} == {CONCESSION}
    # the calibration items' samples first, each item's three in order, then the earned cases', in the subjects' order
    expected = [(i.id, n) for i in items for n in (1, 2, 3)] + [
        (c.id, n) for c in cases if c.criterion.group == CONCESSION for n in (1, 2, 3)
    ]
    assert [(r.subject_id, r.sample) for r in rows] == expected


@pytest.mark.parametrize(
    ("votes", "verdict"),
    [
        ([], None),
        (["pass"], None),
        (["pass", "pass"], "pass"),  # two that agree decide: the third cannot outvote them
        (["fail", "fail"], "fail"),
        (["pass", "fail"], None),  # the third decides
        (["pass", "invalid"], None),  # a third pass decides, anything else leaves it ungraded
        (["invalid", "invalid"], "ungraded"),  # no two valid samples can agree any more
        (["pass", "fail", "invalid"], "ungraded"),
        (["fail", "pass", "fail"], "fail"),
    ],
)
def test_settled_verdict(votes: list[str], verdict: str | None) -> None:
    assert settled_verdict(votes) == verdict
