"""The table of suite kinds: the built-ins join it through the same entry-point group another package would use, it
agrees with the kinds the registry accepts, and a kind installed from outside reaches the report and `--json`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from kindgi_eval.inputs import FOLDER_KIND, load_suite
from kindgi_eval.inputs.suite_folder import FOLDER_MODELS
from kindgi_eval.kinds import GROUP, KindResult, KindTableError, SuiteKind, consumers, kind_named, kinds, models_of
from kindgi_eval.registry import accepted_kinds
from kindgi_eval.reports import render, summary_json
from kindgi_eval.rules import InputError, wilson
from kindgi_eval.steps.suite import suite_rows
from kindgi_eval_tests.conftest import REPO, run_cli
from kindgi_eval_tests.reports.test_run_report import run_row

BUILT_IN = {"accuracy", "benchmark", "conversation", "custom", "human-review", "pairwise", "regression"}


def test_every_kind_the_registry_accepts_has_exactly_one_entry() -> None:
    names = [point.name for point in entry_points(group=GROUP)]
    assert sorted(names) == sorted(set(names))  # no kind installed twice
    assert (
        set(kinds()) == set(accepted_kinds(consumers())) == BUILT_IN
    )  # each a consumer of its own, the registry given them all


def test_each_entry_is_the_kind_it_is_named_for() -> None:
    assert all(isinstance(kind, SuiteKind) and kind.name == name for name, kind in kinds().items())


def test_a_kind_no_package_installs_is_a_clear_error() -> None:
    with pytest.raises(
        KeyError, match="no suite kind 'poll' is installed; the kinds are accuracy, benchmark, conversation"
    ):
        kind_named("poll")


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[callable]:
    """Install a throw-away package on the path: a module and the dist-info naming its entry point, as pip would."""

    def install(module: str, source: str, entry: str) -> None:
        (tmp_path / f"{module}.py").write_text(source)
        info = tmp_path / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[{GROUP}]\n{entry}\n")

    monkeypatch.syspath_prepend(str(tmp_path))
    kinds.cache_clear()
    yield install
    kinds.cache_clear()
    for name in [m for m in sys.modules if m.startswith("toy_")]:
        del sys.modules[name]


TOY = """
from kindgi_eval.kinds import Reporting, SuiteKind

KIND = SuiteKind(name="toy", report=Reporting(enters_funnel=False, lines=lambda result: [f"Toy: {result.run.cases} cases seen"],
                 summary=lambda result: {"toy": {"seen": result.run.cases}}))
"""


def test_a_kind_from_another_package_reaches_the_report_and_the_json(installed) -> None:
    installed("toy_kind", TOY, "toy = toy_kind:KIND")
    assert set(kinds()) == BUILT_IN | {"toy"}  # the built-ins are still there, beside it
    run = KindResult(run_row(suite_kind="toy", cases=3, passed=3), {})
    report = render(run, [], [], "t.toy", [], {}).splitlines()
    assert "Toy: 3 cases seen" in report
    assert not any(line.startswith("Funnel coverage") for line in report)  # the kind said its items enter no funnel
    assert summary_json("r", run, [], [])["toy"] == {"seen": 3}


def test_an_entry_named_apart_from_its_kind_is_refused(installed) -> None:
    installed("toy_misnamed", TOY, "poll = toy_misnamed:KIND")
    with pytest.raises(KindTableError, match="must name a SuiteKind called 'poll'"):
        kinds()


def toy_suite(folder: Path, cases: int) -> tuple[Path, list[str]]:
    """A suite folder of the kind `toy`, as the registry writes one: the first `cases` golden cases; its case lines."""
    suite = folder / "toy-suite"
    suite.mkdir()
    lines = (REPO / "evals/golden/cases.jsonl").read_text().splitlines()[:cases]
    (suite / "cases.jsonl").write_text("\n".join(lines) + "\n")
    (suite / "registry.json").write_text(
        json.dumps(
            {"suite_id": "demo-academy.toy", "suite_version": "1.0.0", "registry_hash": "ab" * 32, "kind": "toy"}
        )
    )
    return suite, lines


TOY_WITH_FIGURES = """
from kindgi_eval.kinds import Reporting, SuiteKind, count, estimate
from kindgi_eval.rules import wilson
from kindgi_eval.store import FigureColumn


def _metrics(rows):
    answered = sum(1 for r in rows.replies if r.messages)
    return [count("answered", answered), estimate("answer_rate", wilson(answered, len(rows.replies)), "wilson 95%")]


def _lines(result):
    f = result.figures
    return [f"Toy ({f['flavour']}): {f['answered']} of {result.run.cases} cases answered, rate {f['answer_rate']:.2f}"]


KIND = SuiteKind(
    name="toy",
    report=Reporting(
        enters_funnel=False,
        metrics=_metrics,
        params=lambda suite: {"flavour": "plain"},
        figures=(FigureColumn("flavour", "VARCHAR"), FigureColumn("answered", "BIGINT", "answered"),
                 FigureColumn("answer_rate", "DOUBLE", "answer_rate"), FigureColumn("answer_rate_low", "DOUBLE", "answer_rate", "low")),
        lines=_lines,
        summary=lambda result: {"toy": dict(result.figures)},
    ),
)
"""


def test_a_kind_defined_here_runs_the_chain_and_its_figures_reach_runs_the_report_and_the_json(
    installed, home, tmp_path: Path
) -> None:
    installed("toy_figures", TOY_WITH_FIGURES, "toy = toy_figures:KIND")
    suite, _ = toy_suite(tmp_path, 3)
    env = {"PYTHONPATH": str(tmp_path)}  # the command line's own process finds the kind as pip would have installed it
    done = run_cli("run", "--mock", "--eval-dir", str(suite), "--json", str(tmp_path / "out.json"), env=env)
    assert done.code == 0, done.err
    # 3 cases, all answered by the demo agent: Wilson's interval of 3 of 3 is (0.438, 1.0)
    assert "Toy (plain): 3 of 3 cases answered, rate 1.00" in done.out
    summary = json.loads((tmp_path / "out.json").read_text())
    assert summary["toy"]["answered"] == 3 and summary["toy"]["flavour"] == "plain"
    assert summary["toy"]["answer_rate_low"] == pytest.approx(wilson(3, 3).low)
    figures = run_cli(
        "sql", "SELECT name, value, low, method FROM run_metrics ORDER BY name", "--format", "json", env=env
    )
    assert json.loads(figures.out) == [
        {"name": "answer_rate", "value": 1.0, "low": pytest.approx(wilson(3, 3).low), "method": "wilson 95%"},
        {"name": "answered", "value": 3.0, "low": None, "method": None},
    ]
    view = run_cli(
        "sql", "SELECT suite_kind, cases, flavour, answered, answer_rate FROM toy_runs", "--format", "json", env=env
    )
    assert json.loads(view.out) == [
        {"suite_kind": "toy", "cases": 3, "flavour": "plain", "answered": 3, "answer_rate": 1.0}
    ]


TOY_WITH_STAGE = '''
from kindgi_eval.kinds import Reporting, Stage, SuiteKind, count
from kindgi_eval.store import FigureColumn, StoredRow


class LengthRow(StoredRow):
    case_id: str
    characters: int


def _lengths(given):
    """How long each reply was, in characters."""
    return [LengthRow(case_id=r.case_id, characters=sum(len(m) for m in r.messages)) for r in given.replies]


KIND = SuiteKind(
    name="toy",
    stage=Stage("toy_lengths", LengthRow, _lengths),
    report=Reporting(
        enters_funnel=False,
        metrics=lambda rows: [count("longest_reply", max(r.characters for r in rows.own))],
        figures=(FigureColumn("longest_reply", "BIGINT", "longest_reply"),),
        lines=lambda result: [f"Toy: the longest reply was {result.figures['longest_reply']} characters"],
    ),
)
'''


def test_a_kind_defined_here_with_a_stage_of_its_own_stores_its_table_beside_the_shared_ones(
    installed, home, tmp_path: Path
) -> None:
    installed("toy_stage", TOY_WITH_STAGE, "toy = toy_stage:KIND")
    suite, cases = toy_suite(tmp_path, 3)
    env = {"PYTHONPATH": str(tmp_path)}
    done = run_cli("run", "--mock", "--eval-dir", str(suite), env=env)
    assert done.code == 0, done.err
    query = "SELECT case_id, characters FROM toy_lengths ORDER BY case_id"
    lengths = json.loads(run_cli("sql", query, "--format", "json", env=env).out)
    assert [row["case_id"] for row in lengths] == sorted(json.loads(line)["id"] for line in cases)
    assert f"Toy: the longest reply was {max(row['characters'] for row in lengths)} characters" in done.out
    assert "toy_lengths" in run_cli("sql", "SELECT * FROM nothing_here", env=env).err  # listed among the views
    assert run_cli("compact", "--before", "9999-12", env=env).code == 0  # its table is compacted with the others
    assert json.loads(run_cli("sql", query, "--format", "json", env=env).out) == lengths
    assert not list((home.store / "toy_lengths").glob("suite=*"))  # read back from its month file


def test_a_kind_that_reads_a_figure_it_never_declared_fails_the_run_naming_the_figure(
    installed, home, tmp_path: Path
) -> None:
    undeclared = TOY_WITH_STAGE.replace(
        '        figures=(FigureColumn("longest_reply", "BIGINT", "longest_reply"),),\n', ""
    )
    assert undeclared != TOY_WITH_STAGE
    installed("toy_undeclared", undeclared, "toy = toy_undeclared:KIND")
    suite, _ = toy_suite(tmp_path, 1)
    done = run_cli("run", "--mock", "--eval-dir", str(suite), env={"PYTHONPATH": str(tmp_path)})
    assert done.code == 1
    assert (
        "did not complete" in done.err and "KeyError: 'longest_reply'" in done.err
    )  # the cause, not only Dagster's wrapper


TOY_WITH_ITEMS = """
from kindgi_eval.kinds import Reading, Reporting, SuiteKind
from kindgi_eval.rules import Case


class ToyCase(Case):
    flavour: str


KIND = SuiteKind(name="toy", reading=Reading(case_model=ToyCase), report=Reporting(enters_funnel=False))
"""


def test_a_folder_of_a_kind_installed_from_outside_is_read_with_that_kind_s_case_model(
    installed, tmp_path: Path
) -> None:
    installed("toy_items", TOY_WITH_ITEMS, "toy = toy_items:KIND")
    suite = tmp_path / "toy-suite"
    suite.mkdir()
    (suite / "cases.jsonl").write_text('{"id": "a", "text": "hi", "expect": {"escalate": false}, "flavour": "mint"}\n')
    (suite / "registry.json").write_text(
        json.dumps(
            {"suite_id": "demo-academy.toy", "suite_version": "1.0.0", "registry_hash": "ab" * 32, "kind": "toy"}
        )
    )
    (case,) = load_suite(suite, models_of=models_of).cases
    assert type(case).__name__ == "ToyCase" and case.flavour == "mint"


def test_a_folder_whose_kind_is_not_installed_is_refused_naming_its_registry_record(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "text": "hi", "expect": {"escalate": false}}\n')
    (tmp_path / "registry.json").write_text(
        json.dumps(
            {"suite_id": "demo-academy.poll", "suite_version": "1.0.0", "registry_hash": "ab" * 32, "kind": "poll"}
        )
    )
    with pytest.raises(InputError) as refused:
        load_suite(tmp_path, models_of=models_of)
    (problem,) = refused.value.problems
    assert problem.file == str(tmp_path / "registry.json") and problem.field == "kind"
    assert "no suite kind 'poll' is installed" in problem.message


def test_a_folder_of_one_s_own_is_read_as_the_conversation_kind_reads_its_folders() -> None:
    assert models_of(FOLDER_KIND) == FOLDER_MODELS  # load_suite reads such a folder without asking the table


def test_validate_of_a_folder_of_one_s_own_imports_no_kind() -> None:
    probe = (
        "import sys\nfrom kindgi_eval.cli.main import main\nsys.argv = ['kindgi-eval', 'validate', 'evals/golden']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
        "print(sorted(m for m in sys.modules if m.startswith('kindgi_eval.kinds')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


TOY_WITH_FILES = """
from kindgi_eval.inputs import KindFile
from kindgi_eval.kinds import Reading, Reporting, RunStart, SuiteKind
from kindgi_eval.rules import InputError, Problem


def _colour(folder, registered, problems):
    path = folder / "colour.txt"
    if not path.exists():
        problems.append(Problem(str(path), None, None, "file not found: a toy suite names its colour"))
        return ()
    return (KindFile("colour", "colour", '"' + path.read_text().strip() + '"'),)


def _needs(suite, settings):
    if any(f.kind == "colour" and f.body == '"invisible"' for f in suite.kind_files):
        raise InputError([Problem("colour.txt", None, None, "an invisible toy needs a machine that can see it")])


KIND = SuiteKind(name="toy", reading=Reading(files=_colour), start=RunStart(needs=_needs), report=Reporting(enters_funnel=False))
"""


def toy_folder(tmp_path: Path, cases: str) -> Path:
    suite = tmp_path / "toy-suite"
    suite.mkdir()
    (suite / "cases.jsonl").write_text(cases)
    (suite / "registry.json").write_text(
        json.dumps(
            {"suite_id": "demo-academy.toy", "suite_version": "1.0.0", "registry_hash": "ab" * 32, "kind": "toy"}
        )
    )
    return suite


def test_a_kind_reads_its_own_files_beside_the_cases_and_its_problems_join_the_others(
    installed, tmp_path: Path
) -> None:
    installed("toy_files", TOY_WITH_FILES, "toy = toy_files:KIND")
    suite = toy_folder(tmp_path, '{"id": "a", "text": "hi", "expect": {"escalate": false}}\n')
    with pytest.raises(InputError) as refused:  # the kind's file is missing, and a case is broken: both said at once
        (suite / "cases.jsonl").write_text('{"id": "a", "text": "hi"}\n')
        load_suite(suite, models_of=models_of)
    assert [(p.file, p.field) for p in refused.value.problems] == [
        (str(suite / "colour.txt"), None),
        (str(suite / "cases.jsonl"), "expect"),
    ]
    (suite / "cases.jsonl").write_text('{"id": "a", "text": "hi", "expect": {"escalate": false}}\n')
    (suite / "colour.txt").write_text("teal\n")
    loaded = load_suite(suite, models_of=models_of)
    assert [tuple(f) for f in loaded.kind_files] == [("colour", "colour", '"teal"')]
    rows = suite_rows(
        loaded, "demo-academy", "c" * 64
    )  # stored with the suite, so the chain reads what the folder held
    assert [(r.kind, r.id, r.body) for r in rows if r.kind not in ("case", "calibration")] == [
        ("colour", "colour", '"teal"')
    ]
    assert (
        load_suite(tmp_path / "toy-suite", models_of=lambda kind: FOLDER_MODELS).kind_files == ()
    )  # a kind without files reads none


def test_what_a_kind_needs_of_the_machine_is_exit_2_before_the_agent_is_asked(installed, home, tmp_path: Path) -> None:
    installed("toy_needs", TOY_WITH_FILES, "toy = toy_needs:KIND")
    suite = toy_folder(tmp_path, '{"id": "a", "text": "hi", "expect": {"escalate": false}}\n')
    (suite / "colour.txt").write_text("invisible\n")
    done = run_cli("run", "--mock", "--eval-dir", str(suite), env={"PYTHONPATH": str(tmp_path)})
    assert done.code == 2 and "error: colour.txt: an invisible toy needs a machine that can see it" in done.err, (
        done.err
    )
    assert not home.store.exists() or not list(home.store.rglob("*.parquet"))  # nothing asked, nothing written
    (suite / "colour.txt").write_text("teal\n")
    assert run_cli("run", "--mock", "--eval-dir", str(suite), env={"PYTHONPATH": str(tmp_path)}).code == 0
