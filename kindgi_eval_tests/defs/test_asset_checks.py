"""The asset checks and the metadata the Dagster UI shows, from a night's run with a scripted judge."""

from __future__ import annotations

import re
from pathlib import Path

import dagster as dg
import pytest

from kindgi_eval.defs.asset_checks import group_result, statuses_result
from kindgi_eval.defs.runs import open_instance
from kindgi_eval.inputs.tenants_file import TENANTS_ENV
from kindgi_eval.store.rows import CalibrationRow, StatusRow
from kindgi_eval_tests.defs.test_judged_runs import Judge, calibration_lines, case, write_suite
from kindgi_eval_tests.fake_provider import FakeProvider
from kindgi_eval_tests.inputs.test_tenants_file import entry, tenant_tree, write_tenants

KEY = "alpha.night"


def calibration_row(
    group: str, *, calibrated: bool, passes: int = 1, fails: int = 1, agreement: float | None = 1.0
) -> CalibrationRow:
    return CalibrationRow(
        group=group,
        agreement=agreement,
        kappa=None,
        items=passes + fails,
        pass_labels=passes,
        fail_labels=fails,
        calibrated=calibrated,
        note="scripted",
        judge="openai:fake-judge",
    )


def status_row(case_id: str, status: str) -> StatusRow:
    return StatusRow(
        case_id=case_id,
        status=status,
        failures=[],
        messages=["hi"],
        escalate=False,
        reason=None,
        latency_ms=1.0,
        error=None,
        review=[],
        criteria=[],
    )


@pytest.mark.parametrize(
    "row, passed, outcome",
    [
        (calibration_row("free_text", calibrated=True), True, "calibrated"),
        (
            calibration_row("free_text", calibrated=False, agreement=0.5),
            False,
            "downgraded",
        ),  # both labels, too little agreement
        (
            calibration_row("free_text", calibrated=False, fails=0),
            False,
            "refused",
        ),  # no fail label: never allowed to grade
        (calibration_row("free_text", calibrated=False, passes=0, fails=0, agreement=None), False, "refused"),
    ],
)
def test_group_check_warns_when_refused_or_downgraded(row: CalibrationRow, passed: bool, outcome: str) -> None:
    result = group_result([row], "free_text")
    assert (result.passed, result.severity, result.metadata["outcome"].value) == (
        passed,
        dg.AssetCheckSeverity.WARN,
        outcome,
    )


def test_group_check_passes_without_a_judge() -> None:
    assert group_result([], "free_text").passed


def test_statuses_check_errors_on_failed_and_judged_fail_only() -> None:
    green = [status_row("a", "passed"), status_row("b", "judged-pass"), status_row("c", "reviewed")]
    assert statuses_result(green).passed
    red = statuses_result([*green, status_row("d", "failed"), status_row("e", "judged-fail")])
    assert (red.passed, red.severity) == (False, dg.AssetCheckSeverity.ERROR)
    assert red.description == "2 of 5 cases failed: d (failed), e (judged-fail)."
    assert (red.metadata["failed"].value, red.metadata["judged-fail"].value) == (1, 1)


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch):
    """The scripted judge on 127.0.0.1, with litellm's OpenAI client pointed at it."""
    from kindgi_eval.llm.calls import forget_clients

    forget_clients()  # litellm caches clients per process: a previous test's server must not be reused
    with FakeProvider(Judge()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server
    forget_clients()


@pytest.fixture
def night(home, judge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dg.ExecuteInProcessResult:
    """One scheduled-style run of tenant alpha's suite `night` with a scripted judge, checks included."""
    from kindgi_eval.defs.definitions import defs

    tenant_tree(tmp_path, "alpha", {"night": None})
    write_suite(
        tmp_path / "alpha" / "evals" / "night",
        [
            case("review-split", "criterion-split"),
            case("review-fail", "criterion-fail"),
            case("asserted-fail", must_contain=["NOT IN ANY REPLY"]),
            case("review-pass", "criterion-pass"),
        ],
        # implicit_concession has no fail label (refused); semantic_repetition disagrees once (downgraded)
        calibration_lines(wrong_group="semantic_repetition", drop_fail="implicit_concession"),
    )
    tenants = write_tenants(
        tmp_path / "tenants.toml", entry("alpha", suites=["evals/night"], judge_model="openai:fake-judge")
    )
    monkeypatch.setenv(TENANTS_ENV, str(tenants))
    instance = open_instance(home.root)
    instance.add_dynamic_partitions("suites", [KEY])
    return defs.resolve_job_def("evaluate_suite").execute_in_process(instance=instance, partition_key=KEY)


def test_checks_warn_on_refused_and_downgraded_groups_and_error_on_failing_cases(night) -> None:
    assert night.success  # no check blocks: run_summary is still written
    checks = {e.check_name: e for e in night.get_asset_check_evaluations()}
    assert {name: (e.passed, e.severity) for name, e in checks.items()} == {
        "implicit_concession_calibrated": (False, dg.AssetCheckSeverity.WARN),
        "semantic_repetition_calibrated": (False, dg.AssetCheckSeverity.WARN),
        "answers_the_question_calibrated": (True, dg.AssetCheckSeverity.WARN),
        "free_text_calibrated": (True, dg.AssetCheckSeverity.WARN),
        "accuracy_calibrated": (True, dg.AssetCheckSeverity.WARN),  # an accuracy suite's group: not this suite's
        "no_failing_cases": (False, dg.AssetCheckSeverity.ERROR),
    }
    assert checks["implicit_concession_calibrated"].metadata["outcome"].value == "refused"
    assert checks["semantic_repetition_calibrated"].metadata["outcome"].value == "downgraded"
    assert checks["no_failing_cases"].description == (
        "3 of 4 cases failed: review-split (judged-fail), review-fail (judged-fail), asserted-fail (failed)."
    )
    assert night.output_for_node("run_summary") is not None


def test_metadata_counts_costs_tables_verdicts_and_gives_agreement_per_group(night) -> None:
    (materialisation,) = [m for m in night.get_asset_materialization_events() if m.asset_key == dg.AssetKey("statuses")]
    metadata = materialisation.materialization.metadata
    counts = {k: metadata[k] for k in ("passed", "failed", "judged-fail", "judged-pass", "reviewed")}
    assert all(isinstance(v, dg.IntMetadataValue) for v in counts.values())  # plotted by partition
    assert {k: v.value for k, v in counts.items()} == {
        "passed": 0,
        "failed": 1,
        "judged-fail": 2,
        "judged-pass": 1,
        "reviewed": 0,
    }
    assert isinstance(metadata["agent_usd"], dg.FloatMetadataValue) and isinstance(
        metadata["judge_usd"], dg.FloatMetadataValue
    )
    verdicts = [r.data for r in metadata["judged_fail_and_split_verdicts"].records]
    split = next(v for v in verdicts if v["case"] == "review-split")
    votes = re.fullmatch(r"fail, split 2-1 \((.*)\)", split["verdict"]).group(1)
    assert split["criterion"] == "criterion-split" and sorted(votes.split(", ")) == ["fail", "fail", "pass"]
    assert "evidence" not in split and "reason" not in split  # they are in the verdicts report, whole
    assert {v["case"] for v in verdicts} == {"review-split", "review-fail"}
    (failed,) = [r.data for r in metadata["failed_cases"].records]
    assert failed["case"] == "asserted-fail" and "NOT IN ANY REPLY" in failed["failures"]

    (materialisation,) = [
        m for m in night.get_asset_materialization_events() if m.asset_key == dg.AssetKey("calibration")
    ]
    metadata = materialisation.materialization.metadata  # agreement per group
    assert metadata["agreement/semantic_repetition"].value == 0.5
    assert metadata["agreement/free_text"].value == 1.0
    assert metadata["calibrated_groups"].value == 2
    groups = {r.data["group"]: r.data for r in metadata["groups"].records}
    assert groups["implicit_concession"]["calibrated"] is False and groups["semantic_repetition"]["agreement"] == 0.5
    notes = metadata["notes"].value  # each group's labels, figures and note
    assert (
        "**implicit\\_concession**: 1 items (1 labelled pass, 0 fail); agreement" in notes
        and "No item labelled fail" in notes
    )


def latest_check_state(
    instance: dg.DagsterInstance, asset: str, check: str, partition: str
) -> tuple[str, int | None, bool]:
    """(run, target materialisation, passed) of a check's latest evaluation of one partition: what the Checks tab's
    Partitions view shows for it."""
    from dagster._core.event_api import PartitionKeyFilter

    (record,) = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey(asset), check), limit=1, partition_filter=PartitionKeyFilter(key=partition)
    )
    evaluation = record.evaluation
    assert evaluation is not None, f"{check} of {partition} was planned by run {record.run_id} but never evaluated"
    target = evaluation.target_materialization_data
    return record.run_id, target.storage_id if target else None, evaluation.passed


def latest_materialisation(instance: dg.DagsterInstance, asset: str, partition: str) -> tuple[str, int]:
    """(run, storage id) of an asset's latest materialisation of one partition: what its asset page shows."""
    (record,) = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1
    ).records
    return record.run_id, record.storage_id


def test_each_suites_checks_are_its_latest_materialisations_and_cannot_be_left_behind(home, tmp_path: Path) -> None:
    import shutil

    from kindgi_eval.defs.definitions import defs
    from kindgi_eval.defs.runs import run_chain
    from kindgi_eval.inputs.settings import RunSettings
    from kindgi_eval_tests.conftest import GOLDEN

    instance = open_instance(home.root)
    shutil.copytree(GOLDEN, tmp_path / "other")
    golden = RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent")
    # mock:judge calibrates no golden group, so the four group checks warn; without a judge they pass
    judged = run_chain(
        instance,
        home.root,
        golden.model_copy(update={"judge_model": "mock:judge"}),
        "demo-academy.golden",
        "conversation",
    )
    other = run_chain(
        instance,
        home.root,
        golden.model_copy(update={"eval_dir": str(tmp_path / "other")}),
        "demo-academy.other",
        "conversation",
    )
    expected = {"demo-academy.golden": (judged, False), "demo-academy.other": (other, True)}
    for partition, (run_id, passed) in expected.items():
        materialised, storage_id = latest_materialisation(instance, "calibration", partition)
        assert materialised == run_id
        for group in ("implicit_concession", "semantic_repetition", "answers_the_question", "free_text"):
            assert latest_check_state(instance, "calibration", f"{group}_calibrated", partition) == (
                run_id,
                storage_id,
                passed,
            )
        _, statuses_id = latest_materialisation(instance, "statuses", partition)
        assert latest_check_state(instance, "statuses", "no_failing_cases", partition) == (run_id, statuses_id, True)

    # The launchpad with "include separately executable checks" unticked: the chain without its checks. It would
    # materialise calibration anew while the Checks tab kept showing the earlier run's state of the partition.
    job = defs.resolve_job_def("evaluate_suite")
    with pytest.raises(dg.DagsterInvalidSubsetError):
        job.get_subset(
            asset_selection=set(defs.resolve_asset_graph().get_all_asset_keys()), asset_check_selection=set()
        )
