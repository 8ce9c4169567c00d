"""`kindgi-eval ui`: the Dagster UI on the installed code location, over the runs of this folder."""

from __future__ import annotations

import os
import signal
import sys

import click

from kindgi_eval.cli.common import input_errors

CODE_LOCATION = "kindgi_eval"
"""The code location's name, as the repository's workspace.yaml names it."""
WORKSPACE = f"""# Written by kindgi-eval ui: the code location of the installed kindgi-eval package.
load_from:
  - python_module:
      module_name: kindgi_eval.defs.definitions
      location_name: {CODE_LOCATION}
"""


@click.command(short_help="Start the Dagster UI on this folder's runs.")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=3000, show_default=True, help="The port to listen on.")
@input_errors
def ui(host: str, port: int) -> None:
    """Start `dagster dev` on the installed code location, with the Dagster instance and store that `kindgi-eval run`
    uses in this folder (KINDGI_HOME, default ./.kindgi): the runs it shows are those the command line stored, and a
    run launched in it is stored there too. No workspace.yaml of yours is read: the one it starts with is written into
    the instance's folder. It runs until interrupted (Ctrl-C).

    \b
    Example:
      kindgi-eval ui --port 3000
    """
    from kindgi_eval.defs import open_instance
    from kindgi_eval.store import runtime_home, store_root

    warn_of_tenants_file()
    home = runtime_home()
    open_instance(home).dispose()  # a new instance gets kindgi-eval's dagster.yaml; DAGSTER_HOME now names it
    dagster_home = os.environ["DAGSTER_HOME"]
    workspace = os.path.join(dagster_home, "workspace.yaml")
    with open(workspace, "w", encoding="utf-8") as out:
        out.write(WORKSPACE)
    click.echo(f"Dagster UI on http://{host}:{port} (instance {dagster_home}, store {store_root(home)})", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    # `dagster dev` copies SIGINT's disposition onto SIGTERM: started with SIGINT ignored (a shell's background job),
    # it and its code server would ignore both. A signal ignored here stays ignored across exec, so reset both.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # `-W`: Dagster's notice that `dg dev` (another package, not installed) supersedes `dagster dev`.
    argv = [
        sys.executable,
        "-W",
        "ignore::FutureWarning:click.core",
        "-m",
        "dagster",
        "dev",
        "-w",
        workspace,
        "-h",
        host,
        "-p",
        str(port),
    ]
    os.execve(sys.executable, argv, {**os.environ, "KINDGI_HOME": str(home)})


def warn_of_tenants_file() -> None:
    """Say on standard error, before the UI starts, every problem of the tenants file (KINDGI_TENANTS) its schedule will
    read at the tick; the UI starts all the same."""
    from kindgi_eval.cli.common import kind_models
    from kindgi_eval.inputs import check_tenants, tenants_path
    from kindgi_eval.rules import InputError

    path = tenants_path()
    if path is None:
        return
    try:
        check_tenants(path, kind_models)
    except InputError as e:
        click.echo(f"warning: the tenants file {path} does not validate; the nightly schedule will find:", err=True)
        for problem in e.problems:
            click.echo(f"  {problem}", err=True)
