"""A webhook receiver on 127.0.0.1 that answers each path with the statuses scripted for it and records every post."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Receiver:
    """The receiver's address, its script and what it was sent."""

    port: int = 0
    script: dict[str, list[int]] = field(default_factory=dict)
    """Per path, the statuses of its posts in turn; the last one repeats; 200 for a path not scripted."""
    posts: list[tuple[str, int, dict]] = field(default_factory=list)
    """Every post: its path, the status answered and its JSON body."""
    first_post_at: float | None = None
    """When the first post came (`time.time()`), if one has."""

    def url(self, path: str) -> str:
        """The URL of one of its paths."""
        return f"http://127.0.0.1:{self.port}{path}"

    def taken(self, path: str) -> list[dict]:
        """The bodies a path took (answered 2xx)."""
        return [body for p, status, body in self.posts if p == path and status < 300]

    def tried(self, path: str) -> int:
        """How many posts a path was sent."""
        return sum(p == path for p, _, _ in self.posts)


@contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    """A running receiver, stopped on exit."""
    receiver = Receiver()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            with lock:
                statuses = receiver.script.get(self.path, [200])
                status = statuses.pop(0) if len(statuses) > 1 else statuses[0]
                receiver.posts.append((self.path, status, body))
                receiver.first_post_at = receiver.first_post_at or time.time()
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
