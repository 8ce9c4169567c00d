"""The asset chain: suite -> agent_replies -> outcomes -> judge_samples -> calibration -> statuses -> accuracy,
custom, pairwise, regressions, review_queue -> run_metrics -> run_summary.

Every asset is one Parquet table per run in the store (its layout is store.table_path's) and one DuckDB view of
`kindgi-eval sql`. The IO manager hands each asset the rows of its inputs as their row models, and stores the
rows it returns; each body is a call into `steps/`, which holds what the stage computes. The agent, the judge and
the sandbox a stage calls come from the `clients` resource (`resources.RunClients`), which also hands every stage
the tenant configuration the run read once.
"""

import inspect
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import dagster as dg

from kindgi_eval.defs.asset_checks import calibration_checks, check_specs, statuses_result
from kindgi_eval.defs.io_manager import ParquetStore
from kindgi_eval.defs.lineage import input_run, pinned_by, resolved_tags
from kindgi_eval.defs.registered import write_pinned_version
from kindgi_eval.defs.resources import EvalSettings, RunClients
from kindgi_eval.defs.resume import batches_sent, manifest_now, recording, resume_summary
from kindgi_eval.defs.ui_metadata import (
    NIGHTS,
    calibration_metadata,
    column_schema,
    history_metadata,
    result_tags,
    statuses_metadata,
)
from kindgi_eval.inputs import (
    RunSettings,
    has_calibration_file,
    load_suite,
    suite_key,
)
from kindgi_eval.kinds import (
    KindRows,
    RepliesGiven,
    ReplyChecks,
    StageInputs,
    SuiteKind,
    cases_of,
    figures_of,
    kind_named,
    kinds,
    models_of,
    result_of,
    scenarios_of,
    table_named,
)
from kindgi_eval.prompts import template_hash
from kindgi_eval.rules import InputError
from kindgi_eval.steps import (
    FRESH_CONTACT_TAG,
    ask_agent,
    calibration_rows,
    code_version,
    contact_side,
    judged_rate_rows,
    outcome_rows,
    preflight,
    run_row,
    sample_judge,
    status_rows,
    suite_rows,
)
from kindgi_eval.store import (
    CalibrationRow,
    Manifest,
    MetricRow,
    OutcomeRow,
    ReplyRow,
    RunRow,
    SampleRow,
    StatusRow,
    SuiteRow,
    earlier_runs,
)

SUITES = dg.DynamicPartitionsDefinition(name="suites")
GROUP = "evaluation"
"""The asset group the whole chain is in."""


def chain_asset(name: str) -> dict[str, object]:
    """What every asset of the chain declares: its partitions, group, kinds, code version, column schema and the
    checks it yields itself."""
    return {
        "partitions_def": SUITES,
        "check_specs": check_specs(name, SUITES),
        "group_name": GROUP,
        "kinds": {"parquet", "duckdb"},
        "code_version": code_version(),
        "metadata": {"dagster/column_schema": column_schema(table_named(name).row)},
    }


@dg.asset(**chain_asset("suite"))
def suite(
    context: dg.AssetExecutionContext,
    eval_settings: EvalSettings,
    clients: RunClients,
    io_manager: dg.ResourceParam[ParquetStore],
) -> list[SuiteRow]:
    """Parsed cases and calibration items of one tenant suite, with the suite's and the tenant's content hashes.

    The suite is checked here, in its own run (a registered version the schedule pinned is written out first): a suite
    that does not pass fails this step with its problems, before the agent is asked anything.

    One row per case (`kind = 'case'`) and per calibration item, each kept whole as JSON in `body`.
    Query: `kindgi-eval sql "SELECT id, kind, text, review FROM cases WHERE suite = '<partition>'"`.
    """
    settings = _settings(context, eval_settings)
    loaded = _inputs(lambda: clients.tenant(settings))
    _inputs(
        lambda: write_pinned_version(context.run.tags, loaded.tenant.tenant, settings.eval_dir)
    )  # a tick's registered version
    tags = context.run.tags
    # checked before the agent is asked anything: the suite, its kind's needs (a custom handler's sandbox), the budget
    parsed, kind, pins = _inputs(lambda: preflight(settings, loaded, io_manager.root(), pinned_by(tags)))
    key = suite_key(loaded.tenant.tenant, settings.eval_dir)  # after the suite's own problems, which say more
    if key != context.partition_key:
        raise dg.Failure(
            f"partition {context.partition_key} was asked for, but the suite is {key} "
            f"(tenant {loaded.tenant.tenant!r} in {loaded.config_dir}/tenant.toml, suite folder {settings.eval_dir}). "
            "A tenants file entry's name must equal its tenant.toml's tenant."
        )
    resolved = resolved_tags(pins)
    if any(tags.get(tag) != value for tag, value in resolved.items()):
        context.instance.add_run_tags(
            context.run.run_id, resolved
        )  # so a resume or re-execution of this run uses them too
    context.add_output_metadata(
        {
            "suite_hash": parsed.hash,
            "config_hash": loaded.hash,
            "cases": len(parsed.cases),
            "calibration_items": len(parsed.calibration),
            "kind": parsed.kind,
            **({"baseline_run": pins.baseline} if pins.baseline else {}),
        }
    )
    return suite_rows(parsed, loaded.tenant.tenant, loaded.hash, kind.start.stored_params(parsed, pins))


@dg.asset(**chain_asset("agent_replies"))
def agent_replies(
    context: dg.AssetExecutionContext,
    suite: list[SuiteRow],
    eval_settings: EvalSettings,
    clients: RunClients,
    io_manager: dg.ResourceParam[ParquetStore],
) -> list[ReplyRow]:
    """One reply per case (messages, escalation, latency, tokens, cost, error); the only stage that pays the agent.

    Each reply is recorded as it arrives, so a killed run resumed asks only the cases it had no reply for.
    Query: `kindgi-eval sql "SELECT case_id, messages, escalate, latency_ms, cost_usd, error FROM replies WHERE suite = '<partition>'"`.
    """
    settings = _settings(context, eval_settings)
    agents = [
        (_inputs(lambda s=s: clients.agent(s)), rows)
        for s, rows in kind_named(suite[0].suite_kind).checking.askings(settings, suite)
    ]
    improvised = any(s.moves is None for s in scenarios_of(suite))
    model = _inputs(lambda: clients.contact(settings, needed=improvised))
    contact = (
        None
        if model is None
        else contact_side(
            model,
            catalogue=_inputs(lambda: clients.tenant(settings)).tenant.catalogue_text(),
            timeout_s=settings.model_timeout_s,
            cache=None if context.run.tags.get(FRESH_CONTACT_TAG) == "true" else io_manager.root(),
        )
    )
    rows = []
    with recording(context, io_manager.root(), "agent_replies", _manifest(context, settings, clients)) as (
        done,
        record,
    ):
        for agent, cases in agents:
            rows += ask_agent(
                agent,
                cases,
                concurrency=settings.concurrency,
                deadline_ms=settings.max_latency_ms,
                progress=_progress_logger(context),
                done=done,
                record=record,
                contact=contact,
            )
    context.add_output_metadata(
        {
            "agent": ", ".join(agent.name for agent, _ in agents),
            **({"contact_model": model.name, "contact_usd": float(sum(r.contact_usd for r in rows))} if model else {}),
            "errors": sum(r.error is not None for r in rows),
            "agent_usd": float(sum(r.cost_usd for r in rows)),
            "latency_ms_max": float(max((r.latency_ms for r in rows), default=0.0)),
        }
    )
    return rows


@dg.asset(**chain_asset("outcomes"))
def outcomes(
    context: dg.AssetExecutionContext,
    suite: list[SuiteRow],
    agent_replies: list[ReplyRow],
    eval_settings: EvalSettings,
    clients: RunClients,
) -> list[OutcomeRow]:
    """Every deterministic assertion of every case: which held, which failed and why (docs/design.md#assertions).

    A kind with its own check of every reply runs it here, its outcomes joining each case's (a custom suite's
    handler, each call in its own sandbox: `custom_handler`, or `handler_error` when it gave no valid verdict).
    Query: `kindgi-eval sql "SELECT case_id, assertion, detail FROM outcomes WHERE NOT held"`.
    """
    settings = _settings(context, eval_settings)
    cases, checking = cases_of(suite), kind_named(suite[0].suite_kind).checking
    checked = (
        checking.replies(
            RepliesGiven(suite, cases, agent_replies, settings, lambda: _inputs(lambda: clients.sandbox(settings)))
        )
        if checking.replies is not None
        else ReplyChecks({})
    )
    rows = outcome_rows(
        cases,
        agent_replies,
        settings.max_latency_ms,
        checked.outcomes,
        assertions=checking.assertions,
        scenarios=scenarios_of(suite),
    )
    context.add_output_metadata(
        {"assertions": len(rows), "failed_assertions": sum(not r.held for r in rows)} | dict(checked.about)
    )
    return rows


@dg.asset(**chain_asset("judge_samples"))
def judge_samples(
    context: dg.AssetExecutionContext,
    suite: list[SuiteRow],
    agent_replies: list[ReplyRow],
    outcomes: list[OutcomeRow],
    eval_settings: EvalSettings,
    clients: RunClients,
    io_manager: dg.ResourceParam[ParquetStore],
) -> list[SampleRow]:
    """Three judge samples per criterion: calibration items first, then cases whose assertions held.

    Each sample's vote, quoted evidence, reason and raw answer; empty without a judge. The calibration items
    are read from the suite folder's calibration.jsonl as it is now, so a replay is graded on today's labels.
    Each sample is recorded as it arrives, so a killed run resumed draws only the samples it had not.
    Query: `kindgi-eval sql "SELECT subject_id, criterion, sample, vote, evidence, reason FROM judge_samples WHERE vote = 'invalid'"`.
    """
    settings = _settings(context, eval_settings)
    judge = _inputs(lambda: clients.judge(settings))
    if judge is None:
        return []
    batch = batches_sent(context, io_manager.root(), "judge_samples") if settings.judge_batch else None
    rows = _judged(
        context,
        settings,
        clients,
        io_manager,
        "judge_samples",
        sample_judge,
        judge,
        suite,
        agent_replies,
        outcomes,
        batch=batch,
    )
    context.add_output_metadata(
        {
            "judge": settings.judge_model,
            "samples": len(rows),
            "invalid": sum(s.vote == "invalid" for s in rows),
            "judge_usd": float(sum(s.cost_usd for s in rows)),
        }
    )
    return rows


@dg.asset(**chain_asset("calibration"))
def calibration(
    context: dg.AssetExecutionContext,
    suite: list[SuiteRow],
    judge_samples: list[SampleRow],
    eval_settings: EvalSettings,
) -> Iterator[dg.Output[list[CalibrationRow]] | dg.AssetCheckResult]:
    """The judge's agreement with the hand labels per calibration group, and whether each group may grade.

    One row per group (agreement, kappa, labels, calibrated, note); empty without a judge. Its step yields the
    `<group>_calibrated` checks of the same rows.
    Query: `kindgi-eval sql 'SELECT run_id, "group", agreement, calibrated, note FROM calibration'`.
    """
    settings = _settings(context, eval_settings)
    file = "empty" if has_calibration_file(settings.eval_dir) else "absent"  # what a run without samples had
    rows = calibration_rows(settings.judge_model, judge_samples, file, kind_named(suite[0].suite_kind).checking.groups)
    yield dg.Output(rows, metadata=calibration_metadata(rows) if rows else {"judge": "none", "calibrated_groups": 0})
    yield from calibration_checks(rows)


@dg.asset(**chain_asset("statuses"))
def statuses(
    context: dg.AssetExecutionContext,
    suite: list[SuiteRow],
    agent_replies: list[ReplyRow],
    outcomes: list[OutcomeRow],
    judge_samples: list[SampleRow],
    calibration: list[CalibrationRow],
    eval_settings: EvalSettings,
) -> Iterator[dg.Output[list[StatusRow]] | dg.AssetCheckResult]:
    """One status per case: passed, failed, judged-fail, judged-pass or reviewed, with criteria verdicts.

    Each case's failures, reply and every criterion's verdict, votes, quoted evidence and reason; the metadata
    counts the five statuses and the costs, and tables the judged-fail and split verdicts and the failed cases.
    Query: `kindgi-eval sql "SELECT run_id, case_id, status, failures FROM statuses WHERE status IN ('failed', 'judged-fail')"`.
    """
    settings = _settings(context, eval_settings)
    rows = status_rows(
        cases_of(suite),
        agent_replies,
        outcomes,
        judge_samples,
        calibration,
        judged=settings.judge_model is not None,
        scenarios=scenarios_of(suite),
    )
    context.instance.add_run_tags(context.run.run_id, result_tags(rows, suite[0].tenant, context.partition_key))
    metadata = statuses_metadata(
        rows,
        agent_replies,
        judge_samples,
        [*cases_of(suite), *scenarios_of(suite)],
        context.run.run_id,
        judged_rate_rows(rows, calibration),
    )
    yield dg.Output(rows, metadata=metadata)
    yield statuses_result(rows)


STAGE_INPUTS = ("agent_replies", "outcomes", "statuses")
"""What a kind's stage reads beside the suite, only in a run of its kind: declared without being loaded, so a run of
another kind pays nothing for them."""


def kind_stage(kind: SuiteKind) -> dg.AssetsDefinition:
    """The asset of a kind's own stage: its rows for a suite of that kind, none for another; the kind's figures (and
    what its stage adds) as metadata, so they plot night over night."""
    stage = kind.stage
    assert stage is not None

    @dg.asset(
        name=stage.table,
        description=inspect.getdoc(stage.compute),
        **chain_asset(stage.table),
        ins={name: dg.AssetIn(name, dagster_type=dg.Nothing) for name in STAGE_INPUTS},
    )
    def _stage(
        context: dg.AssetExecutionContext,
        suite: list[SuiteRow],
        eval_settings: EvalSettings,
        clients: RunClients,
        io_manager: dg.ResourceParam[ParquetStore],
    ) -> list:
        if suite[0].suite_kind != kind.name:
            return []
        agent_replies, outcomes, statuses = (io_manager.upstream(context, name) for name in STAGE_INPUTS)
        settings = _settings(context, eval_settings)

        def judged(step, *inputs):
            judge = _inputs(lambda: clients.judge(settings))
            return _judged(context, settings, clients, io_manager, stage.table, step, judge, *inputs)

        given = StageInputs(
            suite, agent_replies, outcomes, statuses, io_manager.root(), judged if settings.judge_model else None
        )
        rows = stage.compute(given)
        context.add_output_metadata(
            _figures(kind, suite, KindRows(suite, agent_replies, rows)) | dict(stage.about(rows))
        )
        return rows

    return _stage


STAGED = [kind for _, kind in sorted(kinds().items()) if kind.stage is not None]
"""The kinds with a stage of their own: one asset each, made from the table of kinds."""
KIND_STAGES = [kind_stage(kind) for kind in STAGED]


@dg.asset(
    **chain_asset("run_metrics"),
    ins={kind.stage.table: dg.AssetIn(kind.stage.table, dagster_type=dg.Nothing) for kind in STAGED},
)
def run_metrics(
    context: dg.AssetExecutionContext,
    suite: list[SuiteRow],
    agent_replies: list[ReplyRow],
    statuses: list[StatusRow],
    calibration: list[CalibrationRow],
    io_manager: dg.ResourceParam[ParquetStore],
) -> list[MetricRow]:
    """Every figure of the run, one row each in one shape (name, value, interval, method): its kind's (an accuracy and
    its interval, a regression's moves, a pairwise win rate, ...), then in a judged run each group's and criterion's
    judged-fail rate, observed and corrected for the judge's measured error, and the corrected pass rate.

    Query a kind's figures under their own names through its view:
    `kindgi-eval sql "SELECT run_id, accuracy, accuracy_low, accuracy_high FROM accuracy_runs"`; the judged rates:
    `kindgi-eval sql "SELECT calibration_group, criterion, name, value, low, high, note FROM run_metrics WHERE name LIKE 'judged%'"`.
    """
    kind = kind_named(suite[0].suite_kind)
    own = (
        io_manager.upstream(context, kind.stage.table) if kind.stage else ()
    )  # a run of one kind starts no other's stage
    return [*kind.report.metrics(KindRows(suite, agent_replies, own)), *judged_rate_rows(statuses, calibration)]


@dg.asset(**chain_asset("run_summary"))
def run_summary(
    context: dg.AssetExecutionContext,
    suite: list[SuiteRow],
    agent_replies: list[ReplyRow],
    judge_samples: list[SampleRow],
    statuses: list[StatusRow],
    calibration: list[CalibrationRow],
    run_metrics: list[MetricRow],
    eval_settings: EvalSettings,
    clients: RunClients,
    io_manager: dg.ResourceParam[ParquetStore],
) -> list[RunRow]:
    """The run in one row: lineage, counts per status, costs, funnel coverage and its kind's parameters; the `runs` view.

    A resumed run also names the killed run it finished and how many agent and judge calls that run's recordings saved.
    Query: `kindgi-eval sql "SELECT run_id, suite, started_at, passed, failed, judged_fail, agent_usd, judge_usd FROM runs ORDER BY started_at"`.
    """
    settings = _settings(context, eval_settings)
    tenant = _inputs(lambda: clients.tenant(settings)).tenant
    record = context.instance.get_run_record_by_id(context.run.run_id)
    started = record.start_time if record and record.start_time else time.time()
    root = io_manager.root()
    resumed_from, agent_saved, judge_saved = resume_summary(
        context, root, agent_replies, judge_samples, kind_named(suite[0].suite_kind).stage
    )
    row = run_row(
        suite,
        agent_replies,
        judge_samples,
        statuses,
        stages=tenant.stage_names(),
        judge=settings.judge_model,
        judge_prompt_hash=template_hash() if settings.judge_model else None,
        code_version=code_version(),
        replies_from=input_run(context.instance, root, "agent_replies", context.partition_key, context.run),
        started_at=_iso(started),
        finished_at=_iso(time.time()),
        resumed_from=resumed_from,
        agent_calls_saved=agent_saved,
        judge_calls_saved=judge_saved,
        metrics=run_metrics,
    )
    earlier = earlier_runs(root, context.partition_key, context.run.run_id, row.started_at, NIGHTS - 1)
    context.add_output_metadata(
        history_metadata(
            [*earlier, (context.run.run_id, row, calibration)], context.partition_key, result_of(row, run_metrics)
        )
    )
    return [row]


def _settings(context: dg.AssetExecutionContext, eval_settings: EvalSettings) -> RunSettings:
    """This partition's settings; a problem with them fails the step with the problem's words, not a traceback."""
    return _inputs(lambda: eval_settings.for_partition(context.partition_key))


def _judged(
    context: dg.AssetExecutionContext,
    settings: RunSettings,
    clients: RunClients,
    io_manager: ParquetStore,
    asset: str,
    step,
    *inputs,
    **options,
):
    """`step(*inputs, calibration, ...)`, a stage that pays the judge: given the suite folder's calibration items as
    they are now (so a replay is graded on today's labels), the tenant's catalogue and the run's limits, what the
    killed runs this run finishes recorded of `asset`, and where to record each new row as it arrives; `options` go
    to `step` as they are (the judge stage's `batch`)."""
    with recording(context, io_manager.root(), asset, _manifest(context, settings, clients)) as (done, record):
        return step(
            *inputs,
            _inputs(lambda: load_suite(settings.eval_dir, models_of=models_of)).calibration,
            catalogue=_inputs(lambda: clients.tenant(settings)).tenant.catalogue_text(),
            concurrency=settings.concurrency,
            timeout_s=settings.model_timeout_s,
            progress=_progress_logger(context),
            done=done,
            record=record,
            **options,
        )


def _manifest(context: dg.AssetExecutionContext, settings: RunSettings, clients: RunClients) -> Manifest:
    """What a paid stage records its rows under (`resume.manifest_now`), with the tenant's hash as this run read it."""
    return _inputs(lambda: manifest_now(context, settings, clients.tenant(settings).hash))


def _figures(kind: SuiteKind, suite: list[SuiteRow], rows: KindRows) -> dict[str, object]:
    """A kind's figures and parameters as its stage's metadata, under the names of its view's columns (the figures it
    has no value for left out), so they plot night over night."""
    figures = figures_of(kind, kind.report.metrics(rows), kind.report.params(suite))
    return {name: value for name, value in figures.items() if value is not None}


def _inputs(read):
    """`read()`, with an InputError turned into a Dagster Failure that lists every problem."""
    try:
        return read()
    except InputError as e:
        raise dg.Failure(description="\n".join(str(p) for p in e.problems)) from None


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def _progress_logger(context: dg.AssetExecutionContext):
    """Log `done/total counted` at most once a second, and at the end of each count."""
    last = 0.0

    def report(counted: str, done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if done == total or now - last >= 1.0:
            last = now
            context.log.info(f"{done}/{total} {counted}")

    return report


CHAIN = [suite, agent_replies, outcomes, judge_samples, calibration, statuses, *KIND_STAGES, run_metrics, run_summary]
