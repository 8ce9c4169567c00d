"""The tenants file: each tenant suite a partition, each tenant's run confined to its own folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kindgi_eval.defs.resources import EvalSettings
from kindgi_eval.defs.runs import open_instance
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.inputs.tenant_file import DEMO_CONFIG_DIR
from kindgi_eval.inputs.tenants_file import TENANTS_ENV, default_tenants, load_tenants
from kindgi_eval.rules.errors import InputError
from kindgi_eval.store.layout import SHARED, read_rows
from kindgi_eval_tests.conftest import GOLDEN, REPO


def tenant_tree(root: Path, name: str, suites: dict[str, Path | None] | None = None) -> Path:
    """`<root>/<name>/` holding `config/tenant.toml` (the demo tenant renamed) and `evals/<suite>/` copies."""
    home = root / name
    (home / "config").mkdir(parents=True)
    toml = (DEMO_CONFIG_DIR / "tenant.toml").read_text().replace('tenant = "demo-academy"', f'tenant = "{name}"')
    (home / "config" / "tenant.toml").write_text(toml)
    for suite, source in (suites or {"golden": GOLDEN}).items():
        if source is not None:
            shutil.copytree(source, home / "evals" / suite)
    return home


def toml_value(value: object) -> str:
    """A str, number or list of str as TOML (JSON's strings and arrays are valid TOML)."""
    return json.dumps(value)


def write_tenants(path: Path, *entries: dict) -> Path:
    """A tenants file with one [[tenant]] table per entry, keys in the order given."""
    tables = ["[[tenant]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in e.items()) for e in entries]
    path.write_text("\n".join(tables))
    return path


def entry(name: str, **fields: object) -> dict:
    """An entry for a tree made by tenant_tree, with the mock agent unless told otherwise."""
    fields = {
        "name": name,
        "home": name,
        "config": "config",
        "suites": ["evals/golden"],
        "agent_model": "mock:agent",
        **fields,
    }
    return {k: v for k, v in fields.items() if v is not None}  # None leaves the key out


@pytest.fixture
def two_tenants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tenants alpha (two suites, a judge) and beta (one suite), declared in `tmp/tenants.toml` = KINDGI_TENANTS."""
    tenant_tree(tmp_path, "alpha", {"golden": GOLDEN, "pricing": GOLDEN})
    tenant_tree(tmp_path, "beta")
    path = write_tenants(
        tmp_path / "tenants.toml",
        entry("alpha", suites=["evals/golden", "evals/pricing"], judge_model="openai:gpt-4o", concurrency=3),
        entry("beta", agent_model=None, agent_url="https://agent.beta.example/turn"),
    )
    monkeypatch.setenv(TENANTS_ENV, str(path))
    return path


def test_every_tenant_suite_is_a_partition_in_file_order(two_tenants: Path) -> None:
    tenants = load_tenants()
    assert tenants.keys == ["alpha.golden", "alpha.pricing", "beta.golden"]
    alpha = tenants.suite("alpha.pricing")
    assert alpha.eval_dir == (two_tenants.parent / "alpha" / "evals" / "pricing").resolve()
    assert alpha.config_dir == (two_tenants.parent / "alpha" / "config").resolve()
    assert alpha.tags() == {
        "kindgi/tenant": "alpha",
        "kindgi/suite": "alpha.pricing",
        "kindgi/agent_provider": "mock",
        "kindgi/judge_provider": "openai",
    }
    assert tenants.suite("beta.golden").tags()["kindgi/agent_provider"] == "agent.beta.example"


def test_a_suite_runs_with_its_own_tenants_settings(two_tenants: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_DIR", "/somewhere/else")  # never consulted for a tenant suite
    monkeypatch.setenv("AGENT_MODEL", "openai:not-this-one")
    monkeypatch.setenv("EVAL_MAX_LATENCY_MS", "1234")  # tuning the entry leaves unset falls back to its variable
    settings = EvalSettings().for_partition("alpha.golden")
    home = (two_tenants.parent / "alpha").resolve()
    assert settings == RunSettings(
        eval_dir=str(home / "evals" / "golden"),
        config_dir=str(home / "config"),
        agent_model="mock:agent",
        judge_model="openai:gpt-4o",
        concurrency=3,
        max_latency_ms=1234,
    )
    beta = EvalSettings().for_partition("beta.golden")
    assert (beta.agent_url, beta.agent_model, beta.judge_model) == ("https://agent.beta.example/turn", None, None)


def test_launchpad_fields_override_the_tenant_but_not_its_folders(two_tenants: Path) -> None:
    replay = EvalSettings(judge_model="openai:gpt-4.1").for_partition("alpha.golden")
    assert replay.judge_model == "openai:gpt-4.1" and replay.concurrency == 3
    assert EvalSettings(agent_model="mock:agent").for_partition("beta.golden").agent_name == "mock:agent"
    assert not {"eval_dir", "config_dir"} & set(EvalSettings.model_fields)  # nothing to point elsewhere


def test_pinned_settings_are_the_clis_whatever_the_partition(two_tenants: Path) -> None:
    settings = RunSettings(eval_dir="x/y", agent_model="mock:agent", judge_model="mock:judge")
    assert EvalSettings.of(settings).for_partition("anything.at-all") == settings


def test_an_undeclared_suite_is_refused_naming_the_file(two_tenants: Path) -> None:
    with pytest.raises(InputError) as refused:
        EvalSettings().for_partition("gamma.golden")
    assert str(refused.value) == (
        f"{two_tenants}: suite 'gamma.golden' is not declared here (declared: alpha.golden, alpha.pricing, beta.golden). "
        f"Add it to a tenant's suites, or point KINDGI_TENANTS at the file that declares it."
    )


def test_a_partial_read_leaves_out_each_entry_with_a_problem_and_keeps_the_others(tmp_path: Path) -> None:
    for name in ("alpha", "beta", "gamma"):
        tenant_tree(tmp_path, name)
    path = write_tenants(
        tmp_path / "tenants.toml",
        entry("alpha", judge_modle="openai:gpt-4o"),  # a typo in a key
        entry("beta"),
        {**entry("gamma"), "name": 7},  # no name to go by: named by its place
        entry("delta"),  # a home that does not exist
    )
    tenants = load_tenants(path, partial=True)
    assert tenants.keys == ["beta.golden"]
    assert [(s.tenant, [p.field for p in s.problems]) for s in tenants.skipped] == [
        ("alpha", ["tenant[0].judge_modle"]),
        ("tenant[2]", ["tenant[2].name"]),
        ("delta", ["tenant[3].home"]),
    ]
    assert (
        tenants.skipped[0].reason()
        == f"{path}:7: field tenant[0].judge_modle: unknown field (a typo? unknown fields are refused so they never pass silently)"
    )
    with pytest.raises(InputError) as strict:  # read whole (the default), the same file is every problem at once
        load_tenants(path)
    assert [p.field for p in strict.value.problems] == ["tenant[0].judge_modle", "tenant[2].name", "tenant[3].home"]


def test_a_left_out_tenants_run_fails_with_its_entrys_problems_and_the_others_start(two_tenants: Path) -> None:
    two_tenants.write_text(two_tenants.read_text().replace("concurrency = 3", "concurency = 3"))
    with pytest.raises(InputError, match=r"tenant\[0\]\.concurency: "):
        EvalSettings().for_partition("alpha.golden")
    assert EvalSettings().for_partition("beta.golden").agent_url == "https://agent.beta.example/turn"


def test_without_a_tenants_file_the_demo_golden_suite_is_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TENANTS_ENV, raising=False)
    monkeypatch.chdir(REPO)
    tenants = load_tenants()
    assert tenants.keys == ["demo-academy.golden"]
    settings = tenants.suite("demo-academy.golden").settings(environ={})
    assert settings == RunSettings(eval_dir=str(GOLDEN.resolve()), config_dir=None, agent_model="mock:agent")
    assert default_tenants(REPO) == tenants


def test_a_suite_outside_the_tenants_home_is_refused(tmp_path: Path) -> None:
    tenant_tree(tmp_path, "alpha")
    tenant_tree(tmp_path, "beta")
    path = write_tenants(tmp_path / "tenants.toml", entry("alpha", suites=["evals/golden", "../beta/evals/golden"]))
    with pytest.raises(InputError) as refused:
        load_tenants(path)
    beta = (tmp_path / "beta" / "evals" / "golden").resolve()
    assert str(refused.value) == (
        f"{path}:5: field tenant[0].suites[1]: tenant alpha: '../beta/evals/golden' resolves to {beta}, "
        f"outside the tenant's home {(tmp_path / 'alpha').resolve()}. Keep a tenant's suites under its home."
    )


@pytest.mark.parametrize(
    "fields, field, says",
    [
        (
            {"config": "/etc"},
            "config",
            "'/etc' resolves to /etc, outside the tenant's home",
        ),  # absolute: still confined
        ({"suites": ["evals/link"]}, "suites[0]", "'evals/link' resolves to"),  # a symlink is followed, then checked
        ({"home": "alpha/evals"}, "home", "overlaps tenant alpha's home"),  # homes may not nest
    ],
)
def test_every_way_out_of_a_tenants_folder_is_refused(tmp_path: Path, fields: dict, field: str, says: str) -> None:
    tenant_tree(tmp_path, "alpha")
    tenant_tree(tmp_path, "beta")
    (tmp_path / "beta" / "evals" / "link").symlink_to(tmp_path / "alpha" / "evals" / "golden")
    path = write_tenants(tmp_path / "tenants.toml", entry("alpha"), entry("beta", **fields))
    with pytest.raises(InputError) as refused:
        load_tenants(path)
    problem = refused.value.problems[0]  # a nested home is refused first; its other paths may be wrong too
    assert problem.field == f"tenant[1].{field}" and says in problem.message, problem


def test_every_problem_in_the_file_is_reported_at_once(tmp_path: Path) -> None:
    tenant_tree(tmp_path, "alpha")
    path = tmp_path / "tenants.toml"
    path.write_text(
        "\n".join(
            [
                "[[tenant]]",
                'name = "Alpha"',  # 2: not a slug
                'home = "alpha"',
                'suites = ["evals/golden"]',
                'agent_modle = "mock:agent"',  # 5: a typo is refused, never ignored
                "",
                "[[tenant]]",
                'name = "beta"',
                'home = "beta"',  # 9: no such folder
                'suites = ["evals/golden"]',
                "",
                "[[tenant]]",
                'name = "gamma"',
                'home = "alpha/../gamma-missing"',
                "suites = []",  # 15: no suite
            ]
        )
    )
    with pytest.raises(InputError) as refused:
        load_tenants(path)
    where = [(p.line, p.field) for p in refused.value.problems]
    assert where == [
        (2, "tenant[0].name"),
        (5, "tenant[0].agent_modle"),
        (15, "tenant[2].suites"),
        (9, "tenant[1].home"),
    ]


def test_an_entry_needs_an_agent_a_config_and_valid_models(tmp_path: Path) -> None:
    tenant_tree(tmp_path, "alpha")
    path = write_tenants(
        tmp_path / "tenants.toml",
        {"name": "alpha", "home": "alpha", "suites": ["evals/golden"], "judge_model": "gpt-4o"},
    )
    with pytest.raises(InputError) as refused:
        load_tenants(path)
    assert [(p.field, p.message.split(":")[0]) for p in refused.value.problems] == [
        ("tenant[0].config", "tenant alpha"),
        ("tenant[0].agent_model", "tenant alpha"),
        ("tenant[0].judge_model", "tenant alpha"),
    ]
    assert "only demo-academy may leave it out" in refused.value.problems[0].message
    assert "write provider:model" in refused.value.problems[2].message


def test_a_run_reads_its_own_tenants_configuration(home, two_tenants: Path) -> None:
    """The partition alone picks the tenant: its tenant.toml, its suite, its agent; no EVAL_DIR, no CONFIG_DIR."""
    from kindgi_eval.defs.definitions import defs

    instance = open_instance(home.root)
    instance.add_dynamic_partitions("suites", ["beta.golden"])
    (two_tenants.parent / "tenants.toml").write_text(
        two_tenants.read_text().replace('agent_url = "https://agent.beta.example/turn"', 'agent_model = "mock:agent"')
    )
    result = defs.resolve_job_def("evaluate_suite").execute_in_process(instance=instance, partition_key="beta.golden")
    assert result.success
    assert result.dagster_run.tags["kindgi/tenant"] == "beta"  # a run of the job by hand is tagged like the schedule's
    rows = read_rows(home.store, SHARED.suite, "beta.golden", result.run_id)
    assert {r.tenant for r in rows} == {"beta"}
    assert {r.eval_dir for r in rows} == {str((two_tenants.parent / "beta" / "evals" / "golden").resolve())}


def test_a_tenant_named_unlike_its_configuration_fails_its_run_clearly(home, tmp_path: Path, monkeypatch) -> None:
    from kindgi_eval.defs.definitions import defs

    tenant_tree(tmp_path, "alpha")
    (tmp_path / "alpha" / "config" / "tenant.toml").write_text(
        (DEMO_CONFIG_DIR / "tenant.toml").read_text()
    )  # says demo-academy
    monkeypatch.setenv(TENANTS_ENV, str(write_tenants(tmp_path / "tenants.toml", entry("alpha"))))
    instance = open_instance(home.root)
    instance.add_dynamic_partitions("suites", ["alpha.golden"])
    result = defs.resolve_job_def("evaluate_suite").execute_in_process(
        instance=instance, partition_key="alpha.golden", raise_on_error=False
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "partition alpha.golden was asked for, but the suite is demo-academy.golden" in str(
        failure.event_specific_data.error.message
    )
    assert [e.asset_key for e in result.get_asset_materialization_events()] == []  # nothing ran on a wrong config


def test_every_tenants_run_reads_the_deployments_gateway_from_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TENANTS_ENV, raising=False)
    monkeypatch.chdir(REPO)
    suite = load_tenants().suite("demo-academy.golden")
    assert (
        suite.settings(environ={"KINDGI_GATEWAY_URL": "http://kindgi-gateway:4000"}).gateway_url
        == "http://kindgi-gateway:4000"
    )
    assert suite.settings(environ={}).gateway_url is None


@pytest.mark.parametrize(
    ("declared", "environ", "batch", "tagged"),
    [
        (None, {}, False, False),  # off by default
        (None, {"EVAL_JUDGE_BATCH": "true"}, True, False),  # the deployment's variable turns it on, and tags no run
        (True, {}, True, True),  # a tenant's own `judge_batch` turns it on and tags its runs for the run queue
        (False, {"EVAL_JUDGE_BATCH": "true"}, False, False),  # the tenant's word wins over the variable
    ],
)
def test_a_tenant_s_judge_batch_is_its_runs_setting_and_tag(tmp_path: Path, declared, environ, batch, tagged) -> None:
    tenant_tree(tmp_path, "alpha")
    path = write_tenants(
        tmp_path / "tenants.toml", entry("alpha", judge_model="openai:gpt-4o-mini", judge_batch=declared)
    )
    suite = load_tenants(path).suite("alpha.golden")
    assert suite.settings(environ=environ).judge_batch is batch
    assert ("kindgi/judge_batch" in suite.tags()) is tagged


def test_a_judge_batch_that_is_not_true_or_false_is_refused(tmp_path: Path) -> None:
    tenant_tree(tmp_path, "alpha")
    path = write_tenants(tmp_path / "tenants.toml", entry("alpha", judge_model="openai:gpt-4o-mini"))
    with pytest.raises(InputError) as e:
        load_tenants(path).suite("alpha.golden").settings(environ={"EVAL_JUDGE_BATCH": "maybe"})
    assert "'maybe' must be true or false" in str(e.value.problems[0].message)
