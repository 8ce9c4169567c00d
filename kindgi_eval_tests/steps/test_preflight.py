"""A run's preflight: the cheap part a tick affords reads bytes and parses nothing; the deep part a run starts with
checks the suite against its tenant and resolves what the run is pinned to."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kindgi_eval.inputs import folder_hash, load_tenant, resolve_settings
from kindgi_eval.kinds import Pins
from kindgi_eval.rules import InputError
from kindgi_eval.steps import planned_suite, preflight
from kindgi_eval_tests.conftest import GOLDEN

BROKEN_LINE = '{"id": "no-text", "expect": {"escalate": false}}\n'  # a case without its text


@pytest.fixture
def broken_suite(tmp_path: Path) -> Path:
    folder = tmp_path / "golden"
    shutil.copytree(GOLDEN, folder)
    with (folder / "cases.jsonl").open("a") as cases:
        cases.write(BROKEN_LINE)
    return folder


def test_the_cheap_part_names_a_broken_suite_s_kind_and_hash_without_reading_a_case(broken_suite: Path) -> None:
    planned = planned_suite(resolve_settings({"eval_dir": str(broken_suite)}, {}))
    files = {
        name: (broken_suite / name).read_bytes() for name in ("cases.jsonl", "calibration.jsonl", "scenarios.jsonl")
    }
    assert (planned.kind, planned.hash) == ("conversation", folder_hash(files))


def test_the_deep_part_refuses_the_broken_suite_naming_its_file_and_line(broken_suite: Path, tmp_path: Path) -> None:
    settings = resolve_settings({"eval_dir": str(broken_suite)}, {}, mock=True)
    with pytest.raises(InputError) as refused:
        preflight(settings, load_tenant(None), tmp_path / "store", mock=True)
    lines = len((broken_suite / "cases.jsonl").read_text().splitlines())
    assert [(p.file, p.line) for p in refused.value.problems] == [(str(broken_suite / "cases.jsonl"), lines)]


def test_the_deep_part_gives_the_checked_suite_its_kind_and_the_pins_kept_from_an_earlier_start(tmp_path: Path) -> None:
    settings = resolve_settings({"eval_dir": str(GOLDEN)}, {}, mock=True)
    checked = preflight(settings, load_tenant(None), tmp_path / "store", mock=True)
    assert checked.kind.name == "conversation" and checked.suite.hash == planned_suite(settings).hash
    assert len(checked.suite.cases) == len((GOLDEN / "cases.jsonl").read_text().splitlines())
    assert checked.pins == Pins()  # a conversation suite is pinned to nothing
