"""Trailing emoji, for `must_end_with_question` (docs/design.md#assertions): what comes off the end before looking for
`?`.

Pure: touches no file or socket. What counts as an emoji is Unicode's own emoji properties (UTS #51),
as the `regex` package ships them, so a symbol that is not an emoji (♪, ✓) stays and a code point
Unicode reserves for future emoji already goes.
"""

from __future__ import annotations

import regex

# One code point that is part of an emoji sequence wherever it sits at the end of a message.
_EMOJI_PART = (
    r"[\p{Extended_Pictographic}"  # pictographs, including the unassigned code points kept for future emoji
    r"\p{Emoji_Modifier}"  # the skin tones U+1F3FB-1F3FF
    r"\p{Regional_Indicator}"  # flags are pairs of these
    r"\uFE0E\uFE0F"  # variation selectors: text and emoji presentation
    r"\u200D"  # zero-width joiner, which glues ZWJ sequences such as 👨‍👩‍👧‍👦
    r"\u20E3"  # the combining enclosing keycap, when what it encloses is not a keycap base
    r"\U000E0020-\U000E007F]"  # tags, as in the subdivision flags (🏴 + tag letters + cancel tag)
)

# A keycap (1️⃣, #️⃣, *️⃣) is tried first so that it takes its base with it; a bare digit is text.
# Code point by code point rather than by grapheme cluster (`\X`): `?` and a stray joiner after it
# make one cluster, and the joiner must go while the `?` stays.
# (?r) matches from the end leftwards, so the work is the length of what comes off, not of the text.
_TRAILING = regex.compile(r"(?r)(?:[0-9#*]\uFE0F?\u20E3|" + _EMOJI_PART + r"|\s)+\Z")


def strip_trailing_emoji(text: str) -> str:
    """Remove whitespace and whole emoji sequences from the end of `text`, and nothing else.

    A keycap takes its base with it ("press 1️⃣" becomes "press"), while a plain trailing digit
    stays ("call 1" is unchanged). A `?` is never removed.
    """
    found = _TRAILING.search(text)
    return text[: found.start()] if found else text
