"""A stand-in for the Lambda service's ``Invoke``, for the tick benchmark.

It runs in a process of its own (``python -m benchmarks.stub_lambda``), so its threads never
compete with the ticker for the benchmark's GIL, just as the real service runs elsewhere. It
answers ``POST /2015-03-31/functions/<name>/invocations`` with 202 after a set latency
(``time.sleep`` in the handler thread, like the service's own round trip), and counts the calls
per firing id (the JSON payload's ``firingId``); a shard event of the fan-out (``{"tick": ...,
"shard": i, "shards": n}``) is counted apart. ``GET /counts`` answers the counts as JSON,
``POST /reset`` clears them.

The server is a ``ThreadingHTTPServer`` speaking HTTP/1.1 with keep-alive (botocore keeps its
connections open), ``TCP_NODELAY`` on every accepted socket (no Nagle delay on small answers),
daemon threads, and a bounded accept queue. The process prints ``PORT <n>`` once it listens, and
ends when its standard input closes (the benchmark ends, or dies).

:class:`StubLambda` starts it, reads its counts and stops it (by its own pid only).
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

_PREFIX = "/2015-03-31/functions/"
_SUFFIX = "/invocations"
ACCEPT_QUEUE = 1024  # listen() backlog: connections waiting beyond it are refused, not queued


@dataclass
class _State:
    latency: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    firings: Counter[str] = field(default_factory=Counter)
    functions: Counter[str] = field(default_factory=Counter)
    shards: list[dict[str, Any]] = field(default_factory=list)
    other: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    connections: int = 0  # that carried an Invoke: with keep-alive, one per client pool slot

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "firings": dict(self.firings),
                "functions": dict(self.functions),
                "shards": list(self.shards),
                "other": self.other,
                "peakInFlight": self.peak_in_flight,
                "connections": self.connections,
            }

    def reset(self) -> None:
        with self.lock:
            self.firings.clear()
            self.functions.clear()
            self.shards.clear()
            self.other = 0
            self.peak_in_flight = self.in_flight
            self.connections = 0


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = ACCEPT_QUEUE

    def __init__(self, address: tuple[str, int], state: _State) -> None:
        self.state = state
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection per botocore pool slot
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.invoked = False  # one handler per connection: whether this one carried an Invoke

    def log_message(self, format: str, *args: Any) -> None:
        return  # one line per call would cost more than the call

    def _answer(self, status: int, body: bytes = b"", kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/counts":
            self._answer(200, json.dumps(self.server.state.snapshot()).encode())
        else:
            self._answer(404, b'{"message": "not found"}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        state = self.server.state
        if self.path == "/reset":
            state.reset()
            self._answer(200, b"{}")
            return
        if not (self.path.startswith(_PREFIX) and self.path.endswith(_SUFFIX)):
            self._answer(404, b'{"message": "not found"}')
            return
        function = self.path[len(_PREFIX) : -len(_SUFFIX)]
        try:
            event = json.loads(body or b"null")
        except ValueError:
            event = None
        with state.lock:
            if not self.invoked:
                self.invoked = True
                state.connections += 1
            state.in_flight += 1
            state.peak_in_flight = max(state.peak_in_flight, state.in_flight)
        try:
            time.sleep(state.latency)
        finally:
            with state.lock:
                state.in_flight -= 1
                state.functions[function] += 1
                if isinstance(event, dict) and isinstance(event.get("firingId"), str):
                    state.firings[event["firingId"]] += 1
                elif isinstance(event, dict) and "shard" in event:
                    state.shards.append(event)
                else:
                    state.other += 1
        self._answer(202)


def serve(latency: float, port: int = 0) -> None:
    """Serve until standard input closes; print ``PORT <n>`` once listening."""
    server = _Server(("127.0.0.1", port), _State(latency))
    thread = threading.Thread(target=server.serve_forever, name="stub-lambda", daemon=True)
    thread.start()
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        sys.stdin.read()  # EOF: the benchmark closed our stdin, or died
    finally:
        server.shutdown()
        server.server_close()


class StubLambda:
    """The stub in a subprocess of its own: ``endpoint`` for ``AWS_ENDPOINT_URL_LAMBDA``."""

    module = "benchmarks.stub_lambda"  # the stub's module (another stub's subclass names its own)

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self._process: subprocess.Popen[str] | None = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        root = Path(__file__).resolve().parents[1]
        self._process = subprocess.Popen(
            [sys.executable, "-m", self.module, "--latency", str(self.latency)],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline().split()
        if len(line) != 2 or line[0] != "PORT":
            self.__exit__(None, None, None)
            raise RuntimeError(f"the stub {self.module} did not start: {line!r}")
        self.port = int(line[1])
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def _call(self, method: str, path: str) -> dict[str, Any]:
        request = urllib.request.Request(self.endpoint + path, method=method, data=None)
        with urllib.request.urlopen(request, timeout=30) as answer:
            data: dict[str, Any] = json.loads(answer.read())
            return data

    def counts(self) -> dict[str, Any]:
        return self._call("GET", "/counts")

    def reset(self) -> None:
        self._call("POST", "/reset")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stub_lambda")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per Invoke (0.02)")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    serve(args.latency, args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
