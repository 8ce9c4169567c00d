"""Start and stop the real judge's server (server.js beside this file) from Python, for the benchmark and the
test: what it needs and whether it is there, one `node server.js` child on 127.0.0.1, its ready line read, and
the child stopped by its PID. Standard library only (the benchmarks run without the test extras). Starts a
process and reads its log files (a temporary folder, removed when it stops unless `keep_log`).

    from judge_server import RealJudge, missing
    with RealJudge(max_tokens=64) as judge:      # judge.base_url, judge.model ("openai:<name>"), judge.env()
        ...
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER = HERE / "server.js"
GGUF = HERE / "cache" / "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "smollm2-135m-instruct"
"""The model id the server answers to; kindgi-eval names it `openai:smollm2-135m-instruct`."""
NODE_MAJOR = 20
INSTALL = (
    "(cd deploy/real-judge && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --omit=optional) "
    "&& python3 deploy/real-judge/fetch_model.py"
)
"""The commands that install what `missing` looks for, from the repository root (.ci/run runs them)."""
_READY = re.compile(r"^real-judge ready: (http://127\.0\.0\.1:\d+/v1) ")


def model_path() -> Path:
    """The GGUF the server loads: REAL_JUDGE_MODEL, else the one fetch_model.py extracts into cache/."""
    return Path(os.environ.get("REAL_JUDGE_MODEL") or GGUF)


def missing() -> list[str]:
    """What the real judge needs and this machine lacks, one line each; empty when it can run."""
    problems = []
    node = shutil.which("node")
    if node is None:
        problems.append(f"node is not on PATH (Node.js {NODE_MAJOR} or newer is needed)")
    else:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
        major = re.match(r"v(\d+)", version)
        if major is None or int(major.group(1)) < NODE_MAJOR:
            problems.append(f"node is {version or 'of unknown version'}; Node.js {NODE_MAJOR} or newer is needed")
    for package in ("node-llama-cpp", "@node-llama-cpp/linux-x64"):
        if not (HERE / "node_modules" / package / "package.json").is_file():
            problems.append(f"the npm package {package} is not installed in {HERE / 'node_modules'}")
    if not model_path().is_file():
        problems.append(f"the model {model_path()} is not there")
    return problems


class RealJudge:
    """`node server.js` on 127.0.0.1 at a free port, serving the GGUF; a context manager that waits for the
    ready line on entry and stops the child by its PID on exit. Extra keyword arguments become server flags
    (`max_tokens=64` is `--max-tokens 64`)."""

    def __init__(self, *, ready_timeout_s: float = 120.0, keep_log: bool = False, **flags: object):
        self.flags = flags
        self.keep_log = keep_log
        self.ready_timeout_s = ready_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self.base_url = ""
        self.ready_line = ""
        self.model = f"openai:{NAME}"
        self._logs = Path(tempfile.mkdtemp(prefix="real-judge-"))

    @property
    def log(self) -> Path:
        """The server's standard error: one line per request (method, path, status, ms, tokens)."""
        return self._logs / "server.err"

    def env(self) -> dict[str, str]:
        """The variables litellm reads to reach this server as `openai:<name>`, as it would reach vLLM."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": "local-real-judge"}

    def start(self) -> RealJudge:
        if problems := missing():
            raise RuntimeError("the real judge cannot start: " + "; ".join(problems) + f". Install it with: {INSTALL}")
        args = ["node", str(SERVER), "--port", "0", "--model", str(model_path()), "--name", NAME]
        for key, value in self.flags.items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        out = (self._logs / "server.out").open("wb")
        err = self.log.open("wb")
        env = {**os.environ, "NODE_LLAMA_CPP_SKIP_DOWNLOAD": "true"}
        self.process = subprocess.Popen(args, cwd=HERE, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        out.close()
        err.close()
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            for line in (self._logs / "server.out").read_text(errors="replace").splitlines():
                if match := _READY.match(line):
                    self.base_url, self.ready_line = match.group(1), line
                    return self
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        tail = self.log.read_text(errors="replace")[-2000:]
        self.stop()
        raise RuntimeError(f"the real judge did not become ready within {self.ready_timeout_s:g} s: {tail}")

    def stop(self) -> None:
        """SIGTERM to the child's PID, then SIGKILL if it has not gone within 10 s; the log goes unless kept."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        if not self.keep_log:
            shutil.rmtree(self._logs, ignore_errors=True)

    def __enter__(self) -> RealJudge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
