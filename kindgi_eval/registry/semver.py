"""Semantic versions (semver 2.0.0) without build metadata, and their precedence. Pure."""

from __future__ import annotations

import re
from typing import NamedTuple

_NUMBER = r"(?:0|[1-9][0-9]*)"
_IDENTIFIER = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER_PATTERN = rf"^{_NUMBER}\.{_NUMBER}\.{_NUMBER}(?:-{_IDENTIFIER}(?:\.{_IDENTIFIER})*)?$"
"""`MAJOR.MINOR.PATCH` with an optional pre-release (`1.4.0-rc.1`), as semver.org's grammar writes it.

Build metadata (`+build.5`) is refused: it does not take part in precedence, so `1.0.0+a` and `1.0.0+b` could not
be ordered, and each version a registry stores must be greater than the one before it."""
_SEMVER = re.compile(SEMVER_PATTERN)


class SemVer(NamedTuple):
    """A parsed version; compare versions with `key`, never with the string."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...]
    """The dot-separated pre-release identifiers; empty for a release."""

    @property
    def key(self) -> tuple:
        """The sort key of semver precedence (semver.org, rule 11).

        A release ranks above its pre-releases (`1.0.0-rc.1 < 1.0.0`); identifiers compare left to right, numeric
        ones as numbers, alphanumeric ones in ASCII order, a numeric one below an alphanumeric one; with every
        identifier equal, the longer list ranks higher (`1.0.0-alpha < 1.0.0-alpha.1`).
        """
        if not self.prerelease:
            return (self.major, self.minor, self.patch, (1,))
        identifiers = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease)
        return (self.major, self.minor, self.patch, (0, identifiers))

    def __str__(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return f"{core}-{'.'.join(self.prerelease)}" if self.prerelease else core


def parse_semver(text: str) -> SemVer:
    """`1.4.0-rc.1` as a SemVer; ValueError naming the rule when the text is not one."""
    if not isinstance(text, str) or _SEMVER.fullmatch(text) is None:
        hint = " (build metadata after + is not accepted)" if isinstance(text, str) and "+" in text else ""
        raise ValueError(
            f"{text!r} is not a semantic version MAJOR.MINOR.PATCH[-PRERELEASE]{hint}, e.g. 1.4.0 or 1.4.0-rc.1"
        )
    core, _, pre = text.partition("-")
    major, minor, patch = (int(n) for n in core.split("."))
    return SemVer(major, minor, patch, tuple(pre.split(".")) if pre else ())


def is_semver(text: str) -> bool:
    """Whether `text` is a version the registry accepts."""
    return isinstance(text, str) and _SEMVER.fullmatch(text) is not None


def semver_key(text: str) -> tuple:
    """The precedence sort key of a version string: `sorted(versions, key=semver_key)` is oldest first."""
    return parse_semver(text).key
