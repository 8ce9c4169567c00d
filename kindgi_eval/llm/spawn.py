"""The litellm worker's process, started (`spawn_ahead`) as soon as a command's words say it will call a litellm model,
before the command line itself is imported, and taken by the run (`take`) once its settings say so; one never taken
is ended when this process ends. Imports only the standard library.

On a machine of more than one core the worker forks a sibling once litellm is imported, served over pipes of its own
made here: a second worker at the cost of a fork, where starting one would cost a second import of litellm (seconds
of a core). The run uses it where it wants two workers (`worker.workers_for`); one it does not want is let go at once."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys

CHILD = "kindgi_eval.llm.worker_process"
"""The module the worker process runs."""
SIBLING_CORES = 2
"""The cores from which a worker forks a sibling, and a run wants a second worker (`worker.workers_for`): one for each
of them, the run's own process taking turns with them (it is all but idle while only a judge's calls are in flight).
A started worker would cost a second import of litellm, worth paying only with a core of its own; a forked sibling
costs no import, so from 2 cores it takes its share of litellm's work beside the first (figures in
benchmarks/README.md)."""
_ahead: WorkerProcess | None = None


class WorkerProcess(subprocess.Popen):
    """A worker process, its stdin and stdout the pipes of its requests and replies."""

    sibling: tuple[int, int] | None = None
    """This process's ends of the pipes of the sibling the worker forks, requests then replies; None without one."""

    def let_sibling_go(self) -> None:
        """Close this end of the sibling's pipes: a sibling not forked yet ends as soon as it is, one forked already
        at once."""
        for fd in self.sibling or ():
            os.close(fd)
        self.sibling = None


def spawn() -> WorkerProcess:
    """A new worker process; it imports litellm at once, then forks its sibling where the machine has the cores."""
    child_ends: tuple[int, ...] = ()
    ours: tuple[int, int] | None = None
    if (os.cpu_count() or 1) >= SIBLING_CORES:
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        child_ends, ours = (requests_read, replies_write), (requests_write, replies_read)
    process = WorkerProcess(
        [sys.executable, "-c", f"import {CHILD}; {CHILD}.main({child_ends!r})"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        pass_fds=child_ends,
    )
    for fd in child_ends:
        os.close(fd)
    process.sibling = ours
    return process


def spawn_ahead() -> None:
    """Start a worker process now, for the run to take later: its litellm import runs beside this process's start-up."""
    global _ahead
    if _ahead is None:
        _ahead = spawn()
        atexit.register(discard)


def take() -> WorkerProcess:
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
        _ahead.let_sibling_go()
        _ahead = None
