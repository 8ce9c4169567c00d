"""Calibration per group: agreement with hand labels, both labels required, and Cohen's kappa
(docs/design.md#calibration)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kindgi_eval.rules.calibration import THRESHOLD, Graded, agree_by_group, cohen_kappa, judge_was_down, with_samples
from kindgi_eval.rules.criteria import GROUPS, Group
from kindgi_eval.rules.intervals import wilson
from kindgi_eval.rules.verdicts import counted, invalid_cause

LETTER = {"p": "pass", "f": "fail", "u": "ungraded"}


def graded(group: Group, pairs: str) -> list[Graded]:
    """Items from label/verdict letter pairs: "pf fu" is (pass label, fail verdict), (fail label, ungraded)."""
    return [Graded(group, LETTER[pair[0]], LETTER[pair[1]]) for pair in pairs.split()]  # type: ignore[arg-type]


def test_threshold_is_unanimous_until_a_calibration_run_is_recorded_016() -> None:
    assert THRESHOLD == 1.0


def test_every_group_is_reported_in_order_even_without_items_016() -> None:
    result = agree_by_group([])
    assert tuple(result) == GROUPS
    for group, row in result.items():
        assert row.group == group
        assert (row.items, row.pass_labels, row.fail_labels) == (0, 0, 0)
        assert (row.agreement, row.kappa, row.calibrated) == (None, None, False)
        assert row.note == "No calibration items; the group needs at least one pass and one fail item."


def test_group_with_both_labels_and_full_agreement_is_calibrated_016() -> None:
    row = agree_by_group(graded("implicit_concession", "pp pp ff"))["implicit_concession"]
    assert (row.items, row.pass_labels, row.fail_labels) == (3, 2, 1)
    assert (row.agreement, row.kappa, row.calibrated) == (1.0, 1.0, True)
    assert row.note == "The judge agreed with 3 of 3 labels (1.00), meeting the threshold of 1.00."


def test_group_without_a_fail_label_is_refused_016() -> None:
    # Perfect agreement with nothing but passes proves nothing: a judge that passes everything gets it.
    row = agree_by_group(graded("semantic_repetition", "pp pp"))["semantic_repetition"]
    assert (row.agreement, row.calibrated) == (1.0, False)
    assert row.kappa is None  # both sides all pass: chance agreement is certain
    assert row.note == "No item labelled fail; the group needs at least one pass and one fail item."


def test_group_without_a_pass_label_is_refused_016() -> None:
    row = agree_by_group(graded("answers_the_question", "ff ff"))["answers_the_question"]
    assert (row.agreement, row.pass_labels, row.fail_labels, row.calibrated) == (1.0, 0, 2, False)
    assert row.note == "No item labelled pass; the group needs at least one pass and one fail item."


def test_group_without_items_is_refused_while_others_calibrate_016() -> None:
    result = agree_by_group(graded("free_text", "pp ff"))
    assert result["free_text"].calibrated
    assert not result["implicit_concession"].calibrated
    assert result["implicit_concession"].agreement is None
    assert result["implicit_concession"].note.startswith("No calibration items")


def test_group_below_threshold_is_downgraded_alone_016() -> None:
    # A judge that spots concessions reliably and misreads repetition keeps the half it earned.
    result = agree_by_group(
        graded("implicit_concession", "pp ff ff")
        + graded("semantic_repetition", "pp ff fp")
        + graded("answers_the_question", "pp ff")
        + graded("free_text", "pp pp ff")
    )
    assert {group: row.calibrated for group, row in result.items()} == {
        "implicit_concession": True,
        "semantic_repetition": False,
        "answers_the_question": True,
        "free_text": True,
    }
    row = result["semantic_repetition"]
    assert row.agreement == pytest.approx(2 / 3)
    assert row.note == "The judge agreed with 2 of 3 labels (0.67), below the threshold of 1.00."


def test_ungraded_item_counts_as_disagreement_016() -> None:
    # Ignoring the ungraded item would leave 1 of 1 agreed and calibrate the group.
    row = agree_by_group(graded("free_text", "pp fu"))["free_text"]
    assert (row.agreement, row.calibrated) == (0.5, False)


def test_ungraded_pass_item_also_counts_as_disagreement_016() -> None:
    row = agree_by_group(graded("free_text", "pu ff pp"))["free_text"]
    assert row.agreement == pytest.approx(2 / 3)
    assert not row.calibrated


@pytest.mark.parametrize(
    ("threshold", "calibrated"),
    [
        (0.75, True),  # 3 of 4 is exactly 0.75: meeting the threshold is enough
        (0.76, False),
        (0.5, True),
        (1.0, False),
    ],
)
def test_threshold_is_a_lower_bound_met_inclusively_016(threshold: float, calibrated: bool) -> None:
    row = agree_by_group(graded("free_text", "pp pp ff fp"), threshold=threshold)["free_text"]
    assert row.agreement == 0.75
    assert row.calibrated is calibrated
    assert f"threshold of {threshold:.2f}" in row.note


def test_judge_that_passes_everything_is_refused_in_every_group_holding_a_fail_label_016() -> None:
    # The mock judge: every verdict pass. Every group holds a fail label, so none reaches 1.0.
    result = agree_by_group(
        graded("implicit_concession", "pp pp fp")
        + graded("semantic_repetition", "pp fp")
        + graded("answers_the_question", "pp fp fp fp")
        + graded("free_text", "pp pp pp pp fp")
    )
    assert not any(row.calibrated for row in result.values())
    # Agreement is just the share of pass labels, and kappa shows it is no better than chance.
    assert {group: row.agreement for group, row in result.items()} == pytest.approx(
        {"implicit_concession": 2 / 3, "semantic_repetition": 1 / 2, "answers_the_question": 1 / 4, "free_text": 4 / 5}
    )
    assert all(row.kappa == 0.0 for row in result.values())


def test_without_a_calibration_file_no_group_is_calibrated_016() -> None:
    # Even items that would calibrate cannot, when the run says there is no calibration file.
    result = agree_by_group(graded("implicit_concession", "pp ff"), calibration_file="absent")
    assert tuple(result) == GROUPS
    for row in result.values():
        assert not row.calibrated
        assert row.note == "No calibration file beside the suite, so the judge grades nothing here."


def test_an_empty_calibration_file_is_named_as_empty_not_absent() -> None:
    # A calibration.jsonl that exists but holds no items grades nothing, and the note says which of the two it is.
    result = agree_by_group([], calibration_file="empty")
    for row in result.values():
        assert not row.calibrated
        assert row.note == "The calibration file beside the suite holds no items, so the judge grades nothing here."


def test_items_are_counted_only_in_their_own_group_016() -> None:
    # A perfect free-text set must not lend its items to a dimension with only pass labels.
    result = agree_by_group(graded("free_text", "pp ff ff") + graded("implicit_concession", "pp"))
    assert (result["free_text"].items, result["free_text"].fail_labels) == (3, 2)
    assert (result["implicit_concession"].items, result["implicit_concession"].fail_labels) == (1, 0)
    assert not result["implicit_concession"].calibrated


# kappa = (n*agreed - S) / (n**2 - S), S = sum over categories of (labels in it) * (verdicts in it).
@pytest.mark.parametrize(
    ("pairs", "kappa"),
    [
        # n=4, agreed=4, S = 2*2 (pass) + 2*2 (fail) = 8: (16-8)/(16-8) = 1.
        ("pp pp ff ff", 1.0),
        # Always pass: n=4, agreed=2, S = 2*4 + 2*0 = 8: (8-8)/(16-8) = 0, no better than chance.
        ("pp pp fp fp", 0.0),
        # Always wrong: n=4, agreed=0, S = 2*2 + 2*2 = 8: (0-8)/(16-8) = -1.
        ("pf pf fp fp", -1.0),
        # Ungraded is its own category. n=5, agreed=3; labels p3 f2, verdicts p3 f1 u1;
        # S = 3*3 + 2*1 + 0*1 = 11: (15-11)/(25-11) = 4/14 = 2/7.
        # (Counting ungraded as fail would give agreed=4, S = 9+4 = 13, (20-13)/(25-13) = 7/12.)
        ("pp pp pu ff fp", 2 / 7),
        # n=2, agreed=0, S = 0 (no label is ever ungraded): (0-0)/(4-0) = 0.
        ("pu fu", 0.0),
        # n=3, agreed=2, labels p2 f1, verdicts p1 f2; S = 2*1 + 1*2 = 4: (6-4)/(9-4) = 2/5.
        ("pp pf ff", 0.4),
        # n=3, agreed=1, labels p2 f1, verdicts p2 f1; S = 2*2 + 1*1 = 5: (3-5)/(9-5) = -1/2.
        ("pf fp pp", -0.5),
        # Chance agreement is certain (S = n**2 = 9): undefined.
        ("pp pp pp", None),
        ("ff ff", None),
        # No items: undefined.
        ("", None),
    ],
)
def test_cohen_kappa_treats_ungraded_as_its_own_category(pairs: str, kappa: float | None) -> None:
    items = graded("free_text", pairs)
    found = cohen_kappa([i.label for i in items], [i.verdict for i in items])
    assert found == (None if kappa is None else pytest.approx(kappa))
    assert agree_by_group(items)["free_text"].kappa == found


def test_cohen_kappa_refuses_unpaired_ratings() -> None:
    with pytest.raises(ValueError):
        cohen_kappa(["pass", "fail"], ["pass"])


def test_group_agreement_is_frozen() -> None:
    row = agree_by_group([])["free_text"]
    with pytest.raises(ValidationError):
        row.calibrated = True  # type: ignore[misc]


def test_each_group_reports_the_wilson_lower_bound_of_its_agreement_beside_the_gate() -> None:
    # five of five agreeing labels meet the threshold, yet a judge right 70% of the time does that one time in six
    (row,) = agree_by_group(graded("free_text", "pp pp pp ff ff"), groups=("free_text",)).values()
    assert row.calibrated and row.agreement == 1.0
    assert row.agreement_low == pytest.approx(wilson(5, 5).low) and row.agreement_low == pytest.approx(
        5 / (5 + 1.959964**2)
    )
    assert agree_by_group([], groups=("free_text",))["free_text"].agreement_low is None


def test_sixteen_agreeing_labels_are_the_fewest_whose_lower_bound_passes_0_8() -> None:
    # the figure of docs/judge.md: with every label agreed with, the bound is n / (n + z^2)
    assert wilson(15, 15).low < 0.8 <= wilson(16, 16).low


@pytest.mark.parametrize(
    ("reason", "cause"),
    [
        (
            "error: ModelCallError: openai:j: the provider refused the credentials (HTTP 500), which ...: Missing credentials. "
            "Please pass an `api_key`",
            "missing credentials",
        ),
        (
            "error: ModelCallError: openai:j: the provider refused the credentials (HTTP 401), which ...: bad key",
            "refused credentials",
        ),
        ("error: ModelCallError: openai:j: no answer within the 30 s call timeout (1 attempt in 30.0 s)", "timeout"),
        ("error: ModelCallError: openai:j: HTTP 500 on every attempt (4 attempts in 1.0 s): boom", "provider error"),
        ("unparseable: not a JSON object (Expecting value)", "unparseable"),
        ("unquoted failure: the evidence is not in the reply", "unquoted failure"),
    ],
)
def test_an_invalid_sample_has_one_cause_to_count(reason: str, cause: str) -> None:
    assert invalid_cause(reason) == cause


def test_causes_are_counted_most_first_then_by_name() -> None:
    assert (
        counted(["unparseable", "timeout", "unparseable", "missing credentials"])
        == "2 unparseable, 1 missing credentials, 1 timeout"
    )
    assert counted([]) == ""


def test_a_group_whose_every_sample_was_invalid_says_so_with_the_causes_016() -> None:
    (row,) = agree_by_group(graded("free_text", "pu fu"), groups=("free_text",)).values()
    missing = "error: x: Missing credentials"
    down = with_samples(row, [missing] * 6)
    assert (down.samples, down.invalid_samples, down.calibrated) == (6, 6, False)
    assert down.note == "Not calibrated: 6 of 6 samples invalid: 6 missing credentials."
    assert judge_was_down([down])
    # some valid samples: the judge was heard from; the invalid ones are counted beside the agreement's note
    some = with_samples(row, [missing, None, None, None, None, "unparseable: no content"])
    assert some.note == f"{row.note} 2 of 6 samples invalid: 1 missing credentials, 1 unparseable."
    assert not judge_was_down([down, some])
    # no sample drawn at all (no items, or no judge call made): nothing to say, and no judge called down
    assert with_samples(row, []) == row and not judge_was_down([row])


def test_a_note_names_the_items_the_judge_missed_and_what_it_said() -> None:
    items = [
        Graded("free_text", "pass", "pass", "good"),
        Graded("free_text", "fail", "pass", "addresses-judge"),
        Graded("free_text", "fail", "ungraded", "split-one"),
    ]
    (row,) = agree_by_group(items, groups=("free_text",)).values()
    assert row.note == (
        "The judge agreed with 1 of 3 labels (0.33), below the threshold of 1.00. Missed: addresses-judge "
        "(pass, labelled fail), split-one (ungraded, labelled fail)."
    )
    many = [Graded("free_text", "pass", "fail", f"i{n:02d}") for n in range(13)] + [
        Graded("free_text", "fail", "fail", "f")
    ]
    (row,) = agree_by_group(many, groups=("free_text",)).values()
    assert row.note.endswith("i09 (fail, labelled pass), and 3 more.")


@pytest.mark.parametrize(
    ("pairs", "sensitivity", "specificity", "counts"),
    [
        # every label agreed with
        ("pp pp ff ff", 1.0, 1.0, (2, 2, 2, 2)),
        # a fail label passed: one fail caught of two
        ("pp pp ff fp", 0.5, 1.0, (1, 2, 2, 2)),
        # a pass label failed: one pass cleared of three
        ("pp pf pf ff", 1.0, 1 / 3, (1, 1, 1, 3)),
        # an ungraded item counts in neither: the fail label left ungraded is out of both
        ("pp ff fu", 1.0, 1.0, (1, 1, 1, 1)),
        # every pass label left ungraded: no specificity
        ("pu ff", 1.0, None, (1, 1, 0, 0)),
    ],
)
def test_sensitivity_and_specificity_count_the_graded_labels(
    pairs: str, sensitivity: float, specificity: float | None, counts: tuple[int, int, int, int]
) -> None:
    row = agree_by_group(graded("implicit_concession", pairs))["implicit_concession"]
    assert (row.sensitivity, row.specificity) == (sensitivity, specificity)
    assert (row.caught, row.fails_graded, row.cleared, row.passes_graded) == counts
    assert tuple(row.judge_error) == counts


def test_a_group_without_items_has_no_sensitivity_or_specificity() -> None:
    row = agree_by_group([])["free_text"]
    assert (row.sensitivity, row.specificity, row.caught, row.fails_graded, row.cleared, row.passes_graded) == (
        None,
        None,
        0,
        0,
        0,
        0,
    )


def test_a_calibration_item_decided_2_1_is_named_in_its_groups_note() -> None:
    items = [
        Graded("free_text", "pass", "pass", "good", split=True),  # agreed with its label, but only 2-1
        Graded("free_text", "fail", "fail", "bad"),
        Graded("free_text", "fail", "pass", "sly", split=True),  # missed, and 2-1 too
    ]
    note = agree_by_group(items, threshold=0.5)["free_text"].note
    assert note.endswith(
        " Missed: sly (pass, labelled fail). Split 2-1: good (pass, labelled pass), sly (pass, labelled fail)."
    )
    unanimous = agree_by_group([i._replace(split=False) for i in items], threshold=0.5)["free_text"].note
    assert "Split" not in unanimous
