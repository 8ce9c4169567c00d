"""`kindgi-eval validate --tenants FILE`: the whole tenants file, every problem at once; `ui` warns of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kindgi_eval.inputs.tenants_file import TENANTS_ENV
from kindgi_eval_tests.conftest import run_cli
from kindgi_eval_tests.inputs.test_tenants_file import entry, tenant_tree, write_tenants


def test_a_good_tenants_file_validates_suite_by_suite(tmp_path: Path) -> None:
    tenant_tree(tmp_path, "alpha")
    tenant_tree(tmp_path, "beta")
    path = write_tenants(tmp_path / "tenants.toml", entry("alpha"), entry("beta"))
    done = run_cli("validate", "--tenants", str(path))
    assert (done.code, done.out) == (
        0,
        "ok: alpha.golden: 36 cases, 18 calibration items\nok: beta.golden: 36 cases, 18 calibration items\n",
    )


def test_every_problem_of_a_tenants_file_is_reported_in_one_pass(tmp_path: Path) -> None:
    tenant_tree(tmp_path, "alpha")
    tenant_tree(tmp_path, "beta")
    path = write_tenants(
        tmp_path / "tenants.toml", entry("alpha", judge_modle="openai:gpt-4o"), entry("beta", suites=["evals/nope"])
    )
    done = run_cli("validate", "--tenants", str(path))
    assert done.code == 2 and done.out == ""
    lines = done.err.splitlines()
    assert any("tenant[0].judge_modle: unknown field" in line for line in lines), done.err  # the typo, with its line
    assert any("tenant[1].suites[0]" in line and "is not a folder" in line for line in lines), (
        done.err
    )  # and the other entry's


def test_a_tenant_toml_naming_another_tenant_and_a_bad_suite_are_both_found(tmp_path: Path) -> None:
    tenant_tree(tmp_path, "alpha")
    beta = tenant_tree(tmp_path, "beta")
    (beta / "config" / "tenant.toml").write_text(
        (beta / "config" / "tenant.toml").read_text().replace('tenant = "beta"', 'tenant = "gamma"')
    )
    (tmp_path / "alpha" / "evals" / "golden" / "cases.jsonl").write_text('{"id": "x", "txt": "hi"}\n')
    path = write_tenants(tmp_path / "tenants.toml", entry("alpha"), entry("beta"))
    done = run_cli("validate", "--tenants", str(path))
    assert done.code == 2
    assert "cases.jsonl:1" in done.err and "tenant beta: its " in done.err and "names tenant 'gamma'" in done.err
    assert run_cli("validate", "evals/golden", "--tenants", str(path)).code == 2  # one or the other


def test_ui_warns_of_a_tenants_file_that_does_not_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from kindgi_eval.cli.ui import warn_of_tenants_file

    tenant_tree(tmp_path, "alpha")
    monkeypatch.setenv(TENANTS_ENV, str(write_tenants(tmp_path / "tenants.toml", entry("alpha", judge_modle="x"))))
    warn_of_tenants_file()
    err = capsys.readouterr().err
    assert err.startswith("warning: the tenants file ") and "judge_modle: unknown field" in err
    monkeypatch.setenv(TENANTS_ENV, str(write_tenants(tmp_path / "tenants.toml", entry("alpha"))))
    warn_of_tenants_file()
    assert capsys.readouterr().err == ""
