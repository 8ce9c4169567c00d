"""Fencing untrusted text inside a prompt so that nothing in it can close the fence or pose as instructions."""

from __future__ import annotations

import hashlib


def fence(label: str, text: str) -> str:
    """`text` between an opening and a closing tag whose id is derived from `text`, so `text` cannot contain the closer."""
    tag = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f'<material kind="{label}" id="{tag}">\n{text}\n</material id="{tag}">'


def unfence(prompt: str, label: str) -> str | None:
    """The text of the first fence named `label` in `prompt`, as `fence` wrapped it; None when there is none."""
    opening = f'<material kind="{label}" id="'
    start = prompt.find(opening)
    if start < 0:
        return None
    tag = prompt[start + len(opening) : start + len(opening) + 16]
    body = prompt.find("\n", start) + 1
    end = prompt.find(f'\n</material id="{tag}">', body - 1)
    return None if body == 0 or end < 0 else prompt[body:end]
