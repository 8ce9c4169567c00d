"""The suite registry (`/v1/eval-suites`), given the consumers of the kinds it takes; imports rules and inputs."""

from importlib import import_module
from typing import Any

from kindgi_eval.registry.catalogue import Catalogue, CatalogueEntry, EntryInfo, listing
from kindgi_eval.registry.client import TOKEN_ENV, URL_ENV, RegistryClient, RegistryUnreachable, client_from_env
from kindgi_eval.registry.consumers import (
    MAX_GROWTH,
    Consumer,
    Consumers,
    FolderContent,
    accepted_kinds,
    checked_consumers,
    jsonl,
    written_too_large,
)
from kindgi_eval.registry.conversation import (
    CONVERSATION,
    conversation_cases,
    problem_line,
    read_conversation,
    spec_of_files,
    suite_files,
)
from kindgi_eval.registry.conversation import SPEC_KEYS as CONVERSATION_KEYS
from kindgi_eval.registry.documents import (
    SUITE_DOCUMENT,
    ShippedCatalogue,
    checked_suite,
    handler_of_file,
    pulled_files,
    read_document,
)
from kindgi_eval.registry.errors import ErrorCode, RegistryError
from kindgi_eval.registry.model import (
    KIND_PATTERN,
    SUITE_ID_PATTERN,
    EvalSuite,
    SuitePage,
    SuiteSummary,
    SuiteVersion,
    VersionInfo,
    canonical_json,
    content_hash,
    etag,
    suite_document,
    suite_json_schema,
    with_kinds,
)
from kindgi_eval.registry.publishing import MAX_BODY
from kindgi_eval.registry.semver import SemVer, is_semver, parse_semver, semver_key
from kindgi_eval.registry.tokens import SCOPES, IssuedToken, Scope, TokenInfo, lifetime

_LAZY = {
    "REGISTRY_DB_ENV": "database",
    "database_url": "database",
    "RegistryStore": "storage",
    "StoredVersion": "storage",
    "open_store": "storage",
    "materialize": "folders",
    "registered_suite_folder": "folders",
    "resolve_version": "folders",
    "version_folder": "folders",
    "version_in_force": "folders",
    "DEFAULT_HOST": "server",
    "DEFAULT_PORT": "server",
    "RunningServer": "server",
    "running_server": "server",
    "serve": "server",
}
"""Names whose modules import SQLAlchemy, FastAPI or uvicorn: loaded on first use (PEP 562), so a command that only
reads the model, such as a client's, does not pay for the server's libraries."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"kindgi_eval.registry.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kindgi_eval.registry' has no attribute {name!r}")


__all__ = [
    "Catalogue",
    "CatalogueEntry",
    "EntryInfo",
    "listing",
    "SCOPES",
    "Scope",
    "lifetime",
    "SUITE_DOCUMENT",
    "ShippedCatalogue",
    "checked_suite",
    "handler_of_file",
    "pulled_files",
    "read_document",
    "CONVERSATION",
    "CONVERSATION_KEYS",
    "Consumers",
    "checked_consumers",
    "client_from_env",
    "etag",
    "jsonl",
    "problem_line",
    "materialize",
    "registered_suite_folder",
    "resolve_version",
    "version_folder",
    "version_in_force",
    "Consumer",
    "FolderContent",
    "RegistryClient",
    "RegistryUnreachable",
    "TOKEN_ENV",
    "URL_ENV",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "ErrorCode",
    "EvalSuite",
    "IssuedToken",
    "KIND_PATTERN",
    "MAX_BODY",
    "REGISTRY_DB_ENV",
    "RegistryError",
    "RegistryStore",
    "RunningServer",
    "SemVer",
    "StoredVersion",
    "SuitePage",
    "SuiteSummary",
    "SuiteVersion",
    "TokenInfo",
    "VersionInfo",
    "accepted_kinds",
    "canonical_json",
    "content_hash",
    "database_url",
    "is_semver",
    "open_store",
    "parse_semver",
    "read_conversation",
    "spec_of_files",
    "suite_files",
    "running_server",
    "semver_key",
    "serve",
    "suite_document",
    "suite_json_schema",
    "with_kinds",
    "conversation_cases",
    "MAX_GROWTH",
    "written_too_large",
    "SUITE_ID_PATTERN",
]
