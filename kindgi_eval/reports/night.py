"""A night's findings as a person reads them: one block per tenant, the worst first, as text, as JSON (`night --json`,
and a webhook's body) and as a Slack message (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kindgi_eval.rules import Finding, alerted, is_worse, safe, suite_findings, worst_first
from kindgi_eval.store import SuiteNight


class SuiteBlock(BaseModel):
    """One suite's night: the runs compared and what they say."""

    model_config = ConfigDict(frozen=True)

    suite: str
    """The suite partition."""
    run_id: str | None
    """Its latest run of the night; None when it had none."""
    before_run_id: str | None
    """The last run before it that succeeded, which it was compared with; None when there is none."""
    started_at: str | None
    """When its latest run of the night started (UTC, ISO 8601); None when it had none."""
    findings: list[Finding]
    """What the night says of it, worst first; empty when it has nothing to say."""


class TenantNight(BaseModel):
    """One tenant's night: its suites' findings."""

    model_config = ConfigDict(frozen=True)

    tenant: str
    """The tenant."""
    night: str | None
    """The night (YYYY-MM-DD, or the schedule's tick), or None for each suite's latest run."""
    worse: bool
    """Whether something got worse in any of its suites."""
    suites: list[SuiteBlock]
    """Its suites, in the order declared (or by name)."""

    def findings(self) -> list[Finding]:
        """Every finding of every suite of the tenant."""
        return [f for s in self.suites for f in s.findings]


class Night(BaseModel):
    """A night across tenants: what `kindgi-eval night --json` writes."""

    model_config = ConfigDict(frozen=True)

    night: str | None
    """The night asked for (YYYY-MM-DD), or None for each suite's latest run against the one before it."""
    worse: bool
    """Whether something got worse anywhere: the command exits 1."""
    tenants: list[TenantNight]
    """One block per tenant, the worst first."""


def night_of(
    suites: Sequence[tuple[str, SuiteNight]],
    night: str | None,
    *,
    missing: bool,
    skipped: Sequence[tuple[str, str]] = (),
) -> Night:
    """The night of `suites` (each with its tenant), tenants worst first. A suite without a run of the night is
    `missing_run` when `missing` (it was declared to run), else left out. Each of `skipped`, a tenants-file entry left
    out for its problems (its name, and why), is a `missing_run` of its own: one tenant's typo costs it its night, and
    the night says so."""
    blocks: dict[str, list[SuiteBlock]] = {}
    for tenant, reason in skipped:
        label = f"{tenant} (tenants file)"
        blocks.setdefault(tenant, []).append(
            SuiteBlock(
                suite=label,
                run_id=None,
                before_run_id=None,
                started_at=None,
                findings=[
                    Finding(
                        kind="missing_run",
                        suite=label,
                        detail=f"not run: its tenants-file entry does not validate: {reason}",
                        command="kindgi-eval validate --tenants $KINDGI_TENANTS",
                    )
                ],
            )
        )
    for tenant, s in suites:
        if s.latest is None and not missing:
            continue
        found = suite_findings(s.suite, s.latest, s.before, night=night or "")
        blocks.setdefault(tenant, []).append(
            SuiteBlock(
                suite=s.suite,
                run_id=s.latest.run_id if s.latest else None,
                before_run_id=s.before.run_id if s.before else None,
                started_at=s.latest.started_at if s.latest else None,
                findings=found,
            )
        )
    flat = {t: [f for b in bs for f in b.findings] for t, bs in blocks.items()}
    tenants = [TenantNight(tenant=t, night=night, worse=is_worse(flat[t]), suites=blocks[t]) for t in worst_first(flat)]
    return Night(night=night, worse=any(t.worse for t in tenants), tenants=tenants)


def render_night(n: Night) -> str:
    """The night as text: a line per tenant, then each finding with its cases and the command that shows more."""
    scope = f"the night of {n.night}" if n.night else "each suite's latest run against the one before it"
    lines = [f"Night: {scope}; {sum(t.worse for t in n.tenants)} of {len(n.tenants)} tenants got worse."]
    for t in n.tenants:
        lines += ["", *tenant_lines(t)]
    return "\n".join(lines) + "\n"


def tenant_lines(t: TenantNight, kinds: Sequence[str] | None = None) -> list[str]:
    """One tenant's block (only the findings of `kinds`, when given): its name and what got worse, then each suite
    with something to say."""
    lines = [f"{t.tenant}: {_verdict(t, kinds)}"]
    for s in t.suites:
        found = s.findings if kinds is None else alerted(s.findings, kinds)
        if not found:
            continue
        lines.append(
            f"  {safe(s.suite)}"
            + (
                f" (run {s.run_id}, against {s.before_run_id})"
                if s.before_run_id
                else f" (run {s.run_id})"
                if s.run_id
                else ""
            )
        )
        for f in found:
            lines.append(f"    {f.kind}: {safe(f.detail)}")
            lines.append(f"      more: {safe(f.command)}")
    return lines


def _verdict(t: TenantNight, kinds: Sequence[str] | None) -> str:
    found = t.findings() if kinds is None else alerted(t.findings(), kinds)
    worse = [f for f in found if f.kind != "fixed"]
    if not found:
        return "nothing to say."
    if not worse:
        return "nothing got worse."
    suites = sorted({f.suite for f in worse})
    return f"{len(worse)} finding{'s' if len(worse) > 1 else ''} that got worse, in {', '.join(suites)}."


def webhook_json(t: TenantNight, kinds: Sequence[str]) -> dict:
    """What a webhook that is not Slack's is sent: the tenant's block of `night --json`, narrowed to `kinds`."""
    suites = [s.model_copy(update={"findings": alerted(s.findings, kinds)}) for s in t.suites]
    return t.model_copy(update={"suites": [s for s in suites if s.findings]}).model_dump(mode="json")


def slack_message(t: TenantNight, kinds: Sequence[str]) -> dict:
    """What a Slack incoming webhook is sent: `text` (the notification's line, and the whole block where blocks are
    not shown) and `blocks` (a header, then a section per suite naming what got worse, its cases and the command)."""
    text = "\n".join(tenant_lines(t, kinds))
    night = f" on {t.night}" if t.night else ""
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": f"kindgi-eval: {t.tenant}{night}"[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _escape(_verdict(t, kinds))}},
    ]
    for s in t.suites:
        for f in alerted(s.findings, kinds):
            cases = f"\ncases: {', '.join(f.case_ids)}" if f.case_ids else ""
            body = f"*{_escape(s.suite)}* `{f.kind}`\n{_escape(f.detail)}{_escape(cases)}\n`{_escape(f.command)}`"
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": body[:3000]}})
    return {"text": text, "blocks": blocks[:50]}


def _escape(text: str) -> str:
    """Text made literal for Slack's mrkdwn: its three control characters escaped, as Slack asks."""
    return safe(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
