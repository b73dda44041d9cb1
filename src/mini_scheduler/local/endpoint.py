"""``make run``'s moto over HTTP on 127.0.0.1, so that the CLI on this machine (or boto3, or the
AWS CLI) reaches the very moto the local run's tickers use: ``AWS_ENDPOINT_URL=<its URL>``, any
credentials.

A request goes where an in-process client's request goes: to moto's own dispatcher
(``botocore_stubber.process_request``, one call at a time with the run's own:
:func:`~mini_scheduler.local.moto_aws.serialised_moto`), at the AWS address its SigV4
credential scope names (the service and the region). moto runs no Lambda code, so an Invoke of
a region's ticker function (:data:`~mini_scheduler.local.moto_aws.TICKER_FUNCTION`) is answered
by that region's ticker, as its Lambda handler answers: the event routed, a refused one
answered ``{"status": "rejected", "error": ...}``, a handler that raised as a function error.

Only loopback names are served (``Host`` 127.0.0.1 or localhost): a web page whose name
resolves to this machine cannot reach it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import unquote, urlsplit

from mini_scheduler.errors import EventError
from mini_scheduler.local.dispatch import function_name
from mini_scheduler.local.moto_aws import TICKER_FUNCTION

log = logging.getLogger("mini_scheduler.local")

DEFAULT_ENDPOINT_PORT: Final = 8766  # the console's port, 8765, plus one
_INVOKE: Final = re.compile(r"/2015-03-31/functions/([^/]+)/invocations")
_SCOPE: Final = re.compile(r"Credential=[^/,\s]*/\d{8}/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request")
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost"})
_DROPPED: Final = frozenset({"content-length", "transfer-encoding", "connection", "date", "server"})

Send = Callable[[Any], Any]
"""An event to one region's ticker: its answer (EventError when it refuses the event)."""
Response = tuple[int, Mapping[str, str], bytes]


def header(headers: Mapping[str, str], name: str) -> str:
    """A request header's value, whatever the case of its name; empty when absent."""
    wanted = name.lower()
    return next((value for key, value in headers.items() if key.lower() == wanted), "")


def credential_scope(authorization: str) -> tuple[str, str] | None:
    """The region and the service a SigV4 ``Authorization`` header signs for, or None."""
    found = _SCOPE.search(authorization)
    return (found[1], found[2]) if found else None


def invoked_ticker(method: str, path: str) -> bool:
    """Whether a request is a Lambda Invoke of the local run's ticker function (by name or
    ARN)."""
    found = _INVOKE.fullmatch(urlsplit(path).path)
    return (
        method == "POST"
        and found is not None
        and (function_name(unquote(found[1])) == TICKER_FUNCTION)
    )


def ticker_answer(send: Send, body: bytes) -> Response:
    """What Lambda's Invoke answers for the ticker's handler given ``body``."""
    headers = {"Content-Type": "application/json", "X-Amz-Executed-Version": "$LATEST"}
    try:
        answer: Any = send(json.loads(body or b"{}"))
    except (EventError, ValueError) as exc:
        answer = {"status": "rejected", "error": str(exc)}
    except Exception as exc:
        log.error("Ticker invoke failed: %s: %s", type(exc).__name__, exc)
        headers["X-Amz-Function-Error"] = "Unhandled"
        answer = {"errorType": type(exc).__name__, "errorMessage": str(exc)}
    return 200, headers, json.dumps(answer, default=str).encode()


def moto_answer(method: str, path: str, headers: Mapping[str, str], body: bytes) -> Response:
    """moto's answer to a request signed for ``region`` and ``service``, as it answers the
    same request from a client in this process."""
    from botocore.awsrequest import AWSPreparedRequest
    from botocore.compat import HTTPHeaders
    from moto.core.models import botocore_stubber

    scope = credential_scope(header(headers, "Authorization"))
    if scope is None:
        return _error(400, "sign the request with SigV4 (any credentials do)")
    region, service = scope
    host = f"{service}.{region}.amazonaws.com"
    forwarded = HTTPHeaders()
    for key, value in headers.items():
        if key.lower() != "host":
            forwarded[key] = value
    forwarded["Host"] = host
    request = AWSPreparedRequest(
        method=method,
        url=f"https://{host}{path}",
        headers=forwarded,
        body=body,
        stream_output=False,
    )
    answer = botocore_stubber.process_request(request)
    if answer is None:
        return _error(404, f"moto does not answer {service} here")
    status, answered, content = answer
    text = content.encode() if isinstance(content, str) else bytes(content or b"")
    kept = {str(k): str(v) for k, v in (answered or {}).items() if k.lower() not in _DROPPED}
    return int(status), kept, text


def _error(status: int, message: str) -> Response:
    return status, {"Content-Type": "text/plain"}, message.encode()


class LocalEndpoint:
    """The endpoint on ``127.0.0.1:port`` (0: any free port), each region's ticker in
    ``tickers`` (region -> :data:`Send`), served on threads until :meth:`stop`."""

    def __init__(self, tickers: Mapping[str, Send], port: int = 0) -> None:
        self.tickers = dict(tickers)
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="endpoint", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()

    def answer(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Response:
        """The answer to one request."""
        host = header(headers, "Host").rsplit(":", 1)[0].strip("[]")
        if host not in _LOOPBACK:
            return _error(403, "only 127.0.0.1 and localhost are served")
        if invoked_ticker(method, path):
            scope = credential_scope(header(headers, "Authorization"))
            send = self.tickers.get(scope[0]) if scope else None
            if send is not None:
                return ticker_answer(send, body)
        return moto_answer(method, path, headers, body)


def _handler_for(endpoint: LocalEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            headers = dict(self.headers.items())
            try:
                status, answered, content = endpoint.answer(self.command, self.path, headers, body)
            except Exception as exc:  # one request's failure, not the server's
                log.error("Endpoint %s %s failed: %s", self.command, self.path, exc)
                status, answered, content = _error(500, f"{type(exc).__name__}: {exc}")
            self.send_response(status)
            for key, value in answered.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(content)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _answer

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the requests are the CLI's, which says what it did."""

    return Handler
