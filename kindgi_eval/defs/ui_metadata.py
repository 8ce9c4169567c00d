"""What the Dagster UI shows of a materialisation: numbers it plots night over night, and tables to read."""

import dagster as dg
from pydantic import BaseModel

from kindgi_eval.inputs import TAG_RESULT, TAG_SUITE, TAG_TENANT
from kindgi_eval.reports import verdicts_markdown
from kindgi_eval.spec import FAILING, STATUSES, Case, judge_was_down
from kindgi_eval.store import CalibrationRow, ReplyRow, RunRow, SampleRow, StatusRow, arrow_schema

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
        dg.TableColumn("criterion", "string", description="The criterion judged."),
        dg.TableColumn("votes", "string", description="The three samples' votes."),
        dg.TableColumn("evidence", "string", description="The span of the reply the judge quoted."),
        dg.TableColumn("reason", "string", description="The judge's reason."),
        dg.TableColumn("verdict", "string", description="The majority verdict."),
        dg.TableColumn("split", "bool", description="True when the verdict stands 2-1."),
        dg.TableColumn("status", "string", description="The case's status."),
    ]
)
FAILED_COLUMNS = dg.TableSchema(
    columns=[
        dg.TableColumn("case", "string", description="The case id."),
        dg.TableColumn("failures", "string", description="The assertions that failed, one per line."),
        dg.TableColumn("error", "string", description="The agent's error, if any."),
    ]
)
CALIBRATION_COLUMNS = dg.TableSchema(
    columns=[
        dg.TableColumn("group", "string"),
        dg.TableColumn("items", "int"),
        dg.TableColumn("pass_labels", "int"),
        dg.TableColumn("fail_labels", "int"),
        dg.TableColumn("agreement", "float", description="Empty when the group has no items."),
        dg.TableColumn("agreement_low", "float", description="The agreement's Wilson 95% lower bound: how little a few labels prove."),
        dg.TableColumn("kappa", "float"),
        dg.TableColumn("invalid_samples", "int", description="Samples drawn on the group's items that were invalid."),
        dg.TableColumn("calibrated", "bool"),
        dg.TableColumn("note", "string"),
    ]
)


def verdict_records(rows: list[StatusRow]) -> list[dg.TableRecord]:
    """Every failed criterion of a judged-fail case and every split verdict, as the UI's table shows them."""
    return [
        dg.TableRecord(
            {
                "case": r.case_id,
                "criterion": c.criterion,
                "votes": ", ".join(c.votes),
                "evidence": c.evidence,
                "reason": c.reason,
                "verdict": c.verdict,
                "split": bool(c.split),
                "status": r.status,
            }
        )
        for r in rows
        for c in r.criteria
        if c.split or (r.status == "judged-fail" and c.verdict == "fail")
    ]


def failed_records(rows: list[StatusRow]) -> list[dg.TableRecord]:
    """Every failed case with its failures."""
    return [
        dg.TableRecord({"case": r.case_id, "failures": "\n".join(r.failures), "error": r.error or ""})
        for r in rows
        if r.status == "failed"
    ]


def result_tags(rows: list[StatusRow], tenant: str, suite: str) -> dict[str, str]:
    """The tags every run carries once its statuses are known, so the Runs page filters to failing suites."""
    failing = any(r.status in FAILING for r in rows)
    return {TAG_TENANT: tenant, TAG_SUITE: suite, TAG_RESULT: "failing" if failing else "passed"}


def statuses_metadata(
    rows: list[StatusRow], replies: list[ReplyRow], samples: list[SampleRow], cases: list[Case], run_id: str
) -> dict[str, object]:
    """What the UI shows of a `statuses` materialisation: numbers it plots night over night, a report of the
    judged-fail and split verdicts and the failed cases, and two tables."""
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
    return metadata


def calibration_metadata(rows: list[CalibrationRow]) -> dict[str, object]:
    """Agreement per group as numbers the UI plots, the count of groups that may grade, and the whole table."""
    metadata: dict[str, object] = {
        f"agreement/{r.group}": float(r.agreement) for r in rows if r.agreement is not None
    }
    metadata["calibrated_groups"] = int(sum(r.calibrated for r in rows))
    metadata["judge_down"] = judge_was_down(rows)  # no calibration sample was valid: the judge was never heard from
    metadata["groups"] = dg.MetadataValue.table(
        [
            dg.TableRecord(
                {
                    "group": r.group,
                    "items": int(r.items),
                    "pass_labels": int(r.pass_labels),
                    "fail_labels": int(r.fail_labels),
                    "agreement": float(r.agreement) if r.agreement is not None else None,
                    "agreement_low": float(r.agreement_low) if r.agreement_low is not None else None,
                    "kappa": float(r.kappa) if r.kappa is not None else None,
                    "invalid_samples": int(r.invalid_samples),
                    "calibrated": bool(r.calibrated),
                    "note": r.note,
                }
            )
            for r in rows
        ],
        schema=CALIBRATION_COLUMNS,
    )
    return metadata


NIGHTS = 14
"""How many of a suite's runs the night-over-night table shows."""
HISTORY_COLUMNS = dg.TableSchema(
    columns=[
        dg.TableColumn("date", "string", description="The UTC day the run started."),
        dg.TableColumn("run", "string", description="The run id's first eight characters."),
        *(dg.TableColumn(status, "int") for status in STATUSES),
        dg.TableColumn("ungraded", "int", description="Criteria the judge left ungraded."),
        dg.TableColumn("agreement", "string", description="Agreement per calibration group; empty without a judge."),
        dg.TableColumn("agent_usd", "float"),
        dg.TableColumn("judge_usd", "float"),
        dg.TableColumn("change", "string", description="How each status count moved against the run before."),
    ]
)


def history_metadata(runs: list[tuple[str, RunRow, list[CalibrationRow]]], suite: str) -> dict[str, object]:
    """This suite's last runs, oldest first, as a table with each night's change, and this run's counts under
    keys named for the suite, so the UI plots each suite on its own line rather than mixing tenants."""
    records = []
    previous: RunRow | None = None
    for run_id, run, calibration in runs[-NIGHTS:]:
        counts = {status: int(getattr(run, status.replace("-", "_"))) for status in STATUSES}
        change = ""
        if previous is not None:
            moved = [
                f"{status} {counts[status] - getattr(previous, status.replace('-', '_')):+d}"
                for status in STATUSES
                if counts[status] != getattr(previous, status.replace("-", "_"))
            ]
            change = ", ".join(moved) or "no change"
            if run.suite_hash != previous.suite_hash:  # then the change may be the suite's, not the agent's
                change = f"suite content changed; {change}"
        agreement = ", ".join(f"{c.group} {c.agreement:.2f}" for c in calibration if c.agreement is not None)
        records.append(
            dg.TableRecord(
                {
                    "date": run.started_at[:10],
                    "run": run_id[:8],
                    **counts,
                    "ungraded": int(run.ungraded),
                    "agreement": agreement,
                    "agent_usd": float(run.agent_usd),
                    "judge_usd": float(run.judge_usd),
                    "change": change,
                }
            )
        )
        previous = run
    _, latest, _ = runs[-1]
    plotted = {f"{suite}/{status}": int(getattr(latest, status.replace("-", "_"))) for status in STATUSES}
    plotted[f"{suite}/agent_usd"] = float(latest.agent_usd)
    plotted[f"{suite}/judge_usd"] = float(latest.judge_usd)
    return {"nights": dg.MetadataValue.table(records, schema=HISTORY_COLUMNS), **plotted}
