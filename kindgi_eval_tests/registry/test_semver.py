"""Semver precedence (semver.org rule 11), table-driven: the order a suite's versions must be published in."""

from __future__ import annotations

import itertools
import random

import pytest

from kindgi_eval.registry import is_semver, parse_semver, semver_key

# semver.org's own example chain, then the rows that trip naive implementations
ASCENDING = [
    "0.0.1",
    "0.9.0",
    "0.10.0",  # numeric, not text: 9 < 10
    "1.0.0-0",  # a numeric identifier ranks below any alphanumeric one
    "1.0.0-0.3.7",
    "1.0.0-1",
    "1.0.0-9",
    "1.0.0-10",  # numeric identifiers compare as numbers
    "1.0.0-Z",  # alphanumeric ones in ASCII order: uppercase before lowercase
    "1.0.0-alpha",
    "1.0.0-alpha.1",  # more identifiers rank higher when all before are equal
    "1.0.0-alpha.beta",  # numeric 1 < alphanumeric beta
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0-x-y-z.--",  # hyphens are identifier characters
    "1.0.0",  # a release ranks above all its pre-releases
    "1.0.1-alpha",
    "1.2.0",
    "1.10.0",
    "2.0.0-rc.1",
    "2.0.0",
    "10.0.0",
]


def test_precedence_orders_the_chain() -> None:
    shuffled = ASCENDING[:]
    random.Random(11).shuffle(shuffled)
    assert sorted(shuffled, key=semver_key) == ASCENDING


@pytest.mark.parametrize(("lower", "higher"), list(itertools.pairwise(ASCENDING)))
def test_each_step_is_strictly_greater(lower: str, higher: str) -> None:
    assert semver_key(lower) < semver_key(higher)


@pytest.mark.parametrize(
    "text",
    [
        "1.0",  # three parts
        "1.0.0.0",
        "01.0.0",  # leading zeros in a number
        "1.0.0-01",  # and in a numeric pre-release identifier
        "1.0.0-",  # empty pre-release
        "1.0.0-alpha..1",  # empty identifier
        "1.0.0+build.5",  # build metadata: no precedence, so refused
        "v1.0.0",
        " 1.0.0",
        "1.0.0\n",
        "1.0.0-β",  # identifiers are ASCII
        "١.0.0",  # an Arabic-Indic digit is not a digit here
        "",
    ],
)
def test_not_a_version(text: str) -> None:
    assert not is_semver(text)
    with pytest.raises(ValueError, match="semantic version"):
        parse_semver(text)


def test_parse_and_print_round_trip() -> None:
    version = parse_semver("1.4.0-rc.1")
    assert (version.major, version.minor, version.patch, version.prerelease) == (1, 4, 0, ("rc", "1"))
    assert str(version) == "1.4.0-rc.1" and str(parse_semver("2.0.0")) == "2.0.0"


def test_build_metadata_is_named_in_the_refusal() -> None:
    with pytest.raises(ValueError, match=r"build metadata"):
        parse_semver("1.0.0+sha.5114f85")
