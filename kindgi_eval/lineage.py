"""What a run records about the code that made it: the package version and a hash of its source."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


@cache
def code_version() -> str:
    """`<version>+<12 hex of the package's source>`, so two runs of different code never look alike."""
    try:
        release = version("kindgi-eval")
    except PackageNotFoundError:
        release = "0+unknown"
    digest = hashlib.sha256()
    package = Path(__file__).parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".toml", ".yaml") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return f"{release}+{digest.hexdigest()[:12]}"
