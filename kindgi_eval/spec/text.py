"""Untrusted text made fit to show: one line cut to a length, and terminal control characters escaped. Pure."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def clip(text: str, limit: int) -> str:
    """`text` on one line (runs of whitespace become one space), cut to `limit` characters ending in `…`."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def safe(text: str) -> str:
    """Untrusted text made harmless for a terminal: control and bidi characters shown as escapes."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
