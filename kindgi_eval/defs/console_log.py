"""The command line's log of a run it executes: one short line per message on stderr. Writes to stderr only.

Dagster's own console logger prefixes every line with the job, the whole run id and the step; a person watching
`kindgi-eval run` needs the short run id, the step and what is being counted."""

from __future__ import annotations

import logging
import sys

import dagster as dg

SHORT_ID = 8
"""How many characters of a run id name it on the command line (any unique prefix does)."""
LOGGER = "kindgi"
"""The logger's key among the code location's loggers, which a run's config selects."""


class ShortLines(logging.Formatter):
    """`[1cc72ffd] agent_replies: agent replies: cases 36/36`, from the metadata Dagster puts on each record."""

    def format(self, record: logging.LogRecord) -> str:
        meta = getattr(record, "dagster_meta", None)
        if not meta:
            return record.getMessage()
        run = (meta.get("run_id") or "")[:SHORT_ID]
        where = f" {meta['step_key']}:" if meta.get("step_key") else ""
        return f"[{run}]{where} {meta.get('orig_message', record.getMessage())}"


@dg.logger(
    {"log_level": dg.Field(str, is_required=False, default_value="INFO")},
    description="One short line per message on stderr: the short run id, the step and the message.",
)
def short_console(init_context: dg.InitLoggerContext) -> logging.Logger:
    """A logger of its own per run, so two runs in one process never share a handler."""
    log = logging.getLogger(f"{LOGGER}.{init_context.run_id}")
    log.setLevel(init_context.logger_config["log_level"])
    log.propagate = False
    log.handlers.clear()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(ShortLines())
    log.addHandler(handler)
    return log
