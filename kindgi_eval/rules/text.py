"""Untrusted text made fit to show: one line cut to a length, and terminal control characters escaped. Pure."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
"""A surrogate code point on its own: JSON can escape one (`"\\ud800"`), but it is not a Unicode character, and no
UTF-8 store or reader can hold it."""
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def clip(text: str, limit: int) -> str:
    """`text` on one line (runs of whitespace become one space), cut to `limit` characters ending in `…`."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def safe(text: str) -> str:
    """Untrusted text made harmless for a terminal: control and bidi characters shown as escapes."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def is_text(value: str) -> bool:
    """Whether a string is Unicode text: no lone surrogate, so it can be written as UTF-8."""
    return _SURROGATE.search(value) is None


def unicode_text(value: str) -> str:
    """`value` with each lone surrogate replaced by U+FFFD, so untrusted text can always be stored as it came."""
    return _SURROGATE.sub("\ufffd", value)
