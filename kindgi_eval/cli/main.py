"""`kindgi-eval`: the command group, with the commands of each command module registered under it."""

from __future__ import annotations

import click

from kindgi_eval.cli.init import init
from kindgi_eval.cli.night import night
from kindgi_eval.cli.registry import catalogue, serve, suites, tokens
from kindgi_eval.cli.review import review
from kindgi_eval.cli.run import replay, run, validate
from kindgi_eval.cli.store import compact, diff, prune, report, runs, sql
from kindgi_eval.cli.ui import ui

COMMANDS = (
    init,
    run,
    replay,
    validate,
    runs,
    sql,
    diff,
    report,
    night,
    suites,
    catalogue,
    prune,
    compact,
    serve,
    tokens,
    review,
    ui,
)
"""Every top-level command and command group; `--help` lists them by name."""


@click.group(commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.version_option(package_name="kindgi-eval", prog_name="kindgi-eval")
def main() -> None:
    """Evaluate a tenant's conversational sales agent against its suite.

    Each flag overrides its environment variable, which overrides the default.
    """
