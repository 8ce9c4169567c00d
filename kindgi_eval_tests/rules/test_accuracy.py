"""Accuracy items: each grader's verdict on a reply, and which results count towards the accuracy."""

import pytest
import re2
from pydantic import ValidationError

from kindgi_eval.rules import (
    ACCURACY_GROUP,
    AccuracyCase,
    Grader,
    PatternBudget,
    accuracy_criterion,
    check_accuracy,
    item_grade,
    pattern_problem,
)
from kindgi_eval.rules.accuracy import MAX_PATTERNS, MAX_PROGRAM, MAX_PROGRAMS, MAX_REFUSED


def item(expected: str = "$450", **grader: object) -> AccuracyCase:
    return AccuracyCase(id="price", text="how much?", expected_output=expected, grader=Grader(**grader))


@pytest.mark.parametrize(
    ("reply", "held"),
    [(["$450"], True), (["  $450 \n"], True), (["$450."], False), (["It is", "$450"], False), (["$4500"], False)],
)
def test_exact_is_the_trimmed_reply_equal_to_the_expected_output(reply, held):
    (result,) = check_accuracy(item(adapter="exact"), tuple(reply), error=None)
    assert (result.assertion, result.held) == ("expected_output", held)


@pytest.mark.parametrize(
    ("reply", "held"), [(["It is $450 upfront"], True), (["It is", "$450"], True), (["It is $ 450"], False)]
)
def test_contains_looks_in_the_messages_joined_by_a_space(reply, held):
    (result,) = check_accuracy(item(adapter="contains"), tuple(reply), error=None)
    assert result.held is held


def test_contains_is_case_sensitive():
    (result,) = check_accuracy(item("Tuesdays", adapter="contains"), ("tuesdays and thursdays",), error=None)
    assert not result.held


@pytest.mark.parametrize(
    ("grader", "reply", "held"),
    [
        ({"pattern": r"\$4\d0\b"}, "It is $450.", True),
        ({"pattern": r"\$4\d0\b"}, "It is $4500.", False),
        ({"pattern": "tuesdays", "flags": "i"}, "Tuesdays", True),
        ({"pattern": "tuesdays"}, "Tuesdays", False),
        ({"pattern": "^Thursdays$", "flags": "m"}, "Tuesdays\nThursdays", True),
        ({}, "costs $450", False),  # without a pattern the expected output is the pattern: `$` anchors, so no match
    ],
)
def test_regex_searches_the_reply_with_its_pattern_and_flags(grader, reply, held):
    (result,) = check_accuracy(item(adapter="regex", **grader), (reply,), error=None)
    assert result.held is held


def test_without_a_pattern_each_expected_output_is_its_own_pattern():
    (result,) = check_accuracy(item(r"\d+ weeks", adapter="regex"), ("It takes 12 weeks.",), error=None)
    assert result.held


def test_a_pattern_that_backtracks_exponentially_elsewhere_is_matched_in_linear_time():
    # (a|aa)+$ takes a backtracking engine about 2^n steps on a run of n a's; RE2 decides it in one pass
    catastrophic = item(adapter="regex", pattern=r"(a|aa)+$")
    (result,) = check_accuracy(catastrophic, ("a" * 100_000 + "b",), error=None)  # a backtracking engine never returns
    assert result.assertion == "expected_output" and not result.held


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("(?:x{2000}){2000}", "invalid repetition size"),  # 19 bytes that grew a backtracking engine's server to 24 GB
        ("(?:x{65535}){65535}", "invalid repetition size"),
        ("(?:[a-z]{100}){100}", "invalid repetition size"),
        (r"(a)\1", "invalid escape sequence"),  # a backreference
        ("(?=a)b", "invalid perl operator"),  # lookaround
        ("(?<!a)b", "invalid perl operator"),
    ],
)
def test_a_pattern_re2_cannot_take_within_its_budget_is_refused_with_why(pattern: str, said: str):
    problem = pattern_problem(pattern, "")
    assert problem is not None and said in problem and "backreferences and lookaround are refused" in problem


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        # 170 ms to compile, once accepted: some 400,000 instructions, refused after RE2 gives up at its check memory
        (r"[\pL\pN]{300}", "pattern too large"),
        (
            r"[\pL\pN]{12}",
            "more than the 10,000 a pattern may have",
        ),  # about 16,000: compiles, and is refused by its size
        ("a" * 12_000, "more than the 10,000 a pattern may have"),  # a literal is an instruction a character
    ],
)
def test_a_pattern_over_the_program_bound_is_refused(pattern: str, said: str):
    problem = pattern_problem(pattern, "")
    assert problem is not None and said in problem


def test_a_pattern_just_under_the_program_bound_is_accepted():
    assert pattern_problem(r"[\pL\pN]{7}", "") is None  # about 9,400 instructions
    assert pattern_problem("a" * (MAX_PROGRAM - 10), "") is None


def test_a_suite_may_hold_so_many_patterns_and_no_more():
    budget = PatternBudget()
    said = [budget.problem(f"price {n}", "") for n in range(MAX_PATTERNS + 3)]
    assert said[:MAX_PATTERNS] == [None] * MAX_PATTERNS
    assert f"is pattern {MAX_PATTERNS + 1:,} of the suite, which may hold {MAX_PATTERNS:,}" in said[MAX_PATTERNS]
    assert said[MAX_PATTERNS + 1 :] == [None, None]  # the budget is spent: named once, nothing more compiled
    assert budget.spent and budget.patterns == MAX_PATTERNS + 1


def test_a_suites_patterns_may_compile_to_so_many_instructions_in_all():
    budget = PatternBudget()
    each = "a" * 9_000  # 9,004 instructions each: 55 of them are 495,220, the 56th passes 500,000
    said = [budget.problem(each, "") for _ in range(60)]
    first = next(i for i, reason in enumerate(said) if reason)
    assert first == MAX_PROGRAMS // 9_004
    assert f"more than the {MAX_PROGRAMS:,} one suite's may have in all" in said[first]
    assert said[first + 1 :] == [None] * (59 - first) and budget.spent


def test_no_tenant_pattern_is_kept_in_a_process_wide_cache():
    cached = re2._Regexp._make.cache_info().currsize
    for n in range(50):
        (result,) = check_accuracy(item(adapter="regex", pattern=f"tenant-{n}"), (f"tenant-{n}",), error=None)
        assert result.held
    assert re2._Regexp._make.cache_info().currsize == cached


def test_the_verbose_flag_is_refused_since_re2_has_none():
    with pytest.raises(ValidationError, match="unknown flag 'x'; use any of i, m, s"):
        Grader(adapter="regex", pattern="x", flags="x")


def test_unknown_flags_are_refused():
    with pytest.raises(ValidationError, match="unknown flag 'q'"):
        Grader(adapter="regex", pattern="x", flags="iq")


def test_an_agent_error_is_the_one_result_and_ungraded():
    (result,) = check_accuracy(item(), None, error="timeout")
    assert result.assertion == "agent_error" and not result.held
    assert item_grade([(result.assertion, result.held)], None) == "ungraded"


def test_the_judge_grader_asserts_nothing_and_grades_one_criterion_in_the_accuracy_group():
    judged = item("Tuesdays and Thursdays", adapter="judge")
    assert check_accuracy(judged, ("Tuesdays",), error=None) == []
    (criterion,) = judged.criteria()
    assert criterion.group == ACCURACY_GROUP == "accuracy"
    assert criterion.criterion == accuracy_criterion("Tuesdays and Thursdays")
    assert "Tuesdays and Thursdays" in criterion.criterion and criterion.source == "review"


def test_a_deterministic_grader_gives_the_judge_nothing_and_no_rubric():
    assert item(adapter="contains").criteria() == []


@pytest.mark.parametrize(
    ("assertions", "judged", "grade"),
    [
        ([("expected_output", True)], None, "correct"),
        ([("expected_output", False)], None, "wrong"),
        ([("agent_error", False)], None, "ungraded"),
        ([("grader_error", False)], None, "ungraded"),
        ([], "pass", "correct"),
        ([], "fail", "wrong"),
        ([], "ungraded", "ungraded"),  # an uncalibrated judge, or no two samples agreeing
        ([("agent_error", False)], "pass", "ungraded"),
        ([], None, "ungraded"),
    ],
)
def test_item_grade_counts_only_what_was_graded(assertions, judged, grade):
    assert item_grade(assertions, judged) == grade


def test_after_so_many_refused_patterns_the_rest_are_not_compiled():
    # 72 KB of patterns each too large for RE2 took three publishes 195 s: each is refused in a millisecond or two,
    # and past MAX_REFUSED of them the suite is refused already, so nothing more is compiled
    budget = PatternBudget()
    said = [budget.problem(r"[\pL\pN]{300}", "") for _ in range(MAX_REFUSED + 20)]
    assert all("pattern too large" in reason for reason in said[:MAX_REFUSED])
    assert said[MAX_REFUSED:] == [None] * 20 and budget.patterns == MAX_REFUSED
