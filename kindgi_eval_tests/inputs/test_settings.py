"""Settings are resolved once, at the edge, and the resolved values are the ones a run uses and records."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from kindgi_eval.agents.factory import OFFLINE
from kindgi_eval.defs.resources import EvalSettings, pinned_settings
from kindgi_eval.defs.runs import open_instance
from kindgi_eval.inputs.settings import SETTINGS, RunSettings, resolve_settings
from kindgi_eval.inputs.tenants_file import TenantEntry
from kindgi_eval.rules.errors import InputError
from kindgi_eval.rules.model_names import checked_model
from kindgi_eval_tests.conftest import GOLDEN, REPO, files_under, run_cli
from kindgi_eval_tests.defs.test_judged_runs import Judge, calibration_lines, case, write_suite
from kindgi_eval_tests.defs.test_schedules import NIGHT, tenants  # noqa: F401 - the fixture

DEAD_AGENT = "http://127.0.0.1:9/agent"  # nothing listens on the discard port


def sql_json(query: str) -> list[dict]:
    result = run_cli("sql", query, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def run_id_of(result) -> str:
    line = next(line for line in result.err.splitlines() if line.startswith("run "))
    return line.split()[1]


# --- resolution (pure) ------------------------------------------------------------------------------------------


def test_mock_means_the_demo_agent_whatever_the_variables_say() -> None:
    environ = {"AGENT_URL": DEAD_AGENT, "AGENT_MODEL": "openai:gpt-4o-mini"}
    settings = resolve_settings({}, environ, mock=True)
    assert (settings.agent_model, settings.agent_url) == ("mock:agent", None)
    # without --mock the URL is the agent, and the model it outranks is not carried along
    settings = resolve_settings({}, environ)
    assert (settings.agent_model, settings.agent_url) == (None, DEAD_AGENT)


def test_a_bad_variable_is_not_read_when_mock_replaces_it() -> None:
    assert resolve_settings({}, {"AGENT_URL": "not a url"}, mock=True).agent_model == "mock:agent"
    with pytest.raises(InputError, match="AGENT_URL: 'not a url' must be an http"):
        resolve_settings({}, {"AGENT_URL": "not a url"})


def test_pinned_settings_are_used_as_they_are_and_the_environment_is_not_read_again(monkeypatch) -> None:
    # The defect: the CLI checked the mock agent, then the asset resolved AGENT_URL from the environment again.
    settings = resolve_settings({}, {}, mock=True)
    monkeypatch.setenv("AGENT_URL", DEAD_AGENT)
    monkeypatch.setenv("EVAL_CONCURRENCY", "3")
    assert EvalSettings.of(settings).for_partition("demo-academy.golden") == settings


def test_the_settings_table_names_every_field_of_each_face() -> None:
    # The resource and the tenants file declare their fields for Dagster and pydantic; they must not drift.
    fields = {s.field for s in SETTINGS}
    assert fields == set(RunSettings.model_fields)
    assert {s.field for s in SETTINGS if s.per_tenant} <= set(EvalSettings.model_fields)  # what a launchpad may set
    assert {s.field for s in SETTINGS if s.per_tenant} <= set(TenantEntry.model_fields)


@pytest.mark.parametrize(
    ("name", "role", "message"),
    [
        (
            "mock:judgee",
            "judge",
            "'mock:judgee' is not an offline judge; the offline judges are mock:judge and mock:demo-judge.",
        ),
        ("mock:agnt", "agent", "'mock:agnt' is not an offline agent; the offline agent is mock:agent."),
        (
            "mock:agent",
            "judge",
            "'mock:agent' is not an offline judge; the offline judges are mock:judge and mock:demo-judge "
            "(mock:agent is the offline agent).",
        ),
        ("mock:judge", "agent", "'mock:judge' is not an offline agent"),
        ("nosuchprovider:x", "judge", "'nosuchprovider' in 'nosuchprovider:x' is not a provider litellm knows"),
        ("gpt4", "judge", "'gpt4' is not a model name"),
    ],
)
def test_agent_and_judge_names_are_checked_alike(name: str, role, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        checked_model(name, role, offline=OFFLINE, known_provider={"openai", "anthropic"})
    assert message in str(refused.value)
    assert checked_model("openai:gpt-4o", role, offline=OFFLINE, known_provider={"openai"}).provider == "openai"


# --- the edges: the command line, the schedule ------------------------------------------------------------------


def test_run_mock_ignores_agent_url_and_runs_the_demo_agent(home) -> None:
    result = run_cli("run", "--mock", env={"AGENT_URL": DEAD_AGENT, "AGENT_MODEL": "openai:gpt-4o-mini"})
    assert result.code == 0, result.err
    assert result.out == (Path(__file__).parents[1] / "expected" / "golden_mock.txt").read_text()
    (row,) = sql_json(f"SELECT agent FROM runs WHERE run_id = '{run_id_of(result)}'")
    assert row["agent"] == "mock:agent"


def test_mock_beside_another_agent_flag_is_a_usage_error(home) -> None:
    result = run_cli("run", "--mock", "--agent-url", DEAD_AGENT)
    assert result.code == 2
    assert result.err.startswith("error: --mock: names the offline demo agent")
    assert files_under(home.store) == []


@pytest.mark.parametrize(
    ("judge", "message"),
    [
        (
            "mock:judgee",
            "error: --judge-model: 'mock:judgee' is not an offline judge; the offline judges are mock:judge and mock:demo-judge.",
        ),
        (
            "nosuchprovider:x",
            "error: --judge-model: 'nosuchprovider' in 'nosuchprovider:x' is not a provider litellm knows.",
        ),
    ],
)
def test_a_judge_that_cannot_be_called_is_an_input_error_and_nothing_is_written(home, judge: str, message: str) -> None:
    result = run_cli("run", "--mock", "--judge-model", judge)
    assert result.code == 2
    assert result.err.startswith(message), result.err
    assert files_under(home.store) == []


def test_an_agent_provider_litellm_does_not_know_is_an_input_error(home) -> None:
    result = run_cli("run", "--agent-model", "nosuchprovider:x")
    assert result.code == 2
    assert "not a provider litellm knows" in result.err and files_under(home.store) == []


def test_the_same_model_warning_compares_the_judge_with_the_agent_that_runs(home, tmp_path: Path) -> None:
    # AGENT_URL is the agent, so a judge equal to AGENT_MODEL is not the agent's own model: no warning.
    folder = write_suite(tmp_path / "s", [case("one")], None)
    env = {
        "AGENT_URL": DEAD_AGENT,
        "AGENT_MODEL": "openai:same",
        "EVAL_MODEL_TIMEOUT_S": "2",
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
    }
    result = run_cli("run", "--eval-dir", str(folder), "--judge-model", "openai:same", env=env)
    assert result.code == 1, result.err  # the dead agent fails the case: an error never counts as a pass
    assert "warning: the judge is the agent's own model" not in result.err
    result = run_cli("run", "--eval-dir", str(folder), "--agent-model", "mock:agent", "--judge-model", "mock:agent")
    assert result.code == 2  # and mock:agent is no judge at all


def test_replay_s_help_shows_where_its_suite_folder_comes_from() -> None:
    text = " ".join(run_cli("replay", "--help").out.split())
    assert "[default: the source run's suite folder; EVAL_DIR is not read]" in text
    assert "[env: EVAL_DIR; default: evals/golden]" not in text


def test_help_shows_types_ranges_variables_and_defaults() -> None:
    text = " ".join(run_cli("run", "--help").out.split())  # as read, whatever the wrapping
    assert "--concurrency INTEGER RANGE" in text and "1<=x<=1024" in text
    assert "[env: EVAL_CONCURRENCY; default: 8]" in text
    assert "--max-latency-ms FLOAT RANGE" in text and "[env: EVAL_MAX_LATENCY_MS; default: 15000]" in text
    assert "--judge-model PROVIDER:MODEL" in text and "Example" in text
    bad = run_cli("run", "--mock", "--concurrency", "0")
    assert bad.code == 2 and "0 is not in the range 1<=x<=1024" in bad.err
    listing = run_cli("--help").out.split("Commands:")[1]
    assert "..." not in listing  # no summary is cut off
    version = run_cli("--version")
    assert version.code == 0 and version.out.startswith("kindgi-eval, version ")


def test_schedule_requests_carry_the_settings_resolved_at_the_tick(home, tenants: Path, monkeypatch) -> None:  # noqa: F811
    from kindgi_eval.defs.definitions import defs
    from kindgi_eval.inputs.tenants_file import load_tenants

    monkeypatch.setenv("EVAL_CONCURRENCY", "3")
    context = dg.build_schedule_context(instance=open_instance(home.root), scheduled_execution_time=NIGHT)
    requests = list(defs.resolve_schedule_def("nightly_suites")(context))
    declared = {s.key: s for s in load_tenants().suites}
    for request in requests:
        pinned = pinned_settings(request.tags)
        assert pinned is not None and pinned.concurrency == 3
        resolved = EvalSettings.of(pinned).for_partition(request.partition_key)
        assert resolved == declared[request.partition_key].settings()
    monkeypatch.setenv("EVAL_CONCURRENCY", "5")  # a later change of the environment does not reach a requested run
    assert EvalSettings.of(pinned_settings(requests[0].tags)).for_partition(requests[0].partition_key).concurrency == 3


# --- replay calibrates against the set of the suite it re-judges ------------------------------------------------


def test_replay_calibrates_against_the_re_judged_suites_own_set(home, tmp_path: Path, monkeypatch) -> None:
    from kindgi_eval_tests.fake_provider import FakeProvider

    # A suite outside evals/golden whose calibration set differs from the golden one in every group's count.
    items = calibration_lines() + [
        {
            "id": "extra-pass",
            "text": "hi",
            "reply": ["A fine reply."],
            "criterion": "implicit_concession",
            "label": "pass",
        }
    ]
    folder = write_suite(tmp_path / "pricing", [case("one"), case("two", "criterion-pass")], items)
    expected = {"implicit_concession": 3, "semantic_repetition": 2, "answers_the_question": 2, "free_text": 2}
    with FakeProvider(Judge()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        first = run_cli("run", "--mock", "--eval-dir", str(folder), "--judge-model", "openai:fake-judge")
        assert first.code == 0, first.err
        source = run_id_of(first)
        # EVAL_DIR pointing at the golden set must not be consulted: the replay re-judges this suite
        replayed = run_cli(
            "replay", "--from", source, "--judge-model", "openai:fake-judge-2", env={"EVAL_DIR": str(GOLDEN)}
        )
        assert replayed.code == 0, replayed.err
        new = run_id_of(replayed)
        for run_id in (source, new):
            groups = sql_json(f"SELECT \"group\", items, calibrated FROM calibration WHERE run_id = '{run_id}'")
            assert {g["group"]: g["items"] for g in groups} == expected
            assert all(g["calibrated"] for g in groups)
        # --eval-dir names another set, and that one is read as it is now
        other = write_suite(
            tmp_path / "other" / "pricing", [case("one"), case("two", "criterion-pass")], calibration_lines()
        )
        again = run_cli("replay", "--from", source, "--judge-model", "openai:fake-judge-2", "--eval-dir", str(other))
        assert again.code == 0, again.err
        groups = sql_json(f"SELECT \"group\", items FROM calibration WHERE run_id = '{run_id_of(again)}'")
        assert {g["group"]: g["items"] for g in groups}["implicit_concession"] == 2
        (judged,) = sql_json(f"SELECT judge FROM runs WHERE run_id = '{new}'")
        assert judged["judge"] == "openai:fake-judge-2"
        assert {r["model"] for r in server.requests} == {"fake-judge", "fake-judge-2"}


def test_replay_of_another_tenants_run_remembers_its_configuration(home, tmp_path: Path) -> None:
    config = tmp_path / "acme"
    config.mkdir()
    demo = (REPO / "kindgi_eval/demo_tenant/tenant.toml").read_text()
    (config / "tenant.toml").write_text(demo.replace('tenant = "demo-academy"', 'tenant = "acme"'))
    source = run_id_of(run_cli("run", "--mock", "--config-dir", str(config)))
    remembered = run_cli(
        "replay", "--from", source[:8], "--judge-model", "mock:judge"
    )  # the source run's folder, as recorded
    assert remembered.code == 0, remembered.err
    (row,) = sql_json(f"SELECT tenant FROM runs WHERE run_id = '{run_id_of(remembered)}'")
    assert row["tenant"] == "acme"
    refused = run_cli(
        "replay", "--from", source, "--judge-model", "mock:judge", "--config-dir", str(REPO / "kindgi_eval/demo_tenant")
    )
    assert refused.code == 2
    assert f"error: --config-dir: run {source} evaluated tenant 'acme'" in refused.err


def test_an_empty_calibration_file_is_reported_as_holding_no_items(home, tmp_path: Path) -> None:
    folder = write_suite(tmp_path / "s", [case("one", "criterion-pass")], [])
    result = run_cli(
        "run", "--mock", "--eval-dir", str(folder), "--judge-model", "mock:judge", "--json", str(tmp_path / "s.json")
    )
    assert result.code == 0, result.err
    notes = {g["note"] for g in json.loads((tmp_path / "s.json").read_text())["calibration"].values()}
    assert notes == {"The calibration file beside the suite holds no items, so the judge grades nothing here."}


def test_no_module_but_the_settings_table_reads_a_run_settings_variable() -> None:
    # The environment is read at the edge, by resolve_settings; below it a resolved value is passed on.
    import ast

    package = REPO / "kindgi_eval"
    variables = {s.var for s in SETTINGS}
    readers = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            key = None
            if isinstance(node, ast.Subscript):
                key, subject = node.slice, node.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get", "pop", "setdefault")
                and node.args
            ):
                key, subject = node.args[0], node.func.value
            if key is None or "environ" not in ast.unparse(subject):
                continue
            names = {n.id for n in ast.walk(key) if isinstance(n, ast.Name)}
            attributes = {n.attr for n in ast.walk(key) if isinstance(n, ast.Attribute)}
            if (
                (isinstance(key, ast.Constant) and key.value in variables)
                or names & {"ENV", "SETTING", "SETTINGS"}
                or "var" in attributes
            ):
                readers.add(path.relative_to(package).as_posix())
    # kindgi_eval/__main__.py reads the model variables too, before anything is imported, only to guess whether to
    # start the litellm worker early; the run still decides from the resolved settings (test_main.py holds its names
    # to the settings table's)
    assert readers == {"inputs/settings.py", "__main__.py"}
