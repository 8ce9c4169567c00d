"""The sandbox a custom suite's handler runs in: tenant code in a separate process that sees almost nothing.

One process per call, started as `sh -c 'join the call's cgroups; exec prlimit ... -- bwrap ... python -I -S -B
harness.py'`:
- a control group per call (`cgroups.CallGroup`) bounds the whole sandbox: its memory (heap, memory files and
  tmpfs together, swap included) and its processes (`MAX_PROCESSES`), however many it forks; the calls of one run
  are made inside one group of the run (`cgroups.RunGroup`) bounding their memory together to the same limit, however
  many are at once, itself inside the machine's bound on every run's handlers where the deployment names one
  (`cgroups.HANDLERS_ENV`);
- bubblewrap gives it new user, PID, network, IPC, UTS and cgroup namespaces (no network at all, not even
  loopback; no other process), runs it as uid/gid 65534 with every capability dropped, in a new session, killed
  with its parent, with no further user namespace (`--disable-userns`) and under a system-call filter
  (`seccomp.filter_program`);
- its filesystem is read-only, its root remounted read-only after the binds, and holds only the shared libraries
  (`/usr/lib`, and `/lib`, `/lib64` as the host has them), the interpreter with its standard library (its
  `site-packages` hidden under an empty read-only tmpfs), the harness, and the handler's own module in a folder of
  its own: no /proc, /dev, /tmp, home, runtime folder, store, registry database, tenant configuration or other suite;
- prlimit caps its address space (the memory limit, RLIMIT_AS), its CPU time (a backstop just past the time limit),
  the size of any file it writes (1 MiB), its open files (256), and core dumps (none);
- the wall-clock limit is kept here: past it the whole session is killed.
Its standard output is read up to `spec.ANSWER_LIMIT` (past that it is killed), the end of its standard error kept.
Touches files (a temporary folder per call) and starts processes.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

from kindgi_eval.agents.cgroups import HANDLERS_ENV, CallGroup, RunGroup, find_hierarchy
from kindgi_eval.agents.seccomp import filter_program, machine
from kindgi_eval.inputs import RunSettings
from kindgi_eval.rules import ANSWER_LIMIT, Handler, HandlerExit, InputError, Problem

HARNESS = Path(__file__).with_name("handler_harness.py")
"""The script the sandbox runs: it loads the handler and prints its answer."""
FILE_LIMIT = 1024 * 1024
"""The largest file a handler may write (it sees no writable folder; this bounds what it could try)."""
OPEN_FILES = 256
"""The most files a handler may hold open at once."""
STDERR_KEPT = 4096
"""The bytes of a handler's standard error kept, from its end."""
LIBRARIES = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/lib32", "/lib32")
"""The shared-library folders the interpreter may need: bound read-only, or made the same symlink as on the host."""


class Runtime(NamedTuple):
    """The Python that runs a handler: the interpreter this process was started from, without its packages."""

    executable: Path
    """The interpreter's real file."""
    stdlib: Path
    """Its standard library folder (with `lib-dynload`, usually)."""
    dynload: Path
    """The folder of its standard library's extension modules (`lib-dynload`), often inside `stdlib`."""
    libraries: tuple[Path, ...]
    """Its shared libpython, when it was built with one outside the system's library folders."""


def python_runtime() -> Runtime:
    """The base interpreter of this process (never a virtual environment's: its packages are not the handler's)."""
    executable = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    libraries: list[Path] = []
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        libdir = sysconfig.get_config_var("LIBDIR")
        for name in {sysconfig.get_config_var("LDLIBRARY"), sysconfig.get_config_var("INSTSONAME")} - {None}:
            path = Path(libdir, name)
            if path.exists() and not str(path.resolve()).startswith(("/usr/lib", "/lib")):
                libraries.append(path.resolve())
    stdlib = Path(os.__file__).parent.resolve()  # the base install's, even from a virtual environment
    dynload = Path(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload").resolve()
    return Runtime(executable, stdlib, dynload, tuple(sorted(set(libraries))))


class Sandbox:
    """Runs one handler call at a time per thread, under the limits it was made with, each call's group inside the
    run's `group`; `close` (or leaving a `with` block) removes the run's group once its calls are done."""

    def __init__(
        self, bwrap: str, prlimit: str, runtime: Runtime, timeout_s: float, memory_mib: int, group: RunGroup, arch: str
    ) -> None:
        self.bwrap, self.prlimit, self.runtime = bwrap, prlimit, runtime
        self.timeout_s, self.memory_mib = timeout_s, memory_mib
        self.group, self.seccomp = group, filter_program(arch)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the run's group, killing whatever is left in it."""
        self.group.close()

    def command(self, folder: Path, script: list[str], seccomp_fd: int) -> list[str]:
        """The command that runs the bare interpreter on `script` (its arguments) in the sandbox, `folder` as /handler,
        the system-call filter read from `seccomp_fd`."""
        memory = self.memory_mib * 1024 * 1024
        cpu = math.ceil(self.timeout_s) + 1
        limits = [
            f"--as={memory}:{memory}",
            f"--cpu={cpu}:{cpu}",
            f"--fsize={FILE_LIMIT}:{FILE_LIMIT}",
            f"--nofile={OPEN_FILES}:{OPEN_FILES}",
            "--core=0:0",
        ]
        rt = self.runtime
        box = [
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--uid",
            "65534",
            "--gid",
            "65534",
            "--cap-drop",
            "ALL",
            "--hostname",
            "sandbox",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--seccomp",
            str(seccomp_fd),
        ]
        for place in LIBRARIES:
            if os.path.islink(place):
                box += ["--symlink", os.readlink(place), place]
            elif os.path.isdir(place):
                box += ["--ro-bind", place, place]
        for path in [rt.executable, *rt.libraries, rt.stdlib]:
            box += ["--ro-bind", str(path), str(path)]
        if not rt.dynload.is_relative_to(rt.stdlib) and rt.dynload.is_dir():
            box += ["--ro-bind", str(rt.dynload), str(rt.dynload)]
        packages = rt.stdlib / "site-packages"
        if packages.is_dir():  # the interpreter's installed packages are not the handler's
            box += ["--tmpfs", str(packages), "--remount-ro", str(packages)]
        box += ["--ro-bind", str(HARNESS), "/sandbox/harness.py", "--ro-bind", str(folder), "/handler"]
        box += ["--remount-ro", "/", "--chdir", "/handler"]  # the root tmpfs bubblewrap made, read-only once bound
        box += ["--setenv", "LANG", "C.UTF-8"]
        run = [str(rt.executable), "-I", "-S", "-B", "-X", "utf8", *script]
        return [self.prlimit, *limits, "--", self.bwrap, *box, *run]

    def run(self, handler: Handler, payload: dict) -> HandlerExit:
        """Call the handler on `payload` (`{"case", "reply"}`) in the sandbox: what it did, never raising for it."""
        folder = Path(tempfile.mkdtemp(prefix="kindgi-handler-"))
        try:
            module = folder / handler.modulePath
            module.parent.mkdir(parents=True, exist_ok=True)
            module.write_text(handler.source, encoding="utf-8")
            for path in [folder, *folder.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)  # readable by the sandbox's uid 65534
            script = ["/sandbox/harness.py", f"/handler/{handler.modulePath}", handler.entrypointPath]
            return self.call(folder, script, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def call(self, folder: Path, script: list[str], stdin: bytes) -> HandlerExit:
        """Run the interpreter on `script` in the sandbox (`folder` as /handler), in a control group of its own that is
        emptied and removed when the call ends."""
        group = CallGroup(self.group.calls, self.memory_mib * 1024 * 1024)
        try:
            ran = self._call(group, folder, script, stdin)
            return ran._replace(memory_killed=True) if group.memory_killed() else ran
        finally:
            group.close()

    def _call(self, group: CallGroup, folder: Path, script: list[str], stdin: bytes) -> HandlerExit:
        started = time.monotonic()
        read_end, write_end = os.pipe()  # the filter, read by bubblewrap from this descriptor
        os.write(write_end, self.seccomp)  # a few hundred bytes: within the pipe's buffer, so nothing waits
        os.close(write_end)
        try:
            argv = group.enter_argv(self.command(folder, script, read_end))
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=(read_end,),
            )
        except OSError as e:
            return HandlerExit(
                None,
                b"",
                b"",
                0.0,
                timeout_s=self.timeout_s,
                memory_mib=self.memory_mib,
                refused=f"the sandbox did not start ({e})",
            )
        finally:
            os.close(read_end)
        out, err = bytearray(), bytearray()
        overflow = threading.Event()
        readers = [
            threading.Thread(target=_read_head, args=(process.stdout, out, ANSWER_LIMIT + 1, overflow), daemon=True),
            threading.Thread(target=_read_tail, args=(process.stderr, err, STDERR_KEPT), daemon=True),
            threading.Thread(target=_write, args=(process.stdin, stdin), daemon=True),
        ]
        for reader in readers:
            reader.start()
        deadline = started + self.timeout_s
        timed_out = False
        while process.poll() is None:
            if overflow.is_set():
                _kill(process)
                break
            if time.monotonic() >= deadline:
                timed_out = True
                _kill(process)
                break
            try:
                process.wait(timeout=min(0.05, max(0.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                pass
        process.wait()
        duration = (time.monotonic() - started) * 1000
        _kill(process)  # whatever it left in its session
        for reader in readers:
            reader.join(timeout=2)
        return HandlerExit(
            None if timed_out else process.returncode,
            bytes(out),
            bytes(err),
            duration,
            timed_out=timed_out,
            timeout_s=self.timeout_s,
            memory_mib=self.memory_mib,
        )


def _read_head(stream, into: bytearray, limit: int, overflow: threading.Event) -> None:
    """Read up to `limit` bytes; at the limit, say so (the process is killed) and stop."""
    with stream:
        while len(into) < limit:
            chunk = stream.read1(65536)
            if not chunk:
                return
            into += chunk[: limit - len(into)]
        overflow.set()


def _read_tail(stream, into: bytearray, keep: int) -> None:
    """Read to the end, keeping the last `keep` bytes."""
    with stream:
        while chunk := stream.read1(65536):
            into += chunk
            del into[:-keep]


def _write(stream, data: bytes) -> None:
    try:
        with stream:
            stream.write(data)
    except (BrokenPipeError, OSError):
        pass  # it exited, or closed its input, before reading it all: its answer says the rest


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def make_sandbox(settings: RunSettings) -> Sandbox:
    """The sandbox of a run, with its time and memory limits and the run's group over its calls (close it when the
    run's calls are done); InputError when this machine cannot give one (no
    bubblewrap or prlimit, no control group it may make, a machine the system-call filter is not built for, or user
    namespaces refused), since a handler never runs unsandboxed."""
    bwrap, prlimit = shutil.which("bwrap"), shutil.which("prlimit")
    if bwrap is None or prlimit is None:
        missing = " and ".join(name for name, path in (("bwrap", bwrap), ("prlimit", prlimit)) if path is None)
        raise InputError(
            [
                Problem(
                    "custom handler",
                    None,
                    None,
                    f"{missing} not found on PATH: a custom suite's handler runs only "
                    "in the sandbox. Install bubblewrap and util-linux (apt-get install bubblewrap util-linux).",
                )
            ]
        )
    hierarchy = find_hierarchy()
    if hierarchy is None:
        raise InputError(
            [
                Problem(
                    "custom handler",
                    None,
                    None,
                    "no control group can be made here (/sys/fs/cgroup): a custom "
                    "suite's handler runs only in a group that bounds its memory and processes as a whole. Run "
                    "kindgi-eval as root, or delegate it a cgroup v2 subtree with the memory and pids controllers.",
                )
            ]
        )
    arch = machine()
    if arch is None:
        raise InputError(
            [
                Problem(
                    "custom handler",
                    None,
                    None,
                    f"the handler's system-call filter is not built for this machine "
                    f"({platform.machine()}); a custom suite runs on x86_64 and aarch64.",
                )
            ]
        )
    within = os.environ.get(HANDLERS_ENV, "")
    try:
        group = RunGroup(hierarchy, settings.handler_memory_mib * 1024 * 1024, within)
    except FileNotFoundError as e:
        raise InputError(
            [
                Problem(
                    HANDLERS_ENV,
                    None,
                    None,
                    f"{e}: the machine's bound on every run's handlers is gone (was "
                    f"the deployment that made it stopped?). Start it again, or unset {HANDLERS_ENV}.",
                )
            ]
        ) from None
    except OSError as e:
        raise InputError(
            [
                Problem(
                    "custom handler",
                    None,
                    None,
                    f"the sandbox's control group cannot be made here ({e}). "
                    "Run kindgi-eval as root, or delegate it a cgroup v2 subtree.",
                )
            ]
        ) from None
    sandbox = Sandbox(
        bwrap, prlimit, python_runtime(), settings.handler_timeout_s, settings.handler_memory_mib, group, arch
    )
    with tempfile.TemporaryDirectory(prefix="kindgi-handler-") as empty:
        try:
            probe = sandbox.call(Path(empty), ["-c", "pass"], b"")
        except OSError as e:  # the control group could not be made or entered
            sandbox.close()
            raise InputError(
                [
                    Problem(
                        "custom handler",
                        None,
                        None,
                        f"the sandbox's control group cannot be made here ({e}). "
                        "Run kindgi-eval as root, or delegate it a cgroup v2 subtree.",
                    )
                ]
            ) from None
    if probe.returncode != 0:
        sandbox.close()
        said = (
            probe.refused or probe.stderr.decode("utf-8", "replace").strip()[-300:] or f"exit status {probe.returncode}"
        )
        raise InputError(
            [
                Problem(
                    "custom handler",
                    None,
                    None,
                    f"the sandbox cannot start on this machine ({said}). "
                    "bubblewrap needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1).",
                )
            ]
        )
    return sandbox
