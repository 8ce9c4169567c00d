"""What changed between two runs of a suite: statuses, criteria verdicts, where scenario transcripts part, calibration
and cost (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, computed_field

from kindgi_eval.reports.judged import group_rates, pass_rate_corrected
from kindgi_eval.rules import ACCURACY_GROUP, FAILING, GROUPS, Status, safe
from kindgi_eval.store import CalibrationRow, MetricRow, ReplyRow, RunRow, StatusRow, TurnRow


class StoredRun(BaseModel):
    """Everything of one stored run that a diff compares."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    run: RunRow
    statuses: list[StatusRow]
    calibration: list[CalibrationRow]
    replies: list[ReplyRow]
    metrics: list[MetricRow] = []
    """Its `run_metrics` rows, whose corrected judged rates are compared; none for a run stored before them."""


class StatusChange(BaseModel):
    """A case whose status differs."""

    case_id: str
    a: Status | None
    """Status in run A; None when the case is not in it."""
    b: Status | None
    """Status in run B; None when the case is not in it."""
    worse: bool
    """True when the case got worse (see `is_worse`): what `diff --exit-code` exits 1 for."""


class CriterionChange(BaseModel):
    """A criterion whose verdict differs, with both runs' evidence."""

    case_id: str
    source: str
    criterion: str
    a: str
    """Verdict in run A: pass, fail, or ungraded (also when run A did not judge it at all)."""
    b: str
    evidence_a: str
    evidence_b: str
    turn: int | None = None
    """The scenario turn the criterion grades; None for a case's, and for a scenario's review entry."""

    @computed_field  # in --json too
    @property
    def grading(self) -> bool:
        """Whether only one side is a verdict: what was ungraded got graded (a calibrated judge now grades it), or
        the other way round; a grading change, not a change of verdict (pass to fail, fail to pass)."""
        return "ungraded" in (self.a, self.b)


class TranscriptChange(BaseModel):
    """A scenario whose conversation went otherwise in run B: the first turn where the two transcripts part."""

    case_id: str
    turn: int
    """The first turn that differs (its contact message, or the agent's answer to it), or the first turn one run has
    and the other has not."""
    a: str
    """What run A had at that turn, on one line (`(none)` when it had ended)."""
    b: str
    """What run B had at that turn."""


class GroupSide(BaseModel):
    """One calibration group's agreement in both runs."""

    group: str
    a: float | None
    b: float | None
    calibrated_a: bool | None
    calibrated_b: bool | None


class RateSide(BaseModel):
    """A corrected judged rate in both runs (a group's judged-fail rate, or the pass rate), with its intervals."""

    figure: str
    """`judged_fail_rate_corrected` or `pass_rate_corrected`."""
    group: str | None
    """The calibration group of a judged-fail rate; None for the pass rate."""
    a: float | None
    """The corrected rate in run A; None where A has none (no judge, nothing graded, no correction)."""
    a_low: float | None
    a_high: float | None
    b: float | None
    b_low: float | None
    b_high: float | None

    @computed_field  # in --json too
    @property
    def changed(self) -> bool:
        """Whether the rate changed: only when both runs have it and their 95% intervals do not overlap, since within
        the overlap the judge's measured error and the samples' size can explain the move."""
        if None in (self.a_low, self.a_high, self.b_low, self.b_high):
            return False
        return self.a_high < self.b_low or self.b_high < self.a_low  # type: ignore[operator]


def rate_sides(a: list[MetricRow], b: list[MetricRow]) -> list[RateSide]:
    """Every corrected judged rate either run has, each group's in order, then the pass rate."""
    rates_a = {r.group: r.corrected for r in group_rates(a)}
    rates_b = {r.group: r.corrected for r in group_rates(b)}
    pairs: list[tuple[str, str | None, MetricRow | None, MetricRow | None]] = [
        ("judged_fail_rate_corrected", g, rates_a.get(g), rates_b.get(g)) for g in dict.fromkeys([*rates_a, *rates_b])
    ]
    passes_a, passes_b = pass_rate_corrected(a), pass_rate_corrected(b)
    if passes_a is not None or passes_b is not None:
        pairs.append(("pass_rate_corrected", None, passes_a, passes_b))
    return [
        RateSide(
            figure=name,
            group=group,
            a=ra.value if ra else None,
            a_low=ra.low if ra else None,
            a_high=ra.high if ra else None,
            b=rb.value if rb else None,
            b_low=rb.low if rb else None,
            b_high=rb.high if rb else None,
        )
        for name, group, ra, rb in pairs
    ]


class RunDiff(BaseModel):
    """The whole difference between run A and run B."""

    run_a: str
    run_b: str
    same_suite: bool
    """True when both runs evaluated the same suite content (its hash); else a change may be the suite's own."""
    same_replies: bool
    """True when B judged the very replies A did (or identical ones): any change is the judge's (or, in another
    suite content, the suite's), not the agent's."""
    statuses: list[StatusChange]
    criteria: list[CriterionChange]
    transcripts: list[TranscriptChange] = []
    """The scenarios whose transcripts part, each at its first differing turn."""
    calibration: list[GroupSide]
    cost: dict[str, dict[str, float]]
    judged_rates: list[RateSide] = []
    """The corrected judged rates of both runs; a move counts as a change only where the intervals do not overlap."""


def _reply_key(r: ReplyRow) -> tuple:
    return (r.case_id, tuple(r.messages), r.escalate, r.reason, r.error, tuple(map(_turn_key, r.turns or ())))


def _turn_key(t: TurnRow) -> tuple:
    """What a turn said, both sides: who wrote the contact's message and what it was, and the agent's answer."""
    return (t.contact_by, t.contact_text, tuple(t.messages), t.escalate, t.reason, t.error)


def _turn_text(t: TurnRow | None) -> str:
    if t is None:
        return "(none)"
    answer = t.error or " ".join(t.messages) + (f" (escalated: {t.reason})" if t.escalate else "")
    return f"contact: {t.contact_text} | agent: {answer}"


def parted_at(a: list[TurnRow], b: list[TurnRow]) -> int | None:
    """The first turn at which two transcripts differ, or one has a turn the other lacks; None when they are one."""
    for n in range(max(len(a), len(b))):
        if n >= len(a) or n >= len(b) or _turn_key(a[n]) != _turn_key(b[n]):
            return n + 1
    return None


def transcript_changes(a: list[StatusRow], b: list[StatusRow]) -> list[TranscriptChange]:
    """Each scenario of both runs whose transcripts part, at the turn they part."""
    turns_b = {s.case_id: s.turns for s in b if s.turns is not None}
    changes = []
    for s in a:
        other = turns_b.get(s.case_id)
        if s.turns is None or other is None or (turn := parted_at(s.turns, other)) is None:
            continue
        changes.append(
            TranscriptChange(
                case_id=s.case_id, turn=turn, a=_turn_text(_at(s.turns, turn)), b=_turn_text(_at(other, turn))
            )
        )
    return changes


def _at(turns: list[TurnRow], turn: int) -> TurnRow | None:
    return turns[turn - 1] if turn <= len(turns) else None


def diff_runs(a: StoredRun, b: StoredRun) -> RunDiff:
    """Compare two runs case by case; replies count as the same when they are one stored set or identical."""
    same = a.run.replies_from == b.run.replies_from or sorted(map(_reply_key, a.replies)) == sorted(
        map(_reply_key, b.replies)
    )
    status_a = {s.case_id: s for s in a.statuses}
    status_b = {s.case_id: s for s in b.statuses}
    ids = list(status_a) + [i for i in status_b if i not in status_a]
    pairs = {i: (_status(status_a.get(i)), _status(status_b.get(i))) for i in ids}
    statuses = [
        StatusChange(case_id=i, a=sa, b=sb, worse=is_worse(sa, sb)) for i, (sa, sb) in pairs.items() if sa != sb
    ]
    criteria = []
    for i in ids:
        verdicts_a = {_verdict_key(c): c for c in status_a[i].criteria} if i in status_a else {}
        verdicts_b = {_verdict_key(c): c for c in status_b[i].criteria} if i in status_b else {}
        for key in list(verdicts_a) + [k for k in verdicts_b if k not in verdicts_a]:
            ca, cb = verdicts_a.get(key), verdicts_b.get(key)
            # a criterion one run did not grade at all reads as ungraded: neither is a verdict
            va, vb = (ca.verdict if ca else "ungraded"), (cb.verdict if cb else "ungraded")
            if va != vb:
                criteria.append(
                    CriterionChange(
                        case_id=i,
                        source=key[0],
                        criterion=key[1],
                        a=va,
                        b=vb,
                        evidence_a=ca.evidence if ca else "",
                        evidence_b=cb.evidence if cb else "",
                        turn=key[2],
                    )
                )
    group_a = {c.group: c for c in a.calibration}
    group_b = {c.group: c for c in b.calibration}
    calibration = [
        GroupSide(
            group=g,
            a=group_a[g].agreement if g in group_a else None,
            b=group_b[g].agreement if g in group_b else None,
            calibrated_a=group_a[g].calibrated if g in group_a else None,
            calibrated_b=group_b[g].calibrated if g in group_b else None,
        )
        for g in (*GROUPS, ACCURACY_GROUP)
        if g in group_a or g in group_b
    ]
    cost = {
        "agent_usd": {"a": a.run.agent_usd, "b": b.run.agent_usd},
        "judge_usd": {"a": a.run.judge_usd, "b": b.run.judge_usd},
    }
    return RunDiff(
        run_a=a.run_id,
        run_b=b.run_id,
        same_suite=a.run.suite_hash == b.run.suite_hash,
        same_replies=same,
        statuses=statuses,
        criteria=criteria,
        transcripts=transcript_changes(a.statuses, b.statuses),
        calibration=calibration,
        cost=cost,
        judged_rates=rate_sides(a.metrics, b.metrics),
    )


def _verdict_key(c) -> tuple[str, str, int | None]:
    """A criterion of a case: its source and text, and in a scenario the turn a rubric dimension grades."""
    return (c.source, c.criterion, c.turn if c.source == "rubric" else None)


def _status(row: StatusRow | None) -> Status | None:
    return row.status if row else None


def is_worse(a: Status | None, b: Status | None) -> bool:
    """Whether a case got worse from run A to run B: from passed, judged-pass or reviewed to failed or judged-fail, or
    from judged-pass to reviewed (the evidence that passed it is lost: a judge that stopped counting).

    None is a case absent from that run. A case only in B is never worse, even when it fails: nothing that worked
    broke (its run's own exit status reports it). A case gone from B is not worse either, and a failing case that
    fails another way (failed to judged-fail) was already failing."""
    return a is not None and ((a not in FAILING and b in FAILING) or (a, b) == ("judged-pass", "reviewed"))


def got_worse(d: RunDiff) -> list[StatusChange]:
    """The cases that got worse from A to B; `diff --exit-code` exits 1 when there is one."""
    return [c for c in d.statuses if c.worse]


def matching_run_ids(prefix: str, run_ids: Iterable[str]) -> list[str]:
    """The run ids that `prefix` names, sorted: the one it equals, else every one it begins.

    One match is the run; none is an unknown run; several make the prefix ambiguous. Any length is accepted, as
    a prefix that stops being unique when more runs are stored then fails loudly instead of naming another run.
    The empty prefix names nothing (it would begin every id)."""
    if not prefix:
        return []
    ids = set(run_ids)
    if prefix in ids:
        return [prefix]
    return sorted(i for i in ids if i.startswith(prefix))


class RunPair(NamedTuple):
    """Two runs to compare: A before, B after."""

    a: str
    b: str


def latest_pair(runs: Mapping[str, RunRow]) -> RunPair:
    """The latest run (B) and the one before it (A), by start time, of at least two runs keyed by run id.

    Start times are stored to the second, so a tie goes to the one that finished later, then to the run id, so
    the choice never depends on the order the store listed them."""
    if len(runs) < 2:
        raise ValueError(f"comparing needs two runs, got {len(runs)}")
    ordered = sorted(runs, key=lambda i: (runs[i].started_at, runs[i].finished_at, i))
    return RunPair(ordered[-2], ordered[-1])


def render_diff(d: RunDiff, a: RunRow, b: RunRow) -> str:
    """The diff as text a person reads."""
    judged = a.judge is not None or b.judge is not None  # without a judge in either run, nothing is said of judges
    lines = [
        f"A: {d.run_a} ({a.finished_at}, agent {a.agent}" + (f", judge {a.judge or 'none'})" if judged else ")"),
        f"B: {d.run_b} ({b.finished_at}, agent {b.agent}" + (f", judge {b.judge or 'none'})" if judged else ")"),
    ]
    if not d.same_suite:
        lines.append(
            f"Suite: different content (sha256 {a.suite_hash[:12]} -> {b.suite_hash[:12]}), so changes below may be the suite's"
        )
    worse = len(got_worse(d))
    lines += [
        _replies_line(d, judged),
        "",
        f"Status changes: {len(d.statuses)}" + (f" ({worse} worse)" if worse else ""),
    ]
    lines += [
        f"  {safe(c.case_id)}: {c.a or 'absent'} -> {c.b or 'absent'}{' (worse)' if c.worse else ''}"
        for c in d.statuses
    ]
    if d.transcripts:
        lines.append(f"Transcripts that part: {len(d.transcripts)}")
        for t in d.transcripts:
            lines += [f"  {safe(t.case_id)}: from turn {t.turn}", f"    A: {safe(t.a)}", f"    B: {safe(t.b)}"]
    verdicts = [c for c in d.criteria if not c.grading]
    lines.append(f"Verdict changes: {len(verdicts)}")
    for c in verdicts:
        at = f" (turn {c.turn})" if c.turn is not None else ""
        lines.append(f"  {safe(c.case_id)} [{c.source}] {safe(c.criterion)}{at}: {c.a} -> {c.b}")
        if c.evidence_a or c.evidence_b:
            lines.append(f'    evidence A: "{safe(c.evidence_a)}"  B: "{safe(c.evidence_b)}"')
    lines += _grading_lines([c for c in d.criteria if c.grading])
    if d.calibration:
        lines.append("Calibration agreement (A -> B):")
        for g in d.calibration:
            lines.append(f"  {g.group}: {_figure(g.a, g.calibrated_a)} -> {_figure(g.b, g.calibrated_b)}")
    if d.judged_rates:
        lines.append("Corrected judged rates (A -> B; a change only where the 95% intervals do not overlap):")
        lines += [
            f"  {r.group or 'pass rate'}: {_rate(r.a, r.a_low, r.a_high)} -> {_rate(r.b, r.b_low, r.b_high)}: {_moved(r)}"
            for r in d.judged_rates
        ]
    cost = f"Cost: agent ${d.cost['agent_usd']['a']:.4f} -> ${d.cost['agent_usd']['b']:.4f}"
    if judged:
        cost += f", judge ${d.cost['judge_usd']['a']:.4f} -> ${d.cost['judge_usd']['b']:.4f}"
    lines.append(cost)
    return "\n".join(lines) + "\n"


def _grading_lines(changes: list[CriterionChange]) -> list[str]:
    """The grading changes, apart from the changes of verdict: counted by kind of move, each named but those that
    only graded as passed what was ungraded (the many a newly calibrated judge gives, all in --json)."""
    if not changes:
        return []
    lines = [f"Grading changes: {len(changes)} (graded in one run, ungraded in the other; no verdict changed)"]
    moves: dict[tuple[str, str], list[CriterionChange]] = {}
    for c in changes:
        moves.setdefault((c.a, c.b), []).append(c)
    for (a, b), named in sorted(moves.items(), key=lambda move: (move[0] == ("ungraded", "pass"), move[0])):
        lines.append(f"  {a} -> {b}: {len(named)}")
        if (a, b) != ("ungraded", "pass"):
            lines += [f"    {safe(c.case_id)} [{c.source}] {safe(c.criterion)}" for c in named]
    return lines


def _replies_line(d: RunDiff, judged: bool) -> str:
    if not d.same_replies:
        return "Replies: different, so changes below may be the agent's"
    if not d.same_suite or not judged:
        return "Replies: the same, so no change below is the agent's"
    return "Replies: the same, so every change below is the judge's, not the agent's"


def _rate(value: float | None, low: float | None, high: float | None) -> str:
    if value is None or low is None or high is None:
        return "none"
    return f"{value:.2f} ({low:.2f} to {high:.2f})"


def _moved(r: RateSide) -> str:
    """Whether a corrected rate changed, in words."""
    if r.changed:
        return "changed"
    if r.a is None or r.b is None:
        return "not comparable"
    return "no change" if r.a == r.b else "intervals overlap, no change called"


def _figure(agreement: float | None, calibrated: bool | None) -> str:
    if calibrated is None:
        return "no judge"
    text = "n/a" if agreement is None else f"{agreement:.2f}"
    return f"{text} ({'calibrated' if calibrated else 'not calibrated'})"
