"""Where the kinds meet the rules every suite shares, through the real command line and the registry over HTTP:
the statuses (docs/design.md#statuses), the partition a run is stored under, a stored spec checked again, a copy edited
by hand, a machine without a sandbox, and a judge that cannot be called."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kindgi_eval.registry import EvalSuite, database_url, open_store
from kindgi_eval_tests.cli.conftest import TENANT, publish, sql
from kindgi_eval_tests.conftest import GOLDEN, files_under, run_cli
from kindgi_eval_tests.fake_provider import Answer
from kindgi_eval_tests.registry.conftest import golden_spec

JUDGED_ITEM = {
    "cases": [{"input": "how much is the foundation course?", "expectedOutput": "$450"}],
    "grader": {"adapterId": "judge"},
}


def run(*args: str, tmp_path: Path, env: dict[str, str] | None = None):
    out = tmp_path / "summary.json"
    out.unlink(missing_ok=True)
    done = run_cli("run", *args, "--json", str(out), env=env)
    return done, json.loads(out.read_text()) if out.exists() else None


# statuses


@pytest.mark.parametrize("judge", [[], ["--judge-model", "mock:judge"]], ids=["no-judge", "uncalibrated-judge"])
def test_a_judge_graded_accuracy_item_nothing_graded_is_reviewed_never_passed_016(
    registry, home, tmp_path, judge
) -> None:
    publish(registry.http, "demo-academy.judged", "accuracy", JUDGED_ITEM)
    done, summary = run("--mock", "--suite", "demo-academy.judged", *judge, tmp_path=tmp_path)
    assert done.code == 0, done.err
    assert summary["counts"]["passed"] == 0 and summary["counts"]["reviewed"] == 1
    assert summary["accuracy"]["ungraded"] == 1 and summary["accuracy"]["value"] is None  # counted on neither side
    assert "0 passed" in done.out and "1 reviewed" in done.out
    assert "Funnel coverage" not in done.out  # an accuracy item enters no funnel


# partitions


@pytest.mark.parametrize("base_id", ["demo-academy.Conv.Two", "demo-academy.sales.pricing"])
def test_a_baseline_named_by_suite_and_version_is_found_whatever_its_id(registry, home, tmp_path, base_id) -> None:
    cases = golden_spec()["cases"][:3]
    publish(registry.http, base_id, "conversation", {"cases": cases})
    done, base = run("--mock", "--suite", base_id, tmp_path=tmp_path)
    assert done.code == 0, done.err
    assert f"(demo-academy@{base_id.lower()}, hash" in done.out  # the partition the run header names
    publish(
        registry.http,
        "demo-academy.checked",
        "regression",
        {"baseline": {"suiteId": base_id, "version": "1.0.0"}, "cases": cases},
    )
    done, checked = run("--mock", "--suite", "demo-academy.checked", tmp_path=tmp_path)
    assert done.code == 0, done.err
    assert checked["regression"]["baseline_run"] == base["run_id"]


def test_a_registry_suite_and_a_folder_of_the_same_name_never_share_a_partition(registry, home, tmp_path) -> None:
    publish(registry.http, "demo-academy.golden", "conversation", {"cases": golden_spec()["cases"][:2]})
    assert run_cli("run", "--mock", "--suite", "demo-academy.golden").code == 0
    assert run_cli("run", "--mock", "--eval-dir", str(GOLDEN)).code == 0
    rows = sql("SELECT suite, suite_id FROM runs ORDER BY suite")
    assert rows == [
        {"suite": "demo-academy.golden", "suite_id": None},
        {"suite": "demo-academy@demo-academy.golden", "suite_id": "demo-academy.golden"},
    ]
    # each has one run: there is nothing to compare, rather than two different suites compared as one
    for key in ("demo-academy.golden", "demo-academy@demo-academy.golden"):
        done = run_cli("diff", "--suite", key)
        assert done.code == 2 and f"suite {key!r} has 1 run" in done.err


def test_diff_says_first_when_the_two_runs_evaluated_different_suite_content(registry, home, tmp_path) -> None:
    cases = golden_spec()["cases"][:3]
    publish(registry.http, "demo-academy.Moving", "conversation", {"cases": cases})
    assert run_cli("run", "--mock", "--suite", "demo-academy.Moving").code == 0
    publish(registry.http, "demo-academy.Moving", "conversation", {"cases": cases[:2]}, version="1.1.0")
    assert run_cli("run", "--mock", "--suite", "demo-academy.Moving").code == 0
    done = run_cli("diff", "--suite", "demo-academy.Moving")  # a registry suite named by its id
    assert done.code == 0, done.err
    third = done.out.splitlines()[2]
    assert third.startswith("Suite: different content (sha256 ") and "so changes below may be the suite's" in third
    assert "the judge's" not in done.out
    assert json.loads(run_cli("diff", "--suite", "demo-academy.Moving", "--json").out)["same_suite"] is False


# the version in force, as published


def test_an_edited_copy_of_a_registry_version_is_written_again_before_it_runs(registry, home, tmp_path) -> None:
    cases = golden_spec()["cases"][:2]
    publish(registry.http, "demo-academy.kept", "conversation", {"cases": cases})
    done, first = run("--mock", "--suite", "demo-academy.kept", tmp_path=tmp_path)
    assert done.code == 0 and "written again" not in done.err
    (copy,) = Path(home.root, "registry-suites").rglob("cases.jsonl")
    published = copy.read_bytes()
    copy.write_text(json.dumps(dict(cases[0], must_contain=["never said"])) + "\n")  # an edit the version does not hold
    done, again = run("--mock", "--suite", "demo-academy.kept", tmp_path=tmp_path)
    assert done.code == 0, done.out  # the published cases ran, not the edited one
    assert f"warning: {copy.parent} is not what suite demo-academy.kept 1.0.0 holds" in done.err
    assert "written again from the registry" in done.err
    assert copy.read_bytes() == published and again["suite"]["hash"] == first["suite"]["hash"]
    assert [c["id"] for c in again["cases"]] == [c["id"] for c in cases]


EARLIER_FIELDS = (
    "baseline_run_id",
    "baseline_suite_id",
    "baseline_version",
    "benchmark_name",
    "benchmark_version",
    "benchmark_hash",
    "handler_hash",
    "reviewer_role",
    "variant_a_id",
    "variant_a_version",
    "variant_b_id",
    "variant_b_version",
)


def test_a_folder_an_earlier_release_wrote_keeps_its_kind_s_parameters_and_is_not_written_again(
    registry, home, tmp_path
) -> None:
    cases = golden_spec()["cases"][:2]
    publish(registry.http, "demo-academy.base", "conversation", {"cases": cases})
    done, base = run("--mock", "--suite", "demo-academy.base", tmp_path=tmp_path)
    assert done.code == 0, done.err
    publish(registry.http, "demo-academy.held", "regression", {"baseline": {"runId": base["run_id"]}, "cases": cases})
    assert run("--mock", "--suite", "demo-academy.held", tmp_path=tmp_path)[0].code == 0
    (record,) = Path(home.root, "registry-suites").rglob("demo-academy.held/**/registry.json")
    written = json.loads(record.read_text())
    # the shape releases before `params` wrote: each kind's parameter a field of its own, every one of them present
    earlier = {
        **{k: v for k, v in written.items() if k != "params"},
        **dict.fromkeys(EARLIER_FIELDS),
        "rubric": [],
        **written["params"],
    }
    assert earlier["baseline_run_id"] == base["run_id"]
    record.write_text(json.dumps(earlier) + "\n")
    done, summary = run("--mock", "--suite", "demo-academy.held", tmp_path=tmp_path)
    assert done.code == 0, done.err
    assert "written again" not in done.err and json.loads(record.read_text()) == earlier
    assert summary["regression"]["baseline_run"] == base["run_id"]  # the baseline read from the earlier shape


@pytest.mark.parametrize(
    ("kind", "spec", "path"),
    [
        (
            "accuracy",
            {"cases": [{"input": "hi", "expectedOutput": "x"}, {"input": 5, "expectedOutput": "y"}]},
            "spec.cases[1].input",
        ),
        (
            "pairwise",
            {
                "prompts": ["hi"],
                "variantA": {"agentId": "a", "version": "1"},
                "variantB": {"agentId": "a", "version": "1"},
            },
            "spec.variantB",
        ),
    ],
)
def test_a_stored_spec_that_no_longer_passes_its_check_is_exit_2_naming_its_path(
    home, tmp_path, kind, spec, path
) -> None:
    # stored as an older release of the check would have let it through: straight into the store, past the API
    store = open_store(database_url(home.root))
    token = store.issue_token(TENANT, "test")
    store.publish(
        TENANT,
        token.id,
        EvalSuite(id="demo-academy.stale", tenantId=TENANT, version="1.0.0", kind=kind, description="", spec=spec),
    )
    store.close()
    done, summary = run("--mock", "--suite", "demo-academy.stale", tmp_path=tmp_path)
    assert done.code == 2 and summary is None, done.out + done.err
    assert f"error: suite demo-academy.stale 1.0.0: {path}" in done.err and "Traceback" not in done.err
    assert files_under(home.store) == []


# what must hold before anything runs


def test_a_custom_suite_on_a_machine_without_a_sandbox_is_exit_2_before_any_agent_call(
    registry, home, tmp_path, provider_env
) -> None:
    server = provider_env(lambda request: Answer(json.dumps({"messages": ["hi"], "escalate": False, "reason": None})))
    source = "def grade(case, reply):\n    return {'pass': True, 'reason': 'ok'}\n"
    cases = [{"id": "one", "text": "hi", "expect": {"escalate": False}}]
    publish(
        registry.http,
        "demo-academy.handled",
        "custom",
        {"handler": {"modulePath": "h.py", "entrypointPath": "grade", "source": source}, "cases": cases},
    )
    bare = tmp_path / "bin"  # a PATH with Python but neither bubblewrap nor prlimit
    bare.mkdir()
    done, summary = run(
        "--agent-model", "openai:agent", "--suite", "demo-academy.handled", tmp_path=tmp_path, env={"PATH": str(bare)}
    )
    assert done.code == 2 and summary is None, done.out + done.err
    (line,) = done.err.splitlines()
    assert (
        line.startswith("error: custom handler: bwrap and prlimit not found on PATH")
        and "apt-get install bubblewrap" in line
    )
    assert server.requests == [] and files_under(home.store) == []


def test_a_judge_without_its_key_is_exit_2_naming_the_variable(home, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    done = run_cli("run", "--mock", "--judge-model", "openai:gpt-4o-mini")
    assert done.code == 2
    assert done.err == (
        "error: --judge-model: openai:gpt-4o-mini needs its key in OPENAI_API_KEY, which is not set: every "
        "call would be refused. Set OPENAI_API_KEY, or name another judge.\n"
    )
    assert files_under(home.store) == []


def test_a_judge_refusing_every_call_is_named_down_and_its_groups_say_why(home, tmp_path, provider_env) -> None:
    server = provider_env(lambda request: Answer(status=401, raw_body=b'{"error": {"message": "invalid api key"}}'))
    suite = tmp_path / "golden"
    shutil.copytree(GOLDEN, suite)
    done, summary = run("--mock", "--eval-dir", str(suite), "--judge-model", "openai:judge", tmp_path=tmp_path)
    # docs/design.md#fail-closed: a judge outage never crashes the run, and turns nothing red
    assert done.code == 0, done.err
    items = {c["group"]: c for c in _calibration_rows()}
    drawn = 3 * sum(c["items"] for c in items.values())
    assert len(server.requests) == drawn  # one attempt per sample: a refused key is never retried
    assert (
        f"Judge openai:judge was down for the whole run: {drawn} of {drawn} samples invalid ({drawn} refused credentials)"
        in done.out
    )
    for group, row in items.items():
        n = 3 * row["items"]
        assert row["invalid_samples"] == n
        assert (
            summary["calibration"][group]["note"]
            == f"Not calibrated: {n} of {n} samples invalid: {n} refused credentials."
        )
    assert summary["counts"]["judged-pass"] == 0 and summary["counts"]["judged-fail"] == 0
    first = next(line for line in done.out.splitlines() if line.startswith("First judge error"))
    assert first.startswith(f"First judge error (refused credentials, {drawn} calls): ") and "sk-test" not in first


def test_a_judge_answering_404_is_named_with_its_first_error(home, tmp_path, provider_env) -> None:
    provider_env(
        lambda request: Answer(status=404, raw_body=b'{"error": {"message": "no route /v1/v1/chat/completions"}}')
    )
    done, _ = run("--mock", "--judge-model", "openai:judge", tmp_path=tmp_path)
    assert done.code == 0, done.err
    (first,) = [line for line in done.out.splitlines() if line.startswith("First ")]  # the agent (the demo) met none
    assert (
        first.startswith("First judge error (provider error, ")
        and "404" in first
        and "/v1/v1/chat/completions" in first
    )


def _calibration_rows() -> list[dict]:
    return sql('SELECT "group", items, invalid_samples FROM calibration')


def test_a_baseline_stored_under_the_partition_of_earlier_releases_is_still_found(registry, home, tmp_path) -> None:
    # before registry suites had partitions of their own, demo-academy.base was stored as the folder `base` would be
    cases = golden_spec()["cases"][:3]
    publish(registry.http, "demo-academy.base", "conversation", {"cases": cases})
    done, base = run("--mock", "--suite", "demo-academy.base", tmp_path=tmp_path)
    assert done.code == 0, done.err
    for folder in home.store.glob("*/suite=demo-academy@demo-academy.base"):
        folder.rename(folder.with_name("suite=demo-academy.base"))
    publish(
        registry.http,
        "demo-academy.checked",
        "regression",
        {"baseline": {"suiteId": "demo-academy.base", "version": "1.0.0"}, "cases": cases},
    )
    done, checked = run("--mock", "--suite", "demo-academy.checked", tmp_path=tmp_path)
    assert done.code == 0, done.err
    assert checked["regression"]["baseline_run"] == base["run_id"]
