"""A run whose judge's requests are out as a batch, SIGKILLed while it waits, is resumed and reads that same batch back
instead of sending (and paying for) another."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from typing import Any

import pytest

from kindgi_eval.agents.demo_judge import verdict
from kindgi_eval.store.batches import find_run_areas, read_sent
from kindgi_eval.store.layout import SHARED, read_rows
from kindgi_eval_tests.conftest import CLI, REPO, run_cli
from kindgi_eval_tests.fake_provider import Answer, FakeProvider, user_text

pytestmark = pytest.mark.long
KEY = "demo-academy.golden"


def demo_judge():
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def script(request: dict[str, Any]) -> Answer:
        text = user_text(request)
        with lock:
            before = seen[text]
            seen[text] += 1
        return Answer(json.dumps(verdict(text, before)))

    return script


def test_a_run_killed_while_its_batch_is_out_picks_the_same_batch_up_again(tmp_path) -> None:
    server = FakeProvider(demo_judge(), looks_before_done=10**6).__enter__()  # the first batch stays out
    try:
        root = tmp_path / "home"
        env = {
            "KINDGI_HOME": str(root),
            "DAGSTER_HOME": str(root / "dagster"),
            "KINDGI_STORE": "",
            "OPENAI_API_KEY": "sk-test-not-a-real-key",
            "OPENAI_BASE_URL": server.base_url,
            "EVAL_DIR": str(REPO / "kindgi_eval" / "golden"),
            "EVAL_JUDGE_BATCH": "",
        }
        args = ["run", "--agent-model", "mock:agent", "--judge-model", "openai:gpt-4o-mini", "--judge-batch", "true"]
        process = subprocess.Popen(
            [str(CLI), *args],
            cwd=tmp_path,
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        try:
            while not any(read_sent(area, "judge_samples") for area in find_run_areas(root / "store", "")):
                assert process.poll() is None, "the run ended before its batch was out"
                assert time.monotonic() < deadline
                time.sleep(0.05)
            os.kill(process.pid, signal.SIGKILL)  # asleep between two looks at its calibration batch
        finally:
            process.wait()
        (area,) = find_run_areas(root / "store", "")
        killed = area.name.removeprefix("run_id=")
        assert read_sent(area, "judge_samples") == {"calibration": "batch_1"} and list(server.batches) == ["batch_1"]
        server.looks_before_done = 0  # the provider has answered it meanwhile
        result = run_cli("run", "--resume", killed, env=env, cwd=tmp_path)
        assert result.code in (0, 1), result.err  # 1: the golden set has a judged-fail case
        assert list(server.batches) == ["batch_1", "batch_2"]  # the calibration batch read back, only the cases' sent
        resumed = next(line for line in result.err.splitlines() if line.startswith("run ")).split()[1]
        samples = read_rows(root / "store", SHARED.judge_samples, KEY, resumed)
        assert samples and {s.vote for s in samples} >= {"pass", "fail"}
        assert (
            sum(s.subject == "calibration" for s in samples)
            == len(
                json.loads(
                    "["
                    + ",".join((REPO / "kindgi_eval" / "golden" / "calibration.jsonl").read_text().splitlines())
                    + "]"
                )
            )
            * 3
        )
    finally:
        server.__exit__(None, None, None)
