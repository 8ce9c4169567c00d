"""The `kindgi-eval` command line, a thin shell over the folders below; nothing imports it."""

from kindgi_eval.cli.main import main

__all__ = ["main"]
