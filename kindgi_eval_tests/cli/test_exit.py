"""A run ends its process with `os._exit` once it is done: nothing it writes may be lost by that.

Each run here is a real process whose stdout and stderr are files, as in `kindgi-eval run > out.txt 2> err.txt`,
so the test sees what a user's redirect would: every line printed, the exit status, and, afterwards, every table of
the run in the store and the whole run in the Dagster instance.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pyarrow.parquet as pq

from kindgi_eval_tests.conftest import CLI, REPO
from kindgi_eval_tests.fake_provider import Answer

EXPECTED = Path(__file__).parents[1] / "expected" / "golden_mock.txt"
REPLY = json.dumps(
    {
        "messages": ["The Foundation Course is $450. Would you pay upfront or in instalments?"],
        "escalate": False,
        "reason": None,
    }
)


def run_to_files(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """`kindgi-eval ARGS > out 2> err`: the exit status and what each file holds once the process is gone."""
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as stdout, err.open("w") as stderr:
        code = subprocess.run(
            [str(CLI), *args], check=False, cwd=REPO, stdout=stdout, stderr=stderr, timeout=300
        ).returncode
    return code, out.read_text(), err.read_text()


def stored_run(home, err: str) -> str:
    """The run id the last stderr line names, after checking the store and the instance hold the whole run."""
    import dagster as dg

    from kindgi_eval.defs import open_instance
    from kindgi_eval.defs.jobs import EVALUATE, kind_selection

    own = kind_selection(EVALUATE, "conversation")  # a conversation suite's run starts no other kind's stage

    run_id = re.fullmatch(r"run (\S+) stored under .*\n", err.splitlines(keepends=True)[-1]).group(1)  # type: ignore[union-attr]
    tables = {p.parts[-5]: p for p in home.store.rglob(f"run_id={run_id}/data.parquet")}
    assert set(tables) == {key.path[-1] for key in own}  # every asset's table, each a readable Parquet file
    assert all(pq.read_metadata(p).num_rows >= 0 for p in tables.values())
    assert pq.read_metadata(tables["run_summary"]).num_rows == 1
    assert (home.store / "kindgi.duckdb").is_file()
    with open_instance(home.root) as instance:  # the run's own, at $DAGSTER_HOME
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.SUCCESS  # type: ignore[union-attr]
        events = [e.dagster_event.event_type for e in instance.all_logs(run_id) if e.dagster_event]
    assert events[-1] == dg.DagsterEventType.RUN_SUCCESS
    assert events.count(dg.DagsterEventType.ASSET_MATERIALIZATION) == len(own)
    return run_id


def test_a_passing_run_piped_to_files_keeps_every_line_row_and_event(home, tmp_path: Path) -> None:
    code, out, err = run_to_files(tmp_path, "run", "--mock")
    assert code == 0, err
    assert out == EXPECTED.read_text()
    run_id = stored_run(home, err)
    assert f"[{run_id[:8]}] agent_replies: 36/36 cases answered\n" in err  # the run's log lines, on stderr before it
    statuses = next(home.store.rglob(f"statuses/*/*/run_id={run_id}/data.parquet"))
    assert pq.read_metadata(statuses).num_rows == sum(
        line.startswith("[") for line in out.splitlines()
    )  # one per case printed


def test_a_failing_run_exits_1_with_its_output_whole(home, tmp_path: Path) -> None:
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "cases.jsonl").write_text(
        '{"id": "made-to-fail", "text": "how much is the foundation course?", "expect": {"escalate": false}, "must_contain": ["FREE"]}\n'
    )
    code, out, err = run_to_files(tmp_path, "run", "--mock", "--eval-dir", str(tmp_path / "suite"))
    assert code == 1, err
    assert "[failed] made-to-fail\n" in out and out.endswith("\n")
    stored_run(home, err)


def test_bad_input_exits_2_and_says_why(home, tmp_path: Path) -> None:
    code, out, err = run_to_files(tmp_path, "run", "--agent-model", "nosuchprovider:x")
    assert (code, out) == (2, "")
    assert "not a provider litellm knows" in err and not home.store.exists()


def test_a_model_run_through_the_worker_keeps_every_reply(home, tmp_path: Path, provider_env) -> None:
    server = provider_env(lambda request: Answer(REPLY))
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "cases.jsonl").write_text(
        "".join(
            f'{{"id": "c{n}", "text": "how much is the foundation course?", "expect": {{"escalate": false}}, '
            f'"must_contain": ["$450"]}}\n'
            for n in range(12)
        )
    )
    code, out, err = run_to_files(
        tmp_path, "run", "--agent-model", "openai:fake", "--eval-dir", str(tmp_path / "suite"), "--concurrency", "4"
    )
    assert code == 0, err
    assert "Summary: 12 passed, 0 failed, 0 reviewed\n" in out
    run_id = stored_run(home, err)
    replies = next(home.store.rglob(f"agent_replies/*/*/run_id={run_id}/data.parquet"))
    assert pq.read_table(replies).column("error").null_count == 12
    assert len(server.requests) == 12
