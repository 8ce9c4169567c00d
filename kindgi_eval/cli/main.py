"""`kindgi-eval`: the command group, with the commands of each command module registered under it. A command's
module is imported when the command is named: `night` starts without the modules of `run` and `serve`."""

from __future__ import annotations

import importlib

import click

COMMANDS = {
    "init": "init",
    "run": "run",
    "replay": "run",
    "validate": "run",
    "runs": "store",
    "sql": "store",
    "diff": "store",
    "report": "store",
    "night": "night",
    "suites": "registry",
    "catalogue": "registry",
    "prune": "store",
    "compact": "store",
    "serve": "registry",
    "tokens": "registry",
    "review": "review",
    "ui": "ui",
}
"""Every top-level command and command group, and the module of `cli/` that holds it under its own name."""


class Commands(click.Group):
    """The top-level group: it lists `COMMANDS` by name and imports a command's module only when it is named."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, sorted as `--help` lists them."""
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command named, its module imported now; None for a name that is no command."""
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        return getattr(importlib.import_module(f"kindgi_eval.cli.{module}"), cmd_name)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.version_option(package_name="kindgi-eval", prog_name="kindgi-eval")
def main() -> None:
    """Evaluate a tenant's conversational sales agent against its suite.

    Each flag overrides its environment variable, which overrides the default.
    """
