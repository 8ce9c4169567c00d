"""The model registry: `provider:model` names, checked, and mapped to litellm's `provider/model`.

`mock:*` names resolve offline (the demo agent and the mock judge); every other name is handed to litellm,
which reads the provider's credentials and base URL from its usual environment variables.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Literal, NamedTuple

_PROVIDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-]*")
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-/:@]*")
_FIX = "write provider:model, e.g. openai:gpt-4o-mini or mock:agent"

ModelRole = Literal["agent", "judge", "contact"]
"""Which part of a run asks a model: its agent, its judge or its simulated contact."""
PROVIDERS_DOC = "https://docs.litellm.ai/docs/providers"


class ModelRef(NamedTuple):
    """A model named as `provider:model`."""

    provider: str
    """Who serves it, as litellm names providers: `openai`, `anthropic`, `ollama`, ... or `mock`."""
    model: str
    """The provider's own name for the model; may itself hold `/`, `:` or `@` (`ollama:llama3:8b`)."""

    @property
    def is_mock(self) -> bool:
        """True for the offline `mock:*` models, which never leave this machine."""
        return self.provider == "mock"

    @property
    def litellm_name(self) -> str:
        """The name litellm routes by: `provider/model`."""
        return f"{self.provider}/{self.model}"

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


def _problem(name: str) -> str | None:
    """What is wrong with a name that has a colon, in words, or None when it is a well-formed `provider:model`."""
    provider, _, model = name.partition(":")
    if any(c.isspace() for c in name):
        return "it contains whitespace"
    if not provider:
        return "the provider before ':' is empty"
    if not model:
        return "the model after ':' is empty"
    if not _PROVIDER.fullmatch(provider):
        return f"the provider {provider!r} may hold only letters, digits, '.', '_' and '-'"
    if not _MODEL.fullmatch(model):
        return f"the model {model!r} must start with a letter or digit and hold only letters, digits and . _ - / : @"
    return None


def parse_model(name: str) -> ModelRef:
    """`openai:gpt-4o-mini` as a ModelRef; ValueError saying what is wrong and how to write it otherwise."""
    if ":" not in name:  # `gpt4`: the plain message says it best
        raise ValueError(f"{name!r} is not a model name; {_FIX}")
    problem = _problem(name)
    if problem is not None:
        raise ValueError(f"{name!r} is not a model name ({problem}); {_FIX}")
    provider, _, model = name.partition(":")
    return ModelRef(provider, model)


def checked_model(
    name: str, role: ModelRole, *, offline: Mapping[ModelRole, Sequence[str]], known_provider: Collection[str] | None
) -> ModelRef:
    """`name` as a ModelRef fit for `role`; ValueError saying what is wrong and what to write instead.

    A `mock:` name must be one of `offline[role]`, the offline models of that role. Any other provider must be
    one of `known_provider` (litellm's provider names), unless that is None (not looked up yet).
    """
    ref = parse_model(name)
    if ref.is_mock:
        if str(ref) not in offline[role]:
            names = offline[role]
            which = (
                f"the offline {role} is {names[0]}"
                if len(names) == 1
                else f"the offline {role}s are {', '.join(names[:-1])} and {names[-1]}"
            )
            other = next((each for each, models in offline.items() if str(ref) in models), None)
            also = f" ({ref} is the offline {other})" if other else ""
            raise ValueError(f"{str(ref)!r} is not an offline {role}; {which}{also}.")
    elif known_provider is not None and ref.provider not in known_provider:
        raise ValueError(
            f"{ref.provider!r} in {str(ref)!r} is not a provider litellm knows. Write one of litellm's provider names "
            f"(openai, anthropic, ollama, ...; the list: {PROVIDERS_DOC}), e.g. openai:gpt-4o-mini."
        )
    return ref
