"""A model call that produced no answer, and why: the error `calls` raises and the worker's replies carry back."""

from __future__ import annotations

from typing import Literal

FaultCause = Literal["rate_limit", "server", "timeout", "input", "auth"]


class ModelCallError(Exception):
    """A model call that produced no answer; its message is safe to store (no key, no Authorization header)."""

    def __init__(self, message: str, *, fault: FaultCause | Literal["circuit_open"], attempts: int):
        super().__init__(message)
        self.fault = fault
        """Why: the last attempt's fault, or circuit_open when no attempt was made."""
        self.attempts = attempts
        """Requests sent for this call."""
