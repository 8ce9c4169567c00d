"""`kindgi-eval init`: a starter suite of one kind written into a new folder, from the kind's own starter."""

from __future__ import annotations

from pathlib import Path

import click

from kindgi_eval.cli.common import input_errors, write_bytes_atomically
from kindgi_eval.inputs import FOLDER_KIND
from kindgi_eval.rules import InputError, Problem


@click.command(short_help="Write a starter suite into a new folder.")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option(
    "--kind",
    default=FOLDER_KIND,
    show_default=True,
    help="The suite's kind, any installed kind: conversation, "
    "accuracy, pairwise, regression, human-review, benchmark, custom, or one another package adds.",
)
@input_errors
def init(folder: str, kind: str) -> None:
    """Write a starter suite of KIND into FOLDER, which must not exist or be empty: for a conversation suite its
    cases.jsonl (cases that between them use every assertion), calibration.jsonl (a pass and a fail item per
    calibration group) and a tenant.toml; for every other kind the suite.json that `kindgi-eval suites publish` takes.
    Each passes `kindgi-eval validate`. Then it says how to run it, and what a run of it needs.

    \b
    Examples:
      kindgi-eval init my-suite
      kindgi-eval init prices --kind accuracy
    """
    from kindgi_eval.kinds import kinds

    table = {name: kind for name, kind in kinds().items() if kind.starter is not None}
    if kind not in table:
        raise InputError(
            [
                Problem(
                    "--kind",
                    None,
                    None,
                    f"{kind!r} is not a kind with a starter. Pick one of {', '.join(sorted(table))}.",
                )
            ]
        )
    target = Path(folder)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InputError(
            [
                Problem(
                    folder,
                    None,
                    None,
                    "exists and is not an empty folder; nothing was written. Name a new folder, or empty this one.",
                )
            ]
        )
    starter = table[kind].starter
    files = sorted(p for p in starter.folder.iterdir() if p.is_file())
    target.mkdir(parents=True, exist_ok=True)
    for source in files:
        write_bytes_atomically(target / source.name, source.read_bytes())
    click.echo(f"wrote a starter {kind} suite: {', '.join(str(target / p.name) for p in files)}")
    for line in starter.next:
        click.echo(f"  {line.format(folder=folder)}")
