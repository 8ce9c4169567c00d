"""A stored run as JUnit XML, where CI systems look for per-test results: one test case per case.

`passed` and `judged-pass` are passing test cases; the statuses that fail a run (`failed`, `judged-fail`) carry a
`failure` whose text is every reason; `reviewed` is `skipped`, with what it waits for. The run's identity and every judged criterion's votes,
evidence and reason are the test suite's properties (the Jenkins/Surefire schema has them per suite only), and each
case's reply is its `system-out`. Model output and contact text are untrusted: characters XML cannot hold are
replaced, and the rest is escaped by the serializer. Pure: returns bytes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import datetime

from kindgi_eval.rules import FAILING
from kindgi_eval.store import CriterionRow, RunRow, StatusRow

WAITING = "reviewed"
"""The status a CI system shows as skipped: nothing failed, and a verdict is still owed."""
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot hold (controls, lone surrogates, U+FFFE/U+FFFF)."""


def junit_xml(run_id: str, key: str, run: RunRow, statuses: Sequence[StatusRow]) -> bytes:
    """The run's JUnit XML document, UTF-8, with its declaration."""
    failures = sum(1 for s in statuses if s.status in FAILING)
    skipped = sum(1 for s in statuses if s.status == WAITING)
    took = f"{_seconds(run.started_at, run.finished_at):.3f}"
    counts = {"tests": str(len(statuses)), "failures": str(failures), "errors": "0"}
    suites = ET.Element("testsuites", name="kindgi-eval", time=took, **counts)
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=_text(key),
        skipped=str(skipped),
        time=took,
        timestamp=run.started_at,
        id=run_id,
        **counts,
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in _run_properties(run_id, run) + _verdicts(statuses):
        ET.SubElement(properties, "property", name=_text(name), value=_text(value))
    for status in statuses:
        case = ET.SubElement(
            suite, "testcase", name=_text(status.case_id), classname=_text(key), time=f"{status.latency_ms / 1000:.3f}"
        )
        if status.status in FAILING:
            reasons = _reasons(status)
            failure = ET.SubElement(case, "failure", type=status.status, message=_text(reasons[0]))
            failure.text = _text("\n".join(reasons))
        elif status.status == WAITING:
            waiting = _waiting(status)
            skip = ET.SubElement(case, "skipped", type=WAITING, message=_text(waiting[0]))
            skip.text = _text("\n".join(waiting))
        if status.messages:
            ET.SubElement(case, "system-out").text = _text("\n".join(status.messages))
    ET.indent(suites)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n"


def _run_properties(run_id: str, run: RunRow) -> list[tuple[str, str]]:
    """What identifies the run: its id, tenant, kind, agent, judge and the suite version evaluated."""
    named = [
        ("run_id", run_id),
        ("tenant", run.tenant),
        ("suite_kind", run.suite_kind),
        ("agent", run.agent),
        ("judge", run.judge or "none"),
        ("suite_hash", run.suite_hash),
    ]
    named += [
        (name, value) for name, value in (("suite_id", run.suite_id), ("suite_version", run.suite_version)) if value
    ]
    return named


def _verdicts(statuses: Sequence[StatusRow]) -> list[tuple[str, str]]:
    """Every judged criterion of every case, `<case>.criterion.<n>`: its verdict, votes, evidence and reason."""
    return [
        (f"{status.case_id}.criterion.{number}", _verdict_line(criterion))
        for status in statuses
        for number, criterion in enumerate(status.criteria, start=1)
        if criterion.votes
    ]


def _verdict_line(criterion: CriterionRow) -> str:
    split = ", split" if criterion.split else ""
    evidence = f"; evidence: {criterion.evidence}" if criterion.evidence else ""
    reason = f"; reason: {criterion.reason}" if criterion.reason else ""
    return f"{criterion.criterion}: {criterion.verdict} (votes {', '.join(criterion.votes)}{split}){evidence}{reason}"


def _reasons(status: StatusRow) -> list[str]:
    """Why a failing case failed: its failed assertions, then every criterion the judge failed it on."""
    judged = [f"judged fail: {_verdict_line(c)}" for c in status.criteria if c.verdict == "fail"]
    return [*status.failures, *judged] or [status.status]


def _waiting(status: StatusRow) -> list[str]:
    """What a reviewed case waits for: the criteria no calibrated judge graded."""
    ungraded = [f"ungraded: {c.criterion}" for c in status.criteria if c.verdict == "ungraded"]
    return ["every assertion held, but the case needs a verdict no calibrated judge gave", *ungraded]


def _seconds(started_at: str, finished_at: str) -> float:
    try:
        return max(0.0, (datetime.fromisoformat(finished_at) - datetime.fromisoformat(started_at)).total_seconds())
    except ValueError:
        return 0.0


def _text(value: str) -> str:
    """`value` as XML can hold it: each character it cannot replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", value)
