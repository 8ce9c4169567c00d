"""The model registry: `provider:model` names, checked, and mapped to litellm's `provider/model`."""

from __future__ import annotations

import re
from typing import NamedTuple

_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-]*")
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-/:@]*")


class ModelRef(NamedTuple):
    """A model named as `provider:model`."""

    provider: str
    model: str

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


def parse_model(name: str) -> ModelRef:
    """`openai:gpt-4o-mini` as a ModelRef; ValueError with the fix for anything else."""
    provider, sep, model = name.partition(":")
    if not sep or not _PART.fullmatch(provider) or not _MODEL.fullmatch(model):
        raise ValueError(
            f"{name!r} is not a model name; write provider:model, e.g. openai:gpt-4o-mini or mock:agent"
        )
    return ModelRef(provider, model)
