"""Any body from the HTTP agent, any answer from a model agent and any answer from a judge give a reply, a recorded
error or an invalid sample, never a crash (property-based, with hypothesis); a 1 MB answer is handled in bounded
memory."""

from __future__ import annotations

import json
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from kindgi_eval.agents.http import read_answer
from kindgi_eval.prompts import UnreadableReply, read_reply
from kindgi_eval.rules import AgentReply, ReplyError, read_sample

EXAMPLES = settings(max_examples=400, deadline=None)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)
REPLY_KEYS = st.sampled_from(["messages", "escalate", "reason", "verdict", "evidence", "extra"]) | st.text(max_size=6)
NEAR_REPLY = st.fixed_dictionaries(
    {},
    optional={
        "messages": st.lists(st.text(max_size=30), max_size=3) | JSON,
        "escalate": st.booleans() | JSON,
        "reason": st.none() | st.text(max_size=20) | JSON,
    },
) | st.dictionaries(REPLY_KEYS, JSON, max_size=4)
NEAR_VERDICT = st.fixed_dictionaries(
    {},
    optional={
        "verdict": st.sampled_from(["pass", "fail", "PASS", "maybe"]) | JSON,
        "evidence": st.text(max_size=30) | JSON,
        "reason": st.text(max_size=30) | JSON,
        "score": JSON,
    },
)


def body(near: st.SearchStrategy[dict]) -> st.SearchStrategy[str]:
    """Noise, any JSON, or a near-miss of the right object, bare or inside a markdown fence."""
    as_json = (near | JSON).map(json.dumps)
    return (
        st.text(max_size=200)
        | as_json
        | as_json.map(lambda t: f"```json\n{t}\n```")
        | as_json.map(lambda t: f"Sure! {t}")
    )


@EXAMPLES
@given(status=st.integers(0, 999), text=body(NEAR_REPLY))
def test_any_http_agent_answer_is_a_reply_or_a_recorded_error(status: int, text: str) -> None:
    try:
        reply = read_answer(status, text)
    except ReplyError as e:
        assert e.raw == text  # the body is kept for the reader
        assert len(str(e)) < 2_000  # and clipped in the error
    else:
        assert 200 <= status < 300 and isinstance(reply, AgentReply)


@EXAMPLES
@given(text=st.none() | body(NEAR_REPLY))
def test_any_model_agent_answer_is_a_reply_or_unreadable(text: str | None) -> None:
    try:
        assert isinstance(read_reply(text), AgentReply)
    except UnreadableReply as e:
        assert str(e).startswith("unreadable reply:")


@EXAMPLES
@given(content=st.none() | body(NEAR_VERDICT), reply=st.text(max_size=60), error=st.none() | st.text(max_size=20))
def test_any_judge_answer_is_a_vote_or_an_invalid_sample(content: str | None, reply: str, error: str | None) -> None:
    sample = read_sample(content, reply, error)
    assert sample.vote in ("pass", "fail", "invalid")
    if sample.vote == "fail":
        # a failure always quotes the reply (docs/design.md#verdicts-and-evidence)
        assert sample.evidence and sample.evidence in reply
    if error is not None:
        assert sample.vote == "invalid"


MB = 1 << 20
BOUND = 16 * MB
"""What reading a 1 MB answer may allocate at its peak: a few copies of it, never more."""


def peak_of(read) -> int:
    tracemalloc.start()
    try:
        read()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_1_mb_answer_is_handled_in_bounded_memory() -> None:
    long = json.dumps({"messages": ["x" * MB], "escalate": False, "reason": None})
    assert peak_of(lambda: read_answer(200, long)) < BOUND
    assert peak_of(lambda: read_reply(long)) < BOUND
    garbage = "<" * MB
    try:
        read_answer(200, garbage)
    except ReplyError as e:
        assert len(str(e)) < 2_000
    assert (
        peak_of(lambda: read_sample(json.dumps({"verdict": "fail", "evidence": "x" * MB, "reason": "r"}), "x" * MB))
        < BOUND
    )
