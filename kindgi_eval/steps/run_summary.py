"""The `run_summary` stage: the run in one row, with its lineage (suite, tenant, judge prompt, code version)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from kindgi_eval.kinds import JUDGE_USD, kind_named
from kindgi_eval.rules import STATUSES
from kindgi_eval.store import MetricRow, ReplyRow, RunRow, SampleRow, StatusRow, SuiteRow


def run_row(
    suite: Sequence[SuiteRow],
    replies: Sequence[ReplyRow],
    samples: Sequence[SampleRow],
    statuses: Sequence[StatusRow],
    *,
    stages: Sequence[str],
    judge: str | None,
    judge_prompt_hash: str | None,
    code_version: str,
    replies_from: str,
    started_at: str,
    finished_at: str,
    resumed_from: str | None = None,
    agent_calls_saved: int = 0,
    judge_calls_saved: int = 0,
    metrics: Sequence[MetricRow] = (),
) -> RunRow:
    """The run in one row: lineage, counts per status, ungraded criteria, costs and funnel coverage, for a resumed
    run the killed run it finished and how many agent and judge calls its recordings saved, and its kind's
    parameters. The judge's cost adds what a kind's own stage paid it (its `metrics`' JUDGE_USD)."""
    first = suite[0]
    counts = Counter(s.status for s in statuses)
    entered = {r.funnel_stage for r in suite if r.kind in ("case", "scenario")}
    return RunRow(
        tenant=first.tenant,
        eval_dir=first.eval_dir,
        suite_hash=first.suite_hash,
        config_hash=first.config_hash,
        suite_id=first.suite_id,
        suite_version=first.suite_version,
        agent=replies[0].agent if replies else "",
        judge=judge,
        judge_prompt_hash=judge_prompt_hash,
        code_version=code_version,
        replies_from=replies_from,
        started_at=started_at,
        finished_at=finished_at,
        cases=len(statuses),
        ungraded=sum(c.verdict == "ungraded" for s in statuses for c in s.criteria) if judge else 0,
        agent_usd=sum(r.cost_usd for r in replies),
        judge_usd=sum(s.cost_usd for s in samples) + sum(m.value or 0.0 for m in metrics if m.name == JUDGE_USD),
        cost_unknown=not all(r.cost_known for r in replies) or not all(s.cost_known for s in samples),
        contact_usd=sum(r.contact_usd for r in replies),
        stages=list(stages),
        uncovered=[s for s in stages if s not in entered],
        resumed_from=resumed_from,
        agent_calls_saved=agent_calls_saved,
        judge_calls_saved=judge_calls_saved,
        suite_kind=first.suite_kind,
        params=json.dumps(dict(kind_named(first.suite_kind).report.params(suite)), ensure_ascii=False, sort_keys=True),
        **{status.replace("-", "_"): counts.get(status, 0) for status in STATUSES},
    )


@cache
def code_version() -> str:
    """`<version>+<12 hex of the package's source>`, so two runs of different code never look alike."""
    try:
        release = version("kindgi-eval")
    except PackageNotFoundError:
        release = "0+unknown"
    digest = hashlib.sha256()
    package = Path(__file__).parents[1]
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".toml", ".yaml") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return f"{release}+{digest.hexdigest()[:12]}"
