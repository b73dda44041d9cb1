"""A stand-in for SQS, SNS, EventBridge and ECS's sending calls and for a webhook's receiver,
for the target kinds' benchmark.

Like :mod:`benchmarks.stub_lambda` it runs in a process of its own (``python -m
benchmarks.stub_targets``), so its threads never compete with the ticker for the benchmark's
GIL, and answers each request after a set latency. One endpoint serves the four services
(``AWS_ENDPOINT_URL_SQS``, ``_SNS``, ``_EVENTBRIDGE`` and ``_ECS`` all point at it) and the
webhooks, told apart as botocore 1.44 sends them:

- SQS speaks the JSON protocol 1.0 (``X-Amz-Target: AmazonSQS.<Operation>``): ``SendMessage``,
  ``SendMessageBatch`` and ``GetQueueUrl`` are answered;
- EventBridge the JSON protocol 1.1 (``X-Amz-Target: AWSEvents.PutEvents``): ``PutEvents``;
- SNS the query protocol (a form body, ``Action=Publish``), answered in XML: ``Publish`` and
  ``PublishBatch``;
- ECS the JSON protocol 1.1 (``X-Amz-Target: AmazonEC2ContainerServiceV20141113.RunTask``):
  ``RunTask``;
- a webhook is a plain HTTP ``POST /hook/<anything>``, answered 200 (no ``X-Amz-Target``).

Every answer is the operation's minimal valid one: a message id (and an SQS body's MD5) for each
message, every batch entry ``Successful`` under its own ``Id``, an EventBridge ``EventId`` per
entry and ``FailedEntryCount`` 0, a task ARN per task RunTask's ``count`` asks and no
``failures``. Anything else is answered 400 with the service's error shape.

It counts the requests per ``service.Operation`` (``sqs.SendMessageBatch``; a webhook's:
``https.POST``), the messages they carried, and the messages per firing id (the ``firingId`` of a
message's JSON body: SQS's ``MessageBody``, SNS's ``Message``, EventBridge's ``Detail``; a
RunTask's first container override's ``MINI_SCHEDULER_FIRING_ID``; a webhook's
``Idempotency-Key`` header). ``GET /counts`` answers the counts,
``POST /reset`` clears them. The process prints ``PORT <n>`` once it listens, and ends when its
standard input closes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from benchmarks.stub_lambda import ACCEPT_QUEUE, StubLambda

ACCOUNT = "123456789012"
SNS_XMLNS = "http://sns.amazonaws.com/doc/2010-03-31/"
JSON_10 = "application/x-amz-json-1.0"
JSON_11 = "application/x-amz-json-1.1"
ECS_TARGET = "AmazonEC2ContainerServiceV20141113"
FIRING_VARIABLE = "MINI_SCHEDULER_FIRING_ID"  # mini_scheduler.dispatch.ecs's
HOOK_PATH = "/hook/"


@dataclass
class _State:
    latency: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: Counter[str] = field(default_factory=Counter)  # per service.Operation
    messages: Counter[str] = field(default_factory=Counter)  # messages carried, likewise
    firings: Counter[str] = field(default_factory=Counter)  # messages per firing id

    def count(self, operation: str, bodies: list[str]) -> None:
        """A request of ``bodies``, each a message's JSON body holding its ``firingId``."""
        self.count_ids(operation, [_firing_id(body) for body in bodies])

    def count_ids(self, operation: str, firing_ids: list[str]) -> None:
        with self.lock:
            self.requests[operation] += 1
            self.messages[operation] += len(firing_ids)
            for firing_id in firing_ids:
                self.firings[firing_id] += 1

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "requests": dict(self.requests),
                "messages": dict(self.messages),
                "firings": dict(self.firings),
            }

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.messages.clear()
            self.firings.clear()


def _firing_id(body: str) -> str:
    try:
        found = json.loads(body)
    except ValueError:
        return "(not JSON)"
    return str(found.get("firingId", "(no firingId)")) if isinstance(found, dict) else "(other)"


def _message_id() -> str:
    return str(uuid.uuid4())


Answer = tuple[int, bytes, str]  # status, body, content type
"""What the server sends back."""


def _sqs(operation: str, request: Mapping[str, Any], state: _State, port: int) -> Answer:
    """SQS's JSON 1.0 operations."""
    if operation == "GetQueueUrl":
        url = f"http://127.0.0.1:{port}/{ACCOUNT}/{request.get('QueueName', '')}"
        return 200, json.dumps({"QueueUrl": url}).encode(), JSON_10
    if operation == "SendMessage":
        body = str(request.get("MessageBody", ""))
        state.count("sqs.SendMessage", [body])
        answer = {"MessageId": _message_id(), "MD5OfMessageBody": _md5(body)}
        return 200, json.dumps(answer).encode(), JSON_10
    if operation == "SendMessageBatch":
        entries = list(request.get("Entries") or [])
        bodies = [str(entry.get("MessageBody", "")) for entry in entries]
        state.count("sqs.SendMessageBatch", bodies)
        done = [
            {"Id": entry.get("Id"), "MessageId": _message_id(), "MD5OfMessageBody": _md5(body)}
            for entry, body in zip(entries, bodies, strict=True)
        ]
        return 200, json.dumps({"Successful": done, "Failed": []}).encode(), JSON_10
    return _json_error("AmazonSQS", operation, JSON_10)


def _events(operation: str, request: Mapping[str, Any], state: _State) -> Answer:
    """EventBridge's JSON 1.1 ``PutEvents``."""
    if operation != "PutEvents":
        return _json_error("AWSEvents", operation, JSON_11)
    entries = list(request.get("Entries") or [])
    state.count("events.PutEvents", [str(entry.get("Detail", "")) for entry in entries])
    answer = {"FailedEntryCount": 0, "Entries": [{"EventId": _message_id()} for _ in entries]}
    return 200, json.dumps(answer).encode(), JSON_11


def _sns(form: Mapping[str, list[str]], state: _State) -> Answer:
    """SNS's query operations, answered in XML."""
    action = form.get("Action", [""])[0]
    if action == "Publish":
        state.count("sns.Publish", [form.get("Message", [""])[0]])
        result = f"<MessageId>{_message_id()}</MessageId>"
    elif action == "PublishBatch":
        prefix = "PublishBatchRequestEntries.member."
        members = sorted(
            {int(key[len(prefix) :].split(".", 1)[0]) for key in form if key.startswith(prefix)}
        )
        ids = [form.get(f"{prefix}{n}.Id", [""])[0] for n in members]
        state.count(
            "sns.PublishBatch", [form.get(f"{prefix}{n}.Message", [""])[0] for n in members]
        )
        done = "".join(
            f"<member><Id>{escape(id_)}</Id><MessageId>{_message_id()}</MessageId></member>"
            for id_ in ids
        )
        result = f"<Successful>{done}</Successful><Failed/>"
    else:
        error = (
            f'<ErrorResponse xmlns="{SNS_XMLNS}"><Error><Type>Sender</Type>'
            f"<Code>InvalidAction</Code><Message>the stub does not answer {escape(action)}"
            f"</Message></Error><RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>"
        )
        return 400, error.encode(), "text/xml"
    xml = (
        f'<{action}Response xmlns="{SNS_XMLNS}"><{action}Result>{result}</{action}Result>'
        f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
        f"</{action}Response>"
    )
    return 200, xml.encode(), "text/xml"


def _ecs(operation: str, request: Mapping[str, Any], state: _State) -> Answer:
    """ECS's JSON 1.1 ``RunTask``: ``count`` tasks of the first container override's firing."""
    if operation != "RunTask":
        return _json_error(ECS_TARGET, operation, JSON_11)
    overrides = (request.get("overrides") or {}).get("containerOverrides") or [{}]
    variables = {
        str(pair.get("name")): str(pair.get("value"))
        for pair in overrides[0].get("environment") or []
    }
    tasks = max(1, int(request.get("count") or 1))
    state.count_ids("ecs.RunTask", [variables.get(FIRING_VARIABLE, "(no firing id)")] * tasks)
    cluster = str(request.get("cluster") or "default").rsplit("/", 1)[-1]
    arns = [
        {"taskArn": f"arn:aws:ecs:us-east-1:{ACCOUNT}:task/{cluster}/{uuid.uuid4().hex}"}
        for _ in range(tasks)
    ]
    return 200, json.dumps({"tasks": arns, "failures": []}).encode(), JSON_11


def _hook(firing_id: str | None, state: _State) -> Answer:
    """A webhook's receiver: 200, its firing the ``Idempotency-Key``."""
    state.count_ids("https.POST", [firing_id or "(no Idempotency-Key)"])
    return 200, b'{"received": true}', "application/json"


def _md5(text: str) -> str:
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def _json_error(prefix: str, operation: str, kind: str) -> Answer:
    error = {
        "__type": f"{prefix}#UnknownOperationException",
        "message": f"the stub does not answer {operation}",
    }
    return 400, json.dumps(error).encode(), kind


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

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _answer(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/counts":
            self._answer(200, json.dumps(self.server.state.snapshot()).encode(), JSON_10)
        else:
            self._answer(404, b'{"message": "not found"}', JSON_10)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        state = self.server.state
        if self.path == "/reset":
            state.reset()
            self._answer(200, b"{}", JSON_10)
            return
        time.sleep(state.latency)  # the service's round trip, in this handler's thread
        self._answer(*self._route(body))

    def _route(self, body: bytes) -> Answer:
        target = self.headers.get("X-Amz-Target") or ""
        service, _, operation = target.partition(".")
        state, port = self.server.state, self.server.server_address[1]
        if not target and self.path.startswith(HOOK_PATH):
            return _hook(self.headers.get("Idempotency-Key"), state)
        routes: dict[str, Callable[[Mapping[str, Any]], Answer]] = {
            "AmazonSQS": lambda request: _sqs(operation, request, state, int(port)),
            "AWSEvents": lambda request: _events(operation, request, state),
            ECS_TARGET: lambda request: _ecs(operation, request, state),
        }
        if service in routes:
            try:
                request = json.loads(body or b"{}")
            except ValueError:
                request = {}
            return routes[service](request if isinstance(request, dict) else {})
        return _sns(parse_qs(body.decode(errors="replace"), keep_blank_values=True), state)


def serve(latency: float, port: int = 0) -> None:
    """Serve until standard input closes; print ``PORT <n>`` once listening."""
    import sys

    server = _Server(("127.0.0.1", port), _State(latency))
    thread = threading.Thread(target=server.serve_forever, name="stub-targets", daemon=True)
    thread.start()
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        sys.stdin.read()
    finally:
        server.shutdown()
        server.server_close()


class StubTargets(StubLambda):
    """The stub in a subprocess of its own, its ``endpoints()`` to set; ``counts()`` and
    ``reset()`` as the stub Lambda's."""

    module = "benchmarks.stub_targets"

    def endpoints(self) -> Mapping[str, str | None]:
        """The variables that send the four services' calls here (by botocore's service ids:
        EventBridge's is ``EVENTBRIDGE``), and any other service's without a variable of its
        own (``AWS_ENDPOINT_URL``: answered 400, never sent further). A webhook's URL is
        ``endpoint`` and a path under ``/hook/``."""
        services = ("SQS", "SNS", "EVENTBRIDGE", "ECS")
        return {"AWS_ENDPOINT_URL": self.endpoint} | {
            f"AWS_ENDPOINT_URL_{service}": self.endpoint for service in services
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stub_targets")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per request (0.02)")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    serve(args.latency, args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
