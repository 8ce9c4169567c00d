"""The contact-message cache: every message a contact model wrote, kept in the store under its key
(`rules.contact_cache_key`: the model, persona, goal, conversation so far and prompt), so that a later run whose
conversation is the same so far reuses it instead of paying the contact model again. Touches files (locally or
through fsspec); each entry is one small JSON file, written whole or not at all."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, ValidationError

from kindgi_eval.store.batches import put_durably
from kindgi_eval.store.layout import StorePath

CONTACT_CACHE = "contact_messages"
"""The store's folder of cached contact messages; no view, compaction or prune reads it."""


class CachedContact(BaseModel):
    """One contact model's answer at one point of one conversation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    """The contact model that wrote it."""
    message: str
    """What the contact said; empty when done."""
    done: bool
    """Whether the contact was done instead."""
    cost_usd: float
    """What writing it cost, the one time it was paid for."""


def _path(root: StorePath, key: str) -> StorePath:
    return root / CONTACT_CACHE / key[:2] / f"{key}.json"


def cached_contact(root: StorePath, key: str) -> CachedContact | None:
    """The message stored under `key`; None when there is none (or it cannot be read, so it is asked for again)."""
    path = _path(root, key)
    try:
        return CachedContact.model_validate(json.loads(path.read_bytes()))
    except (FileNotFoundError, ValueError, ValidationError):
        return None


def cache_contact(root: StorePath, key: str, entry: CachedContact) -> None:
    """Keep `entry` under `key`, replacing any earlier one."""
    put_durably(entry.model_dump_json().encode(), _path(root, key))
