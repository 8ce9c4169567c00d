"""Trailing emoji, for spec 009's `must_end_with_question`: what comes off the end before looking for `?`."""

from __future__ import annotations

# Code points that are part of an emoji sequence wherever they appear at the end of a message.
# Pictographs follow Unicode's Extended_Pictographic property, widened to whole blocks where the
# block is all symbols (Misc Symbols and Dingbats, U+1F000-1FAFF); the last block also holds the
# regional indicators (flags, U+1F1E6-1F1FF) and the skin-tone modifiers (U+1F3FB-1F3FF).
_EMOJI_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9),  # ©
    (0x00AE, 0x00AE),  # ®
    (0x200D, 0x200D),  # zero-width joiner
    (0x203C, 0x203C),  # ‼
    (0x2049, 0x2049),  # ⁉ (an emoji, not a question mark: only `?` counts)
    (0x2122, 0x2122),  # ™
    (0x2139, 0x2139),  # ℹ
    (0x2194, 0x2199),  # ↔ ... ↙
    (0x21A9, 0x21AA),  # ↩ ↪
    (0x231A, 0x231B),  # ⌚ ⌛
    (0x2328, 0x2328),  # ⌨
    (0x23CF, 0x23CF),  # ⏏
    (0x23E9, 0x23F3),  # ⏩ ... ⏳
    (0x23F8, 0x23FA),  # ⏸ ⏹ ⏺
    (0x24C2, 0x24C2),  # Ⓜ
    (0x25AA, 0x25AB),  # ▪ ▫
    (0x25B6, 0x25B6),  # ▶
    (0x25C0, 0x25C0),  # ◀
    (0x25FB, 0x25FE),  # ◻ ... ◾
    (0x2600, 0x27BF),  # Misc Symbols and Dingbats: ☀ ... ❤ ... ✅ ... ❓ ... ➿
    (0x2934, 0x2935),  # ⤴ ⤵
    (0x2B05, 0x2B07),  # ⬅ ⬆ ⬇
    (0x2B1B, 0x2B1C),  # ⬛ ⬜
    (0x2B50, 0x2B50),  # ⭐
    (0x2B55, 0x2B55),  # ⭕
    (0x3030, 0x3030),  # 〰
    (0x303D, 0x303D),  # 〽
    (0x3297, 0x3297),  # ㊗
    (0x3299, 0x3299),  # ㊙
    (0xFE0E, 0xFE0F),  # variation selectors: text and emoji presentation
    (0x1F000, 0x1FAFF),  # tiles, cards, enclosed letters, flags, pictographs, emoticons, transport, ...
    (0xE0020, 0xE007F),  # tags, as in the subdivision flags (🏴 + tags + cancel tag)
)

_KEYCAP = "\u20e3"  # the combining enclosing keycap that ends 1️⃣, #️⃣ and *️⃣
_KEYCAP_BASES = frozenset("0123456789#*")
_VARIATION_SELECTORS = frozenset("\ufe0e\ufe0f")


def _is_emoji_part(char: str) -> bool:
    """Whether a code point belongs to an emoji sequence on its own (a keycap's base does not)."""
    code = ord(char)
    return any(low <= code <= high for low, high in _EMOJI_RANGES)


def strip_trailing_emoji(text: str) -> str:
    """Remove whitespace and whole emoji sequences from the end of `text`, and nothing else.

    A keycap takes its base with it ("press 1️⃣" becomes "press"), while a plain trailing digit
    stays ("call 1" is unchanged). A `?` is never removed.
    """
    end = len(text)
    while end:
        last = text[end - 1]
        if last == _KEYCAP:
            end -= 1
            if end and text[end - 1] in _VARIATION_SELECTORS:
                end -= 1
            if end and text[end - 1] in _KEYCAP_BASES:
                end -= 1
        elif last.isspace() or _is_emoji_part(last):
            end -= 1
        else:
            break
    return text[:end]
