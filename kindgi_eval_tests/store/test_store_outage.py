"""A store on an S3 API (moto's server) that stops answering in the middle of a run: its port refuses connections and
the connections open are dropped. A run waits out an outage shorter than `store.s3.UNREACHABLE_S` and ends whole; a
longer one fails the run, and no object it left is short."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import boto3
import pyarrow.parquet as pq
import pytest
import s3fs

from kindgi_eval.defs.runs import RunFailed, open_instance, run_chain
from kindgi_eval.inputs.settings import RunSettings
from kindgi_eval.store import s3
from kindgi_eval.store.layout import SHARED, read_rows, store_root
from kindgi_eval_tests.conftest import GOLDEN, GOLDEN_STATUSES

KEY = "demo-academy.golden"
BUCKET = "kindgi"
CASES = GOLDEN_STATUSES


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Outage:
    """A TCP relay in front of the S3 server, which can stop answering: while it is down its port is closed (a
    connection is refused) and every connection it relayed is cut."""

    def __init__(self, target: int) -> None:
        self.target, self.port = target, free_port()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.up()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            cut, self._open = self._open, set()
        if listener is not None:
            listener.close()
        for conn in cut:
            _close(conn)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed by down()
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            with self._lock:
                if self._listener is not listener:
                    _close(client), _close(server)
                    return
                self._open |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _close(source), _close(sink)


def _close(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()


@pytest.fixture
def s3_server(tmp_path: Path) -> Iterator[int]:
    """moto's S3 API server on 127.0.0.1 with an empty bucket; its port. Stopped by its PID."""
    port = free_port()
    log = (tmp_path / "moto.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(
                    urllib.request.Request(f"http://127.0.0.1:{port}/{BUCKET}", method="PUT"), timeout=5
                ).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "moto.log").read_text()
                time.sleep(0.2)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


@pytest.fixture
def store(home, s3_server: int, monkeypatch: pytest.MonkeyPatch) -> Outage:
    """The run's store on the S3 server, reached through an `Outage` relay."""
    outage = Outage(s3_server)
    monkeypatch.setenv("KINDGI_STORE", f"s3://{BUCKET}/store")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{outage.port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "kindgi")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "kindgi-test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    yield outage
    outage.down()
    s3fs.S3FileSystem.clear_instance_cache()  # the next test's endpoint is another port


def client(port: int):
    """A client of the server itself (not through the relay)."""
    return boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        aws_access_key_id="kindgi",
        aws_secret_access_key="kindgi-test",
        region_name="us-east-1",
    )


def keys(port: int) -> list[str]:
    """The key of every object in the bucket."""
    pages = client(port).get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def objects(port: int) -> dict[str, bytes]:
    """Every object in the bucket."""
    server = client(port)
    return {key: server.get_object(Bucket=BUCKET, Key=key)["Body"].read() for key in keys(port)}


def outage_once(outage: Outage, port: int, seconds: float) -> threading.Thread:
    """Take the store down for `seconds` as soon as the run has stored its first table (its suite), in the middle of
    the run."""

    def watch() -> None:
        deadline = time.monotonic() + 120
        while not any(key.startswith("store/suite/") for key in keys(port)):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        outage.down()
        time.sleep(seconds)
        outage.up()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def assert_every_object_whole(port: int) -> None:
    for key, body in objects(port).items():
        if key.endswith(".parquet"):
            pq.read_table(io.BytesIO(body))  # a short object has no footer and is refused


@pytest.mark.long
def test_a_run_waits_out_a_store_unreachable_for_30_s_and_ends_whole(home, store: Outage, s3_server: int) -> None:
    watcher = outage_once(store, s3_server, 30)
    started = time.monotonic()
    run_id = run_chain(
        open_instance(home.root),
        home.root,
        RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent"),
        KEY,
        "conversation",
    )
    watcher.join(timeout=60)
    assert time.monotonic() - started >= 30  # it did meet the outage, and waited it out
    assert len(read_rows(store_root(), SHARED.statuses, KEY, run_id)) == CASES
    assert any(f"run_summary/suite={KEY}/" in key and run_id in key for key in keys(s3_server))
    assert_every_object_whole(s3_server)


def test_a_store_unreachable_for_longer_fails_the_run_and_leaves_no_short_object(
    home, store: Outage, s3_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3, "UNREACHABLE_S", 3.0)
    outage_once(store, s3_server, 3600)
    with pytest.raises(RunFailed):
        run_chain(
            open_instance(home.root),
            home.root,
            RunSettings(eval_dir=str(GOLDEN), agent_model="mock:agent"),
            KEY,
            "conversation",
        )
    assert not any(key.startswith("store/run_summary/") for key in keys(s3_server))
    assert_every_object_whole(s3_server)


def test_only_a_server_that_does_not_answer_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

    monkeypatch.setattr(s3, "UNREACHABLE_S", 60.0)
    request = {"context": {}}
    refused = EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    assert [s3.wait_out_outage(request, attempts=n, caught_exception=refused) for n in (1, 2, 3, 4, 5, 6)] == [
        0.5,
        1,
        2,
        4,
        8,
        8,
    ]
    answered = ClientError({"Error": {"Code": "SlowDown"}}, "PutObject")
    assert s3.wait_out_outage({"context": {}}, attempts=1, caught_exception=answered) is None  # botocore's own rule
    assert s3.wait_out_outage({"context": {}}, attempts=1, caught_exception=ReadTimeoutError(endpoint_url="x")) is None
    assert s3.wait_out_outage({"context": {}}, attempts=1) is None
    monkeypatch.setattr(s3, "UNREACHABLE_S", 0.0)  # unreachable for as long as allowed: no more waiting
    assert s3.wait_out_outage(request, attempts=7, caught_exception=refused) is None
