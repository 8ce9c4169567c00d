"""The suite registry (`/v1/eval-suites`, spec 003): suite model, consumers, storage, HTTP API; imports spec and inputs."""

from importlib import import_module
from typing import Any

from kindgi_eval.registry import accuracy as _accuracy  # noqa: F401 (each kind's consumer registers itself)
from kindgi_eval.registry import benchmark as _benchmark  # noqa: F401
from kindgi_eval.registry import conversation as _conversation  # noqa: F401
from kindgi_eval.registry import custom as _custom  # noqa: F401
from kindgi_eval.registry import human_review as _human_review  # noqa: F401
from kindgi_eval.registry import pairwise as _pairwise  # noqa: F401
from kindgi_eval.registry import regression as _regression  # noqa: F401
from kindgi_eval.registry.client import TOKEN_ENV, URL_ENV, RegistryClient, RegistryUnreachable
from kindgi_eval.registry.consumers import Consumer, FolderContent, accepted_kinds, consumer_for, register_consumer, unregister_consumer
from kindgi_eval.registry.conversation import read_conversation, spec_of_files, suite_files
from kindgi_eval.registry.errors import ErrorCode, RegistryError
from kindgi_eval.registry.human_review import Promotion, promotion
from kindgi_eval.registry.model import (
    KINDS,
    EvalSuite,
    Kind,
    SuitePage,
    SuiteSummary,
    SuiteVersion,
    VersionInfo,
    canonical_json,
    content_hash,
    suite_document,
    suite_json_schema,
)
from kindgi_eval.registry.publishing import MAX_BODY
from kindgi_eval.registry.semver import SemVer, is_semver, parse_semver, semver_key
from kindgi_eval.registry.tokens import IssuedToken, TokenInfo

_LAZY = {
    "REGISTRY_DB_ENV": "database", "database_url": "database",
    "RegistryStore": "storage", "StoredVersion": "storage", "open_store": "storage",
    "materialize": "folders", "registered_suite_folder": "folders", "resolve_version": "folders",
    "DEFAULT_HOST": "server", "DEFAULT_PORT": "server", "RunningServer": "server", "running_server": "server", "serve": "server",
}
"""Names whose modules import SQLAlchemy, FastAPI or uvicorn: loaded on first use (PEP 562), so a command that only
reads the model, such as a client's, does not pay for the server's libraries."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"kindgi_eval.registry.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kindgi_eval.registry' has no attribute {name!r}")


__all__ = ["Promotion", "promotion", "materialize", "registered_suite_folder", "resolve_version", "Consumer", "FolderContent", "RegistryClient", "RegistryUnreachable", "TOKEN_ENV", "URL_ENV", "DEFAULT_HOST", "DEFAULT_PORT", "ErrorCode", "EvalSuite", "IssuedToken", "KINDS", "Kind", "MAX_BODY", "REGISTRY_DB_ENV", "RegistryError", "RegistryStore", "RunningServer", "SemVer", "StoredVersion", "SuitePage", "SuiteSummary", "SuiteVersion", "TokenInfo", "VersionInfo", "accepted_kinds", "canonical_json", "consumer_for", "content_hash", "database_url", "is_semver", "open_store", "parse_semver", "read_conversation", "spec_of_files", "suite_files", "register_consumer", "running_server", "semver_key", "serve", "suite_document", "suite_json_schema", "unregister_consumer"]
