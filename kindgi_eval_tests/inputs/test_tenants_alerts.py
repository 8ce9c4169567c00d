"""A tenants file's `alerts` and `alert_on`, per tenant and under `[defaults]`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kindgi_eval.inputs import load_tenants
from kindgi_eval.rules import InputError
from kindgi_eval_tests.inputs.test_tenants_file import entry, tenant_tree, write_tenants


def tenants(tmp_path: Path, *entries: dict, defaults: str = "") -> Path:
    for e in entries:
        if not (tmp_path / e["name"]).exists():
            tenant_tree(tmp_path, e["name"])
    path = write_tenants(tmp_path / "tenants.toml", *entries)
    path.write_text(path.read_text() + defaults)
    return path


def test_a_tenant_without_alerts_of_its_own_takes_the_defaults(tmp_path: Path) -> None:
    path = tenants(
        tmp_path,
        entry("alpha", alerts=["ALPHA_HOOK"], alert_on=["run_failed"]),
        entry("beta"),
        entry("gamma", alerts=[]),
        defaults='\n[defaults]\nalerts = ["OPS_HOOK"]\nalert_on = ["new_failures", "missing_run"]\n',
    )
    found = {s.tenant: (s.entry.alerts, s.entry.alert_on) for s in load_tenants(path).suites}
    assert found == {
        "alpha": (["ALPHA_HOOK"], ["run_failed"]),
        "beta": (["OPS_HOOK"], ["new_failures", "missing_run"]),
        "gamma": ([], ["new_failures", "missing_run"]),  # an empty list of its own: no webhook, not the defaults'
    }


def test_without_alerts_a_tenant_has_none(tmp_path: Path) -> None:
    (suite,) = load_tenants(tenants(tmp_path, entry("alpha"))).suites
    assert (suite.entry.alerts, suite.entry.alert_on) == (None, None)


@pytest.mark.parametrize(
    ("fields", "defaults", "field", "said"),
    [
        ({"alerts": ["acme hook"]}, "", "tenant[0].alerts[0]", "'acme hook' is not an environment variable's name"),
        ({"alerts": ["https://hooks.example.com/T/secret-part"]}, "", "tenant[0].alerts[0]", "holds a URL"),
        ({"alert_on": ["new_failure"]}, "", "tenant[0].alert_on[0]", "input should be"),
        ({}, '\n[defaults]\nalerts = "OPS_HOOK"\n', "defaults.alerts", "valid list"),
        ({}, '\n[defaults]\nalert = ["OPS_HOOK"]\n', "defaults.alert", "unknown field"),
    ],
)
def test_bad_alerts_name_the_field(tmp_path: Path, fields: dict, defaults: str, field: str, said: str) -> None:
    with pytest.raises(InputError) as refused:
        load_tenants(tenants(tmp_path, entry("alpha", **fields), defaults=defaults))
    (problem,) = refused.value.problems
    assert problem.field == field and said in problem.message and "secret-part" not in str(refused.value)
