"""The clients resource: the agent, the judge and the sandbox come from it, and a run reads its tenant.toml once,
whichever stage asks first, while the next run reads the file again."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from kindgi_eval.defs.runs import open_instance, replay_chain, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.inputs.tenant_file import DEMO_CONFIG_DIR, TENANT_FILE, load_tenant
from kindgi_eval.store.layout import SHARED, find_table, read_rows
from kindgi_eval_tests.conftest import GOLDEN

KEY = "demo-academy.golden"
DEMO = (DEMO_CONFIG_DIR / TENANT_FILE).read_bytes()


def readable_once(folder: Path) -> threading.Thread:
    """Make `folder/tenant.toml` a named pipe that hands the demo tenant to its first reader and is removed as that
    reader opens it: any later read finds no file, which fails the stage that tried. The thread ends once it is read."""
    folder.mkdir(exist_ok=True)
    pipe = folder / TENANT_FILE
    os.mkfifo(pipe)

    def serve() -> None:
        with open(pipe, "wb") as writer:  # waits until a reader opens the pipe
            pipe.unlink()
            writer.write(DEMO)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def assert_read(served: threading.Thread) -> None:
    """The pipe was read (exactly once, since it was gone after)."""
    served.join(timeout=10)
    assert not served.is_alive()


def test_a_run_reads_its_tenant_file_once_and_the_next_run_reads_it_again(home, tmp_path: Path) -> None:
    instance = open_instance(home.root)
    folder = tmp_path / "tenant"
    # A judge, so that suite, agent_replies, judge_samples (its manifest and the catalogue) and run_summary all ask.
    settings = RunSettings(
        eval_dir=str(GOLDEN), config_dir=str(folder), agent_model="mock:agent", judge_model="mock:judge"
    )
    for _ in range(2):  # the second run in the same process is not given the first run's read
        served = readable_once(folder)
        run_id = run_chain(
            instance, home.root, settings, KEY, "conversation"
        )  # raises RunFailed if a stage read the file again
        assert_read(served)
        (summary,) = read_rows(home.store, SHARED.run_summary, KEY, run_id)
        assert summary.config_hash == hashlib.sha256(DEMO).hexdigest()
        assert summary.stages == list(load_tenant(DEMO_CONFIG_DIR).tenant.stage_names())  # what run_summary was given


def test_a_replay_reads_its_tenant_file_once(home, tmp_path: Path) -> None:
    instance = open_instance(home.root)
    source = run_chain(
        instance, home.root, RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent"), KEY, "conversation"
    )
    folder = tmp_path / "tenant"
    served = readable_once(folder)  # its first reader is judge_samples: the replay runs no suite stage
    settings = RunSettings(
        eval_dir=str(GOLDEN), config_dir=str(folder), agent_model="mock:agent", judge_model="mock:judge"
    )
    replay = replay_chain(instance, home.root, settings, KEY, "conversation", source)
    assert_read(served)
    assert find_table(home.store, "judge_samples", KEY, replay) is not None
    (summary,) = read_rows(home.store, SHARED.run_summary, KEY, replay)
    assert summary.replies_from == source


def test_the_clients_add_nothing_the_launchpad_must_set() -> None:
    from kindgi_eval.defs.definitions import defs

    for job in ("evaluate_suite", "replay_suite"):
        resources = defs.resolve_job_def(job).run_config_schema.config_type.fields["resources"].config_type
        assert not resources.fields["clients"].is_required
