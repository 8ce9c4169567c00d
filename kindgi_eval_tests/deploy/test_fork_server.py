"""The profile's reading of a fork server and the run workers it forked (deploy/production.py), against a real
`multiprocessing` fork server whose parent, standing for a code server, is killed while its worker runs."""

import subprocess
import sys
import time
from pathlib import Path

PROFILE = Path(__file__).resolve().parents[2] / "deploy" / "production.py"
sys.path.insert(0, str(PROFILE.parent))
import production  # noqa: E402 - the profile's own script, for its reading of its processes

# starts a fork server, has it fork a worker that sleeps, writes the worker's PID to the file named by its argument
# and dies by SIGKILL, as a code server killed mid-night does
PARENT = """
import multiprocessing, os, pathlib, signal, sys, time
if __name__ == "__main__":
    worker = multiprocessing.get_context("forkserver").Process(target=time.sleep, args=(WORKER_S,))
    worker.start()
    pathlib.Path(sys.argv[1]).write_text(str(worker.pid))
    os.kill(os.getpid(), signal.SIGKILL)
"""
WORKER_S = 3.0


def test_a_killed_code_servers_worker_is_still_a_run_worker_and_its_fork_server_ends_after_it(tmp_path: Path) -> None:
    # no pipe to the parent: the fork server and its worker inherit its output, and would hold a pipe open
    subprocess.run([sys.executable, "-c", PARENT.replace("WORKER_S", str(WORKER_S)), str(tmp_path / "pid")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    worker_pid = int((tmp_path / "pid").read_text())
    processes = production.running_processes()
    worker = processes[worker_pid]
    fork_server = processes[worker.parent]
    assert production.is_fork_server(worker) and production.is_fork_server(fork_server)
    assert production.is_run_worker(worker, processes)
    assert not production.is_run_worker(fork_server, processes)  # its parent gone, it is still no worker
    # the fork server stays while its worker runs, then ends: nothing is left behind
    deadline = time.monotonic() + WORKER_S + 30
    while fork_server.pid in production.running_processes():
        assert time.monotonic() < deadline, "the fork server outlived its worker"
        time.sleep(0.1)
    assert worker_pid not in production.running_processes()
