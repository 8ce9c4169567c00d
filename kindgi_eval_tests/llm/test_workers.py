"""A run's model calls in worker processes (`llm.worker`): with two wanted, the second, forked by the first once it
has imported litellm, joins and shares the calls; every call is answered; stopping them says how many made calls and
ends them all."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from kindgi_eval.llm.calls import complete
from kindgi_eval.llm.spawn import SIBLING_CORES
from kindgi_eval.llm.worker import SECOND_WORKER_AT, running, start_worker, stop_worker, workers_for
from kindgi_eval.rules.model_names import parse_model
from kindgi_eval_tests.fake_provider import Answer

MODEL = parse_model("openai:fake")


@pytest.mark.parametrize(
    ("concurrency", "cores", "workers"),
    [
        (64, 4, 2),
        (SECOND_WORKER_AT, SIBLING_CORES, 2),
        (SECOND_WORKER_AT - 1, 8, 1),
        (64, SIBLING_CORES - 1, 1),
        (64, None, 1),
    ],
)
def test_a_second_worker_is_wanted_only_with_a_core_for_it_and_calls_enough(
    concurrency: int, cores: int | None, workers: int
) -> None:
    assert workers_for(concurrency, cores) == workers


@pytest.mark.skipif(
    (os.cpu_count() or 1) < SIBLING_CORES, reason="a worker forks a sibling only on a machine of more than one core"
)
def test_two_workers_share_the_calls_once_both_have_imported_litellm(provider_env) -> None:
    provider = provider_env(lambda request: Answer("ok", delay_s=0.05))
    start_worker(2)
    try:
        workers = running()
        assert workers is not None
        deadline = time.monotonic() + 120
        while len(workers.ready) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers.ready) == 2, "the second worker never finished importing litellm"
        first = workers.first.process.pid
        (sibling,) = map(
            int, Path(f"/proc/{first}/task/{first}/children").read_text().split()
        )  # forked, not a second import

        async def calls() -> list[str]:
            answers = await asyncio.gather(
                *(complete(MODEL, [{"role": "user", "content": f"q{n}"}], timeout_s=30) for n in range(40))
            )
            return [a.content for a in answers]

        assert asyncio.run(calls()) == ["ok"] * 40
        assert len(provider.requests) == 40
        assert all(worker.calls > 0 for worker in workers.ready) and sum(w.calls for w in workers.ready) == 40
    finally:
        ran = stop_worker()
    assert ran == 2 and running() is None
    deadline = time.monotonic() + 10
    while Path(f"/proc/{sibling}").exists() and _state(sibling) != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{sibling}").exists() or _state(sibling) == "Z", "the forked worker outlived its pipe"


def _state(pid: int) -> str:
    """A process's state letter, from /proc (`Z` once it has ended and not yet been waited for)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"
