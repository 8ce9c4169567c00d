"""What the Dagster UI shows of a materialisation: numbers it plots night over night, and tables to read."""

import dagster as dg

from kindgi_eval.spec import FAILING, STATUSES
from kindgi_eval.store import CalibrationRow, ReplyRow, SampleRow, StatusRow

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
        dg.TableColumn("kappa", "float"),
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


def statuses_metadata(rows: list[StatusRow], replies: list[ReplyRow], samples: list[SampleRow]) -> dict[str, object]:
    """What the UI shows of a `statuses` materialisation: numbers it plots night over night, and two tables."""
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
    metadata["groups"] = dg.MetadataValue.table(
        [
            dg.TableRecord(
                {
                    "group": r.group,
                    "items": int(r.items),
                    "pass_labels": int(r.pass_labels),
                    "fail_labels": int(r.fail_labels),
                    "agreement": float(r.agreement) if r.agreement is not None else None,
                    "kappa": float(r.kappa) if r.kappa is not None else None,
                    "calibrated": bool(r.calibrated),
                    "note": r.note,
                }
            )
            for r in rows
        ],
        schema=CALIBRATION_COLUMNS,
    )
    return metadata
