"""An OpenAI-compatible chat server on 127.0.0.1, scripted per request, that records what it was asked; it also
answers Anthropic's messages API (`/v1/messages`), caches repeated prompt prefixes as the two providers do (`Cache`),
and serves OpenAI's files and batches endpoints (`Batches`), answering each line of a batch by the same script.

It imports no pytest, so the benchmarks can use it from the plain install (`pip install -e .`); its pytest
fixture, `provider_env`, lives in conftest.py."""

from __future__ import annotations

import email.policy
import json
import multiprocessing
import os
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kindgi_eval.prompts import unfence


@dataclass
class Answer:
    """What the server does with one request."""

    content: str | None = None
    status: int = 200
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None


Script = Callable[[dict[str, Any]], Answer]


TOKEN_CHARS = 4
"""How many characters the fake counts as one token."""
CACHE_MIN_TOKENS, CACHE_STEP_TOKENS = 1024, 128
"""OpenAI's rule: a repeated prefix is read from the cache once it is this long, in steps of this many tokens."""


def request_text(body: dict[str, Any]) -> str:
    """A chat or messages request as the text a provider reads: the system prompt, then each message's content."""
    parts = [_text(body.get("system", ""))] + [_text(m.get("content", "")) for m in body.get("messages", [])]
    return "\x00".join(parts)


def _text(content: Any) -> str:
    return content if isinstance(content, str) else "".join(block.get("text", "") for block in content)


def breakpoint_prefixes(body: dict[str, Any]) -> list[str]:
    """The prefixes of an Anthropic request that end at a block marked `cache_control`, shortest first."""
    ends, text = [], ""
    pieces = [body.get("system", "")] + [m.get("content", "") for m in body.get("messages", [])]
    for n, content in enumerate(pieces):
        for block in [{"text": content}] if isinstance(content, str) else content:
            text += block.get("text", "")
            if "cache_control" in block:
                ends.append(text)
        text += "\x00" if n < len(pieces) - 1 else ""
    return ends


class Cache:
    """What the fake provider has cached: OpenAI's automatic prefixes, Anthropic's marked ones."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.marked: set[str] = set()

    def openai(self, body: dict[str, Any]) -> int:
        """Tokens of the longest prefix this request shares with an earlier one, from 1,024 tokens in steps of 128."""
        text = request_text(body)
        shared = max((len(os.path.commonprefix([text, seen])) for seen in self.texts), default=0) // TOKEN_CHARS
        self.texts.append(text)
        return shared // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS if shared >= CACHE_MIN_TOKENS else 0

    def anthropic(self, body: dict[str, Any]) -> tuple[int, int]:
        """(read, written) tokens: the longest marked prefix an earlier request wrote is read, the rest up to the last
        mark is written."""
        prefixes = breakpoint_prefixes(body)
        read = max((len(p) for p in prefixes if p in self.marked), default=0) // TOKEN_CHARS
        written = max(0, len(prefixes[-1]) // TOKEN_CHARS - read) if prefixes else 0
        self.marked.update(prefixes)
        return read, written


def chat_body(content: str, model: str = "fake", usage: dict[str, Any] | None = None) -> bytes:
    """A chat.completion body carrying `content` (and `usage`, else 100 tokens in and 20 out)."""
    return json.dumps(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": usage or {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }
    ).encode()


def anthropic_body(content: str, model: str, read: int, written: int, fresh: int) -> bytes:
    """An Anthropic messages body carrying `content`, with its cache reads and writes and its other input tokens."""
    return json.dumps(
        {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": content}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": fresh,
                "output_tokens": 20,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
            },
        }
    ).encode()


class _QuietServer(ThreadingHTTPServer):
    """A server that takes a client vanishing mid-connection (killed, or timed out under test) in its stride."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeProvider:
    """Serve `script` at http://127.0.0.1:<port>/v1; `requests` holds every request body, in arrival order."""

    def __init__(
        self,
        script: Script,
        port: int = 0,
        *,
        caching: bool = False,
        batch_end: str = "completed",
        looks_before_done: int = 1,
    ):
        """A server answering by `script`, on `port` of 127.0.0.1 (a free one by default); with `caching`, its chat
        answers count tokens (`TOKEN_CHARS` characters each) and report the cached ones as the provider would."""
        self.script = script
        self.cache = Cache() if caching else None
        self.files: dict[str, bytes] = {}
        """Every uploaded file, and every batch output and error file, by id."""
        self.batches: dict[str, dict[str, Any]] = {}
        """Every batch created, by id, as the batches endpoint shows it."""
        self.batch_end = batch_end
        """How a batch ends: completed, or expired (only its first half answered), or failed (nothing answered)."""
        self.looks_before_done = looks_before_done
        """How many looks at a batch find it in progress before it has ended."""
        self.looks: Counter[str] = Counter()
        self.failed_looks = 0
        """How many looks at a batch, from now, answer 503 before the next is answered."""
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
            disable_nagle_algorithm = True  # else the body waits for the client to acknowledge the headers

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                """`/stats`: what the server saw, for a client in another process; `/requests`: every body, in order;
                and the batches API's reads of a batch and of a file's content."""
                if self.path.startswith("/v1/messages/batches/"):
                    self._send(200, provider.message_batch_read(self.path))
                    return
                if self.path.startswith("/v1/batches/") and provider.failed_looks > 0:
                    provider.failed_looks -= 1
                    self._send(503, b'{"error": {"message": "busy, try again"}}')
                    return
                if self.path.startswith("/v1/batches/") or self.path.startswith("/v1/files/"):
                    self._send(200, provider.batch_read(self.path))
                    return
                with provider._lock:
                    if self.path == "/requests":
                        payload = json.dumps(provider.requests).encode()
                    else:
                        payload = json.dumps({"requests": len(provider.requests), "peak": provider.peak}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                if len(raw) < length:  # the client died mid-request (a killed run): nothing was asked
                    self.close_connection = True
                    return
                if self.path.endswith("/messages/batches"):
                    self._send(200, provider.create_message_batch(json.loads(raw)))
                    return
                if self.path.endswith("/files"):
                    self._send(200, provider.upload(self.headers.get("Content-Type", ""), raw))
                    return
                if self.path.endswith("/batches"):
                    self._send(200, provider.create_batch(json.loads(raw)))
                    return
                body = json.loads(raw or b"{}")
                with provider._lock:
                    provider.requests.append(body)
                    provider.headers.append(dict(self.headers))
                    provider.in_flight += 1
                    provider.peak = max(provider.peak, provider.in_flight)
                try:
                    answer = provider.script(body)
                    time.sleep(answer.delay_s)
                    payload = answer.raw_body if answer.raw_body is not None else provider.body(self.path, body, answer)
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout under test)
                finally:
                    with provider._lock:
                        provider.in_flight -= 1

            def log_message(self, *args: object) -> None:
                pass

        self.server = _QuietServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.server.request_queue_size = 256
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def body(self, path: str, request: dict[str, Any], answer: Answer) -> bytes:
        """The answer's body: Anthropic's for `/v1/messages`, else a chat completion; with a cache, tokens counted."""
        if path.endswith("/messages"):
            with self._lock:
                read, written = self.cache.anthropic(request) if self.cache else (0, 0)
            fresh = len(request_text(request)) // TOKEN_CHARS - read - written
            return anthropic_body(answer.content or "", request.get("model", "fake"), read, written, fresh)
        if self.cache is None:
            return chat_body(answer.content or "")
        with self._lock:
            cached = self.cache.openai(request)
        prompt = len(request_text(request)) // TOKEN_CHARS
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": 20,
            "total_tokens": prompt + 20,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        return chat_body(answer.content or "", request.get("model", "fake"), usage)

    def upload(self, content_type: str, raw: bytes) -> bytes:
        """`POST /v1/files`: the multipart form's file kept under a new id."""
        form = BytesParser(policy=email.policy.HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        data = next(part.get_payload(decode=True) for part in form.iter_parts() if part.get_filename())
        with self._lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = data
        return json.dumps(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": 0,
                "filename": "requests.jsonl",
                "purpose": "batch",
                "status": "processed",
            }
        ).encode()

    def create_batch(self, request: dict[str, Any]) -> bytes:
        """`POST /v1/batches`: every line of the input file answered by the script now, shown once it has ended."""
        lines = [
            json.loads(line) for line in self.files[request["input_file_id"]].decode().splitlines() if line.strip()
        ]
        answered = (
            lines if self.batch_end == "completed" else lines[: len(lines) // 2] if self.batch_end == "expired" else []
        )
        output, errors = [], []
        for line in answered:
            answer = self.script(line["body"])
            if answer.status == 200:
                body = json.loads(self.body("/v1/chat/completions", line["body"], answer))
                output.append(
                    {
                        "id": "req",
                        "custom_id": line["custom_id"],
                        "response": {"status_code": 200, "body": body},
                        "error": None,
                    }
                )
            else:
                error = {"error": {"message": answer.content or "refused", "type": "invalid_request_error"}}
                errors.append(
                    {
                        "id": "req",
                        "custom_id": line["custom_id"],
                        "response": {"status_code": answer.status, "body": error},
                        "error": None,
                    }
                )
        with self._lock:
            self.requests.extend(line["body"] for line in answered)
            batch_id = f"batch_{len(self.batches) + 1}"
            ids = {}
            for name, rows in (("output_file_id", output), ("error_file_id", errors)):
                if rows:
                    ids[name] = f"file-{batch_id}-{name}"
                    self.files[ids[name]] = "".join(json.dumps(row) + "\n" for row in rows).encode()
            self.batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": request["endpoint"],
                "input_file_id": request["input_file_id"],
                "completion_window": request["completion_window"],
                "status": self.batch_end,
                "created_at": 0,
                "output_file_id": ids.get("output_file_id"),
                "error_file_id": ids.get("error_file_id"),
                "request_counts": {"total": len(lines), "completed": len(output), "failed": len(errors)},
                "errors": {"object": "list", "data": [{"code": "invalid", "message": "the batch failed"}]}
                if self.batch_end == "failed"
                else None,
            }
        return json.dumps(
            {**self.batches[batch_id], "status": "validating", "output_file_id": None, "error_file_id": None}
        ).encode()

    def create_message_batch(self, request: dict[str, Any]) -> bytes:
        """Anthropic's `POST /v1/messages/batches`: every request answered by the script now, its usage counted as
        `/v1/messages` counts it; expired requests (`batch_end`) unanswered."""
        entries = request["requests"]
        answered = (
            entries
            if self.batch_end == "completed"
            else entries[: len(entries) // 2]
            if self.batch_end == "expired"
            else []
        )
        results = []
        for entry in entries:
            if entry not in answered:
                results.append({"custom_id": entry["custom_id"], "result": {"type": "expired"}})
                continue
            answer = self.script(entry["params"])
            if answer.status != 200:
                error = {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": answer.content or "refused"},
                }
                results.append({"custom_id": entry["custom_id"], "result": {"type": "errored", "error": error}})
                continue
            message = json.loads(self.body("/v1/messages", entry["params"], answer))
            results.append({"custom_id": entry["custom_id"], "result": {"type": "succeeded", "message": message}})
        with self._lock:
            self.requests.extend(entry["params"] for entry in answered)
            batch_id = f"msgbatch_{len(self.batches) + 1}"
            self.files[batch_id] = "".join(json.dumps(row) + "\n" for row in results).encode()
            self.batches[batch_id] = {
                "id": batch_id,
                "type": "message_batch",
                "processing_status": "ended",
                "results_url": f"{self.base_url.removesuffix('/v1')}/v1/messages/batches/{batch_id}/results",
            }
        return json.dumps({**self.batches[batch_id], "processing_status": "in_progress", "results_url": None}).encode()

    def message_batch_read(self, path: str) -> bytes:
        """Anthropic's `GET /v1/messages/batches/{id}`, in progress for its first looks, and `.../results`."""
        batch_id = path.removeprefix("/v1/messages/batches/")
        if batch_id.endswith("/results"):
            return self.files[batch_id.removesuffix("/results")]
        with self._lock:
            self.looks[batch_id] += 1
            if self.looks[batch_id] <= self.looks_before_done:
                return json.dumps(
                    {**self.batches[batch_id], "processing_status": "in_progress", "results_url": None}
                ).encode()
        return json.dumps(self.batches[batch_id]).encode()

    def batch_read(self, path: str) -> bytes:
        """`GET /v1/batches/{id}`, in progress for its first looks; `GET /v1/files/{id}/content`."""
        if path.startswith("/v1/files/"):
            return self.files[path.removeprefix("/v1/files/").removesuffix("/content")]
        batch_id = path.removeprefix("/v1/batches/")
        with self._lock:
            self.looks[batch_id] += 1
            if self.looks[batch_id] <= self.looks_before_done:
                return json.dumps(
                    {**self.batches[batch_id], "status": "in_progress", "output_file_id": None, "error_file_id": None}
                ).encode()
        return json.dumps(self.batches[batch_id]).encode()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeProvider:
        self.thread.start()
        return self

    def serve_in_child(self) -> multiprocessing.Process:
        """Serve from a forked process instead, so the server does not share the client's interpreter lock."""
        child = multiprocessing.get_context("fork").Process(target=self.server.serve_forever, daemon=True)
        child.start()
        return child

    def stats(self) -> dict[str, int]:
        """Requests seen and peak concurrency, asked over HTTP (works when serving from a child process)."""
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/stats", timeout=5) as response:
            return json.loads(response.read())

    def requests_seen(self) -> list[dict[str, Any]]:
        """Every request body the server was sent, in arrival order, asked over HTTP (works from a child process)."""
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/requests", timeout=5) as response:
            return json.loads(response.read())

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def user_text(request: dict[str, Any]) -> str:
    """The last user message of a chat request (its text blocks joined, where it has them)."""
    return _text(next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user"))


def fenced(request: dict[str, Any], kind: str) -> str:
    """The text inside the request's `<material kind="...">` fence, read as the product's own offline judge reads it."""
    text = unfence(user_text(request), kind)
    if text is None:
        raise ValueError(f"the request has no {kind!r} fence")
    return text


def criterion_of(request: dict[str, Any]) -> str:
    """The criterion a judge request names."""
    return user_text(request).rsplit("Criterion to grade:\n", 1)[1].split("\n", 1)[0]


def scripted(*answers: Answer) -> Script:
    """A script answering requests with `answers` in turn, the last one for every request after."""
    lock = threading.Lock()
    queue = list(answers)

    def script(request: dict[str, Any]) -> Answer:
        with lock:
            return queue.pop(0) if len(queue) > 1 else queue[0]

    return script
