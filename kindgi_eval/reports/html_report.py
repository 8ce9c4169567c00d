"""One run as a self-contained HTML page: its result, counts, its kind's own figure and the items behind it, the
suite's pass rate over its recent runs as an inline SVG chart, calibration per group, and a case grid filterable to
failures: each case's history and the contact's message, its reply, assertions and criteria with every judge sample.
Nothing on the page reaches the network. Pure: rows in, text out.

Every value shown comes from stored rows, and model output and contact text are untrusted: all of it is
escaped, and the page carries a Content-Security-Policy that allows no fetch, no image and no script but
its own inline one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from html import escape
from typing import NamedTuple

from pydantic import BaseModel

from kindgi_eval.kinds import KindResult, KindRows, kind_named
from kindgi_eval.reports.judged import (
    figure,
    group_rates,
    interval,
    judge_error_text,
    labels_advice,
    pass_rate_corrected,
    pass_rate_line,
)
from kindgi_eval.reports.reading import (
    NUDGE_NOTE,
    SPEAKER,
    pass_rate,
    run_result,
    shown_history,
    shown_message,
    turn_failures,
)
from kindgi_eval.reports.run_report import kind_lines
from kindgi_eval.rules import FAILING, STATUSES, Case, Scenario
from kindgi_eval.store import CalibrationRow, MetricRow, OutcomeRow, RunRow, SampleRow, StatusRow

CHART_WIDTH, CHART_HEIGHT = 640, 220
"""The pass-rate chart's size in CSS pixels."""
CHART_LEFT, CHART_RIGHT, CHART_TOP, CHART_BOTTOM = 48, 16, 32, 40
"""Its margins: room for the values on the left, for what the rate is of above, for the runs' dates below."""
INNER_WIDTH, INNER_HEIGHT = CHART_WIDTH - CHART_LEFT - CHART_RIGHT, CHART_HEIGHT - CHART_TOP - CHART_BOTTOM
"""The plot inside the margins."""
RATE_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The pass rates marked on the value axis."""
DATE_LABELS = 5
"""At most this many runs have their start written beneath the chart: the first, the last, and evenly between."""
RATE_OF = "pass rate = (passed + judged-pass) / all cases"
"""What the chart says its rate is a rate of."""


class RunPage(NamedTuple):
    """Everything of one stored run that its page shows."""

    run_id: str
    result: KindResult
    """The run's row, and its kind's figures."""
    statuses: Sequence[StatusRow]
    outcomes: Sequence[OutcomeRow]
    samples: Sequence[SampleRow]
    calibration: Sequence[CalibrationRow]
    history: Sequence[tuple[str, RunRow]]
    """The suite's recent runs, oldest first, this one included: (run id, its summary)."""
    cases: Sequence[Case | Scenario] = ()
    """The suite's cases and scenarios, for the contact's side of each conversation."""
    own: Sequence[BaseModel] = ()
    """The rows of the run's kind's own stage (an accuracy suite's grades, a regression suite's moves, ...); empty for
    a kind without one."""
    metrics: Sequence[MetricRow] = ()
    """The run's `run_metrics` rows, whose judged rates the page shows."""

    @property
    def run(self) -> RunRow:
        """The run's row."""
        return self.result.run


def render_html(page: RunPage, suite: str) -> str:
    """The whole page, one string of HTML5."""
    run = page.run
    title = f"kindgi-eval run {page.run_id} of {suite}"
    counts = "".join(
        f'<li class="count {status}"><b>{getattr(run, status.replace("-", "_"))}</b> {status}</li>'
        for status in STATUSES
    )
    result = run_result(s.status for s in page.statuses)
    body = [
        f"<h1>{escape(suite)}</h1>",
        f'<p id="result" class="result {result}">Result: <b>{result}</b> (the run\'s <code>kindgi/result</code> tag in '
        "the Dagster UI)</p>",
        f'<p class="lineage">run <code>{escape(page.run_id)}</code> · started {escape(run.started_at)} · agent '
        f"<code>{escape(run.agent)}</code> · judge <code>{escape(run.judge or 'none')}</code> · "
        f"agent ${run.agent_usd:.4f}, judge ${run.judge_usd:.4f}</p>",
        f'<ul class="counts">{counts}<li class="count ungraded"><b>{run.ungraded}</b> criteria ungraded</li></ul>',
        _kind_section(page),
        "<h2>Pass rate, recent runs</h2>",
        _chart(page.history, page.run_id),
        "<h2>Calibration</h2>",
        _calibration_table(page.calibration),
        _judged_rates(page),
        "<h2>Cases</h2>",
        '<p class="filters"><label><input type="checkbox" id="failures-only"> failures only '
        "(failed, judged-fail)</label></p>",
        _case_grid(page),
    ]
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{escape(title)}</title>
<style>{_STYLE}</style>
</head>
<body>
{"".join(body)}
<script>{_SCRIPT}</script>
</body>
</html>
"""


def _kind_section(page: RunPage) -> str:
    """What the suite's kind reports of its own, as the printed run report words it, and the items behind it; nothing
    for a conversation suite."""
    lines = kind_lines(page.result)
    if not lines:
        return ""
    said = "".join(f"<p>{_text(line)}</p>" for line in lines)
    return f'<h2>Result of the {escape(page.run.suite_kind)} suite</h2><section id="kind">{said}{_kind_items(page)}</section>'


def _kind_items(page: RunPage) -> str:
    """The items behind the kind's figure, as its entry of the table of kinds lists them; nothing if it lists none."""
    rows = KindRows(suite=(), replies=(), own=page.own)
    items = kind_named(page.run.suite_kind).report.items(rows)
    return "" if items is None else _items_table(items.caption, items.headers, items.rows)


def _items_table(caption: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A captioned table of stored text, every cell escaped; a sentence when there are no rows."""
    if not rows:
        return f"<p>{escape(caption)}: none.</p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_text(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="kind-items"><caption>{escape(caption)} ({len(rows)})</caption><tr>{head}</tr>{body}</table>'


def _contact(case: Case | Scenario | None) -> str:
    """The contact's side above a reply: the last turns before it, then the contact's message (none on a nudge); a
    scenario's opening turns, its own turns following."""
    if case is None:
        return ""
    turns = "".join(
        f'<li class="turn {role}"><b>{SPEAKER[role]}:</b> {escape(text)}</li>' for role, text in shown_history(case)
    )
    if isinstance(case, Scenario):
        return f'<div class="contact"><ol class="history">{turns}</ol></div>' if turns else ""
    message = shown_message(case)
    said = f"<i>{escape(NUDGE_NOTE)}</i>" if message is None else escape(message)
    history = f'<ol class="history">{turns}</ol>' if turns else ""
    return f'<div class="contact">{history}<p class="message"><b>contact\'s message:</b> {said}</p></div>'


def _case_grid(page: RunPage) -> str:
    case_of = {c.id: c for c in page.cases}
    outcomes: dict[str, list[OutcomeRow]] = defaultdict(list)
    for o in page.outcomes:
        outcomes[o.case_id].append(o)
    samples: dict[tuple[str, str, str, int | None], list[SampleRow]] = defaultdict(list)
    for s in page.samples:
        if s.subject == "case":
            samples[(s.subject_id, s.source, s.criterion, s.turn)].append(s)
    cases = []
    for status in page.statuses:
        failing = "true" if status.status in FAILING else "false"
        messages = "".join(f"<li>{_text(m)}</li>" for m in status.messages) or "<li><i>no reply</i></li>"
        asserted = "".join(
            f'<li class="{"held" if o.held else "broke"}">{"✓" if o.held else "✗"} {escape(o.assertion)}'
            f"{'' if o.held else ': ' + _text(o.detail)}</li>"
            for o in outcomes[status.case_id]
        )
        error = f'<p class="error">agent error: {_text(status.error)}</p>' if status.error else ""
        criteria = "".join(
            _criterion(c, samples[(status.case_id, c.source, c.criterion, c.turn if c.source == "rubric" else None)])
            for c in status.criteria
            if status.turns is None or c.source == "review"
        )
        said = (
            f'<p class="label">reply:</p><ol class="reply">{messages}</ol>'
            if status.turns is None
            else _transcript(status, outcomes[status.case_id], samples)
        )
        cases.append(
            f'<section class="case {status.status}" data-status="{status.status}" data-failing="{failing}">'
            f'<h3><span class="badge">{status.status}</span> {escape(status.case_id)}</h3>'
            f"{_contact(case_of.get(status.case_id))}{said}{error}"
            f'<ul class="assertions">{asserted}</ul>{criteria}</section>'
        )
    return f'<div id="cases">{"".join(cases)}</div>'


def _transcript(status: StatusRow, outcomes: Sequence[OutcomeRow], samples: Mapping[tuple, Sequence[SampleRow]]) -> str:
    """A scenario's turns: each contact message and the agent's reply, that turn's broken assertions and its rubric
    criteria with every sample beneath it."""
    broke = turn_failures(o.detail for o in outcomes if not o.held)
    turns = []
    for t in status.turns or ():
        by = "" if t.contact_by == "script" else f" ({escape(t.contact_by)})"
        reply = "".join(f"<li>{_text(m)}</li>" for m in t.messages) or "<li><i>no reply</i></li>"
        escalated = f'<p class="escalated">escalated: {_text(t.reason or "no reason given")}</p>' if t.escalate else ""
        failed = "".join(f'<li class="broke">✗ {_text(f)}</li>' for f in broke.get(t.turn, ()))
        failed = f'<ul class="assertions">{failed}</ul>' if failed else ""
        criteria = "".join(
            _criterion(c, samples[(status.case_id, c.source, c.criterion, t.turn)])
            for c in status.criteria
            if c.source == "rubric" and c.turn == t.turn
        )
        turns.append(
            f'<li class="scenario-turn" data-turn="{t.turn}"><p class="message"><b>turn {t.turn}, contact{by}:</b> '
            f'{_text(t.contact_text)}</p><ol class="reply">{reply}</ol>{escalated}'
            f"{failed}{criteria}</li>"
        )
    return f'<ol class="transcript">{"".join(turns)}</ol>'


def _criterion(c, samples: Sequence[SampleRow]) -> str:
    rows = "".join(
        f'<tr><td>{s.sample}</td><td class="vote {s.vote}">{s.vote}</td><td>{_text(s.evidence)}</td>'
        f"<td>{_text(s.reason)}</td><td>{_text(s.invalid_reason or '')}</td></tr>"
        for s in sorted(samples, key=lambda s: s.sample)
    )
    table = (
        f'<table class="samples"><tr><th>sample</th><th>vote</th><th>evidence</th><th>reason</th><th>invalid</th></tr>'
        f"{rows}</table>"
        if rows
        else ""
    )
    split = " (split)" if c.split else ""
    return (
        f'<div class="criterion {c.verdict}"><p><b>{escape(c.source)}</b> [{escape(c.group)}] '
        f"{_text(c.criterion)}: <b>{c.verdict}</b>{split}</p>{table}</div>"
    )


def _calibration_table(rows: Sequence[CalibrationRow]) -> str:
    if not rows:
        return "<p>No judge in this run.</p>"
    body = "".join(
        f"<tr><td>{escape(r.group)}</td><td>{'' if r.agreement is None else f'{r.agreement:.2f} (lower bound {r.agreement_low:.2f})'}</td>"
        f"<td>{'' if r.kappa is None else f'{r.kappa:.2f}'}</td><td>{r.items} ({r.pass_labels} pass, {r.fail_labels} fail)</td>"
        f"<td>{figure(r.sensitivity)} ({r.caught} of {r.fails_graded})</td><td>{figure(r.specificity)} ({r.cleared} of {r.passes_graded})</td>"
        f"<td>{'yes' if r.calibrated else 'no'}</td><td>{_text(r.note)}</td></tr>"
        for r in rows
    )
    return (
        '<table class="calibration"><tr><th>group</th><th>agreement</th><th>kappa</th><th>items</th>'
        f"<th>sensitivity</th><th>specificity</th><th>calibrated</th><th>note</th></tr>{body}</table>"
    )


def _judged_rates(page: RunPage) -> str:
    """Each group's judged-fail rate, observed and corrected for the judge's measured error with its interval, how many
    more labels would halve that interval, and the corrected pass rate; nothing for a run without a judge."""
    rates = group_rates(page.metrics)
    passes = pass_rate_corrected(page.metrics)
    if not rates and passes is None:
        return ""
    calibration = {c.group: c for c in page.calibration}
    body = "".join(
        f'<tr data-group="{escape(r.group)}"><td>{escape(r.group)}</td><td>{r.observed.count} of {r.observed.out_of}</td>'
        f"<td>{figure(r.observed.value)}</td><td>{escape(interval(r.corrected))}</td>"
        f"<td>{escape(judge_error_text(calibration[r.group]) if r.group in calibration else '')}</td>"
        f"<td>{escape((labels_advice(calibration[r.group], page.metrics) if r.group in calibration else None) or '')}</td></tr>"
        for r in rates
    )
    table = (
        (
            '<table class="judged-rates"><tr><th>group</th><th>judged fail</th><th>observed</th><th>corrected</th>'
            f"<th>judge's error</th><th>to halve the interval</th></tr>{body}</table>"
        )
        if rates
        else ""
    )
    said = f'<p id="pass-rate-corrected">{escape(pass_rate_line(passes))}</p>' if passes is not None else ""
    return (
        "<h2>Judged rates, corrected for the judge's error</h2><p>A judged rate as the judge saw it, and corrected "
        "for how often it missed a fail label and failed a pass label, with a 95% interval that counts both the "
        f"graded replies and the labels.</p>{table}{said}"
    )


def _chart(history: Sequence[tuple[str, RunRow]], current: str) -> str:
    """An inline SVG line of the pass rate, one point per run, oldest on the left: what it is a rate of written
    above it, the value axis in percent, and the start of the first, the last and a few runs between beneath it."""
    if not history:
        return "<p>No runs.</p>"
    last = len(history) - 1
    points = [
        (CHART_LEFT + (n * INNER_WIDTH / last if last else INNER_WIDTH / 2), run_id, run)
        for n, (run_id, run) in enumerate(history)
    ]
    values = "".join(
        f'<line class="grid" x1="{CHART_LEFT}" y1="{_y(t):.1f}" x2="{CHART_LEFT + INNER_WIDTH}" y2="{_y(t):.1f}"/>'
        f'<text class="value" x="{CHART_LEFT - 6}" y="{_y(t) + 4:.1f}" text-anchor="end">{t:.0%}</text>'
        for t in RATE_TICKS
    )
    dates = "".join(
        f'<text class="date" x="{points[n][0]:.1f}" y="{CHART_TOP + INNER_HEIGHT + 18}" text-anchor="{_anchor(n, last)}">'
        f"{escape(_started(points[n][2]))}</text>"
        for n in _dated(len(points))
    )
    line = " ".join(f"{x:.1f},{_y(pass_rate(run)):.1f}" for x, _, run in points)
    dots = "".join(
        f'<circle class="point{" current" if run_id == current else ""}" cx="{x:.1f}" cy="{_y(pass_rate(run)):.1f}" r="4" '
        f'data-run="{escape(run_id)}"><title>{escape(_started(run))} {escape(run_id[:8])}: {pass_rate(run):.0%} '
        f"({run.passed + run.judged_pass} of {run.cases} cases passed or judged-pass)</title></circle>"
        for x, run_id, run in points
    )
    return (
        f'<svg id="pass-rate" width="{CHART_WIDTH}" height="{CHART_HEIGHT}" viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" '
        f'role="img" aria-label="{RATE_OF}, over the suite\'s recent runs">'
        f'<text class="rate-of" x="{CHART_LEFT}" y="16">{RATE_OF}, one point per run</text>{values}{dates}'
        f'<polyline points="{line}"/>{dots}</svg>'
    )


def _y(rate: float) -> float:
    """Where a pass rate sits on the chart: 100% at the top of the plot, 0% at its bottom."""
    return CHART_TOP + INNER_HEIGHT * (1 - rate)


def _dated(runs: int) -> list[int]:
    """Which of `runs` points have their date written: the first, the last, and evenly between, DATE_LABELS at most."""
    shown = min(runs, DATE_LABELS)
    return sorted({round(i * (runs - 1) / (shown - 1)) for i in range(shown)}) if shown > 1 else [0]


def _anchor(n: int, last: int) -> str:
    """How point n's date sits on it: the first starts at its point and the last ends at it, so neither is cut off."""
    if last and n == 0:
        return "start"
    return "end" if last and n == last else "middle"


def _started(run: RunRow) -> str:
    """When a run started, to the minute (UTC)."""
    return run.started_at[:16].replace("T", " ")


def _text(value: str | None) -> str:
    """Untrusted text, escaped, its line breaks kept."""
    return escape(value or "").replace("\n", "<br>")


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1d2330}
code{font-size:12px}.lineage{color:#556}
.counts{display:flex;gap:1rem;list-style:none;padding:0}.count{padding:.4rem .7rem;border-radius:6px;background:#eef}
.count.failed,.count.judged-fail{background:#fde2e2}.count.passed,.count.judged-pass{background:#e0f5e4}
.case{border:1px solid #ccd;border-radius:8px;padding:.6rem 1rem;margin:.8rem 0}
.case.failed,.case.judged-fail{border-color:#d33}.badge{font-size:12px;padding:.1rem .4rem;border-radius:4px;background:#eef}
.reply li{white-space:pre-wrap}.broke,.error{color:#b00}.held{color:#286}
table{border-collapse:collapse;margin:.4rem 0}td,th{border:1px solid #ccd;padding:.2rem .5rem;text-align:left;vertical-align:top}
.vote.fail{color:#b00}.vote.pass{color:#286}.vote.invalid{color:#a60}
svg polyline{fill:none;stroke:#3556c8;stroke-width:2}svg .point{fill:#3556c8}svg .point.current{fill:#d33}
svg text{font-size:11px;fill:#556}svg .grid{stroke:#dde}svg .rate-of{font-weight:600}
.result{display:inline-block;padding:.3rem .7rem;border-radius:6px}.result.failing{background:#fde2e2}
.result.needs-review{background:#fff1cc}.result.passed{background:#e0f5e4}
.contact{color:#445}.history{margin:.2rem 0;padding:0;list-style:none}.message{margin:.3rem 0}.label{margin:.3rem 0 0;color:#556}
caption{text-align:left;font-weight:600}
.hidden{display:none}
"""

_SCRIPT = """
document.getElementById('failures-only').addEventListener('change', function (event) {
  for (const c of document.querySelectorAll('#cases .case')) {
    c.classList.toggle('hidden', event.target.checked && c.dataset.failing !== 'true');
  }
});
"""
