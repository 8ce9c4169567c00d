"""A suite folder's limits as a run reads it: a folder over its tenant's limits is bad input (exit 2) naming the file
and line, a run over its call budget stops before its first call, and the tenants file raises both for one tenant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kindgi_eval.inputs import tenants_limits
from kindgi_eval.rules import InputError, SuiteLimits
from kindgi_eval_tests.conftest import files_under, run_cli

TENANT = "demo-academy"
"""The tenant `run --mock` runs for: the packaged demo tenant's configuration."""


def folder(tmp_path: Path, cases: int, review: list[str] | None = None) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir()
    lines = [
        {"id": f"c{n}", "text": "How much?", "expect": {"escalate": False}, **({"review": review} if review else {})}
        for n in range(cases)
    ]
    (suite / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return suite


def tenants_file(tmp_path: Path, limits: str) -> dict[str, str]:
    path = tmp_path / "tenants.toml"
    path.write_text(f'[[tenant]]\nname = "{TENANT}"\nhome = "."\n\n[tenant.limits]\n{limits}\n')
    return {"KINDGI_TENANTS": str(path)}


def test_a_folder_over_the_case_limit_is_bad_input_naming_its_line(tmp_path: Path, home) -> None:
    suite = folder(tmp_path, 5_001)
    result = run_cli("run", "--mock", "--eval-dir", str(suite))
    assert result.code == 2 and "Traceback" not in result.err
    assert f"error: {suite / 'cases.jsonl'}:5001: is case 5,001 of the suite, which may hold 5,000" in result.err
    assert "[tenant.limits]" in result.err
    assert result.out == "" and files_under(home.root) == []


def test_the_tenants_file_raises_a_limit_for_its_tenant(tmp_path: Path, home) -> None:
    suite = folder(tmp_path, 1, ["x" * 2_500])
    refused = run_cli("run", "--mock", "--eval-dir", str(suite))
    assert refused.code == 2 and "has a criterion of 2,500 characters" in refused.err
    raised = run_cli("run", "--mock", "--eval-dir", str(suite), env=tenants_file(tmp_path, "criterion_chars = 3000"))
    assert raised.code != 2 and "criterion" not in raised.err, raised.err


def test_a_run_over_its_call_budget_stops_before_its_first_call(tmp_path: Path, home) -> None:
    suite = folder(tmp_path, 40)
    result = run_cli("run", "--mock", "--eval-dir", str(suite), env=tenants_file(tmp_path, "model_calls = 30"))
    assert result.code == 2 and "Traceback" not in result.err
    assert (
        f"error: {suite}: a run of it may make 40 model calls (40 to the agent, 0 to the judge), more than the 30 a run "
        "may make; nothing was called."
    ) in result.err
    assert result.out == "" and files_under(home.root) == []
    within = run_cli("run", "--mock", "--eval-dir", str(suite), env=tenants_file(tmp_path, "model_calls = 40"))
    assert within.code == 0, within.err


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        ("cases = 0", "tenant[0].limits.cases"),
        ('cases = "many"', "tenant[0].limits.cases"),
        ("calls = 3", "tenant[0].limits.calls"),
    ],
    ids=["zero", "not-a-number", "unknown"],
)
def test_a_bad_limit_in_the_tenants_file_is_named(tmp_path: Path, limits: str, field: str) -> None:
    with pytest.raises(InputError) as refused:
        tenants_limits(tenants_file(tmp_path, limits))
    (problem,) = refused.value.problems
    assert problem.field == field and problem.file == str(tmp_path / "tenants.toml")


def test_without_a_tenants_file_every_tenant_has_the_defaults(tmp_path: Path) -> None:
    assert tenants_limits({}) == {}
    assert tenants_limits(tenants_file(tmp_path, "cases = 9000")) == {TENANT: SuiteLimits(cases=9_000)}
