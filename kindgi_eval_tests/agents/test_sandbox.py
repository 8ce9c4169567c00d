"""The handler's sandbox on this machine, with real bubblewrap: what the handler can see and do, and the limits."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from kindgi_eval.agents import make_sandbox
from kindgi_eval.agents.cgroups import (
    HANDLERS_ENV,
    MAX_PROCESSES,
    CallGroup,
    RunGroup,
    find_hierarchy,
    make_bound,
    memory_limit,
    remove_bound,
)
from kindgi_eval.agents.seccomp import DENIED, machine, syscall_number
from kindgi_eval.inputs import RunSettings
from kindgi_eval.rules import Handler, judge_exit

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"
)

REPORT = """
import json, os, socket
def grade(case, reply):
    seen = {"root": sorted(os.listdir("/")), "uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd(),
            "env": dict(os.environ), "packages": os.listdir(case["packages"]) if os.path.isdir(case["packages"]) else None}
    for probe in case["paths"]:
        seen[probe] = os.path.exists(probe)
    try:
        open("/handler/written.txt", "w").write("x")
        seen["write"] = "allowed"
    except OSError as e:
        seen["write"] = type(e).__name__
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=2)
        seen["network"] = "reached"
    except OSError as e:
        seen["network"] = e.errno
    return {"pass": True, "reason": json.dumps(seen)}
"""


def run_once(settings: RunSettings, handler: Handler, payload: dict):
    """One call of `handler` in a run's sandbox of `settings`, its run's group removed after."""
    with make_sandbox(settings) as sandbox:
        return sandbox.run(handler, payload)


def test_the_handler_sees_only_the_runtime_and_its_own_module(home, tmp_path) -> None:
    secret = home.root / "registry-suites" / "globex" / "cases.jsonl"
    secret.parent.mkdir(parents=True)
    secret.write_text("{}")
    packages = next(p for p in sys.path if p.endswith("site-packages"))
    case = {
        "paths": [str(secret), str(home.root), os.getcwd(), str(tmp_path), sys.prefix, "/proc/1", "/etc/passwd"],
        "packages": packages,
    }
    run = run_once(
        RunSettings(handler_timeout_s=10),
        Handler(modulePath="graders/report.py", entrypointPath="grade", source=REPORT),
        {"case": case, "reply": {}},
    )
    verdict = judge_exit(run)
    assert verdict.verdict == "pass", verdict
    seen = json.loads(json.loads(run.stdout)["reason"])
    assert set(seen["root"]) <= {
        "handler",
        "sandbox",
        "usr",
        "lib",
        "lib64",
        "lib32",
        "root",
        "opt",
        "home",
    }  # no /proc, /dev, /tmp, /etc, /work
    assert (seen["uid"], seen["gid"], seen["cwd"]) == (65534, 65534, "/handler")
    assert seen["env"] == {"LANG": "C.UTF-8", "PWD": "/handler"}  # no token, no store, no registry variable
    assert all(
        seen[p] is False for p in case["paths"]
    )  # another tenant's suite, the runtime folder, the checkout, /proc
    assert seen["write"] in ("OSError", "PermissionError")  # read-only, its own module included
    assert seen["network"] == 101  # ENETUNREACH: no network namespace route at all
    assert seen["packages"] is None or seen["packages"] == []  # a virtual environment's packages are not bound


def test_the_memory_limit_is_the_setting(tmp_path) -> None:
    eats = "def grade(case, reply):\n    hoard = bytearray(200 << 20)\n    return {'pass': True, 'reason': 'kept 200 MiB'}\n"
    handler = Handler(modulePath="eats.py", entrypointPath="grade", source=eats)
    assert (
        judge_exit(run_once(RunSettings(handler_memory_mib=1024), handler, {"case": {}, "reply": {}})).verdict == "pass"
    )
    small = judge_exit(run_once(RunSettings(handler_memory_mib=128), handler, {"case": {}, "reply": {}}))
    assert small.error == "the handler exhausted its memory limit of 128 MiB (MemoryError)"


def test_an_answer_past_the_output_limit_is_cut_off_and_refused() -> None:
    floods = "import os\ndef grade(case, reply):\n    while True:\n        os.write(1, b'x' * 65536)\n"
    run = run_once(
        RunSettings(handler_timeout_s=30),
        Handler(modulePath="floods.py", entrypointPath="grade", source=floods),
        {"case": {}, "reply": {}},
    )
    assert run.duration_ms < 10_000 and not run.timed_out  # killed at the limit, not at the time limit
    assert judge_exit(run).error == "the handler answered over 64 KiB; an answer is one small JSON object"


def test_a_handler_that_forks_children_is_killed_whole_at_the_time_limit() -> None:
    forks = "import os, time\ndef grade(case, reply):\n    for _ in range(4):\n        if os.fork() == 0:\n            time.sleep(60)\n    time.sleep(60)\n"
    run = run_once(
        RunSettings(handler_timeout_s=0.5),
        Handler(modulePath="forks.py", entrypointPath="grade", source=forks),
        {"case": {}, "reply": {}},
    )
    assert run.timed_out and run.duration_ms < 5_000
    assert judge_exit(run).error == "the handler ran past its time limit of 0.5 s and was killed"


def call(code: str, memory_mib: int = 256) -> tuple[int | None, str, str]:
    """Run `code` with the sandbox's bare interpreter: its exit status, standard output and last line of standard error."""
    folder = Path(tempfile.mkdtemp(prefix="kindgi-test-"))
    folder.chmod(0o755)
    try:
        with make_sandbox(RunSettings(handler_memory_mib=memory_mib, handler_timeout_s=20)) as sandbox:
            run = sandbox.call(folder, ["-c", code], b"")
    finally:
        shutil.rmtree(folder)
    lines = run.stderr.decode("utf-8", "replace").strip().splitlines()
    return run.returncode, run.stdout.decode().strip(), lines[-1] if lines else ""


def test_the_memory_limit_bounds_the_sandbox_as_a_whole_not_each_process() -> None:
    # four children of 200 MiB each held 800 MiB under a per-process limit of 256 MiB; the group holds 256 MiB in all
    code = (
        "import os\nkids = []\nfor _ in range(4):\n    pid = os.fork()\n    if pid == 0:\n        hoard = bytearray(200 << 20)\n"
        "        import time; time.sleep(2); os._exit(0)\n    kids.append(pid)\nprint(sum(os.waitpid(k, 0)[1] == 0 for k in kids))"
    )
    code_, survivors, _ = call(code)
    assert code_ == 0 and int(survivors) <= 1


def test_a_memory_file_is_refused() -> None:
    # memfd_create held 200 MB beside the heap, outside every file size limit
    assert call("import os; os.memfd_create('x')")[2] == "PermissionError: [Errno 1] Operation not permitted"


def test_a_fork_bomb_is_bounded_by_the_group_s_process_limit() -> None:
    code = (
        "import os, time\nmade = 0\ntry:\n    for _ in range(300):\n        if os.fork() == 0:\n            time.sleep(5); os._exit(0)\n"
        "        made += 1\nexcept OSError as e:\n    print(made, e.errno)"
    )
    status, said, _ = call(code)
    made, errno_ = said.split()
    assert status == 0 and int(made) < MAX_PROCESSES and int(errno_) == errno.EAGAIN  # 300 of 300 succeeded before


@pytest.mark.parametrize("path", ["/written", "/usr/written", "/handler/written", f"{sys.base_prefix}/written"])
def test_no_folder_of_the_sandbox_is_writable(path: str) -> None:
    # the root bubblewrap makes is a tmpfs; it is remounted read-only once everything is bound
    assert call(f"open({path!r}, 'w')")[2].startswith(
        ("OSError: [Errno 30] Read-only file system", "FileNotFoundError", "PermissionError")
    )


@pytest.mark.parametrize(
    "name", ["ptrace", "mount", "unshare", "setns", "keyctl", "bpf", "memfd_create", "userfaultfd"]
)
def test_each_filtered_system_call_is_refused_eperm(name: str) -> None:
    assert name in DENIED
    code = f"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.syscall({syscall_number(machine(), name)}, 0, 0, 0, 0), ctypes.get_errno())"
    assert call(code)[1] == f"-1 {errno.EPERM}"


def test_a_nested_user_namespace_is_refused() -> None:
    code = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.unshare(0x10000000), ctypes.get_errno())"
    )
    assert call(code)[1] == f"-1 {errno.EPERM}"


def test_threads_and_plain_forks_still_work_under_the_filter() -> None:
    code = (
        "import os, threading\nt = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
        "pid = os.fork()\nif pid == 0:\n    os._exit(7)\nprint(os.waitpid(pid, 0)[1] >> 8)"
    )
    assert call(code)[1] == "thread\n7"


def test_a_call_s_group_holds_all_it_started_and_is_removed_with_it_when_it_ends() -> None:
    run = RunGroup(find_hierarchy(), 64 << 20)
    group = CallGroup(run.calls, 64 << 20)
    started = subprocess.run(
        group.enter_argv(["/bin/sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"]),
        capture_output=True,
        text=True,
        timeout=10,
    )
    left = int(started.stdout)  # the shell has exited; its child lives on, inside the group
    assert all(str(left) in (folder / "cgroup.procs").read_text().split() for folder in group.folders)
    group.close()
    assert not any(folder.exists() for folder in group.folders)
    run.close()
    assert not any(folder.exists() for folder in run.folders)
    with pytest.raises(ProcessLookupError):
        for _ in range(100):  # killed; reaped by init once it is gone
            os.kill(left, 0)
            time.sleep(0.02)


def test_a_machine_with_no_control_group_to_make_has_no_hierarchy(tmp_path) -> None:
    assert find_hierarchy(tmp_path) is None  # and make_sandbox then refuses the custom suite, naming the fix


OVERLAP = (
    "import time\ndef grade(case, reply):\n    hoard = b'x' * ({mib} << 20)  # written, so resident\n    time.sleep(3)\n"
    "    return {{'pass': True, 'reason': 'held {mib} MiB'}}\n"
)
"""A handler that holds `mib` MiB for 3 s: calls at once hold their memory at the same time."""


def test_a_run_s_calls_share_one_group_whose_memory_is_the_run_bound_inside_the_machine_s(monkeypatch) -> None:
    import threading

    hierarchy = find_hierarchy()
    bound = f"test-{os.getpid()}"
    make_bound(hierarchy, bound, 512 << 20)
    monkeypatch.setenv(HANDLERS_ENV, bound)
    try:
        with make_sandbox(RunSettings(handler_memory_mib=200)) as sandbox:
            assert sandbox.group.memory.parent == hierarchy.memory / bound
            assert memory_limit(sandbox.group.memory, hierarchy) == 200 << 20
            assert memory_limit(hierarchy.memory / bound, hierarchy) == 512 << 20
            handler = Handler(modulePath="holds.py", entrypointPath="grade", source=OVERLAP.format(mib=10))
            calls = [threading.Thread(target=sandbox.run, args=(handler, {"case": {}, "reply": {}})) for _ in range(2)]
            for thread in calls:
                thread.start()
            seen: set[str] = set()
            deadline = time.monotonic() + 10
            while len(seen) < 2 and time.monotonic() < deadline:  # both calls' groups, inside the run's one
                seen |= {f.name for f in sandbox.group.memory.iterdir() if f.is_dir()}
                time.sleep(0.05)
            for thread in calls:
                thread.join()
            assert len(seen) == 2
        assert not sandbox.group.memory.exists()
    finally:
        remove_bound(hierarchy, bound)
    assert not (hierarchy.memory / bound).exists()


def test_a_handler_past_the_run_bound_is_killed_and_its_case_is_an_error_the_others_graded() -> None:
    from kindgi_eval.kinds.custom.stage import grade_replies
    from kindgi_eval.rules import Case
    from kindgi_eval.store import ReplyRow

    # two calls at once, each of 150 MiB under its own limit of 256 MiB: 300 MiB together, over the run's 256 MiB
    handler = Handler(modulePath="holds.py", entrypointPath="grade", source=OVERLAP.format(mib=150))
    cases = [Case(id=f"c{n}", text="hi", expect={"escalate": False}) for n in range(2)]
    replies = [
        ReplyRow(
            case_id=c.id,
            agent="mock:agent",
            messages=["hello"],
            escalate=False,
            reason=None,
            latency_ms=1.0,
            prompt_tokens=0,
            completion_tokens=0,
            cost_usd=0.0,
            cost_known=True,
            error=None,
            raw=None,
        )
        for c in cases
    ]
    with make_sandbox(RunSettings(handler_memory_mib=256)) as sandbox:
        verdicts = grade_replies(sandbox.run, handler, cases, replies, concurrency=2, budget_s=60)
    errors = [v.error for v in verdicts.values() if v.verdict == "error"]
    assert sorted(v.verdict for v in verdicts.values()) == ["error", "pass"], verdicts
    assert errors == [
        "the handler was killed for memory: past 256 MiB on its own or with its run's other calls at once, or past "
        "the machine's bound on every run's handlers"
    ], errors


def test_a_machine_bound_that_is_gone_refuses_the_run_naming_the_variable(monkeypatch) -> None:
    from kindgi_eval.rules import InputError

    monkeypatch.setenv(HANDLERS_ENV, "no-such-bound")
    with pytest.raises(
        InputError, match=f"{HANDLERS_ENV}: {HANDLERS_ENV} names 'no-such-bound', and there is no group"
    ):
        make_sandbox(RunSettings())
    assert not (find_hierarchy().memory / "no-such-bound").exists()
