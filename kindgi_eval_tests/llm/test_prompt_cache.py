"""Prompt caching: where a provider is given a breakpoint, and how cached input tokens are recorded and priced. The pure
shaping first, then litellm's real clients against a fake provider on 127.0.0.1 that caches repeated prefixes as
OpenAI (automatically, from 1,024 tokens) and Anthropic (up to a marked breakpoint) do."""

from __future__ import annotations

import asyncio

import pytest

from kindgi_eval.agents.litellm import LitellmJudge
from kindgi_eval.llm.calls import BREAKPOINT, _litellm, forget_clients, with_breakpoints
from kindgi_eval.prompts import judge_messages
from kindgi_eval.rules import CACHE_BREAKS, VERDICT_SCHEMA, parse_model
from kindgi_eval_tests.fake_provider import TOKEN_CHARS, Answer, FakeProvider, scripted

VERDICT = '{"verdict": "pass", "evidence": "", "reason": "fine"}'
CATALOGUE = "\n".join(
    f"Course {n}: eight weeks of evening classes, $450 upfront or 3 payments of $160." for n in range(80)
)
"""Some 6,000 characters: a prefix past OpenAI's 1,024 tokens at the fake's 4 characters a token."""
MESSAGE = {"role": "user", "content": "catalogue|conversation|criterion", CACHE_BREAKS: [10, 23]}


@pytest.mark.parametrize(
    ("model", "blocks"),
    [
        ("anthropic:claude-sonnet-4-5", True),  # Anthropic caches only at a mark
        ("bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0", True),  # so does Bedrock's Claude...
        ("bedrock:meta.llama3-70b-instruct-v1:0", False),  # ...but its other models take no mark
        ("openai:gpt-4o-mini", False),  # OpenAI caches on its own
        ("ollama:llama3", False),
    ],
)
def test_a_provider_that_takes_breakpoints_gets_the_prefixes_marked_and_any_other_the_text_as_it_was(
    model, blocks
) -> None:
    system = {"role": "system", "content": "framework"}
    shaped = with_breakpoints(parse_model(model), [system, MESSAGE])
    assert shaped[0] == system
    if blocks:
        assert shaped[1]["content"] == [
            {"type": "text", "text": "catalogue|", "cache_control": BREAKPOINT},
            {"type": "text", "text": "conversation|", "cache_control": BREAKPOINT},
            {"type": "text", "text": "criterion"},  # what changes is never marked
        ]
    else:
        assert shaped[1] == {"role": "user", "content": "catalogue|conversation|criterion"}  # the key never goes out
    assert MESSAGE[CACHE_BREAKS] == [10, 23]  # the request itself is left as it was


def test_a_message_without_breaks_is_sent_as_it_is() -> None:
    plain = [{"role": "user", "content": "hello"}]
    assert with_breakpoints(parse_model("anthropic:claude-sonnet-4-5"), plain) == plain


def request(criterion: str) -> list[dict]:
    return judge_messages(
        source="review", criterion=criterion, catalogue=CATALOGUE, history=(), text="how much?", reply=["It is $450."]
    )


@pytest.fixture
def caching_provider(monkeypatch: pytest.MonkeyPatch):
    """A caching fake provider, litellm's OpenAI and Anthropic clients pointed at it with fake keys."""
    forget_clients()
    server = FakeProvider(scripted(Answer(VERDICT)), caching=True).__enter__()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_API_BASE", server.base_url.removesuffix("/v1"))
    yield server
    server.__exit__(None, None, None)
    forget_clients()


def grade_twice(model: str) -> list:
    judge = LitellmJudge(parse_model(model))
    return [
        asyncio.run(judge.grade(request(c), timeout_s=10, schema=VERDICT_SCHEMA))
        for c in ("The reply is kind", "The reply is short")
    ]


def test_the_anthropic_request_carries_its_breakpoints_and_the_cache_read_is_recorded_and_priced(
    caching_provider,
) -> None:
    first, second = grade_twice("anthropic:claude-sonnet-4-5")
    sent = caching_provider.requests
    assert [r["model"] for r in sent] == ["claude-sonnet-4-5"] * 2
    user = next(m for m in sent[0]["messages"] if m["role"] == "user")
    marks = [block.get("cache_control") for block in user["content"]]
    assert marks == [BREAKPOINT, BREAKPOINT, None]  # after the catalogue, after the conversation; never the criterion
    assert first.usage.cached_tokens == 0  # the first request writes the cache...
    # ...the second reads its longest marked prefix: the system text, the catalogue and the conversation
    marked = len(sent[1]["system"][0]["text"] if isinstance(sent[1]["system"], list) else sent[1]["system"]) + 1
    marked += len(user["content"][0]["text"]) + len(user["content"][1]["text"])
    assert second.usage.cached_tokens == marked // TOKEN_CHARS
    assert second.usage.prompt_tokens > second.usage.cached_tokens
    litellm = _litellm()
    usage = litellm.Usage(
        prompt_tokens=second.usage.prompt_tokens,
        completion_tokens=20,
        total_tokens=second.usage.prompt_tokens + 20,
        prompt_tokens_details={"cached_tokens": second.usage.cached_tokens},
        cache_read_input_tokens=second.usage.cached_tokens,
    )
    assert second.usage.cost_usd == pytest.approx(
        sum(litellm.cost_per_token(model="claude-sonnet-4-5", usage_object=usage))
    )
    assert second.usage.cost_known
    assert second.usage.cost_usd < first.usage.cost_usd  # read at a tenth of the price, where the first paid to write


def test_openai_reports_the_repeated_prefix_cached_and_it_is_priced_at_the_cached_price(caching_provider) -> None:
    first, second = grade_twice("openai:gpt-4o-mini")
    assert all(isinstance(m["content"], str) for r in caching_provider.requests for m in r["messages"])
    assert first.usage.cached_tokens == 0
    assert second.usage.cached_tokens >= 1024
    litellm = _litellm()
    full = sum(
        litellm.cost_per_token(model="gpt-4o-mini", prompt_tokens=second.usage.prompt_tokens, completion_tokens=20)
    )
    cached = second.usage.cached_tokens * (7.5e-08 - 1.5e-07)  # gpt-4o-mini: cached input at half the input price
    assert second.usage.cost_usd == pytest.approx(full + cached)
    assert second.usage.cost_known


def test_a_model_whose_cached_price_is_unknown_is_priced_at_the_full_input_price_and_flagged(caching_provider) -> None:
    litellm = _litellm()
    assert litellm.get_model_info(model="openai/gpt-4").get("cache_read_input_token_cost") is None
    first, second = grade_twice("openai:gpt-4")
    assert second.usage.cached_tokens >= 1024
    full = sum(litellm.cost_per_token(model="gpt-4", prompt_tokens=second.usage.prompt_tokens, completion_tokens=20))
    assert second.usage.cost_usd == pytest.approx(full)
    assert not second.usage.cost_known  # the cost shown may not be the cost paid
    assert first.usage.cost_known  # nothing cached: its price is known
