"""`kindgi-eval` (and `python -m kindgi_eval`): the command line, started so that a run's litellm import is the only
thing before its first model call.

litellm takes seconds to import, and every model call goes through it, in a worker process of its own
(`llm.worker`). When the command's words alone say that it will call a litellm model, that process is started
here, before click, Dagster or the store are imported, and the run takes it once its settings are resolved. The words
are only a guess: the settings decide. A guess that misses starts the worker when the settings are known, as
before; one that names no model the settings keep ends the worker unused.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

CALLERS = {"run": ("--agent-model", "--judge-model"), "replay": ("--judge-model",)}
"""The commands that call models, and the options that can name one."""
VARIABLE = {"--agent-model": "AGENT_MODEL", "--judge-model": "EVAL_JUDGE_MODEL"}
"""The variable each option overrides."""
OFFLINE = "mock:"
HELP = {"--help", "-h"}
"""Asking for help calls nothing."""


def names_a_litellm_model(words: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether the command's words and the environment name a model litellm will be called for: a `run` or `replay`
    whose agent or judge option (else its variable) names one other than `mock:…`, unless it asks for help or names a
    gateway (`--gateway-url`, `KINDGI_GATEWAY_URL`); an agent over HTTP or `--mock` replace the agent model."""
    if not words or words[0] not in CALLERS or not HELP.isdisjoint(words):
        return False
    given = dict(_options(words[1:]))
    if given.get("--gateway-url") or environ.get("KINDGI_GATEWAY_URL"):
        return False  # the gateway makes the calls: nothing here imports litellm
    agent_elsewhere = "--mock" in given or bool(given.get("--agent-url") or environ.get("AGENT_URL"))
    for option in CALLERS[words[0]]:
        if option == "--agent-model" and agent_elsewhere:
            continue
        model = given.get(option) or environ.get(VARIABLE[option], "")
        if model and not model.startswith(OFFLINE):
            return True
    return False


def _options(words: Sequence[str]) -> list[tuple[str, str]]:
    """`--name value` and `--name=value` pairs, and flags as `(--name, "")`."""
    found = []
    for at, word in enumerate(words):
        if not word.startswith("--"):
            continue
        name, equals, value = word.partition("=")
        if not equals and at + 1 < len(words) and not words[at + 1].startswith("--"):
            value = words[at + 1]
        found.append((name, value))
    return found


def main() -> None:
    """Run the command line, the litellm worker started first when the words say it will be needed."""
    if names_a_litellm_model(sys.argv[1:], os.environ):
        from kindgi_eval.llm.spawn import spawn_ahead

        spawn_ahead()
    from kindgi_eval.cli import main as command_line

    command_line()


if __name__ == "__main__":
    main()
