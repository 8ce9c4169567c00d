"""Run workers forked from a process that has already imported Dagster and the code location.

A Dagster code server (`dagster api grpc`) executes each run in a process of its own, started with
`multiprocessing`'s "spawn": a new interpreter that imports Dagster, the code location and the instance's storage
again before the run's first step (some 2 s of CPU each run, measured in benchmarks/README.md). Here the code
server starts them with "forkserver" instead: one process per code server, started at its first run, imports those
modules once, and forks each run's worker from itself. A worker is still a process of its own, with the run's
Dagster events, its termination and its exit code carried as before (Dagster's queue and event, which the
forkserver context supports); it outlives its code server as a spawned one does.
"""

import multiprocessing
import sys

PRELOADED = (
    "kindgi_eval.defs.definitions",
    "kindgi_eval.defs.postgres_storage",
    "dagster._grpc.impl",
)
"""What the fork server imports before it forks a worker: the code location, the production instance's storage and
Dagster's entry point for a run's process (the store's backends are imported by the run that uses one)."""


def fork_run_workers() -> None:
    """In a code server, have every run's worker forked from a fork server holding `PRELOADED`; elsewhere (the
    command line, a run worker, the webserver) do nothing. Dagster's server picks its context in its constructor,
    before it loads the code location, so its `StartRun` is wrapped to hand it this one."""
    server = sys.modules.get("dagster._grpc.server")
    if server is None:
        return
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOADED))
    start_run = server.DagsterApiServer.StartRun

    def forked_start_run(self, request, grpc_context):
        self._mp_ctx = context
        return start_run(self, request, grpc_context)

    server.DagsterApiServer.StartRun = forked_start_run
