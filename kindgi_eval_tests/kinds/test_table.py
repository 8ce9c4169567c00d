"""The table of suite kinds: the built-ins join it through the same entry-point group another package would use, it
agrees with the kinds the registry accepts, and a kind installed from outside reaches the report and `--json`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import kindgi_eval.registry  # noqa: F401  (its kinds' consumers register on import)
from kindgi_eval.kinds import GROUP, KindTableError, SuiteKind, kind_named, kinds
from kindgi_eval.registry.consumers import accepted_kinds
from kindgi_eval.reports import render, summary_json
from kindgi_eval_tests.reports.test_run_report import run_row


def test_every_kind_the_registry_accepts_has_exactly_one_entry() -> None:
    names = [point.name for point in entry_points(group=GROUP)]
    assert sorted(names) == sorted(set(names))  # no kind installed twice
    assert set(kinds()) == set(accepted_kinds())


def test_each_entry_is_the_kind_it_is_named_for() -> None:
    assert all(isinstance(kind, SuiteKind) and kind.name == name for name, kind in kinds().items())


def test_a_kind_no_package_installs_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="no suite kind 'poll' is installed; the kinds are accuracy, benchmark, conversation"):
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


TOY = '''
from kindgi_eval.kinds import SuiteKind

KIND = SuiteKind(name="toy", enters_funnel=False, lines=lambda run: [f"Toy: {run.cases} cases seen"],
                 summary=lambda run: {"toy": {"seen": run.cases}})
'''


def test_a_kind_from_another_package_reaches_the_report_and_the_json(installed) -> None:
    installed("toy_kind", TOY, "toy = toy_kind:KIND")
    assert set(kinds()) == set(accepted_kinds()) | {"toy"}  # the built-ins are still there, beside it
    run = run_row(suite_kind="toy", cases=3, passed=3)
    report = render(run, [], [], "t.toy", [], {}).splitlines()
    assert "Toy: 3 cases seen" in report
    assert not any(line.startswith("Funnel coverage") for line in report)  # the kind said its items enter no funnel
    assert summary_json("r", run, [], [])["toy"] == {"seen": 3}


def test_an_entry_named_apart_from_its_kind_is_refused(installed) -> None:
    installed("toy_misnamed", TOY, "poll = toy_misnamed:KIND")
    with pytest.raises(KindTableError, match="must name a SuiteKind called 'poll'"):
        kinds()
