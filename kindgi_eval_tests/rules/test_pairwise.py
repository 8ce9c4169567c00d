"""Pairwise judging: a variant wins a prompt only when it wins in both orders; the judge grades only once calibrated."""

import pytest

from kindgi_eval.rules import (
    Outcome,
    combine,
    pairwise_agreement,
    preferred_variant,
    read_judgement,
    win_rate,
)


@pytest.mark.parametrize(
    ("content", "winner"),
    [
        ('{"winner": "A", "reason": "quotes the price"}', "first"),
        ('{"winner": "B", "reason": "r"}', "second"),
        ('```json\n{"winner": "tie", "reason": "r"}\n```', "tie"),
        ('{"winner": "a", "reason": "r"}', "invalid"),  # no coercion
        ('{"winner": "A"}', "invalid"),
        ('{"winner": "A", "reason": 3}', "invalid"),
        ("A is better", "invalid"),
        (None, "invalid"),
        ('{"winner": "A", "reason": "\\ud800"}', "invalid"),
    ],
)
def test_a_judge_answer_is_read_as_untrusted_input(content, winner):
    assert read_judgement(content).winner == winner


def test_a_provider_error_is_invalid_never_a_preference():
    judgement = read_judgement('{"winner": "A", "reason": "r"}', error="RateLimitError: 429")
    assert judgement.winner == "invalid" and "429" in judgement.invalid_reason


@pytest.mark.parametrize(
    ("order", "winner", "variant"),
    [
        ("AB", "first", "A"),
        ("AB", "second", "B"),
        ("BA", "first", "B"),
        ("BA", "second", "A"),
        ("BA", "tie", "tie"),
        ("AB", "invalid", None),
    ],
)
def test_the_preferred_variant_follows_the_order_the_pair_was_shown_in(order, winner, variant):
    assert preferred_variant(order, read_judgement(None)._replace(winner=winner, invalid_reason=None)) == variant


@pytest.mark.parametrize(
    ("ab", "ba", "outcome"),
    [
        ("A", "A", Outcome("A", True)),
        ("B", "B", Outcome("B", True)),
        ("tie", "tie", Outcome("tie", True)),
        ("A", "B", Outcome("tie", False)),  # the judge followed the position: no win
        ("A", "tie", Outcome("tie", False)),
        ("A", None, Outcome("tie", False)),  # an invalid order never lets a variant win
        (None, None, Outcome("tie", False)),
    ],
)
def test_a_variant_wins_only_when_it_wins_in_both_orders(ab, ba, outcome):
    assert combine(ab, ba) == outcome


def test_win_rate_counts_a_tie_as_half_and_gives_an_interval():
    outcomes = [Outcome("A", True)] * 6 + [Outcome("tie", False)] * 2 + [Outcome("B", True)] * 2
    rate = win_rate(outcomes)
    assert (rate.wins, rate.losses, rate.ties) == (6, 2, 2)
    assert rate.rate.estimate == pytest.approx((6 + 0.5 * 2) / 10)
    assert rate.rate.low < 0.7 < rate.rate.high and 0.0 <= rate.rate.low and rate.rate.high <= 1.0
    assert rate.consistency == pytest.approx(0.8)


def test_all_wins_and_all_losses_are_the_ends_of_the_range():
    assert tuple(win_rate([Outcome("A", True)] * 5).rate) == (1.0, 1.0, 1.0)
    assert tuple(win_rate([Outcome("B", True)] * 5).rate) == (0.0, 0.0, 0.0)
    assert win_rate([]) is None


@pytest.mark.parametrize(
    ("graded", "calibrated"),
    [
        ([("A", "A"), ("B", "B")], True),
        ([("A", "A"), ("tie", "tie")], True),
        ([("A", "A"), ("B", "tie")], False),  # below the threshold
        ([("A", "A"), ("A", "A")], False),  # one label only, as a group without a fail label
        ([("tie", "tie"), ("tie", "tie")], False),  # no preference label
        ([], False),
    ],
)
def test_the_pairwise_judge_is_calibrated_under_spec_016s_rules(graded, calibrated):
    assert pairwise_agreement(graded, 1.0).calibrated is calibrated
