"""The litellm worker's process, started (`spawn_ahead`) as soon as a command's words say it will call a litellm model,
before the command line itself is imported, and taken by the run (`take`) once its settings say so; one never taken
is ended when this process ends. Imports only the standard library."""

from __future__ import annotations

import atexit
import subprocess
import sys

CHILD = "kindgi_eval.llm.worker_process"
"""The module the worker process runs."""
_ahead: subprocess.Popen | None = None


def spawn() -> subprocess.Popen:
    """A new worker process, its stdin and stdout the pipes of its requests and replies; it imports litellm at once."""
    return subprocess.Popen([sys.executable, "-c", f"import {CHILD}; {CHILD}.main()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def spawn_ahead() -> None:
    """Start a worker process now, for the run to take later: its litellm import runs beside this process's start-up."""
    global _ahead
    if _ahead is None:
        _ahead = spawn()
        atexit.register(discard)


def take() -> subprocess.Popen:
    """The worker process started ahead, else a new one."""
    global _ahead
    process, _ahead = _ahead or spawn(), None
    return process


def discard() -> None:
    """End a worker process started ahead that no run took (the settings named no litellm model, or the command
    stopped on bad input)."""
    global _ahead
    if _ahead is not None:
        _ahead.kill()
        _ahead.wait()
        _ahead = None
