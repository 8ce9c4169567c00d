"""A store on an S3 API that waits out an outage: a request the server does not answer at all (connection refused,
connect timed out, connection dropped) is retried with a growing pause until the server has been unreachable for
`UNREACHABLE_S`, then fails; what the server answers is retried as botocore retries it (its standard mode).

Each table is one object put whole, so a retried or failed write leaves the object whole or absent, never short."""

from __future__ import annotations

import time
from functools import cache
from typing import Any

from aiobotocore.session import AioSession
from botocore.exceptions import ConnectionClosedError, ConnectTimeoutError, EndpointConnectionError

UNREACHABLE_S = 60.0
"""How long one store operation waits for an unreachable server before it fails."""
PAUSE_S = (0.5, 8.0)
"""The first pause between attempts, doubled each time up to the second."""
UNREACHABLE = (EndpointConnectionError, ConnectTimeoutError, ConnectionClosedError)
"""What botocore raises when the server is not answering (as opposed to answering with an error)."""
_FIRST_FAILURE = "kindgi_unreachable_since"
"""Where a request's context keeps when its server was first found unreachable."""


def s3_options() -> dict[str, Any]:
    """The fsspec options of an `s3://` store: its client's session, shared by every path of the process (fsspec
    keeps one filesystem per distinct options, so one session means one filesystem and one connection pool)."""
    return {"session": _session()}


@cache
def _session() -> AioSession:
    session = AioSession()
    session.set_config_variable("retry_mode", "standard")
    session.register("needs-retry.s3", wait_out_outage)
    return session


def wait_out_outage(
    request_dict: dict[str, Any], attempts: int, caught_exception: Exception | None = None, **_: Any
) -> float | None:
    """botocore's `needs-retry` event: the pause before the next attempt of a request whose server did not answer,
    while it has been unreachable for less than `UNREACHABLE_S`; None (no opinion: botocore's own rule decides) for
    anything else."""
    if not isinstance(caught_exception, UNREACHABLE):
        return None
    since = request_dict["context"].setdefault(_FIRST_FAILURE, time.monotonic())
    if time.monotonic() - since >= UNREACHABLE_S:
        return None
    first, most = PAUSE_S
    return min(first * 2 ** (attempts - 1), most)
