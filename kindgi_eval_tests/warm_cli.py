"""`kindgi-eval` as a process of its own, forked from one that has already imported the command line.

Starting the command takes seconds of imports (Dagster, DuckDB, pyarrow, pydantic) before it does anything, and
the tests start it a few hundred times. Each test worker keeps one warm process (this module run with `python -m`)
that has made those imports; for each command it forks a runner, the runner forks the command, waits for it and
answers its exit status. The command's process is as the installed script makes it in all that a test looks at:
its own pid, the test's environment and working folder, stdin from /dev/null, stdout and stderr in files, the
script's `main()`, and its exit status, whether it returns, raises `SystemExit` or ends with `os._exit`.

What a fork cannot give is what the interpreter reads when it starts (`PYTHONPATH` and the other `PYTHON*`
variables, the entry points installed): a command whose environment changes one of those is exec'd as before
(`needs_a_fresh_interpreter`).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path

PRELOAD = ("kindgi_eval.__main__", "kindgi_eval.cli.main", "kindgi_eval.cli.run", "kindgi_eval.defs.definitions")
"""What a `kindgi-eval run` imports before its first step. What it imports as it opens its Dagster instance (the
storage, SQLAlchemy, alembic) is imported by opening one (`_open_a_throwaway_instance`)."""
LAZY_FOLDERS = ("kindgi_eval.rules", "kindgi_eval.inputs", "kindgi_eval.store", "kindgi_eval.reports")
"""The folders that import a name's module when the name is first used: every name of theirs is imported here, as
every command's module (`cli/main.py`'s `COMMANDS`) is, so that a forked command finds them imported."""
ROOT = Path(__file__).resolve().parents[1]
"""The checkout: the warm process starts there, so it imports the package and these tests from it."""
ORPHAN_CHECK_S = 5.0
"""How often the warm process looks whether the test worker that started it is still there."""
START_S = 120.0
"""How long the warm process may take to import and listen (the machine may be busy with other tests)."""


def needs_a_fresh_interpreter(environ: Mapping[str, str]) -> bool:
    """Whether a command's environment changes what Python reads when it starts from what this process read."""
    names = {name for name in (*environ, *os.environ) if name.startswith("PYTHON")}
    return any(environ.get(name) != os.environ.get(name) for name in names)


class WarmCommand:
    """One test worker's warm process, started on first use and stopped (by its pid) when the worker ends."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._folder = Path()
        """Where its socket and the commands' output files are, made as it starts."""

    def run(
        self, executable: str, args: list[str], cwd: Path, env: dict[str, str], timeout: float
    ) -> tuple[int, str, str]:
        """Run `executable ARGS` forked from the warm process; (exit status, stdout, stderr)."""
        self._start()
        name = f"{threading.get_ident()}-{time.monotonic_ns()}"
        out, err = self._folder / f"{name}.out", self._folder / f"{name}.err"
        request = {"argv": [executable, *args], "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(str(self._folder / "socket"))
            connection.sendall(json.dumps(request).encode() + b"\n")
            answer = connection.makefile("r", encoding="utf-8")
            connection.settimeout(timeout)
            pid = int(answer.readline())
            try:
                status = answer.readline()
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(request["argv"], timeout) from None
        try:
            return int(status), _text(out), _text(err)
        finally:
            out.unlink(missing_ok=True)
            err.unlink(missing_ok=True)

    def _start(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        self._folder = Path(tempfile.mkdtemp(prefix="kindgi-warm-"))
        listening = self._folder / "socket"
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(listening)], cwd=ROOT, stdin=subprocess.DEVNULL
        )
        atexit.register(self._stop, self._process, self._folder)
        deadline = time.monotonic() + START_S
        while not listening.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the warm command process did not start (exit status {self._process.poll()})")
            time.sleep(0.05)

    @staticmethod
    def _stop(process: subprocess.Popen[bytes], folder: Path) -> None:
        if process.poll() is None:
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _text(path: Path) -> str:
    """What a command wrote, decoded as `subprocess.run(..., text=True)` decodes it (universal newlines)."""
    return path.read_text() if path.exists() else ""


def serve(path: str) -> None:
    """Import the command line, then fork a runner for each request on the socket at `path`."""
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    from kindgi_eval.cli.main import COMMANDS

    for module in sorted(set(COMMANDS.values())):
        importlib.import_module(f"kindgi_eval.cli.{module}")
    for folder in LAZY_FOLDERS:
        package = importlib.import_module(folder)
        for name in package.__all__:
            getattr(package, name)
    _open_a_throwaway_instance()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # runners are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".binding")
    listener.listen(16)
    listener.settimeout(ORPHAN_CHECK_S)
    os.rename(path + ".binding", path)  # the socket's name appears once it accepts
    worker = os.getppid()
    while True:
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != worker:  # the test worker is gone without stopping us
                return
            continue
        connection.setblocking(True)
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _runner(connection)
        connection.close()


def _open_a_throwaway_instance() -> None:
    """Open and close a Dagster instance in a folder removed after, as a command opens its own, and resolve the code
    location's repository: what the commands import and build for that is then theirs from the fork (a forked `run
    --mock` of the golden set 1.0 s instead of 1.6 s). Nothing of it is left but modules and the cached repository."""
    from kindgi_eval.defs.definitions import defs
    from kindgi_eval.defs.runs import open_instance

    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="kindgi-warm-instance-") as folder:
        os.environ["DAGSTER_HOME"] = folder
        open_instance(Path(folder)).dispose()
    os.environ.clear()
    os.environ.update(saved)
    defs.get_repository_def()


def _runner(connection: socket.socket) -> None:
    """Read one request, fork the command, tell its pid, wait for it, tell its exit status; never returns."""
    try:
        request = json.loads(connection.makefile("r", encoding="utf-8").readline())
        pid = os.fork()
        if pid == 0:
            connection.close()
            _command(request)
        connection.sendall(f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
    finally:
        os._exit(0)


def _command(request: dict) -> None:
    """Become the command's process and run the installed script's `main()`; never returns."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        sys.argv = request["argv"]
        from kindgi_eval.__main__ import main

        main()
        code = 0
    except SystemExit as e:
        code = _exit_status(e.code)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _exit_status(code: object) -> int:
    """The status `sys.exit(code)` ends a process with."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    serve(sys.argv[1])
