"""The accuracy, regression and benchmark kinds at publish time, through real HTTP on both backends: a suite that
cannot run is refused (422) naming its field, and nothing is stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from kindgi_eval.inputs import CALIBRATION_FILE, CASES_FILE, CATALOGUE_SEED, folder_hash, load_suite
from kindgi_eval.kinds import consumers, models_of
from kindgi_eval.registry import accepted_kinds
from kindgi_eval_tests.conftest import GOLDEN
from kindgi_eval_tests.registry.conftest import golden_spec, refused, suite, unchanged

PAIRWISE = {
    "prompts": ["how much is it?", {"id": "days", "text": "when?"}],
    "variantA": {"agentId": "champion", "version": "1"},
    "variantB": {"agentId": "challenger", "version": "2"},
    "calibration": [{"input": "price?", "replyA": ["$450"], "replyB": ["ask later"], "label": "A"}],
}
ACCURACY = {
    "cases": [{"input": "how much is the foundation course?", "expectedOutput": "$450"}],
    "grader": {"adapterId": "contains"},
}


def test_the_kinds_with_a_number_are_accepted_beside_conversation():
    assert {"accuracy", "pairwise", "regression", "human-review", "benchmark", "conversation"} <= set(
        accepted_kinds(consumers())
    )


@pytest.mark.parametrize(
    ("kind", "spec"),
    [
        ("accuracy", ACCURACY),
        (
            "accuracy",
            {
                "cases": [
                    {
                        "id": "days",
                        "input": {"text": "when?", "history": [{"role": "user", "text": "hi"}]},
                        "expectedOutput": "Tuesdays",
                    }
                ]
            },
        ),
        (
            "accuracy",
            {
                "cases": ACCURACY["cases"],
                "grader": {"adapterId": "regex", "config": {"pattern": r"\$\d+", "flags": "i"}},
            },
        ),
        (
            "accuracy",
            {
                "cases": ACCURACY["cases"],
                "grader": {"adapterId": "judge"},
                "calibration": [
                    {"input": "price?", "expectedOutput": "$450", "reply": ["It is $450."], "label": "pass"}
                ],
            },
        ),
        ("regression", {"baseline": {"runId": "3f9c2a1e-0000-4000-8000-000000000001"}, **golden_spec()}),
        ("regression", {"baseline": {"suiteId": "acme.golden", "version": "1.0.0"}, "cases": golden_spec()["cases"]}),
        ("benchmark", {"benchmark": {"name": "kindgi/golden", "version": "1.0.0"}}),
        ("pairwise", PAIRWISE),
    ],
    ids=[
        "accuracy-contains",
        "accuracy-turn",
        "accuracy-regex",
        "accuracy-judge",
        "regression-run",
        "regression-version",
        "benchmark",
        "pairwise",
    ],
)
def test_a_runnable_suite_of_each_kind_is_published(registry, caller, kind, spec) -> None:
    me = caller()
    response = me.http.post("/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.{kind}", kind=kind, spec=spec))
    assert response.status_code == 201, response.text
    assert me.http.get(f"/v1/eval-suites/{me.tenant}.{kind}").json()["suite"]["kind"] == kind


@pytest.mark.parametrize(
    ("kind", "spec", "said"),
    [
        (
            "accuracy",
            {**ACCURACY, "grader": {"adapterId": "bleu"}},
            [
                "spec.grader.adapterId: unknown grader adapter 'bleu'; this server grades with exact, contains, regex, judge."
            ],
        ),
        (
            "accuracy",
            {**ACCURACY, "grader": {"adapterId": "regex", "config": {"pattern": "(unclosed"}}},
            ["spec.grader.config.pattern: is not a regular expression RE2 accepts"],
        ),
        (
            "accuracy",
            {"cases": [{"input": "x", "expectedOutput": "[a-"}], "grader": {"adapterId": "regex"}},
            [
                "spec.cases[0].expectedOutput: is not a regular expression RE2 accepts",
                "each expectedOutput is its item's pattern",
            ],
        ),
        (
            "accuracy",
            {**ACCURACY, "grader": {"adapterId": "regex", "config": {"pattern": "x", "flags": "g"}}},
            ["spec.grader.config.flags: unknown flag 'g'"],
        ),
        (
            "accuracy",
            {**ACCURACY, "grader": {"adapterId": "exact", "config": {"caseSensitive": False}}},
            ["spec.grader.config: the exact adapter takes no configuration"],
        ),
        (
            "accuracy",
            {"cases": [{"input": 7, "expectedOutput": "x"}, {"input": "y"}]},
            [
                "spec.cases[0].input: must be the contact's message",
                "spec.cases[1].expectedOutput: required field is missing",
            ],
        ),
        (
            "accuracy",
            {"cases": [{"input": {"text": "hi", "histroy": []}, "expectedOutput": "x"}]},
            ["spec.cases[0].input.histroy: unknown field"],
        ),
        (
            "accuracy",
            {
                "cases": [
                    {"id": "a", "input": "x", "expectedOutput": "1"},
                    {"id": "a", "input": "y", "expectedOutput": "2"},
                ]
            },
            ["spec.cases[1].id: duplicate id 'a', first used as cases[0]"],
        ),
        ("accuracy", {"cases": []}, ["spec.cases: holds no items"]),
        (
            "accuracy",
            {**ACCURACY, "calibration": [{"input": "x", "expectedOutput": "1", "reply": ["1"], "label": "pass"}]},
            ["spec.calibration: calibration items grade the judge"],
        ),
        ("regression", {"cases": golden_spec()["cases"]}, ["spec.baseline: required field is missing"]),
        ("regression", {"baseline": {"runId": ""}, "cases": golden_spec()["cases"]}, ["spec.baseline.runId:"]),
        (
            "regression",
            {"baseline": {"suiteId": "acme.golden", "version": "latest"}, "cases": golden_spec()["cases"]},
            ["spec.baseline.version: 'latest' is not a semantic version"],
        ),
        # a baseline's suite id names a stored partition, and so a path: checked like the suite's own id
        (
            "regression",
            {
                "baseline": {"suiteId": "../../run_summary/suite=globex.golden", "version": "1.0.0"},
                "cases": golden_spec()["cases"],
            },
            ["spec.baseline.suiteId: '../../run_summary/suite=globex.golden' is not a suite id"],
        ),
        (
            "regression",
            {
                "baseline": {"suiteId": "https://evil.example/acme.golden", "version": "1.0.0"},
                "cases": golden_spec()["cases"],
            },
            ["spec.baseline.suiteId: 'https://evil.example/acme.golden' is not a suite id"],
        ),
        (
            "regression",
            {"baseline": {"runId": "r1"}, "cases": [{"id": "c", "text": "hi"}]},
            ["spec.baseline.runId: 'r1' is not a whole run id.", "spec.cases[0].expect: required field is missing"],
        ),
        (
            "benchmark",
            {"benchmark": {"name": "kindgi/golden", "version": "9.9.9"}},
            ["spec.benchmark: the catalogue holds no benchmark kindgi/golden 9.9.9; it holds kindgi/golden 1.0.0."],
        ),
        ("benchmark", {"benchmark": {"name": "mmlu"}}, ["spec.benchmark.version: required field is missing"]),
        (
            "pairwise",
            {**PAIRWISE, "variantB": PAIRWISE["variantA"]},
            ["spec.variantB: is the same agent and version as variantA"],
        ),
        (
            "pairwise",
            {**PAIRWISE, "variantA": {"agentId": "champion"}},
            ["spec.variantA.version: required field is missing"],
        ),
        ("pairwise", {**PAIRWISE, "prompts": []}, ["spec.prompts: must be a non-empty list"]),
        (
            "pairwise",
            {**PAIRWISE, "prompts": ["a", {"id": "p", "text": "b"}, {"id": "p", "text": "c"}]},
            ["spec.prompts[2].id: duplicate id 'p', first used as prompts[1]"],
        ),
        (
            "pairwise",
            {**PAIRWISE, "calibration": [{"input": "q", "replyA": ["a"], "replyB": ["b"], "label": "both"}]},
            ["spec.calibration[0].label: input should be 'A', 'B' or 'tie'"],
        ),
    ],
    ids=[
        "unknown-adapter",
        "bad-regex",
        "bad-item-regex",
        "bad-flag",
        "config-for-exact",
        "bad-inputs",
        "input-typo",
        "duplicate-id",
        "no-cases",
        "calibration-without-judge",
        "no-baseline",
        "empty-run-id",
        "baseline-not-semver",
        "baseline-suite-id-a-path",
        "baseline-suite-id-a-url",
        "regression-case-invalid",
        "unknown-benchmark",
        "benchmark-without-version",
        "pairwise-same-variants",
        "pairwise-variant-without-version",
        "pairwise-no-prompts",
        "pairwise-duplicate-prompt",
        "pairwise-bad-label",
    ],
)
def test_a_suite_its_consumer_cannot_run_is_refused_422_naming_the_field(registry, caller, kind, spec, said) -> None:
    me = caller()
    with unchanged(registry.store):
        message = refused(
            me.http.post("/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.{kind}", kind=kind, spec=spec)),
            422,
            "invalid",
        )
    for words in said:
        assert words in message


def _peak_rss_mib() -> float:
    """This process's peak resident memory (the server answers from a thread of it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc/self/status")


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("(?:x{2000}){2000}", "invalid repetition size"),  # a backtracking engine's compile held 0.9 GB for this
        ("(?:x{65535}){65535}", "invalid repetition size"),  # and 24 GB for this, until the OOM killer came
        (r"(\w+) \1", "invalid escape sequence"),  # a backreference: no linear-time engine matches one
        ("price(?= is)", "invalid perl operator"),  # lookahead, likewise
    ],
    ids=["nested-repeat", "nested-repeat-max", "backreference", "lookahead"],
)
def test_a_tenant_pattern_re2_cannot_take_is_refused_at_publish_in_bounded_memory(
    registry, caller, pattern, said
) -> None:
    me = caller()
    before = _peak_rss_mib()
    spec = {**ACCURACY, "grader": {"adapterId": "regex", "config": {"pattern": pattern}}}
    with unchanged(registry.store):
        message = refused(
            me.http.post("/v1/eval-suites", json=suite(me.tenant, f"{me.tenant}.re", kind="accuracy", spec=spec)),
            422,
            "invalid",
        )
    assert f"spec.grader.config.pattern: is not a regular expression RE2 accepts ({said}" in message
    assert _peak_rss_mib() - before < 64
    assert me.http.get("/healthz").status_code == 200


def test_the_catalogue_seed_holds_the_content_it_was_pinned_to():
    # An entry is immutable: changing the golden set's cases or calibration fails here until it is added as a new
    # version. The entry is those two files; the golden scenarios beside them are no part of it.
    suite = load_suite(CATALOGUE_SEED.folder, models_of=models_of)
    assert (
        folder_hash({n: (CATALOGUE_SEED.folder / n).read_bytes() for n in (CASES_FILE, CALIBRATION_FILE)})
        == CATALOGUE_SEED.sha256
    )
    assert len(suite.cases) == 36 and suite.scenarios
    assert (CATALOGUE_SEED.name, CATALOGUE_SEED.version) == ("kindgi/golden", "1.0.0")
    assert CATALOGUE_SEED.folder.resolve() == GOLDEN.resolve()
    assert set(CATALOGUE_SEED.files()) == {"cases.jsonl", "calibration.jsonl"}
