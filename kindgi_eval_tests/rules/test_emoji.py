"""Trailing emoji stripping, as `must_end_with_question` uses it (docs/design.md#assertions)."""

from __future__ import annotations

import pytest
import regex

from kindgi_eval.rules.emoji import strip_trailing_emoji

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
    ("Shall we start? ♪", "Shall we start? ♪"),  # U+266A eighth note is a symbol, not Extended_Pictographic
    ("Booked ✓", "Booked ✓"),  # U+2713 check mark is not Extended_Pictographic either
    ("Booked? ✔️", "Booked?"),  # ... while its heavy cousin U+2714 is
    ("tune? ♪ 😊", "tune? ♪"),  # the emoji after the note goes, the note stays and hides the `?`
    ("next year? \U0001fc00", "next year?"),  # unassigned, but reserved for future emoji (Extended_Pictographic)
    ("all of you? 👩🏽‍👨🏿‍👧🏻‍👦🏾", "all of you?"),  # a family ZWJ sequence, a skin tone on every member
    ("from Portugal? 🇵🇹", "from Portugal?"),  # flag: regional indicators P and T
    ("Scotland? 🏴󠁧󠁢󠁳󠁣󠁴󠁿", "Scotland?"),  # black flag + tags g b s c t + cancel tag U+E007F
    ("which? *️⃣", "which?"),  # keycap on *
    ("option 3? 3️⃣", "option 3?"),  # the keycap's 3 goes with it; the 3 before the `?` is text
    ("smile? ☺\ufe0e", "smile?"),  # U+263A in text presentation (U+FE0E) is still an emoji
    ("ok?\u00a0😊\u2003\t🎉 \r\n", "ok?"),  # no-break space, em space, tab and CRLF between emoji
    ("ok? 😊!", "ok? 😊!"),  # ends in `!`: nothing to strip, so no question either
    ("really?)", "really?)"),  # a bracket after the `?` is text
]

QUESTION_ROWS = [
    # (final message, ends with a question after stripping), as `must_end_with_question` decides it
    ("Shall we start? ♪", False),  # the note is not an emoji, so the `?` is not last
    ("Shall we start? 🎵", True),  # U+1F3B5 musical note is one
    ("Shall we start? 😊!", False),  # `?`, an emoji, then `!`: the message ends in `!`
    ("Shall we start?)", False),  # a bracket after the `?` is text, not stripped
    ("Shall we start 1", False),  # a bare digit is not a keycap and is not stripped
    ("Shall we start? 1️⃣", True),  # a keycap is an emoji and goes whole, digit and all
]


@pytest.mark.parametrize(("text", "stripped"), STRIP_ROWS)
def test_strip_trailing_emoji_009(text: str, stripped: str) -> None:
    assert strip_trailing_emoji(text) == stripped


@pytest.mark.parametrize(("text", "stripped"), STRIP_ROWS)
def test_strip_only_removes_from_the_end_009(text: str, stripped: str) -> None:
    result = strip_trailing_emoji(text)
    assert text.startswith(result)
    assert strip_trailing_emoji(result) == result  # stripping again takes nothing more off


@pytest.mark.parametrize(("text", "ends"), QUESTION_ROWS)
def test_question_mark_is_last_once_emoji_are_gone_009(text: str, ends: bool) -> None:
    assert strip_trailing_emoji(text).endswith("?") is ends


def test_rows_rest_on_unicode_properties() -> None:
    """The symbols the rows call emoji or not are so by Unicode's data, not by this module's say."""
    pictograph = regex.compile(r"\p{Extended_Pictographic}")
    assert not pictograph.match("\u266a") and not pictograph.match("\u2713")  # ♪ and ✓
    assert pictograph.match("\u2714") and pictograph.match("\u263a")  # ✔ and ☺
    assert pictograph.match("\U0001fc00") and regex.match(r"\p{Cn}", "\U0001fc00")  # reserved, unassigned
