"""The `suite` stage: a parsed suite folder as rows."""

from __future__ import annotations

from collections.abc import Mapping

from kindgi_eval.inputs import Suite
from kindgi_eval.store import SuiteRow, params_json


def suite_rows(
    suite: Suite, tenant: str, config_hash: str, params: Mapping[str, object] | None = None
) -> list[SuiteRow]:
    """The parsed suite as rows, each item kept as canonical JSON so later stages rebuild it exactly, each naming the
    kind's parameters as the run resolved them as it started (a regression suite's baseline run, ...)."""
    registered = suite.registered
    common = dict(
        tenant=tenant,
        eval_dir=suite.eval_dir,
        suite_hash=suite.hash,
        config_hash=config_hash,
        suite_id=registered.suite_id if registered else None,
        suite_version=registered.suite_version if registered else None,
        suite_kind=suite.kind,
        params=params_json(params or {}),
    )
    rows = [
        SuiteRow(
            kind="case",
            id=case.id,
            line=line,
            text=case.text,
            nudge=case.nudge,
            funnel_stage=case.entry_stage,
            course=case.contact.course if case.contact else None,
            review=list(case.review_criteria),
            body=case.model_dump_json(),
            **common,
        )
        for case, line in zip(suite.cases, suite.case_lines, strict=True)
    ]
    rows += [
        SuiteRow(
            kind="scenario",
            id=scenario.id,
            line=line,
            text=scenario.moves[0] if scenario.moves else "",
            nudge=False,
            funnel_stage=scenario.entry_stage,
            course=scenario.contact.course if scenario.contact else None,
            review=list(scenario.review_criteria),
            body=scenario.model_dump_json(),
            **common,
        )
        for scenario, line in zip(suite.scenarios, suite.scenario_lines, strict=True)
    ]
    rows += [
        SuiteRow(
            kind="calibration",
            id=item.id,
            line=0,
            text=item.text,
            nudge=False,
            funnel_stage=None,
            course=None,
            review=[item.labelled_on],
            body=item.model_dump_json(),
            **common,
        )
        for item in suite.calibration
    ]
    rows += [  # a custom suite's handler, source and all, so the chain runs what was published
        SuiteRow(
            kind=f.kind,
            id=f.id,
            line=0,
            text="",
            nudge=False,
            funnel_stage=None,
            course=None,
            review=[],
            body=f.body,
            **common,
        )
        for f in suite.kind_files
    ]
    return rows
