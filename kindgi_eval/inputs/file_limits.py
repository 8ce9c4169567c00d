"""How large an input file may be, and reading one no further than its limit. Touches files.

A file over its limit is refused before it is read, so a 50 MB suite costs a `stat`, not the ~700 MB its parsed
cases would take; a file that grows while read, or is no regular file (a pipe, `/dev/zero`), is read no further
than one byte past the limit."""

from __future__ import annotations

import os
from pathlib import Path

MIB = 1 << 20
SUITE_FILE_LIMIT = 16 * MIB
"""The most a suite file (`cases.jsonl`, `calibration.jsonl`) may hold, in bytes: about 45,000 cases the size of
the golden set's. Validating one at the limit peaks under 400 MB of memory (`benchmarks/big_inputs.py`)."""
CONFIG_FILE_LIMIT = 1 * MIB
"""The most a `tenant.toml` or a tenants file may hold, in bytes: hundreds of times what a tenant needs."""


class FileTooLarge(Exception):
    """A file over its limit; the message says how large it is and what the limit is."""

    def __init__(self, size: int | None, limit: int, what: str):
        self.size = size
        self.limit = limit
        held = f"holds more than {mib(limit)}" if size is None else f"is {mib(size)} ({size:,} bytes)"
        super().__init__(f"{held}, over the limit of {mib(limit)} for {what}")


def mib(size: int) -> str:
    """A size as people read it: `16 MiB`, `50.0 MiB`, `12.1 KiB`, `20 bytes`."""
    for unit, scale in (("MiB", MIB), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}" if size % scale == 0 else f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def read_limited(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of `path`; FileTooLarge (naming `what`, e.g. `a suite file`) when it holds more than `limit`.

    OSError as `open` raises it (FileNotFoundError for a missing file)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise FileTooLarge(size, limit, what)
        content = f.read(limit + 1)
    if len(content) > limit:
        raise FileTooLarge(None, limit, what)
    return content
