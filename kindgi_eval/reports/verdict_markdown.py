"""The judged-fail and split verdicts of a run, and its failed cases, as Markdown for the Dagster UI to render.

Each verdict and each failed case shows the contact's side first (the last turns before the reply, then the
contact's message), then the reply as the contact saw it (a verdict's quoted evidence in bold); a verdict then lists
all three samples with their vote, reason and evidence, so a reader sees why the judge split without leaving the
page. Long runs list the worst first and point to a query for the rest. Pure: rows in, text out. Replies, history,
messages and the judge's words are untrusted: every character Markdown or HTML would act on is escaped.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from kindgi_eval.reports.reading import NUDGE_NOTE, SPEAKER, shown_history, shown_message
from kindgi_eval.rules import Case, Scenario, clip
from kindgi_eval.store import CriterionRow, SampleRow, StatusRow

SHOWN = 20
"""How many verdicts, and how many failed cases, the report shows; the query finds the rest."""
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~<&])")


def _one_line(text: str) -> str:
    """Runs of whitespace, line breaks included, as one space; none at the ends."""
    return " ".join(text.split())


def _escaped(text: str) -> str:
    """Every Markdown and HTML character of `text` escaped, its spaces kept as they are."""
    return _MARKDOWN.sub(r"\\\1", text)


def escape_md(text: str) -> str:
    """Untrusted text as literal Markdown on one line: every Markdown and HTML character escaped."""
    return _escaped(_one_line(text))


def _highlighted(message: str, evidence: str) -> str:
    """A message on one line with the first occurrence of the quoted evidence in bold; the spaces around the quote
    are kept, since the message is put on one line before it is cut around the quote."""
    message, evidence = _one_line(message), _one_line(evidence)
    at = message.find(evidence) if evidence else -1
    if at < 0:
        return _escaped(message)
    before, quote, after = message[:at], message[at : at + len(evidence)], message[at + len(evidence) :]
    return f"{_escaped(before)}**{_escaped(quote)}**{_escaped(after)}"


def _quoted(paragraphs: list[str]) -> list[str]:
    """Paragraphs as one block quote, a blank quoted line between each, so each stays on a line of its own."""
    lines: list[str] = []
    for n, paragraph in enumerate(paragraphs):
        if n:
            lines.append(">")
        lines.append(f"> {paragraph}")
    return lines


def _contact_side(case: Case | Scenario | None) -> list[str]:
    """The paragraphs above a reply: the last turns before it, then the contact's message (a nudge has none); a
    scenario's opening turns only, its own turns following."""
    if case is None:
        return []
    if isinstance(case, Scenario):
        return [f"_{SPEAKER[role]}:_ {escape_md(text)}" for role, text in shown_history(case)]
    message = shown_message(case)
    said = f"_{NUDGE_NOTE}_" if message is None else escape_md(message)
    return [
        *(f"_{SPEAKER[role]}:_ {escape_md(text)}" for role, text in shown_history(case)),
        f"**contact's message:** {said}",
    ]


def _said(status: StatusRow, evidence: str = "", turn: int | None = None) -> list[str]:
    """The agent's side as the contact saw it: a case's reply, or a scenario's turns, each contact message above the
    agent's messages; the quoted evidence in bold (in a scenario, in the turn it was quoted from)."""
    if status.turns is None:
        return [f"**reply {n}:** {_highlighted(m, evidence)}" for n, m in enumerate(status.messages, 1)]
    out = []
    for t in status.turns:
        quoted = evidence if t.turn == turn else ""
        out.append(f"_contact, turn {t.turn}:_ {escape_md(t.contact_text)}")
        out += [f"**turn {t.turn}, reply {n}:** {_highlighted(m, quoted)}" for n, m in enumerate(t.messages, 1)]
    return out


def _severity(status: StatusRow, criterion: CriterionRow) -> tuple[int, str, str]:
    """Judged-fail verdicts first, then split ones; by case and criterion within each."""
    return (
        0 if status.status == "judged-fail" and criterion.verdict == "fail" else 1,
        status.case_id,
        criterion.criterion,
    )


def verdicts_markdown(
    statuses: Sequence[StatusRow], cases: Sequence[Case | Scenario], samples: Sequence[SampleRow], run_id: str
) -> str:
    """Every judged-fail and split verdict, worst first, then the failed cases (a scenario as its transcript); a
    query for what is cut."""
    case_of = {c.id: c for c in cases}
    by_criterion: dict[tuple[str, str, str, int | None], list[SampleRow]] = defaultdict(list)
    for s in samples:
        if s.subject == "case":
            by_criterion[(s.subject_id, s.source, s.criterion, s.turn)].append(s)
    verdicts = sorted(
        (
            (s, c)
            for s in statuses
            for c in s.criteria
            if c.split or (s.status == "judged-fail" and c.verdict == "fail")
        ),
        key=lambda pair: _severity(*pair),
    )
    lines = [f"## Judged-fail and split verdicts ({len(verdicts)})", ""]
    if not verdicts:
        lines += ["None in this run.", ""]
    for status, criterion in verdicts[:SHOWN]:
        split = ", split 2-1" if criterion.split else ""
        at = f", turn {criterion.turn}" if criterion.turn is not None else ""
        lines += [
            f"### {escape_md(status.case_id)}: {criterion.verdict}{split}{at} ({status.status})",
            "",
            f"**Criterion** ({escape_md(criterion.source)}, {escape_md(criterion.group)}): {escape_md(criterion.criterion)}",
            "",
        ]
        replies = _said(status, criterion.evidence, criterion.turn)
        lines += _quoted([*_contact_side(case_of.get(status.case_id)), *replies])
        lines += ["", "| sample | vote | reason | evidence |", "|---|---|---|---|"]
        graded = (
            criterion.turn if criterion.source == "rubric" else None
        )  # a review entry's turn is where its evidence is
        for s in sorted(
            by_criterion[(status.case_id, criterion.source, criterion.criterion, graded)], key=lambda s: s.sample
        ):
            why = s.reason if s.invalid_reason is None else f"{s.invalid_reason}: {s.reason}"
            lines.append(
                f"| {s.sample} | {s.vote} | {escape_md(clip(why, 300))} | {escape_md(clip(s.evidence, 200))} |"
            )
        lines.append("")
    if len(verdicts) > SHOWN:
        lines += [
            f'{len(verdicts) - SHOWN} more, with: `kindgi-eval sql "SELECT case_id, c.criterion, c.verdict, c.split, c.votes, '
            f"c.reason FROM (SELECT case_id, status, unnest(criteria) AS c FROM statuses WHERE run_id = '{run_id}') "
            "WHERE c.split OR (status = 'judged-fail' AND c.verdict = 'fail')\"`",
            "",
        ]
    failed = [s for s in statuses if s.status == "failed"]
    lines += [f"## Failed cases ({len(failed)})", ""]
    if not failed:
        lines += ["None in this run.", ""]
    for status in failed[:SHOWN]:
        lines += [f"### {escape_md(status.case_id)}", ""]
        lines += [f"- {escape_md(clip(f, 300))}" for f in status.failures]
        replies = _said(status) or ["_no reply_"]
        lines += ["", *_quoted([*_contact_side(case_of.get(status.case_id)), *replies])]
        lines.append("")
    if len(failed) > SHOWN:
        lines += [
            f'{len(failed) - SHOWN} more, with: `kindgi-eval sql "SELECT case_id, failures FROM statuses WHERE '
            f"run_id = '{run_id}' AND status = 'failed'\"`",
            "",
        ]
    return "\n".join(lines)
