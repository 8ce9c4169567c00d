"""Trailing emoji stripping, as spec 009's `must_end_with_question` uses it."""

from __future__ import annotations

import pytest

from kindgi_eval.emoji import strip_trailing_emoji

STRIP_ROWS = [
    # (text, stripped)
    ("want the schedule? 🤍", "want the schedule?"),  # the spec's own example
    ("Room 7?", "Room 7?"),  # nothing to strip
    ("Room 7", "Room 7"),  # a plain trailing digit is text, not a keycap base
    ("call 1 🤍", "call 1"),  # the digit left bare by stripping is still not a keycap base
    ("press 1️⃣", "press"),  # keycap: 1 + U+FE0F + U+20E3 comes off whole, digit included
    ("pick one? #️⃣", "pick one?"),  # keycap on #
    ("pick 2⃣", "pick"),  # keycap without its variation selector still takes its base
    ("room 12️⃣", "room 1"),  # only the keycap's own base goes; the digit before it is text
    ("good? 👍🏽", "good?"),  # skin-tone modifier U+1F3FD after the pictograph
    ("family? 👨‍👩‍👧‍👦", "family?"),  # four pictographs joined by U+200D
    ("Pronto? 🙋🏽‍♀️", "Pronto?"),  # skin tone, joiner, female sign and U+FE0F in one sequence
    ("from Brazil? 🇧🇷", "from Brazil?"),  # a pair of regional indicators
    ("England? 🏴󠁧󠁢󠁥󠁮󠁧󠁿", "England?"),  # black flag + tag letters + cancel tag
    ("love it? ❤️", "love it?"),  # U+2764 heart with its emoji variation selector
    ("love it? ❤︎", "love it?"),  # the same heart with the text variation selector U+FE0E
    ("ok? 😊 🎉  ✨\n", "ok?"),  # several emoji mixed with spaces and a newline
    ("ok?😊", "ok?"),  # no space between the question mark and the emoji
    ("deal? ✅™", "deal?"),  # a dingbat and a trademark sign
    ("really?\u200d", "really?"),  # a stray joiner on its own
    ("  \n\t", ""),  # whitespace only
    ("", ""),
    ("😊 only the end? no", "😊 only the end? no"),  # emoji before the end are text's business
    ("what?!", "what?!"),  # punctuation is not an emoji
    ("??", "??"),  # a `?` is never stripped
    ("schedule❓", "schedule"),  # U+2753 is an emoji, not a `?`: only the ASCII mark counts
]


@pytest.mark.parametrize(("text", "stripped"), STRIP_ROWS)
def test_strip_trailing_emoji_009(text: str, stripped: str) -> None:
    assert strip_trailing_emoji(text) == stripped


@pytest.mark.parametrize(("text", "stripped"), STRIP_ROWS)
def test_strip_only_removes_from_the_end_009(text: str, stripped: str) -> None:
    result = strip_trailing_emoji(text)
    assert text.startswith(result)
    assert strip_trailing_emoji(result) == result  # stripping again takes nothing more off
