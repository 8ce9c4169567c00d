"""What the Dagster UI shows of a materialisation: numbers it plots, reports to read, and tables narrow enough for its
metadata column (long text is clipped there, and stands whole in the reports and in `kindgi-eval sql`)."""

from collections.abc import Sequence

import dagster as dg
from pydantic import BaseModel

from kindgi_eval.inputs import TAG_RESULT, TAG_SUITE, TAG_TENANT
from kindgi_eval.kinds import KindResult
from kindgi_eval.reports import (
    escape_md,
    group_rates,
    judge_error_text,
    kind_lines,
    pass_rate,
    pass_rate_corrected,
    run_result,
    summary_rate_lines,
    verdicts_markdown,
)
from kindgi_eval.rules import FAILING, STATUSES, Case, Scenario, clip, judge_was_down
from kindgi_eval.store import CalibrationRow, MetricRow, ReplyRow, RunRow, SampleRow, StatusRow, arrow_schema

CELL_CHARS = 60
"""Where a table cell's text is clipped, so that no column of a table is squeezed to a word a line."""


def column_schema(row: type[BaseModel]) -> dg.TableSchema:
    """A stored table's columns as the UI lists them: each field of its row model, typed, with its docstring."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(field.name, str(field.type), description=row.model_fields[field.name].description or "")
            for field in arrow_schema(row)
        ]
    )


VERDICT_COLUMNS = dg.TableSchema(
    columns=[
        dg.TableColumn("case", "string", description="The case id."),
        dg.TableColumn("criterion", "string", description="The criterion judged, clipped."),
        dg.TableColumn(
            "verdict",
            "string",
            description="The majority verdict, `split 2-1` when it stands 2-1, and the samples' votes.",
        ),
    ]
)
FAILED_COLUMNS = dg.TableSchema(
    columns=[
        dg.TableColumn("case", "string", description="The case id."),
        dg.TableColumn(
            "failures", "string", description="The assertions that failed (an agent's error among them), clipped."
        ),
    ]
)
CALIBRATION_COLUMNS = dg.TableSchema(
    columns=[
        dg.TableColumn("group", "string"),
        dg.TableColumn("items", "int"),
        dg.TableColumn(
            "agreement", "float", description="Empty when the group has no items; its lower bound is in `notes`."
        ),
        dg.TableColumn(
            "sensitivity", "float", description="The share of graded fail labels the judge failed; empty without one."
        ),
        dg.TableColumn(
            "specificity", "float", description="The share of graded pass labels the judge passed; empty without one."
        ),
        dg.TableColumn("calibrated", "bool"),
    ]
)


def verdict_records(rows: list[StatusRow]) -> list[dg.TableRecord]:
    """Every failed criterion of a judged-fail case and every split verdict, as the UI's table shows them."""
    return [
        dg.TableRecord(
            {
                "case": r.case_id,
                "criterion": clip(c.criterion, CELL_CHARS),
                "verdict": f"{c.verdict}{', split 2-1' if c.split else ''} ({', '.join(c.votes)})",
            }
        )
        for r in rows
        for c in r.criteria
        if c.split or (r.status == "judged-fail" and c.verdict == "fail")
    ]


def failed_records(rows: list[StatusRow]) -> list[dg.TableRecord]:
    """Every failed case with its failures, clipped (the verdicts report lists each one)."""
    return [
        dg.TableRecord({"case": r.case_id, "failures": clip("; ".join(r.failures), CELL_CHARS)})
        for r in rows
        if r.status == "failed"
    ]


def result_tags(rows: list[StatusRow], tenant: str, suite: str) -> dict[str, str]:
    """The tags every run carries once its statuses are known, so the Runs page shows each run's result beside its
    status and filters to the suites that fail or need a person: `failing`, `needs-review` or `passed`."""
    return {TAG_TENANT: tenant, TAG_SUITE: suite, TAG_RESULT: run_result(r.status for r in rows)}


def statuses_metadata(
    rows: list[StatusRow],
    replies: list[ReplyRow],
    samples: list[SampleRow],
    cases: list[Case | Scenario],
    run_id: str,
    rates: Sequence[MetricRow] = (),
) -> dict[str, object]:
    """What the UI shows of a `statuses` materialisation: its counts and costs (plotted by partition, each suite's
    latest run beside the others'), a report of the judged-fail and split verdicts and the failed cases, and two
    narrow tables of them; in a judged run, each group's judged-fail rate observed and corrected for the judge's error
    (as numbers, and in words), and the corrected pass rate (`rates`, the run's judged `run_metrics` rows)."""
    verdicts = verdict_records(rows)
    failed = failed_records(rows)
    metadata: dict[str, object] = {status: int(sum(r.status == status for r in rows)) for status in STATUSES}
    metadata.update(
        {
            "cases": len(rows),
            "failing": int(sum(r.status in FAILING for r in rows)),
            "split_verdicts": int(sum(c.split for r in rows for c in r.criteria)),
            "agent_usd": float(sum(r.cost_usd for r in replies)),
            "judge_usd": float(sum(s.cost_usd for s in samples)),
            "verdicts_report": dg.MetadataValue.md(verdicts_markdown(rows, cases, samples, run_id)),
            "judged_fail_and_split_verdicts": dg.MetadataValue.table(verdicts, schema=VERDICT_COLUMNS),
            "failed_cases": dg.MetadataValue.table(failed, schema=FAILED_COLUMNS),
        }
    )
    return metadata | judged_rates_metadata(rates)


def judged_rates_metadata(rates: Sequence[MetricRow]) -> dict[str, object]:
    """Each group's judged-fail rate, observed and corrected with its interval, and the corrected pass rate, as numbers
    (a figure that does not exist is left out, never shown as a number), and the summary's lines of them."""
    numbers: dict[str, object] = {}
    for rate in group_rates(rates):
        for key, row in (
            (f"judged_fail_rate/{rate.group}", rate.observed),
            (f"judged_fail_rate_corrected/{rate.group}", rate.corrected),
        ):
            numbers |= _with_interval(key, row)
    passes = pass_rate_corrected(rates)
    if passes is not None:
        numbers |= _with_interval("pass_rate_corrected", passes)
    said = summary_rate_lines(rates)
    return numbers | (
        {"judged_rates": dg.MetadataValue.md("\n\n".join(escape_md(line.strip()) for line in said))} if said else {}
    )


def _with_interval(key: str, row: MetricRow) -> dict[str, float]:
    """A figure and its bounds under `key`, `key/low` and `key/high`; nothing when it has no value."""
    if row.value is None:
        return {}
    return {key: float(row.value)} | {
        f"{key}/{part}": float(v) for part, v in (("low", row.low), ("high", row.high)) if v is not None
    }


def calibration_metadata(rows: list[CalibrationRow]) -> dict[str, object]:
    """Agreement per group as numbers, the count of groups that may grade, a table of the groups and a report of
    each group's labels, invalid samples and note."""
    metadata: dict[str, object] = {f"agreement/{r.group}": float(r.agreement) for r in rows if r.agreement is not None}
    metadata |= {f"sensitivity/{r.group}": float(r.sensitivity) for r in rows if r.sensitivity is not None}
    metadata |= {f"specificity/{r.group}": float(r.specificity) for r in rows if r.specificity is not None}
    metadata["calibrated_groups"] = int(sum(r.calibrated for r in rows))
    metadata["judge_down"] = judge_was_down(rows)  # no calibration sample was valid: the judge was never heard from
    metadata["groups"] = dg.MetadataValue.table(
        [
            dg.TableRecord(
                {
                    "group": r.group,
                    "items": int(r.items),
                    "agreement": None if r.agreement is None else round(float(r.agreement), 3),
                    "sensitivity": None if r.sensitivity is None else round(float(r.sensitivity), 3),
                    "specificity": None if r.specificity is None else round(float(r.specificity), 3),
                    "calibrated": bool(r.calibrated),
                }
            )
            for r in rows
        ],
        schema=CALIBRATION_COLUMNS,
    )
    metadata["notes"] = dg.MetadataValue.md(
        "\n\n".join(
            f"**{escape_md(r.group)}**: {r.items} items ({r.pass_labels} labelled pass, {r.fail_labels} fail); agreement "
            f"{_figure(r.agreement)} (95% lower bound {_figure(r.agreement_low)}), kappa {_figure(r.kappa)}; "
            f"{r.invalid_samples} invalid samples; the judge's {judge_error_text(r)}. {escape_md(r.note)}"
            for r in rows
        )
    )
    return metadata


def _figure(value: float | None) -> str:
    """A figure to two places, or n/a."""
    return "n/a" if value is None else f"{value:.2f}"


NIGHTS = 14
"""How many of a suite's runs the night-over-night table shows."""
HISTORY_COLUMNS = dg.TableSchema(
    columns=[
        dg.TableColumn("run", "string", description="The run id's first eight characters, and when it started (UTC)."),
        dg.TableColumn("pass_rate", "string", description="(passed + judged-pass) / all cases."),
        dg.TableColumn("statuses", "string", description="How many cases ended in each status."),
        dg.TableColumn("change", "string", description="How each status count moved against the run before."),
    ]
)


def _counts(run: RunRow) -> dict[str, int]:
    """A run's cases per status."""
    return {status: int(getattr(run, status.replace("-", "_"))) for status in STATUSES}


def _change(run: RunRow, previous: RunRow | None) -> str:
    """How each status count moved against the run before, and whether the suite's content changed in between."""
    if previous is None:
        return ""
    now, before = _counts(run), _counts(previous)
    change = ", ".join(
        f"{status} {now[status] - before[status]:+d}" for status in STATUSES if now[status] != before[status]
    )
    if run.suite_hash != previous.suite_hash:  # then the change may be the suite's, not the agent's
        return f"suite content changed; {change or 'no change'}"
    return change or "no change"


def history_metadata(
    runs: list[tuple[str, RunRow, list[CalibrationRow]]], suite: str, result: KindResult
) -> dict[str, object]:
    """This suite's last runs, oldest first, as a table with each night's change; this run's figures under keys named
    for the suite, so the UI's Plots (Events) draw each suite's own history by run time rather than mixing suites;
    and the line its kind reports of `result` (this run's), if it has one."""
    shown = runs[-NIGHTS:]
    records = [
        dg.TableRecord(
            {
                "run": f"{run_id[:8]}, {run.started_at[:16].replace('T', ' ')}",
                "pass_rate": f"{pass_rate(run):.0%}",
                "statuses": ", ".join(f"{n} {status}" for status, n in _counts(run).items() if n),
                "change": _change(run, shown[n - 1][1] if n else None),
            }
        )
        for n, (run_id, run, _) in enumerate(shown)
    ]
    _, latest, calibration = runs[-1]
    plotted: dict[str, object] = {f"{suite}/{status}": n for status, n in _counts(latest).items()}
    plotted[f"{suite}/pass_rate"] = round(pass_rate(latest), 4)
    plotted.update({f"{suite}/agreement/{c.group}": float(c.agreement) for c in calibration if c.agreement is not None})
    plotted[f"{suite}/agent_usd"] = float(latest.agent_usd)
    plotted[f"{suite}/judge_usd"] = float(latest.judge_usd)
    said = kind_lines(result)
    return {
        "nights": dg.MetadataValue.table(records, schema=HISTORY_COLUMNS),
        **plotted,
        **({"kind_result": dg.MetadataValue.text("\n".join(said))} if said else {}),
    }
