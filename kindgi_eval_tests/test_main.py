"""`kindgi-eval` starts the litellm worker before the command line is imported when the command's words name a
litellm model (`kindgi_eval.__main__`), and a worker started ahead that no run takes is ended, never left behind."""

from __future__ import annotations

import pytest

from kindgi_eval.__main__ import names_a_litellm_model
from kindgi_eval.llm import spawn


@pytest.mark.parametrize(
    ("words", "environ", "named"),
    [
        (["run", "--agent-model", "openai:gpt-4o-mini"], {}, True),
        (["run", "--agent-model=openai:gpt-4o-mini"], {}, True),
        (["run"], {"AGENT_MODEL": "openai:gpt-4o-mini"}, True),
        (["run", "--mock", "--judge-model", "openai:judge"], {}, True),
        (["run"], {"EVAL_JUDGE_MODEL": "ollama:qwen"}, True),
        (["replay", "--judge-model", "openai:judge"], {}, True),
        (["run", "--mock"], {"AGENT_MODEL": "openai:gpt-4o-mini"}, False),  # --mock replaces the agent model
        (
            ["run", "--agent-url", "http://127.0.0.1:9/agent"],
            {"AGENT_MODEL": "openai:x"},
            False,
        ),  # so does an agent over HTTP
        (["run"], {"AGENT_URL": "http://127.0.0.1:9/agent", "AGENT_MODEL": "openai:x"}, False),
        (
            ["run", "--agent-model", "mock:agent", "--judge-model", "mock:demo-judge"],
            {"AGENT_MODEL": "openai:x"},
            False,
        ),  # options win
        (["run", "--mock"], {}, False),
        (["replay", "--agent-model", "openai:x"], {}, False),  # a replay never asks the agent
        (["validate", "--agent-model", "openai:x"], {}, False),
        (["run", "--help"], {"AGENT_MODEL": "openai:x"}, False),  # help calls nothing
        (["run", "-h", "--agent-model", "openai:x"], {}, False),
        (["sql", "SELECT 1"], {"AGENT_MODEL": "openai:x"}, False),
        ([], {"AGENT_MODEL": "openai:x"}, False),
        (["run", "--gateway-url", "http://127.0.0.1:9", "--agent-model", "openai:x"], {}, False),  # the gateway calls
        (["run"], {"KINDGI_GATEWAY_URL": "http://127.0.0.1:9", "AGENT_MODEL": "openai:x"}, False),
    ],
)
def test_the_words_name_a_litellm_model(words: list[str], environ: dict[str, str], named: bool) -> None:
    assert names_a_litellm_model(words, environ) is named


def test_a_worker_started_ahead_is_taken_once_and_one_never_taken_is_ended() -> None:
    spawn.spawn_ahead()
    ahead = spawn.take()
    try:
        assert ahead.poll() is None and spawn.take() is not ahead  # taken: the next take starts another
    finally:
        for process in (ahead,):
            process.kill()
            process.wait()
    spawn.spawn_ahead()
    unused = spawn._ahead
    spawn.discard()
    assert unused is not None and unused.returncode is not None and spawn._ahead is None


def test_the_guess_reads_the_options_and_variables_of_the_settings_table() -> None:
    # the words are read before the settings table can be imported; this holds their names to it
    from kindgi_eval.__main__ import CALLERS, VARIABLE
    from kindgi_eval.inputs import SETTING

    for field in ("agent_model", "judge_model"):
        assert VARIABLE[SETTING[field].flag] == SETTING[field].var
    assert SETTING["agent_url"].flag == "--agent-url" and SETTING["agent_url"].var == "AGENT_URL"
    assert {option for options in CALLERS.values() for option in options} == set(VARIABLE)
