"""The handler's sandbox on this machine, with real bubblewrap: what the handler can see and do, and the limits."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from kindgi_eval.agents import make_sandbox
from kindgi_eval.inputs import RunSettings
from kindgi_eval.spec import Handler, judge_exit

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)")

REPORT = '''
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
'''


def test_the_handler_sees_only_the_runtime_and_its_own_module(home, tmp_path) -> None:
    sandbox = make_sandbox(RunSettings(handler_timeout_s=10))
    secret = home.root / "registry-suites" / "globex" / "cases.jsonl"
    secret.parent.mkdir(parents=True)
    secret.write_text("{}")
    packages = next(p for p in sys.path if p.endswith("site-packages"))
    case = {"paths": [str(secret), str(home.root), os.getcwd(), str(tmp_path), sys.prefix, "/proc/1", "/etc/passwd"],
            "packages": packages}
    run = sandbox.run(Handler(modulePath="graders/report.py", entrypointPath="grade", source=REPORT), {"case": case, "reply": {}})
    verdict = judge_exit(run)
    assert verdict.verdict == "pass", verdict
    seen = json.loads(json.loads(run.stdout)["reason"])
    assert set(seen["root"]) <= {"handler", "sandbox", "usr", "lib", "lib64", "lib32", "root", "opt", "home"}  # no /proc, /dev, /tmp, /etc, /work
    assert (seen["uid"], seen["gid"], seen["cwd"]) == (65534, 65534, "/handler")
    assert seen["env"] == {"LANG": "C.UTF-8", "PWD": "/handler"}  # no token, no store, no registry variable
    assert all(seen[p] is False for p in case["paths"])  # another tenant's suite, the runtime folder, the checkout, /proc
    assert seen["write"] in ("OSError", "PermissionError")  # read-only, its own module included
    assert seen["network"] == 101  # ENETUNREACH: no network namespace route at all
    assert seen["packages"] is None or seen["packages"] == []  # a virtual environment's packages are not bound


def test_the_memory_limit_is_the_setting(tmp_path) -> None:
    eats = "def grade(case, reply):\n    hoard = bytearray(200 << 20)\n    return {'pass': True, 'reason': 'kept 200 MiB'}\n"
    handler = Handler(modulePath="eats.py", entrypointPath="grade", source=eats)
    assert judge_exit(make_sandbox(RunSettings(handler_memory_mib=1024)).run(handler, {"case": {}, "reply": {}})).verdict == "pass"
    small = judge_exit(make_sandbox(RunSettings(handler_memory_mib=128)).run(handler, {"case": {}, "reply": {}}))
    assert small.error == "the handler exhausted its memory limit of 128 MiB (MemoryError)"


def test_an_answer_past_the_output_limit_is_cut_off_and_refused() -> None:
    floods = "import os\ndef grade(case, reply):\n    while True:\n        os.write(1, b'x' * 65536)\n"
    run = make_sandbox(RunSettings(handler_timeout_s=30)).run(Handler(modulePath="floods.py", entrypointPath="grade", source=floods), {"case": {}, "reply": {}})
    assert run.duration_ms < 10_000 and not run.timed_out  # killed at the limit, not at the time limit
    assert judge_exit(run).error == "the handler answered over 64 KiB; an answer is one small JSON object"


def test_a_handler_that_forks_children_is_killed_whole_at_the_time_limit() -> None:
    forks = "import os, time\ndef grade(case, reply):\n    for _ in range(4):\n        if os.fork() == 0:\n            time.sleep(60)\n    time.sleep(60)\n"
    sandbox = make_sandbox(RunSettings(handler_timeout_s=0.5))
    run = sandbox.run(Handler(modulePath="forks.py", entrypointPath="grade", source=forks), {"case": {}, "reply": {}})
    assert run.timed_out and run.duration_ms < 5_000
    assert judge_exit(run).error == "the handler ran past its time limit of 0.5 s and was killed"
