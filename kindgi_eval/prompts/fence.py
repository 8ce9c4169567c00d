"""Fencing untrusted text inside a prompt so that nothing in it can close the fence or pose as instructions."""

from __future__ import annotations

import hashlib


def fence(label: str, text: str) -> str:
    """`text` between an opening and a closing tag whose id is derived from `text`, so `text` cannot contain the closer."""
    tag = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f'<material kind="{label}" id="{tag}">\n{text}\n</material id="{tag}">'
