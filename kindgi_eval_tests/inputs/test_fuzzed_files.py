"""Any bytes in a suite's files, a tenant.toml or a tenants file give a parsed result or an input error that names the
file, never a traceback (property-based, with hypothesis). Each strategy mixes raw bytes with near-misses of the real
shapes (the packaged files with lines dropped, repeated or replaced), which reach far deeper than noise does."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kindgi_eval.cli.main import main
from kindgi_eval.inputs import load_suite, load_tenant, load_tenants
from kindgi_eval.kinds import models_of
from kindgi_eval.rules import InputError
from kindgi_eval_tests.conftest import GOLDEN, REPO

EXAMPLES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEMO_TOML = (REPO / "kindgi_eval" / "demo_tenant" / "tenant.toml").read_text().splitlines()
CASE_LINES = (GOLDEN / "cases.jsonl").read_text().splitlines()
CALIBRATION_LINES = (GOLDEN / "calibration.jsonl").read_text().splitlines()
TENANTS_LINES = [
    "[[tenant]]",
    'name = "demo-academy"',
    'home = "."',
    'suites = ["evals/golden"]',
    'agent_model = "mock:agent"',
    'judge_model = "mock:judge"',
    "concurrency = 4",
    "max_latency_ms = 1000",
    'config = "config"',
    'agent_url = "http://x"',
]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
CASE_KEYS = [
    "id",
    "text",
    "history",
    "expect",
    "nudge",
    "contact",
    "must_contain",
    "must_not_contain",
    "must_end_with_question",
    "max_lines",
    "review",
    "reply",
    "criterion",
    "label",
    "must_contains",
]


def near(lines: list[str], noise: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """The lines of a real file, some dropped, repeated or swapped for noise, as UTF-8."""
    line = st.sampled_from(lines) | noise
    return st.lists(line, max_size=12).map(lambda chosen: ("\n".join(chosen) + "\n").encode())


def file_bytes(lines: list[str], noise: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    return (
        st.binary(max_size=300)
        | near(lines, noise)
        | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass"))
    )


JSON_LINE = st.dictionaries(st.sampled_from(CASE_KEYS) | st.text(max_size=5), JSON, max_size=6).map(
    json.dumps
) | JSON.map(json.dumps)
TOML_LINE = st.builds(
    lambda k, v: f"{k} = {v}",
    st.sampled_from(["tenant", "name", "max_lines", "after_stage", "x", "[persona]"]),
    JSON.map(json.dumps),
) | st.text(max_size=30)


def assert_located(error: InputError, *files: str) -> None:
    """An input error lists at least one problem, and every problem names one of the files (or their folder)."""
    assert error.problems
    for problem in error.problems:
        assert any(problem.file.startswith(f) or f.startswith(problem.file) for f in files), problem


@EXAMPLES
@given(cases=file_bytes(CASE_LINES, JSON_LINE), calibration=st.none() | file_bytes(CALIBRATION_LINES, JSON_LINE))
def test_any_suite_files_parse_or_are_refused_with_the_file_named(cases: bytes, calibration: bytes | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "cases.jsonl").write_bytes(cases)
        if calibration is not None:
            (Path(folder) / "calibration.jsonl").write_bytes(calibration)
        try:
            suite = load_suite(folder, models_of=models_of)
        except InputError as e:
            assert_located(e, str(Path(folder) / "cases.jsonl"), str(Path(folder) / "calibration.jsonl"))
        else:
            assert suite.cases and len(suite.hash) == 64


@EXAMPLES
@given(content=file_bytes(DEMO_TOML, TOML_LINE))
def test_any_tenant_toml_parses_or_is_refused_with_the_file_named(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "tenant.toml").write_bytes(content)
        try:
            load_tenant(folder)
        except InputError as e:
            assert_located(e, folder)


@EXAMPLES
@given(content=file_bytes(TENANTS_LINES, TOML_LINE))
def test_any_tenants_file_parses_or_is_refused_with_the_file_named(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tenants.toml"
        path.write_bytes(content)
        try:
            load_tenants(path)
        except InputError as e:
            assert_located(e, str(path), folder)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=file_bytes(CASE_LINES, JSON_LINE), toml=st.none() | file_bytes(DEMO_TOML, TOML_LINE))
def test_validate_exits_0_or_2_with_error_lines_and_never_a_traceback(cases: bytes, toml: bytes | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "cases.jsonl").write_bytes(cases)
        args = ["validate", folder]
        if toml is not None:
            (Path(folder) / "tenant.toml").write_bytes(toml)
            args += ["--config-dir", folder]
        result = CliRunner().invoke(main, args)
        assert result.exit_code in (0, 2), result.output
        assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
        assert "Traceback" not in result.output
        if result.exit_code == 2:
            assert all(line.startswith("error: ") for line in result.stderr.splitlines()), result.stderr
