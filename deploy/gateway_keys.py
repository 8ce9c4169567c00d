"""The LiteLLM gateway's check of each request's key, as the production profile (deploy/production.py) runs it: the
gateway's master key may do whatever the proxy does; the call key the profile gives its runs may only call models
(`POST /v1/chat/completions`), so a run worker never holds the key that administers the gateway.

LiteLLM's own keys of that kind (virtual keys, `/key/generate`) are kept in its Prisma-managed database, and Prisma's
client is generated at install time with query engines it downloads from outside any package registry; this check
needs neither. The proxy loads it from its config's folder (`general_settings.custom_auth: gateway_keys.authenticate`)
and reads both keys from its own environment: LITELLM_MASTER_KEY and KINDGI_GATEWAY_CALL_KEY.
"""

from __future__ import annotations

import hmac
import os

from fastapi import HTTPException, Request
from litellm.proxy._types import LitellmUserRoles, UserAPIKeyAuth

CALL_KEY = "KINDGI_GATEWAY_CALL_KEY"
"""The variable holding the key the profile's runs call models with."""
CALL_ROUTES = frozenset({"/chat/completions", "/v1/chat/completions"})
"""The routes a call key is accepted on: a model call, nothing that reads or changes the gateway."""


async def authenticate(request: Request, api_key: str) -> UserAPIKeyAuth:
    """The caller the key names: the master key the gateway's administrator, the call key a caller of models on
    `CALL_ROUTES` only; any other key is refused (401), and the call key on any other route (403)."""
    if _same(api_key, os.environ["LITELLM_MASTER_KEY"]):
        return UserAPIKeyAuth(api_key=api_key, user_role=LitellmUserRoles.PROXY_ADMIN)
    if _same(api_key, os.environ[CALL_KEY]):
        if request.url.path in CALL_ROUTES:
            return UserAPIKeyAuth(api_key=api_key, user_role=LitellmUserRoles.INTERNAL_USER)
        raise HTTPException(403, f"{request.url.path}: the call key calls models only (POST /v1/chat/completions)")
    raise HTTPException(401, "Authorization: not a key of this gateway")


def _same(given: str, key: str) -> bool:
    """Whether `given` is `key`, compared in constant time; never for an empty key."""
    return bool(key) and hmac.compare_digest(given.encode("utf-8"), key.encode("utf-8"))
