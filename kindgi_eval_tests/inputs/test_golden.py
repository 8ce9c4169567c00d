"""The golden set has one home, `evals/golden`, which the package ships as its `golden` folder; a run that names no
suite folder takes the working folder's `evals/golden`, else the shipped one."""

from __future__ import annotations

from pathlib import Path

from kindgi_eval.inputs import CATALOGUE_SEED, GOLDEN_DIR, default_eval_dir, resolve_settings
from kindgi_eval.inputs.tenants_file import default_tenants
from kindgi_eval_tests.conftest import GOLDEN, REPO


def test_the_shipped_golden_set_is_the_repositorys_evals_golden_and_the_catalogues_seed() -> None:
    assert (
        GOLDEN_DIR.is_symlink() and GOLDEN_DIR.resolve() == GOLDEN.resolve()
    )  # one folder, never a copy to keep equal
    assert CATALOGUE_SEED.folder == GOLDEN_DIR


def test_the_default_suite_folder_is_the_working_folders_golden_set_else_the_shipped_one(tmp_path: Path) -> None:
    assert default_eval_dir(REPO) == "evals/golden"
    assert default_eval_dir(tmp_path) == str(GOLDEN_DIR)
    (tmp_path / "evals" / "golden").mkdir(parents=True)
    assert default_eval_dir(tmp_path) == "evals/golden"


def test_a_named_suite_folder_wins_over_the_default_found_at_the_edge() -> None:
    found = {"eval_dir": str(GOLDEN_DIR)}
    assert resolve_settings({}, {}, defaults=found).eval_dir == str(GOLDEN_DIR)
    assert resolve_settings({"eval_dir": "mine"}, {}, defaults=found).eval_dir == "mine"
    assert resolve_settings({}, {"EVAL_DIR": "theirs"}, defaults=found).eval_dir == "theirs"


def test_the_built_in_tenants_run_the_shipped_golden_set_from_a_folder_without_one(tmp_path: Path) -> None:
    (suite,) = default_tenants(tmp_path).suites
    assert suite.eval_dir.resolve() == GOLDEN_DIR.resolve() and suite.key == "demo-academy.golden"
