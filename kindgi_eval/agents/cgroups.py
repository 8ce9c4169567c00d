"""A control group per handler call, so the sandbox is bounded as a whole: memory and processes for the group, not
per process (four forked children each under a per-process `RLIMIT_AS` hold four times the limit; a fork bomb is
bounded by no rlimit at all). Touches /sys/fs/cgroup.

The call groups of one run are made inside one group of that run (`RunGroup`), which bounds their memory together,
however many calls are at once; the run groups are made inside the group a deployment names (`HANDLERS_ENV`, made by
`make_bound`), which bounds every run's handlers on the machine together, below what its services need. The kernel
then kills a handler at any of the three bounds, never a service.

cgroup v2 where the machine has it with the `memory` and `pids` controllers (`memory.max`, `memory.swap.max`,
`pids.max`), v1 otherwise (`memory.limit_in_bytes`, `memory.memsw.limit_in_bytes` where swap is accounted,
`pids.max`), as nsjail does, and as systemd's `MemoryMax`/`TasksMax` do on v2. The call's process joins its groups
before it execs anything (`enter_argv`), so everything it starts is inside; when the call ends, whatever is left in
the group is killed and the group removed.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path
from typing import NamedTuple

ROOT = Path("/sys/fs/cgroup")
PARENT = "kindgi-eval"
"""The folder under each hierarchy holding one group per call."""
MAX_PROCESSES = 32
"""Processes (and threads) a handler call may hold at once: the interpreter needs a handful."""
HANDLERS_ENV = "KINDGI_HANDLER_CGROUP"
"""The variable naming the group, inside `PARENT`, that every run's handler groups are made in: the machine's bound
on all handlers together, which a deployment makes (`make_bound`). Unset, they are made in `PARENT` itself."""


class Hierarchy(NamedTuple):
    """Where this machine lets groups be made, and how its limits are named."""

    version: int
    memory: Path
    """The folder groups with a memory limit are made in (v2: the same as `pids`)."""
    pids: Path


def find_hierarchy(root: Path = ROOT) -> Hierarchy | None:
    """The cgroup hierarchy to make call groups in: v2 with memory and pids delegated, else v1's memory and pids;
    None when neither can be written here."""
    v2 = root if (root / "cgroup.controllers").is_file() else root / "unified"
    controllers = (v2 / "cgroup.controllers").read_text().split() if (v2 / "cgroup.controllers").is_file() else []
    if {"memory", "pids"} <= set(controllers) and os.access(v2, os.W_OK):
        return Hierarchy(2, v2 / PARENT, v2 / PARENT)
    memory, pids = root / "memory", root / "pids"
    if (
        (memory / "memory.limit_in_bytes").is_file()
        and (pids / "cgroup.procs").is_file()
        and os.access(memory, os.W_OK)
        and os.access(pids, os.W_OK)
    ):
        return Hierarchy(1, memory / PARENT, pids / PARENT)
    return None


def make_bound(hierarchy: Hierarchy, name: str, memory_bytes: int) -> Path:
    """Make the group `name` inside `PARENT` with `memory_bytes` of memory (swap none) for everything made inside it;
    its memory folder. FileExistsError when it exists already."""
    memory = hierarchy.memory / name
    for folder in sorted({memory, hierarchy.pids / name}):
        _make(folder, hierarchy, top=True)
    _limit_memory(memory, hierarchy, memory_bytes)
    return memory


def memory_limit(folder: Path, hierarchy: Hierarchy) -> int | None:
    """The memory limit of group `folder`, bytes; None for none."""
    found = _read(folder / ("memory.max" if hierarchy.version == 2 else "memory.limit_in_bytes")).strip()
    return None if found in ("", "max") else int(found)


def remove_bound(hierarchy: Hierarchy, name: str) -> None:
    """Kill whatever is left in group `name` (made by `make_bound`) and in the groups inside it, and remove them all."""
    for top in {hierarchy.memory / name, hierarchy.pids / name}:
        if top.is_dir():
            _remove([*sorted((f for f in top.rglob("*") if f.is_dir()), key=lambda f: len(f.parts), reverse=True), top])


class RunGroup:
    """One run's group over all its handler calls: their memory together is bounded, and each call's group is made
    inside it. Made inside the machine's bound (`HANDLERS_ENV`) where one is given; removed when the run is done."""

    def __init__(self, hierarchy: Hierarchy, memory_bytes: int, within: str = "") -> None:
        name = uuid.uuid4().hex
        self.version = hierarchy.version
        self.memory, self.pids = hierarchy.memory / within / name, hierarchy.pids / within / name
        if within:  # the machine's bound is never made here, where it would have no limit
            for folder in {self.memory, self.pids}:
                if not folder.parent.is_dir():
                    raise FileNotFoundError(f"{HANDLERS_ENV} names {within!r}, and there is no group {folder.parent}")
        self.folders = sorted({self.memory, self.pids})
        for folder in self.folders:
            _make(folder, hierarchy, top=not within)
        _limit_memory(self.memory, hierarchy, memory_bytes)

    @property
    def calls(self) -> Hierarchy:
        """Where the run's call groups are made: inside this group."""
        return Hierarchy(self.version, self.memory, self.pids)

    def close(self) -> None:
        """Kill whatever is left of the run's calls and remove the group."""
        _remove([*(f for top in self.folders if top.is_dir() for f in top.iterdir() if f.is_dir()), *self.folders])


class CallGroup:
    """The groups of one call: made with its limits, entered by the call's process, emptied and removed after."""

    def __init__(self, hierarchy: Hierarchy, memory_bytes: int, processes: int = MAX_PROCESSES) -> None:
        name = uuid.uuid4().hex
        self.hierarchy = hierarchy
        self.folders = sorted({hierarchy.memory / name, hierarchy.pids / name})
        if hierarchy.version == 2:
            _enable_controllers(hierarchy.memory)
        for folder in self.folders:
            folder.mkdir(parents=True)
        memory, pids = hierarchy.memory / name, hierarchy.pids / name
        self.memory = memory
        _limit_memory(memory, hierarchy, memory_bytes)
        _write(pids / "pids.max", processes)

    def memory_killed(self) -> bool:
        """Whether the kernel killed a process of the call for memory (at its own bound, its run's or the machine's):
        the `oom_kill` count of its memory group (v2's `memory.events`, v1's `memory.oom_control`)."""
        events = self.memory / ("memory.events" if self.hierarchy.version == 2 else "memory.oom_control")
        counts = dict(line.split() for line in _read(events).splitlines() if len(line.split()) == 2)
        return int(counts.get("oom_kill", "0")) > 0

    def enter_argv(self, argv: list[str]) -> list[str]:
        """`argv` run by a shell that first moves itself into the call's groups, then execs it: nothing it starts is
        ever outside them."""
        joins = " && ".join(f'echo $$ > "{folder / "cgroup.procs"}"' for folder in self.folders)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *argv]

    def close(self) -> None:
        """Kill whatever is left in the groups, then remove them."""
        _remove(self.folders)


def _remove(folders: list[Path]) -> None:
    """Kill whatever is in each group, then remove them in order (a group's children before it)."""
    deadline = time.monotonic() + 5
    for folder in folders:
        while True:
            pids = [int(p) for p in _read(folder / "cgroup.procs").split()]
            if not pids or time.monotonic() > deadline:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
    for folder in folders:
        for _ in range(100):
            try:
                folder.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:  # busy until the last killed process is reaped
                time.sleep(0.01)


def _make(folder: Path, hierarchy: Hierarchy, *, top: bool) -> None:
    """Make group `folder` inside its parent: `PARENT`, made if need be (`top`), or a group that must exist. On v2 the
    parent gives it the memory and pids controllers."""
    if top:
        folder.parent.mkdir(exist_ok=True)
    if hierarchy.version == 2:
        _enable_controllers(folder.parent)
    folder.mkdir()


def _limit_memory(memory: Path, hierarchy: Hierarchy, memory_bytes: int) -> None:
    """Bound group `memory`'s memory, swap included."""
    if hierarchy.version == 2:
        _write(memory / "memory.max", memory_bytes)
        _write_if_there(memory / "memory.swap.max", 0)
    else:
        _write(memory / "memory.limit_in_bytes", memory_bytes)
        _write_if_there(memory / "memory.memsw.limit_in_bytes", memory_bytes)  # no way round the limit through swap


def _enable_controllers(parent: Path) -> None:
    """On v2, the parent of the call groups has the memory and pids controllers for its children."""
    parent.mkdir(exist_ok=True)
    wanted = [c for c in ("memory", "pids") if c not in _read(parent / "cgroup.subtree_control").split()]
    if wanted:
        (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))


def _write(path: Path, value: int) -> None:
    path.write_text(str(value))


def _write_if_there(path: Path, value: int) -> None:
    if path.exists():
        _write(path, value)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
