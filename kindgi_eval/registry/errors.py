"""The registry's refusals: one stable code per kind of refusal, and the HTTP status each one answers with. Pure."""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "conflict", "not_found", "unauthorized", "forbidden", "invalid", "too_large", "precondition_failed", "busy"
]
"""The `error.code` of every refusal; clients branch on it, so a code never changes meaning."""

STATUS_OF: dict[ErrorCode, int] = {
    "conflict": 409,
    "not_found": 404,
    "unauthorized": 401,
    "forbidden": 403,
    "invalid": 422,
    "too_large": 413,
    "precondition_failed": 412,
    "busy": 503,
}
"""The HTTP status each code is answered with."""


class RegistryError(Exception):
    """A request the registry refuses: a stable code and a `where: what. fix.` message for a person."""

    def __init__(self, code: ErrorCode, message: str):
        self.code: ErrorCode = code
        self.message = message
        super().__init__(f"{code}: {message}")

    def __reduce__(self) -> tuple:
        return (RegistryError, (self.code, self.message))  # raised in a worker process, answered by the server

    @property
    def status(self) -> int:
        """The HTTP status this refusal answers with."""
        return STATUS_OF[self.code]

    def body(self) -> dict[str, dict[str, str]]:
        """The JSON error body: `{"error": {"code", "message"}}`."""
        return {"error": {"code": self.code, "message": self.message}}
