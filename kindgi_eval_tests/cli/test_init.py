"""`kindgi-eval init`: each kind's starter, from the kind's own folder, written into a new folder, passing `validate`;
the conversation starter uses every assertion and calibrates every group (test_wheel.py runs it offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kindgi_eval.kinds import kinds
from kindgi_eval.rules import GROUPS, Case, group_of
from kindgi_eval_tests.conftest import files_under, run_cli

STARTERS = sorted(name for name, kind in kinds().items() if kind.starter is not None)


def test_every_installed_kind_offers_a_starter_from_its_own_folder() -> None:
    assert STARTERS == sorted(kinds())
    for name, kind in kinds().items():
        assert kind.starter.folder.parent.name == name.replace("-", "_")  # kinds/<kind>/starter/


@pytest.mark.parametrize("kind", STARTERS)
def test_init_writes_the_kinds_starter_and_validate_passes_it(kind: str, home, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    done = run_cli("init", str(folder), "--kind", kind, cwd=tmp_path)
    assert done.code == 0, done.err
    starter = kinds()[kind].starter
    assert {p.name: p.read_bytes() for p in files_under(folder)} == {
        p.name: p.read_bytes() for p in files_under(starter.folder)
    }
    assert done.out.startswith(f"wrote a starter {kind} suite: ")
    config = ["--config-dir", str(folder)] if (folder / "tenant.toml").exists() else []
    checked = run_cli("validate", str(folder), *config, cwd=tmp_path)
    assert checked.code == 0, checked.err
    assert checked.out.startswith("ok: ")
    if kind != "conversation":  # what runs it: a registry, and what else it needs
        assert f"kindgi-eval suites publish {folder}/suite.json" in done.out and "registry" in done.out


def test_the_conversation_starter_uses_every_assertion_and_labels_a_pass_and_a_fail_in_every_group() -> None:
    folder = kinds()["conversation"].starter.folder
    cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    used = {key for case in cases for key in case}
    assert set(Case.model_fields) <= used  # every field, so every assertion
    assert any("reason" in c.get("expect", {}) for c in cases)
    assert {c["must_end_with_question"] for c in cases if "must_end_with_question" in c} == {True, False}
    items = [json.loads(line) for line in (folder / "calibration.jsonl").read_text().splitlines()]
    labels = {(group_of(i["criterion"]), i["label"]) for i in items}
    assert labels == {(g, label) for g in GROUPS for label in ("pass", "fail")}
    assert "#" in (folder / "tenant.toml").read_text()  # commented, as TOML allows


def test_init_refuses_a_folder_that_is_not_empty_and_writes_nothing(home, tmp_path: Path) -> None:
    folder = tmp_path / "taken"
    folder.mkdir()
    (folder / "cases.jsonl").write_text("mine\n")
    done = run_cli("init", str(folder), cwd=tmp_path)
    assert (done.code, done.out) == (2, "")
    assert (
        done.err
        == f"error: {folder}: exists and is not an empty folder; nothing was written. Name a new folder, or empty this one.\n"
    )
    assert [p.name for p in files_under(folder)] == ["cases.jsonl"] and (folder / "cases.jsonl").read_text() == "mine\n"
    unknown = run_cli("init", str(tmp_path / "new"), "--kind", "nope", cwd=tmp_path)
    assert unknown.code == 2 and "'nope' is not a kind with a starter. Pick one of accuracy, " in unknown.err
    assert not (tmp_path / "new").exists()
