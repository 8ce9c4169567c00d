"""The asset chain: suite -> agent_replies -> outcomes -> judge_samples -> calibration -> statuses -> run_summary.

Every asset is one Parquet table per run in the store (its layout is store.table_path's) and one DuckDB view of
`kindgi-eval sql`; each resolves its settings for its partition (the tenants file, or the CLI's pinned settings).
"""


import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pandas as pd

from kindgi_eval.agents import judge_ref, make_agent
from kindgi_eval.io_manager import source_run
from kindgi_eval.lineage import code_version
from kindgi_eval.resources import EvalSettings
from kindgi_eval.replies import collect_replies
from kindgi_eval.rows import CalibrationRow, OutcomeRow, ReplyRow, RunRow, SampleRow, StatusRow, SuiteRow
from kindgi_eval.settings import RunSettings
from kindgi_eval.calibration import CalibrationFile, agree_by_group
from kindgi_eval.errors import InputError
from kindgi_eval.judge_prompt import template_hash
from kindgi_eval.judging import case_subjects, graded_items, judge_suite
from kindgi_eval.stages import cases_of, outcome_rows, run_row, status_rows, suite_rows, turn_of
from kindgi_eval.suite_files import CALIBRATION_FILE, load_suite, suite_key
from kindgi_eval.tables import from_frame, to_frame
from kindgi_eval.tenant_files import load_tenant
from kindgi_eval.ui_metadata import calibration_metadata, statuses_metadata

SUITES = dg.DynamicPartitionsDefinition(name="suites")


@dg.asset(partitions_def=SUITES)
def suite(context: dg.AssetExecutionContext, eval_settings: EvalSettings) -> pd.DataFrame:
    """Parsed cases and calibration items of one tenant suite, with the suite's and the tenant's content hashes.

    One row per case (`kind = 'case'`) and per calibration item, each kept whole as JSON in `body`.
    Query: `kindgi-eval sql "SELECT id, kind, text, review FROM cases WHERE suite = '<partition>'"`.
    """
    settings = _settings(context, eval_settings)
    loaded = _inputs(lambda: load_tenant(settings.config_dir))
    parsed = _inputs(lambda: load_suite(settings.eval_dir))
    key = suite_key(loaded.tenant.tenant, settings.eval_dir)
    if key != context.partition_key:
        raise dg.Failure(
            f"partition {context.partition_key} was asked for, but the suite is {key} "
            f"(tenant {loaded.tenant.tenant!r} in {loaded.config_dir}/tenant.toml, suite folder {settings.eval_dir}). "
            "A tenants file entry's name must equal its tenant.toml's tenant."
        )
    context.add_output_metadata(
        {"suite_hash": parsed.hash, "config_hash": loaded.hash, "cases": len(parsed.cases), "calibration_items": len(parsed.calibration)}
    )
    return to_frame(suite_rows(parsed, loaded.tenant.tenant, loaded.hash), SuiteRow)


@dg.asset(partitions_def=SUITES)
def agent_replies(context: dg.AssetExecutionContext, suite: pd.DataFrame, eval_settings: EvalSettings) -> pd.DataFrame:
    """One reply per case (messages, escalation, latency, tokens, cost, error); the only stage that pays the agent.

    Query: `kindgi-eval sql "SELECT case_id, messages, escalate, latency_ms, cost_usd, error FROM replies WHERE suite = '<partition>'"`.
    """
    settings = _settings(context, eval_settings)
    tenant = _inputs(lambda: load_tenant(settings.config_dir)).tenant
    agent = _inputs(lambda: make_agent(settings, tenant))
    cases = cases_of(from_frame(suite, SuiteRow))
    rows = asyncio.run(
        collect_replies(
            agent,
            [turn_of(c, tenant.tenant) for c in cases],
            concurrency=settings.concurrency,
            deadline_ms=settings.max_latency_ms,
            progress=_progress_logger(context, "agent replies"),
        )
    )
    context.add_output_metadata(
        {
            "agent": agent.name,
            "errors": sum(r.error is not None for r in rows),
            "agent_usd": float(sum(r.cost_usd for r in rows)),
            "latency_ms_max": float(max((r.latency_ms for r in rows), default=0.0)),
        }
    )
    return to_frame(rows, ReplyRow)


@dg.asset(partitions_def=SUITES)
def outcomes(
    context: dg.AssetExecutionContext, suite: pd.DataFrame, agent_replies: pd.DataFrame, eval_settings: EvalSettings
) -> pd.DataFrame:
    """Every deterministic assertion of every case: which held, which failed and why (spec 009).

    Query: `kindgi-eval sql "SELECT case_id, assertion, detail FROM outcomes WHERE NOT held"`.
    """
    settings = _settings(context, eval_settings)
    rows = outcome_rows(
        cases_of(from_frame(suite, SuiteRow)), from_frame(agent_replies, ReplyRow), settings.max_latency_ms
    )
    context.add_output_metadata({"assertions": len(rows), "failed_assertions": sum(not r.held for r in rows)})
    return to_frame(rows, OutcomeRow)


@dg.asset(partitions_def=SUITES)
def judge_samples(
    context: dg.AssetExecutionContext,
    suite: pd.DataFrame,
    agent_replies: pd.DataFrame,
    outcomes: pd.DataFrame,
    eval_settings: EvalSettings,
) -> pd.DataFrame:
    """Three judge samples per criterion: calibration items first, then cases whose assertions held.

    Each sample's vote, quoted evidence, reason and raw answer; empty without a judge.
    Query: `kindgi-eval sql "SELECT subject_id, criterion, sample, vote, evidence, reason FROM judge_samples WHERE vote = 'invalid'"`.
    """
    settings = _settings(context, eval_settings)
    if settings.judge_model is None:
        return to_frame([], SampleRow)
    judge = _inputs(lambda: judge_ref(settings))
    rows = from_frame(suite, SuiteRow)
    replies = {r.case_id: r.messages for r in from_frame(agent_replies, ReplyRow)}
    failed = {o.case_id for o in from_frame(outcomes, OutcomeRow) if not o.held}
    held = [c for c in cases_of(rows) if c.id not in failed]  # an asserted failure never reaches the judge
    calibration_set = _inputs(lambda: load_suite(settings.eval_dir))
    samples = asyncio.run(
        judge_suite(
            judge,
            calibration_set.calibration,
            case_subjects(held, replies),
            catalogue=load_tenant(settings.config_dir).tenant.catalogue_text(),
            concurrency=settings.concurrency,
            timeout_s=settings.model_timeout_s,
            progress=_progress_logger(context, "judge samples"),
        )
    )
    invalid = sum(s.vote == "invalid" for s in samples)
    context.add_output_metadata(
        {
            "judge": settings.judge_model,
            "samples": len(samples),
            "invalid": invalid,
            "judge_usd": float(sum(s.cost_usd for s in samples)),
        }
    )
    return to_frame(samples, SampleRow)


@dg.asset(partitions_def=SUITES)
def calibration(
    context: dg.AssetExecutionContext, judge_samples: pd.DataFrame, eval_settings: EvalSettings
) -> pd.DataFrame:
    """The judge's agreement with the hand labels per calibration group, and whether each group may grade.

    One row per group (agreement, kappa, labels, calibrated, note); empty without a judge.
    Query: `kindgi-eval sql 'SELECT run_id, "group", agreement, calibrated, note FROM calibration'`.
    """
    settings = _settings(context, eval_settings)
    if settings.judge_model is None:
        context.add_output_metadata({"judge": "none", "calibrated_groups": 0})
        return to_frame([], CalibrationRow)
    graded = graded_items(from_frame(judge_samples, SampleRow))
    agreement = agree_by_group(graded, calibration_file=_calibration_file(settings, graded))
    rows = [CalibrationRow(**a.model_dump(), judge=settings.judge_model) for a in agreement.values()]
    context.add_output_metadata(calibration_metadata(rows))
    return to_frame(rows, CalibrationRow)


@dg.asset(partitions_def=SUITES)
def statuses(
    context: dg.AssetExecutionContext,
    suite: pd.DataFrame,
    agent_replies: pd.DataFrame,
    outcomes: pd.DataFrame,
    judge_samples: pd.DataFrame,
    calibration: pd.DataFrame,
    eval_settings: EvalSettings,
) -> pd.DataFrame:
    """One status per case: passed, failed, judged-fail, judged-pass or reviewed, with criteria verdicts.

    Each case's failures, reply and every criterion's verdict, votes, quoted evidence and reason; the metadata
    counts the five statuses and the costs, and tables the judged-fail and split verdicts and the failed cases.
    Query: `kindgi-eval sql "SELECT run_id, case_id, status, failures FROM statuses WHERE status IN ('failed', 'judged-fail')"`.
    """
    settings = _settings(context, eval_settings)
    rows = status_rows(
        cases_of(from_frame(suite, SuiteRow)),
        from_frame(agent_replies, ReplyRow),
        from_frame(outcomes, OutcomeRow),
        from_frame(judge_samples, SampleRow),
        from_frame(calibration, CalibrationRow),
        judged=settings.judge_model is not None,
    )
    replies = from_frame(agent_replies, ReplyRow)
    samples = from_frame(judge_samples, SampleRow)
    context.add_output_metadata(statuses_metadata(rows, replies, samples))
    return to_frame(rows, StatusRow)


@dg.asset(partitions_def=SUITES)
def run_summary(
    context: dg.AssetExecutionContext,
    suite: pd.DataFrame,
    agent_replies: pd.DataFrame,
    judge_samples: pd.DataFrame,
    statuses: pd.DataFrame,
    eval_settings: EvalSettings,
) -> pd.DataFrame:
    """The run in one row: lineage, counts per status, costs and funnel coverage; the `runs` view.

    Query: `kindgi-eval sql "SELECT run_id, suite, started_at, passed, failed, judged_fail, agent_usd, judge_usd FROM runs ORDER BY started_at"`.
    """
    settings = _settings(context, eval_settings)
    tenant = _inputs(lambda: load_tenant(settings.config_dir)).tenant
    run = context.run
    record = context.instance.get_run_record_by_id(context.run.run_id)
    started = record.start_time if record and record.start_time else time.time()
    row = run_row(
        from_frame(suite, SuiteRow),
        from_frame(agent_replies, ReplyRow),
        from_frame(judge_samples, SampleRow),
        from_frame(statuses, StatusRow),
        stages=tenant.stage_names(),
        judge=settings.judge_model,
        judge_prompt_hash=template_hash() if settings.judge_model else None,
        code_version=code_version(),
        replies_from=source_run(context.instance, dg.AssetKey("agent_replies"), context.partition_key, run),
        started_at=_iso(started),
        finished_at=_iso(time.time()),
    )
    return to_frame([row], RunRow)


def _calibration_file(settings: RunSettings, graded: list) -> CalibrationFile:
    """Whether the judged suite folder has a calibration file with items, an empty one, or none."""
    if graded:
        return "items"
    return "empty" if (Path(settings.eval_dir) / CALIBRATION_FILE).is_file() else "absent"


def _settings(context: dg.AssetExecutionContext, eval_settings: EvalSettings) -> RunSettings:
    """This partition's settings; a problem with them fails the step with the problem's words, not a traceback."""
    return _inputs(lambda: eval_settings.for_partition(context.partition_key))


def _inputs(read):
    """`read()`, with an InputError turned into a Dagster Failure that lists every problem."""
    try:
        return read()
    except InputError as e:
        raise dg.Failure(description="\n".join(str(p) for p in e.problems)) from None


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def _progress_logger(context: dg.AssetExecutionContext, what: str):
    """Log `what: done/total` at most once a second, and at the end."""
    last = 0.0

    def report(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if done == total or now - last >= 1.0:
            last = now
            context.log.info(f"{what}: {done}/{total}")

    return report


CHAIN = [suite, agent_replies, outcomes, judge_samples, calibration, statuses, run_summary]
