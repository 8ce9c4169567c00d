"""Bearer tokens: random secrets shown once, kept only as their SHA-256, each mapped to one tenant, with a scope and
an optional expiry. Pure."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import timedelta
from typing import Literal, NamedTuple, get_args

from pydantic import TypeAdapter, ValidationError

from kindgi_eval.rules import Slug

TOKEN_PREFIX = "kgi_"
"""Every secret starts with it, so a leaked one is recognisable (and a scanner can look for it)."""
SECRET_BYTES = 32
"""Random bytes in a secret (`secrets.token_urlsafe`: 43 characters)."""
_SECRET = re.compile(rf"{TOKEN_PREFIX}[A-Za-z0-9_-]{{43}}")
_TENANT = TypeAdapter(Slug)
MAX_TENANT = 128
MAX_NAME = 200

Scope = Literal["read", "publish", "operator", "nightly"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
"""What a token may do: `read` lists, shows and pulls its tenant's suites; `publish` does that and publishes;
`operator` acts for no tenant and publishes to the catalogue of standard suites; `nightly` acts for no tenant and
reads every tenant's suites, each request naming the tenant, to run them, and publishes nothing. Every token reads
the catalogue."""
TENANTLESS: tuple[Scope, ...] = ("operator", "nightly")
"""The scopes a token is issued for no tenant with."""
NO_TENANT = ""
"""The tenant an operator or nightly token is stored with: none, so no tenant's suite is ever its to write."""
_LIFETIME = re.compile(r"([1-9][0-9]{0,5})([mhdw])")
_UNIT = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


class IssuedToken(NamedTuple):
    """A token just issued: the one time its secret is known outside the caller's hands."""

    id: str
    """The token's public id (`tok_…`), for `tokens list` and `tokens revoke`."""
    tenant: str
    """The tenant every request with this token acts for."""
    name: str
    """What the token is for, for a person (`ci`, `alice's laptop`)."""
    secret: str
    """The bearer secret; the registry keeps only its SHA-256."""
    scope: Scope = "publish"
    """What it may do."""
    expires_at: str | None = None
    """When it stops being accepted, UTC, ISO 8601; None for never."""


class TokenInfo(NamedTuple):
    """A stored token, as `tokens list` shows it (never its secret)."""

    id: str
    tenant: str
    name: str
    created_at: str
    """When it was issued, UTC, ISO 8601."""
    last_used_at: str | None
    """When a request last carried it (to the minute), or None."""
    revoked_at: str | None
    """When it was revoked, or None while it is valid."""
    scope: str
    """What it may do: `read`, `publish`, `operator` or `nightly`."""
    expires_at: str | None
    """When it stops being accepted, or None for never."""


def new_secret() -> str:
    """A fresh bearer secret: the prefix and 32 random bytes, URL-safe."""
    return TOKEN_PREFIX + secrets.token_urlsafe(SECRET_BYTES)


def new_token_id() -> str:
    """A fresh public token id."""
    return "tok_" + secrets.token_hex(6)


def secret_sha256(secret: str) -> str:
    """What is stored of a secret: its SHA-256, hex."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def is_token_shaped(text: str) -> bool:
    """Whether `text` could be a secret this registry issued (a malformed one is refused before any lookup)."""
    return _SECRET.fullmatch(text) is not None


def lifetime(text: str) -> timedelta:
    """How long a token lives, from `90d`, `12h`, `30m` or `2w`; ValueError saying how to write it otherwise."""
    found = _LIFETIME.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"{text!r} is not a lifetime. Write a whole number and a unit: 30m, 12h, 90d or 2w.")
    return int(found.group(1)) * _UNIT[found.group(2)]


def tenant_problem(tenant: str) -> str | None:
    """What is wrong with a tenant id for a token, or None: a tenant id is a slug, like a tenant.toml's `tenant`."""
    try:
        _TENANT.validate_python(tenant)
    except ValidationError as e:
        error = e.errors(include_url=False)[0]
        return str(error["ctx"]["error"]) if "ctx" in error else error["msg"]
    if len(tenant) > MAX_TENANT:
        return f"is {len(tenant)} characters long; a tenant id has at most {MAX_TENANT}."
    return None
