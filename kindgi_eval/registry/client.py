"""A client of the suite registry's HTTP API (`/v1/eval-suites`), for the `kindgi-eval suites` commands.

It speaks plain HTTP through the standard library, so publishing a suite needs nothing the offline path
lacks. A refusal the server explains (4xx) becomes an InputError in the server's own words; a server that
cannot be reached, or that fails (5xx), is a RegistryUnreachable.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

from kindgi_eval.registry.catalogue import CatalogueEntry, CataloguePage, EntryInfo
from kindgi_eval.rules import InputError, Problem

URL_ENV = "KINDGI_REGISTRY_URL"
"""The registry's base URL, e.g. http://127.0.0.1:8765."""
TOKEN_ENV = "KINDGI_REGISTRY_TOKEN"
"""The caller's bearer token, as `kindgi-eval tokens issue` printed it."""
PAGE = 100
"""Suites asked for per page when listing."""


class RegistryUnreachable(Exception):
    """The registry could not be reached, or failed while answering: nothing was decided about the request."""


class RegistryClient:
    """The caller's view of one registry: every request carries its token, so every answer is its tenant's."""

    def __init__(self, url: str, token: str, *, timeout_s: float = 30.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    def publish(
        self, suite: dict[str, Any], *, idempotency_key: str | None = None, if_match: str | None = None
    ) -> tuple[int, dict]:
        """Publish one suite version: (201, the stored version) when new, (200, it) when already stored as is."""
        headers = {"Content-Type": "application/json"}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        if if_match:
            headers["If-Match"] = if_match
        return self._request("POST", "/v1/eval-suites", json.dumps(suite).encode("utf-8"), headers)

    def suites(self) -> Iterator[dict]:
        """The latest version of each of the caller's suites, every page followed."""
        after = None
        while True:
            query = {"limit": str(PAGE), **({"after": after} if after else {})}
            _, page = self._request("GET", "/v1/eval-suites?" + urllib.parse.urlencode(query))
            yield from page["data"]
            after = page.get("next")
            if not after:
                return

    def suite(self, suite_id: str, version: str | None = None) -> dict:
        """One version of a suite: the given one, else the latest."""
        return self._request("GET", _version_path(suite_id, version))[1]

    def find_suite(self, suite_id: str, version: str | None = None, *, tenant: str | None = None) -> dict | None:
        """One version of a suite as `suite` answers it; None where the registry has no such version of the caller's.
        `tenant` names whose suite it is: a nightly token reads every tenant's, a tenant's token its own alone."""
        query = "?" + urllib.parse.urlencode({"tenant": tenant}) if tenant else ""
        status, found = self._request("GET", _version_path(suite_id, version) + query, missing_ok=True)
        return None if status == 404 else found

    def keep_files(self, suite_id: str, version: str, files: dict[str, str]) -> tuple[int, dict[str, str]]:
        """Give a published version the texts of the suite files it was read from: (201, them) when kept now, (200, the
        files it kept first) when it had some already."""
        body = json.dumps({"files": files}, ensure_ascii=False).encode("utf-8")
        status, kept = self._request("PUT", _files_path(suite_id, version), body, {"Content-Type": "application/json"})
        return status, kept["files"]

    def files(self, suite_id: str, version: str) -> dict[str, str] | None:
        """The texts of the suite files a version was published from, by name; None when it was published as a document."""
        return self._request("GET", _files_path(suite_id, version))[1]["files"]

    def versions(self, suite_id: str) -> dict:
        """Every version of a suite, newest first."""
        return self._request("GET", f"/v1/eval-suites/{_segment(suite_id)}/versions")[1]

    def catalogue_entries(self) -> list[EntryInfo]:
        """Every entry of the catalogue of standard suites, by name, the newest version first."""
        return CataloguePage.model_validate(self._request("GET", "/v1/catalogue")[1]).data

    def catalogue_entry(self, name: str, version: str) -> CatalogueEntry | None:
        """One catalogue entry with its files; None where the catalogue holds no such entry."""
        status, found = self._request("GET", _entry_path(name, version), missing_ok=True)
        return None if status == 404 else CatalogueEntry.model_validate(found)

    def publish_entry(
        self, name: str, version: str, description: str, files: dict[str, str]
    ) -> tuple[int, CatalogueEntry]:
        """Add an entry to the catalogue (an operator's token): (201, it) when new, (200, it) when already stored as is."""
        body = json.dumps(
            {"name": name, "version": version, "description": description, "files": files}, ensure_ascii=False
        )
        status, added = self._request(
            "POST", "/v1/catalogue", body.encode("utf-8"), {"Content-Type": "application/json"}
        )
        return status, CatalogueEntry.model_validate(added)

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        *,
        missing_ok: bool = False,
    ) -> tuple[int, dict]:
        request = urllib.request.Request(
            self.url + path,
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 - the URL is the user's
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as e:
            if missing_ok and e.code == 404:
                return 404, {}
            detail = _error_message(e)
            if e.code >= 500:
                raise RegistryUnreachable(f"{self.url}: the registry failed (HTTP {e.code}): {detail}") from None
            raise InputError([Problem(f"{method} {self.url}{path}", None, None, f"HTTP {e.code}: {detail}")]) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            reason = getattr(e, "reason", e)
            raise RegistryUnreachable(
                f"{self.url}: the registry cannot be reached ({reason}). Is `kindgi-eval serve` running there?"
            ) from None


def client_from_env(environ: Mapping[str, str] | None = None) -> RegistryClient | None:
    """The registry the environment points at (KINDGI_REGISTRY_URL, with the token KINDGI_REGISTRY_TOKEN); None when no
    URL is set. InputError when a URL is set without a token."""
    env = os.environ if environ is None else environ
    url, token = env.get(URL_ENV, ""), env.get(TOKEN_ENV, "")
    if not url:
        return None
    if not token:
        raise InputError(
            [
                Problem(
                    TOKEN_ENV,
                    None,
                    None,
                    f"is not set, and {URL_ENV} is. Set it to a token of the registry "
                    "(kindgi-eval tokens issue, on the registry's host).",
                )
            ]
        )
    return RegistryClient(url, token)


def _segment(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _version_path(suite_id: str, version: str | None) -> str:
    """The route of one version of a suite, else of its latest."""
    return f"/v1/eval-suites/{_segment(suite_id)}" + (f"/versions/{_segment(version)}" if version else "")


def _entry_path(name: str, version: str) -> str:
    """The route of one catalogue entry: its name's two parts are two path segments."""
    owner, _, suite = name.partition("/")
    return f"/v1/catalogue/{_segment(owner)}/{_segment(suite)}/versions/{_segment(version)}"


def _files_path(suite_id: str, version: str) -> str:
    """The route of the files one version was published from."""
    return f"/v1/eval-suites/{_segment(suite_id)}/versions/{_segment(version)}/files"


def _error_message(error: urllib.error.HTTPError) -> str:
    """The server's `{"error": {"code", "message"}}` in one line, or what it sent instead."""
    raw = error.read()
    try:
        found = json.loads(raw)["error"]
        return f"{found['message']} ({found['code']})"
    except (ValueError, KeyError, TypeError):
        return " ".join(raw.decode("utf-8", "replace").split())[:300] or error.reason
