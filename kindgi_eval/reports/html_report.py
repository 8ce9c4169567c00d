"""One run as a self-contained HTML page: counts, a case grid filterable to failures, each case's reply,
assertions and criteria with every judge sample, calibration per group, and the suite's pass rate over its
recent runs as an inline SVG chart. Nothing on the page reaches the network. Pure: rows in, text out.

Every value shown comes from stored rows, and model output and contact text are untrusted: all of it is
escaped, and the page carries a Content-Security-Policy that allows no fetch, no image and no script but
its own inline one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from html import escape
from typing import NamedTuple

from kindgi_eval.spec import FAILING, STATUSES
from kindgi_eval.store import CalibrationRow, OutcomeRow, RunRow, SampleRow, StatusRow

CHART_WIDTH, CHART_HEIGHT, CHART_PAD = 640, 180, 28
"""The pass-rate chart's size in CSS pixels, and its margin for the axis labels."""


class RunPage(NamedTuple):
    """Everything of one stored run that its page shows."""

    run_id: str
    run: RunRow
    statuses: Sequence[StatusRow]
    outcomes: Sequence[OutcomeRow]
    samples: Sequence[SampleRow]
    calibration: Sequence[CalibrationRow]
    history: Sequence[tuple[str, RunRow]]
    """The suite's recent runs, oldest first, this one included: (run id, its summary)."""


def pass_rate(run: RunRow) -> float:
    """The share of a run's cases that are green: passed or judged-pass (reviewed is not a pass)."""
    return (run.passed + run.judged_pass) / run.cases if run.cases else 0.0


def render_html(page: RunPage, suite: str) -> str:
    """The whole page, one string of HTML5."""
    run = page.run
    title = f"kindgi-eval run {page.run_id} of {suite}"
    counts = "".join(
        f'<li class="count {status}"><b>{getattr(run, status.replace("-", "_"))}</b> {status}</li>' for status in STATUSES
    )
    body = [
        f"<h1>{escape(suite)}</h1>",
        f'<p class="lineage">run <code>{escape(page.run_id)}</code> · started {escape(run.started_at)} · agent '
        f"<code>{escape(run.agent)}</code> · judge <code>{escape(run.judge or 'none')}</code> · "
        f"agent ${run.agent_usd:.4f}, judge ${run.judge_usd:.4f}</p>",
        f'<ul class="counts">{counts}<li class="count ungraded"><b>{run.ungraded}</b> criteria ungraded</li></ul>',
        "<h2>Pass rate, recent runs</h2>",
        _chart(page.history, page.run_id),
        "<h2>Calibration</h2>",
        _calibration_table(page.calibration),
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


def _case_grid(page: RunPage) -> str:
    outcomes: dict[str, list[OutcomeRow]] = defaultdict(list)
    for o in page.outcomes:
        outcomes[o.case_id].append(o)
    samples: dict[tuple[str, str, str], list[SampleRow]] = defaultdict(list)
    for s in page.samples:
        if s.subject == "case":
            samples[(s.subject_id, s.source, s.criterion)].append(s)
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
        criteria = "".join(_criterion(c, samples[(status.case_id, c.source, c.criterion)]) for c in status.criteria)
        cases.append(
            f'<section class="case {status.status}" data-status="{status.status}" data-failing="{failing}">'
            f'<h3><span class="badge">{status.status}</span> {escape(status.case_id)}</h3>'
            f'<ol class="reply">{messages}</ol>{error}'
            f'<ul class="assertions">{asserted}</ul>{criteria}</section>'
        )
    return f'<div id="cases">{"".join(cases)}</div>'


def _criterion(c, samples: Sequence[SampleRow]) -> str:
    rows = "".join(
        f"<tr><td>{s.sample}</td><td class=\"vote {s.vote}\">{s.vote}</td><td>{_text(s.evidence)}</td>"
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
        f"<td>{'yes' if r.calibrated else 'no'}</td><td>{_text(r.note)}</td></tr>"
        for r in rows
    )
    return (
        '<table class="calibration"><tr><th>group</th><th>agreement</th><th>kappa</th><th>items</th>'
        f"<th>calibrated</th><th>note</th></tr>{body}</table>"
    )


def _chart(history: Sequence[tuple[str, RunRow]], current: str) -> str:
    """An inline SVG line of the pass rate, one point per run, oldest on the left."""
    if not history:
        return "<p>No runs.</p>"
    inner_w, inner_h = CHART_WIDTH - 2 * CHART_PAD, CHART_HEIGHT - 2 * CHART_PAD
    step = inner_w / (len(history) - 1) if len(history) > 1 else 0
    points = []
    for n, (run_id, run) in enumerate(history):
        x = CHART_PAD + (n * step if len(history) > 1 else inner_w / 2)
        y = CHART_PAD + inner_h * (1 - pass_rate(run))
        points.append((x, y, run_id, run))
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in points)
    dots = "".join(
        f'<circle class="point{" current" if run_id == current else ""}" cx="{x:.1f}" cy="{y:.1f}" r="4" '
        f'data-run="{escape(run_id)}"><title>{escape(run.started_at[:10])} {escape(run_id[:8])}: '
        f"{pass_rate(run):.0%} green</title></circle>"
        for x, y, run_id, run in points
    )
    axis = (
        f'<text x="4" y="{CHART_PAD + 4}">100%</text><text x="4" y="{CHART_PAD + inner_h + 4}">0%</text>'
        f'<line class="axis" x1="{CHART_PAD}" y1="{CHART_PAD + inner_h}" x2="{CHART_PAD + inner_w}" y2="{CHART_PAD + inner_h}"/>'
    )
    return (
        f'<svg id="pass-rate" width="{CHART_WIDTH}" height="{CHART_HEIGHT}" viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" '
        f'role="img" aria-label="pass rate over the suite\'s recent runs">{axis}'
        f'<polyline points="{line}"/>{dots}</svg>'
    )


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
svg text{font-size:11px;fill:#556}svg .axis{stroke:#99a}
.hidden{display:none}
"""

_SCRIPT = """
document.getElementById('failures-only').addEventListener('change', function (event) {
  for (const c of document.querySelectorAll('#cases .case')) {
    c.classList.toggle('hidden', event.target.checked && c.dataset.failing !== 'true');
  }
});
"""

