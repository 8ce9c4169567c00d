"""Input files over their limit are refused before they are read: a located error, exit 2, nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kindgi_eval.inputs.file_limits import (
    CONFIG_FILE_LIMIT,
    SUITE_FILE_LIMIT,
    mib,
    read_limited,
)
from kindgi_eval.inputs.suite_folder import load_suite
from kindgi_eval.inputs.tenant_file import DEMO_CONFIG_DIR
from kindgi_eval.inputs.tenants_file import load_tenants
from kindgi_eval.kinds import models_of
from kindgi_eval.rules.errors import InputError
from kindgi_eval_tests.conftest import GOLDEN, files_under, run_cli


def sized(path: Path, size: int) -> Path:
    """A file of `size` bytes that costs no disk (a sparse file of zero bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    return path


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (20, "20 bytes"),
        (12_400, "12.1 KiB"),
        (16 << 20, "16 MiB"),
        (50_000_000, "47.7 MiB"),
        ((16 << 20) + 1, "16.0 MiB"),
    ],
)
def test_sizes_read_as_people_read_them(size: int, shown: str) -> None:
    assert mib(size) == shown


def test_a_suite_file_over_the_limit_is_refused_and_nothing_is_written(home, tmp_path: Path) -> None:
    cases = sized(tmp_path / "big" / "cases.jsonl", SUITE_FILE_LIMIT + 1)
    result = run_cli("run", "--mock", "--eval-dir", str(cases.parent))
    assert result.code == 2
    assert result.err == (
        f"error: {cases}: is 16.0 MiB (16,777,217 bytes), over the limit of 16 MiB for a suite file. "
        "Split the suite into several suite folders.\n"
    )
    assert files_under(home.root) == []
    assert run_cli("validate", str(cases.parent)).err == result.err


def test_every_suite_file_over_the_limit_is_named_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    sized(folder / "cases.jsonl", 50_000_000)
    sized(folder / "calibration.jsonl", SUITE_FILE_LIMIT + 10)
    with pytest.raises(InputError) as refused:
        load_suite(folder, models_of=models_of)
    assert [(Path(p.file).name, p.line, p.field, p.message.split(",")[0]) for p in refused.value.problems] == [
        ("cases.jsonl", None, None, "is 47.7 MiB (50"),
        ("calibration.jsonl", None, None, "is 16.0 MiB (16"),
    ]


def test_a_suite_file_at_the_limit_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "full"
    sized(folder / "cases.jsonl", SUITE_FILE_LIMIT)  # one line of NUL bytes: read, and refused for what it holds
    with pytest.raises(InputError) as refused:
        load_suite(folder, models_of=models_of)
    (problem,) = refused.value.problems
    assert (problem.line, problem.message.split(":")[0]) == (1, "not valid JSON")


def test_a_file_that_never_ends_is_read_no_further_than_the_limit(tmp_path: Path) -> None:
    folder = tmp_path / "endless"
    folder.mkdir()
    (folder / "cases.jsonl").symlink_to("/dev/zero")  # its size says 0; reading it would never stop
    with pytest.raises(InputError) as refused:
        load_suite(folder, models_of=models_of)
    assert [p.message for p in refused.value.problems] == [
        "holds more than 16 MiB, over the limit of 16 MiB for a suite file. Split the suite into several suite folders."
    ]


def test_reading_stops_one_byte_past_the_limit(tmp_path: Path) -> None:
    path = sized(tmp_path / "f", 100)
    assert read_limited(path, 100, "a test file") == bytes(100)
    with pytest.raises(Exception, match="holds more than 99 bytes, over the limit of 99 bytes for a test file"):
        read_limited("/dev/zero", 99, "a test file")


def test_a_tenant_configuration_over_the_limit_is_refused(home, tmp_path: Path) -> None:
    config = tmp_path / "config"
    shutil.copytree(DEMO_CONFIG_DIR, config)
    toml = sized(config / "tenant.toml", CONFIG_FILE_LIMIT + 1)
    result = run_cli("validate", str(GOLDEN), "--config-dir", str(config))
    assert result.code == 2
    assert result.err == (
        f"error: {toml}: is 1.0 MiB (1,048,577 bytes), over the limit of 1 MiB for a tenant configuration. "
        "A tenant.toml holds one tenant's settings and copy; check that this is the right file.\n"
    )
    assert files_under(home.root) == []


def test_a_tenants_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    tenants = sized(tmp_path / "tenants.toml", 50_000_000)
    with pytest.raises(InputError) as refused:
        load_tenants(tenants)
    assert str(refused.value) == (
        f"{tenants}: is 47.7 MiB (50,000,000 bytes), over the limit of 1 MiB for a tenants file. "
        "Check that KINDGI_TENANTS names the tenants file."
    )
