"""Sending a tenant's night to its webhooks, once: each URL read from the variable the tenants file names, a Slack
incoming webhook sent a Slack message and any other URL the tenant's findings as JSON; what was sent kept in the
Dagster instance, so neither a restarted daemon nor `kindgi-eval night --send` sends it twice. Sockets and the
instance's key-value store.

A URL is a secret: it is never printed, logged or kept; a webhook is named by its variable."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Literal, NamedTuple
from urllib.parse import urlsplit

import dagster as dg

from kindgi_eval.reports import TenantNight, slack_message, webhook_json

SLACK_HOST = "hooks.slack.com"
"""The host of Slack's incoming webhooks: a URL there is sent a Slack message, any other the findings as JSON."""
TIMEOUT_S = 10.0
"""How long one attempt waits for the webhook's answer."""
QUICK_RETRIES = (1.0, 2.0, 4.0)
"""The pauses between the attempts one look makes before it leaves the next attempt to a later look."""
FIRST_BACKOFF_S = 30.0
"""The wait after a look's attempts failed, doubled after each look that fails again, up to `MAX_BACKOFF_S`."""
MAX_BACKOFF_S = 900.0
KEY_PREFIX = "kindgi/night/"
"""The instance's keys of what was sent: `kindgi/night/<tenant>@<night>/<variable>`."""

State = Literal["sent", "refused", "gave up", "retrying"]


class Attempt(NamedTuple):
    """One post to a webhook and how it went."""

    status: int | None
    """The HTTP status it answered; None when it did not answer."""
    said: str
    """How it went, in words that never hold the URL: `200`, `answered 500`, `connection refused`, `timed out`."""

    @property
    def ok(self) -> bool:
        """Whether the webhook took the message (a 2xx)."""
        return self.status is not None and 200 <= self.status < 300

    @property
    def final(self) -> bool:
        """Whether trying again cannot help: it was taken, or refused with a 4xx (the URL or the body is wrong)."""
        return self.ok or (self.status is not None and 400 <= self.status < 500)


class Delivery(NamedTuple):
    """What was done about one webhook of one tenant's night, as the instance keeps it."""

    state: State
    """`sent`; `refused` (a 4xx, not retried); `gave up` (still failing when the time for retries ran out); `retrying`."""
    attempts: int
    """Posts made so far."""
    next_at: str | None
    """When the next attempt is due (UTC, ISO 8601), while retrying."""
    said: str
    """How the last attempt went."""

    def text(self) -> str:
        """As the instance keeps it: JSON."""
        return json.dumps(self._asdict())


def is_slack(url: str) -> bool:
    """Whether a webhook URL is a Slack incoming webhook."""
    return (urlsplit(url).hostname or "").lower() == SLACK_HOST


def body_for(url: str, night: TenantNight, kinds: Sequence[str]) -> dict:
    """What a webhook is sent: a Slack message to Slack, the tenant's findings as JSON to any other."""
    return slack_message(night, kinds) if is_slack(url) else webhook_json(night, kinds)


def post(url: str, body: dict, timeout: float = TIMEOUT_S) -> Attempt:
    """Post `body` as JSON to `url` once; how it went, never naming the URL."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "kindgi-eval"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return Attempt(answer.status, str(answer.status))
    except urllib.error.HTTPError as e:
        return Attempt(e.code, f"answered {e.code}")
    except TimeoutError:
        return Attempt(None, "timed out")
    except urllib.error.URLError as e:
        reason = e.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            return Attempt(None, "timed out")
        if isinstance(reason, ConnectionRefusedError):
            return Attempt(None, "connection refused")
        return Attempt(None, f"could not connect ({type(reason).__name__})")
    except (OSError, ValueError) as e:  # a reset connection; a value that is no URL
        return Attempt(None, f"failed ({type(e).__name__})")


def sent_key(tenant: str, night: str, variable: str) -> str:
    """The instance's key of one webhook of one tenant's night."""
    return f"{KEY_PREFIX}{tenant}@{night}/{variable}"


def kept(instance: dg.DagsterInstance, key: str) -> Delivery | None:
    """What the instance keeps of a delivery; None when nothing was done yet."""
    value = instance.run_storage.get_cursor_values({key}).get(key)
    return Delivery(**json.loads(value)) if value else None


def keep(instance: dg.DagsterInstance, key: str, delivery: Delivery) -> None:
    """Keep what was done about a delivery in the instance (its run storage's key-value table)."""
    instance.run_storage.set_cursor_values({key: delivery.text()})


def deliver(
    instance: dg.DagsterInstance,
    night: TenantNight,
    label: str,
    variables: Sequence[str],
    kinds: Sequence[str],
    environ: Mapping[str, str],
    until: datetime,
    *,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    wait: Callable[[float], None] = time.sleep,
    patient: bool = False,
) -> list[str]:
    """Send a tenant's night to each webhook `variables` name, unless it was sent (or refused) already; a line per
    webhook saying what was done. A 5xx, a timeout or a refused connection is tried again after a pause (`QUICK_RETRIES`,
    then from a later look, the pause doubling) until `until`; a 4xx is not. `patient` waits for those later tries
    itself (the command line, which has no later look) instead of leaving them to the next look."""
    lines = []
    for variable in variables:
        key = sent_key(night.tenant, label, variable)
        before = kept(instance, key)
        if before is not None and before.state in ("sent", "refused", "gave up"):
            lines.append(f"{night.tenant}: {variable}: {before.state} already ({before.said}); not sent again")
            continue
        url = environ.get(variable, "")
        if not url:
            lines.append(f"{night.tenant}: {variable} is not set; nothing sent to it")
            continue
        delivery = before or Delivery("retrying", 0, None, "")
        while True:
            if delivery.next_at and now() < datetime.fromisoformat(delivery.next_at):
                if not patient:
                    lines.append(f"{night.tenant}: {variable}: next attempt at {delivery.next_at} ({delivery.said})")
                    break
                wait((datetime.fromisoformat(delivery.next_at) - now()).total_seconds())
            delivery, said = _attempts(url, body_for(url, night, kinds), delivery, until, now, wait)
            keep(instance, key, delivery)
            lines += [f"{night.tenant}: {variable}: {s}" for s in said]
            if delivery.state != "retrying" or not patient:
                break
    return lines


def _attempts(
    url: str,
    body: dict,
    delivery: Delivery,
    until: datetime,
    now: Callable[[], datetime],
    wait: Callable[[float], None],
) -> tuple[Delivery, list[str]]:
    """One look's attempts: the first, then one after each of `QUICK_RETRIES` while the webhook fails in a way a retry
    may mend; the delivery as it then stands, and a line per attempt."""
    said = []
    attempts = delivery.attempts
    for pause in (0.0, *QUICK_RETRIES):
        if pause:
            wait(pause)
        attempt = post(url, body)
        attempts += 1
        if attempt.ok:
            said.append(f"attempt {attempts}: sent ({attempt.said})")
            return Delivery("sent", attempts, None, attempt.said), said
        if attempt.final:
            said.append(f"attempt {attempts}: {attempt.said}; not retried (a 4xx: check the URL the variable holds)")
            return Delivery("refused", attempts, None, attempt.said), said
        said.append(f"attempt {attempts}: {attempt.said}")
        if now() >= until:
            said.append(f"gave up after {attempts} attempts")
            return Delivery("gave up", attempts, None, attempt.said), said
    looks = max(1, attempts // (1 + len(QUICK_RETRIES)))
    pause = min(FIRST_BACKOFF_S * 2 ** (looks - 1), MAX_BACKOFF_S)
    next_at = min(now() + timedelta(seconds=pause), until)
    said.append(f"retrying at {next_at.isoformat(timespec='seconds')}")
    return Delivery("retrying", attempts, next_at.isoformat(), attempt.said), said
