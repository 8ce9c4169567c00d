"""The deterministic assertions (docs/design.md#assertions) over one reply: what holds, what fails, and what the failure
says."""

from __future__ import annotations

from typing import Any

import pytest

from kindgi_eval.rules.agent_protocol import AgentReply
from kindgi_eval.rules.assertions import AssertionResult, check_case, failures, joined_reply, message_lines
from kindgi_eval.rules.cases import Case


def make_case(**fields: Any) -> Case:
    """A case that asserts nothing beyond `expect` unless fields add it."""
    return Case.model_validate({"id": "c1", "text": "hi", "expect": {"escalate": False}} | fields)


def make_reply(*messages: str, escalate: bool = False, reason: str | None = None) -> AgentReply:
    """A reply made of these messages."""
    return AgentReply(messages=messages, escalate=escalate, reason=reason)


def check(
    case: Case, reply: AgentReply | None, *, error: str | None = None, latency_ms: float = 100
) -> list[AssertionResult]:
    """Check with a 1000 ms deadline that a 100 ms reply meets."""
    return check_case(case, reply, error=error, latency_ms=latency_ms, max_latency_ms=1000)


def only(results: list[AssertionResult], assertion: str) -> AssertionResult:
    """The single result of one assertion."""
    [result] = [r for r in results if r.assertion == assertion]
    return result


# --- must_contain / must_not_contain ---------------------------------------------------------------

LINK = "https://example.com/enrol/foundation"


@pytest.mark.parametrize(
    ("needle", "messages", "held"),
    [
        (LINK, ["Here you go:", LINK], True),
        ("Foundation", ["the foundation course"], False),  # case differs: no match
        ("foundation", ["The Foundation Course"], False),  # case differs the other way
        (LINK, ["https://EXAMPLE.com/enrol/foundation"], False),  # URLs are not prose: no case folding
    ],
)
def test_must_contain_is_case_sensitive_009(needle: str, messages: list[str], held: bool) -> None:
    result = only(check(make_case(must_contain=[needle]), make_reply(*messages)), "must_contain")
    assert result.held is held


def test_must_contain_failure_names_the_missing_entry_009() -> None:
    result = only(check(make_case(must_contain=[LINK]), make_reply("Want the link?")), "must_contain")
    assert result.detail == f'reply does not contain "{LINK}"'


@pytest.mark.parametrize(
    ("needle", "messages", "held"),
    [
        ("discount", ["I can offer a discount"], False),
        ("discount", ["Discounts are not something we do"], True),  # capitalised: not the forbidden entry
        ("Discount", ["no discount, sorry"], True),  # and the other way round
        ("https://example.com/enrol/", ["Tell me about yourself first?"], True),
    ],
)
def test_must_not_contain_is_case_sensitive_009(needle: str, messages: list[str], held: bool) -> None:
    result = only(check(make_case(must_not_contain=[needle]), make_reply(*messages)), "must_not_contain")
    assert result.held is held


def test_must_not_contain_failure_says_it_is_forbidden_009() -> None:
    result = only(check(make_case(must_not_contain=["discount"]), make_reply("a discount!")), "must_not_contain")
    assert result.detail == 'reply contains "discount", which is forbidden'


SPLIT_PRICE = ["The Foundation Course is $450", "and runs Tuesdays and Thursdays."]


@pytest.mark.parametrize(
    ("needle", "held"),
    [
        ("$450 and", True),  # spans the two messages across exactly one space
        ("$450and", False),  # messages are not glued together
        ("$450  and", False),  # nor joined with two spaces
        ("$450\nand", False),  # nor with a newline
    ],
)
def test_substring_checks_run_over_messages_joined_with_one_space_009(needle: str, held: bool) -> None:
    results = check(make_case(must_contain=[needle], must_not_contain=[needle]), make_reply(*SPLIT_PRICE))
    assert only(results, "must_contain").held is held
    assert only(results, "must_not_contain").held is not held


def test_joined_reply_uses_one_space_009() -> None:
    assert joined_reply(["a", "b", "c"]) == "a b c"
    assert joined_reply([]) == ""


def test_one_result_per_substring_entry_in_order_009() -> None:
    case = make_case(must_contain=["$450", "Tuesdays", "Mondays"], must_not_contain=["$500", "discount"])
    results = check(case, make_reply(*SPLIT_PRICE))
    contains = [r for r in results if r.assertion == "must_contain"]
    not_contains = [r for r in results if r.assertion == "must_not_contain"]
    assert [r.held for r in contains] == [True, True, False]
    assert [r.held for r in not_contains] == [True, True]
    assert failures(results) == ['reply does not contain "Mondays"']


# --- must_end_with_question ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "held"),
    [
        (["want the schedule? 🤍"], True),  # the spec's example
        (["sound good? 👍🏽"], True),  # skin tone
        (["bringing everyone? 👨‍👩‍👧‍👦"], True),  # zero-width-joined family
        (["coming from Brazil? 🇧🇷"], True),  # flag
        (["love it? ❤️"], True),  # heart with its variation selector
        (["which one? #️⃣"], True),  # keycap on #
        (["first option? 1️⃣"], True),  # keycap on a digit
        (["ready? 🎉 😊  ✨ \n"], True),  # several emoji and spaces after the `?`
        (["want the schedule."], False),
        (["press 1️⃣"], False),  # the keycap's base digit goes with it, leaving "press"
        (["Room 7"], False),  # a plain digit is not stripped and is not `?`
        (["want it?", "Here is the link."], False),  # only the final message counts
        (["want it?", "🤍"], False),  # the final message is all emoji; the question is in the one before
        (["Here is the link.", "Anything else?"], True),
    ],
)
def test_must_end_with_question_true_strips_trailing_emoji_009(messages: list[str], held: bool) -> None:
    result = only(check(make_case(must_end_with_question=True), make_reply(*messages)), "must_end_with_question")
    assert result.held is held


@pytest.mark.parametrize(
    ("messages", "held"),
    [
        (["Welcome! Here is what we run. 😊"], True),
        (["ok? 😊"], False),  # the emoji is stripped, exposing the `?`
        (["ok?"], False),
        (["ok?", "Here is the link."], True),  # an earlier question does not count
    ],
)
def test_must_end_with_question_false_asserts_no_question_009(messages: list[str], held: bool) -> None:
    result = only(check(make_case(must_end_with_question=False), make_reply(*messages)), "must_end_with_question")
    assert result.held is held


@pytest.mark.parametrize(("expected", "held"), [(True, False), (False, True)])
def test_must_end_with_question_on_a_reply_with_no_messages_009(expected: bool, held: bool) -> None:
    result = only(check(make_case(must_end_with_question=expected), make_reply()), "must_end_with_question")
    assert result.held is held


def test_must_end_with_question_unset_is_not_checked_009() -> None:
    results = check(make_case(), make_reply("Here is the link."))
    assert all(r.assertion != "must_end_with_question" for r in results)


def test_quoted_reply_text_is_shortened_and_escaped_c3() -> None:
    final = "line one\n" + "x" * 100 + "\nthe end."
    result = only(check(make_case(must_end_with_question=True), make_reply(final)), "must_end_with_question")
    quoted = result.detail.removeprefix("final message does not end with a question: ")
    assert "\n" not in result.detail
    assert quoted.endswith('\\nthe end."')  # the tail is kept: that is where the `?` was looked for
    assert len(quoted) <= 60 + len('""') + 1  # 60 characters, the quotes, and one for the escaped newline


# --- max_lines -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "limit", "held"),
    [
        (["a\nb\nc", "d\ne\nf"], 3, True),  # two three-line messages are not a six-line reply
        (["a\nb\nc\nd"], 3, False),
        (["a\n\nb"], 2, False),  # a blank line inside a message counts: three lines
        (["a\nb\n\n \n"], 2, True),  # trailing blank lines do not
        ([], 1, True),  # no message exceeds anything
    ],
)
def test_max_lines_is_per_message_009(messages: list[str], limit: int, held: bool) -> None:
    result = only(check(make_case(max_lines=limit), make_reply(*messages)), "max_lines")
    assert result.held is held


def test_max_lines_failure_names_each_message_009() -> None:
    reply = make_reply("one line", "1\n2\n3\n4\n5", "fine\nfine", "1\n2\n3\n4\n5\n6")
    result = only(check(make_case(max_lines=4), reply), "max_lines")
    assert result.detail == "message 2 has 5 lines, at most 4 allowed; message 4 has 6 lines, at most 4 allowed"


@pytest.mark.parametrize(
    ("message", "lines"),
    [
        ("one", ["one"]),
        ("a\n\nb", ["a", "", "b"]),  # the blank line inside stays
        ("a\nb\n\n  \t\n", ["a", "b"]),  # trailing whitespace, newlines included, goes first
    ],
)
def test_message_lines_009(message: str, lines: list[str]) -> None:
    assert message_lines(message) == lines


# --- escalate and reason ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "escalate", "reason", "detail"),
    [
        (True, False, None, "expected an escalation, got none"),
        (False, True, "refund", 'expected no escalation, got one with reason "refund"'),
    ],
)
def test_escalate_mismatch_fails_009(expected: bool, escalate: bool, reason: str | None, detail: str) -> None:
    case = make_case(expect={"escalate": expected})
    assert failures(check(case, make_reply("ok", escalate=escalate, reason=reason))) == [detail]


@pytest.mark.parametrize(
    ("got", "held"),
    [
        ("refund_request", True),
        ("Refund_request", False),  # case matters
        ("refund_request ", False),  # so does whitespace
        (None, False),  # escalated without a reason
    ],
)
def test_reason_must_match_exactly(got: str | None, held: bool) -> None:
    case = make_case(expect={"escalate": True, "reason": "refund_request"})
    result = only(check(case, make_reply("A person will follow up.", escalate=True, reason=got)), "reason")
    assert result.held is held


def test_reason_mismatch_quotes_both_reasons() -> None:
    case = make_case(expect={"escalate": True, "reason": "refund_request"})
    results = check(case, make_reply("A person will follow up.", escalate=True, reason="complaint"))
    assert failures(results) == ['escalated with reason "complaint", expected "refund_request"']


def test_reason_is_not_checked_when_unset() -> None:
    case = make_case(expect={"escalate": True})
    results = check(case, make_reply("A person will follow up.", escalate=True, reason="anything"))
    assert all(r.assertion != "reason" for r in results)
    assert failures(results) == []


# --- latency ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("latency_ms", "held", "detail"),
    [
        (1000, True, "reply took 1000 ms, within the 1000 ms deadline"),  # exactly at the deadline holds
        (1000.2, False, "reply took 1001 ms, over the 1000 ms deadline"),  # a fraction over fails, and reads as over
        (1834, False, "reply took 1834 ms, over the 1000 ms deadline"),
    ],
)
def test_latency_deadline(latency_ms: float, held: bool, detail: str) -> None:
    result = only(check(make_case(), make_reply("ok"), latency_ms=latency_ms), "latency")
    assert (result.held, result.detail) == (held, detail)


# --- agent errors and the whole case ---------------------------------------------------------------


def test_agent_error_is_one_failed_result_c6() -> None:
    case = make_case(must_contain=["ok"], must_end_with_question=False, max_lines=2)
    results = check(case, make_reply("ok"), error="timeout after 30 s")  # the reply would pass everything
    assert [(r.assertion, r.held) for r in results] == [("agent_error", False)]
    assert "timeout after 30 s" in results[0].detail


def test_missing_reply_is_one_failed_result_c6() -> None:
    results = check(make_case(), None)
    assert [(r.assertion, r.held) for r in results] == [("agent_error", False)]


def test_results_come_in_a_fixed_order_009() -> None:
    case = make_case(
        expect={"escalate": True, "reason": "r"},
        must_contain=["a"],
        must_not_contain=["b"],
        must_end_with_question=True,
        max_lines=3,
    )
    results = check(case, make_reply("a?", escalate=True, reason="r"))
    assert [r.assertion for r in results] == [
        "escalate",
        "reason",
        "must_contain",
        "must_not_contain",
        "must_end_with_question",
        "max_lines",
        "latency",
    ]
    assert failures(results) == []


def test_failures_keep_order_and_skip_what_held() -> None:
    case = make_case(must_contain=["$450"], must_end_with_question=True)
    results = check(case, make_reply("It is $500."), latency_ms=1500)
    assert failures(results) == [
        'reply does not contain "$450"',
        'final message does not end with a question: "It is $500."',
        "reply took 1500 ms, over the 1000 ms deadline",
    ]
