"""The asset chain: suite -> agent_replies -> outcomes -> judge_samples -> calibration -> statuses -> run_summary."""


import asyncio
import time
from datetime import UTC, datetime

import dagster as dg
import pandas as pd

from kindgi_eval.agents import make_agent
from kindgi_eval.io_manager import SOURCE_RUN_TAG
from kindgi_eval.lineage import code_version
from kindgi_eval.resources import EvalSettings
from kindgi_eval.replies import collect_replies
from kindgi_eval.rows import CalibrationRow, OutcomeRow, ReplyRow, RunRow, SampleRow, StatusRow, SuiteRow
from kindgi_eval.calibration import agree_by_group
from kindgi_eval.judge_prompt import template_hash
from kindgi_eval.judging import case_subjects, graded_items, judge_suite
from kindgi_eval.registry import parse_model
from kindgi_eval.stages import calibration_of, cases_of, outcome_rows, run_row, status_rows, suite_rows, turn_of
from kindgi_eval.statuses import STATUSES
from kindgi_eval.suite_files import load_suite, suite_key
from kindgi_eval.tables import from_frame, to_frame
from kindgi_eval.tenant_files import load_tenant

SUITES = dg.DynamicPartitionsDefinition(name="suites")


@dg.asset(partitions_def=SUITES)
def suite(context: dg.AssetExecutionContext, eval_settings: EvalSettings) -> pd.DataFrame:
    """Parsed cases and calibration items of one tenant suite, with the suite's and the tenant's content hashes."""
    settings = eval_settings.resolve()
    loaded = load_tenant(settings.config_dir)
    parsed = load_suite(settings.eval_dir)
    key = suite_key(loaded.tenant.tenant, settings.eval_dir)
    if key != context.partition_key:
        raise dg.Failure(f"partition {context.partition_key} was asked for, but the settings name suite {key}")
    context.add_output_metadata({"suite_hash": parsed.hash, "cases": len(parsed.cases)})
    return to_frame(suite_rows(parsed, loaded.tenant.tenant, loaded.hash), SuiteRow)


@dg.asset(partitions_def=SUITES)
def agent_replies(context: dg.AssetExecutionContext, suite: pd.DataFrame, eval_settings: EvalSettings) -> pd.DataFrame:
    """One reply per case (messages, escalation, latency, tokens, cost, error); the only stage that pays the agent."""
    settings = eval_settings.resolve()
    tenant = load_tenant(settings.config_dir).tenant
    agent = make_agent(settings, tenant)
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
    context.add_output_metadata({"agent": agent.name, "errors": sum(r.error is not None for r in rows)})
    return to_frame(rows, ReplyRow)


@dg.asset(partitions_def=SUITES)
def outcomes(suite: pd.DataFrame, agent_replies: pd.DataFrame, eval_settings: EvalSettings) -> pd.DataFrame:
    """Every deterministic assertion of every case: which held, which failed and why (spec 009)."""
    settings = eval_settings.resolve()
    rows = outcome_rows(
        cases_of(from_frame(suite, SuiteRow)), from_frame(agent_replies, ReplyRow), settings.max_latency_ms
    )
    return to_frame(rows, OutcomeRow)


@dg.asset(partitions_def=SUITES)
def judge_samples(
    context: dg.AssetExecutionContext,
    suite: pd.DataFrame,
    agent_replies: pd.DataFrame,
    outcomes: pd.DataFrame,
    eval_settings: EvalSettings,
) -> pd.DataFrame:
    """Three judge samples per criterion: calibration items first, then cases whose assertions held."""
    settings = eval_settings.resolve()
    if settings.judge_model is None:
        return to_frame([], SampleRow)
    rows = from_frame(suite, SuiteRow)
    replies = {r.case_id: r.messages for r in from_frame(agent_replies, ReplyRow)}
    failed = {o.case_id for o in from_frame(outcomes, OutcomeRow) if not o.held}
    held = [c for c in cases_of(rows) if c.id not in failed]  # an asserted failure never reaches the judge
    samples = asyncio.run(
        judge_suite(
            parse_model(settings.judge_model),
            calibration_of(rows),
            case_subjects(held, replies),
            catalogue=load_tenant(settings.config_dir).tenant.catalogue_text(),
            concurrency=settings.concurrency,
            timeout_s=settings.model_timeout_s,
            progress=_progress_logger(context, "judge samples"),
        )
    )
    invalid = sum(s.vote == "invalid" for s in samples)
    context.add_output_metadata({"judge": settings.judge_model, "samples": len(samples), "invalid": invalid})
    return to_frame(samples, SampleRow)


@dg.asset(partitions_def=SUITES)
def calibration(
    context: dg.AssetExecutionContext, suite: pd.DataFrame, judge_samples: pd.DataFrame, eval_settings: EvalSettings
) -> pd.DataFrame:
    """The judge's agreement with the hand labels per calibration group, and whether each group may grade."""
    settings = eval_settings.resolve()
    if settings.judge_model is None:
        return to_frame([], CalibrationRow)
    items = calibration_of(from_frame(suite, SuiteRow))
    agreement = agree_by_group(graded_items(items, from_frame(judge_samples, SampleRow)), has_calibration_file=bool(items))
    rows = [CalibrationRow(**a.model_dump(), judge=settings.judge_model) for a in agreement.values()]
    context.add_output_metadata({f"agreement/{r.group}": r.agreement if r.agreement is not None else -1.0 for r in rows})
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
    """One status per case: passed, failed, judged-fail, judged-pass or reviewed, with criteria verdicts."""
    settings = eval_settings.resolve()
    rows = status_rows(
        cases_of(from_frame(suite, SuiteRow)),
        from_frame(agent_replies, ReplyRow),
        from_frame(outcomes, OutcomeRow),
        from_frame(judge_samples, SampleRow),
        from_frame(calibration, CalibrationRow),
        judged=settings.judge_model is not None,
    )
    context.add_output_metadata({status: sum(r.status == status for r in rows) for status in STATUSES})
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
    """The run in one row: lineage, counts per status, costs and funnel coverage; the `runs` view."""
    settings = eval_settings.resolve()
    tenant = load_tenant(settings.config_dir).tenant
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
        replies_from=run.tags.get(SOURCE_RUN_TAG, context.run.run_id),
        started_at=_iso(started),
        finished_at=_iso(time.time()),
    )
    return to_frame([row], RunRow)


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
