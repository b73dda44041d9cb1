"""HTTPS webhooks (``https://...``, or ``http://`` with ``http.insecure``): one request a
firing, whose answer is the run's end.

The request: the job's ``http.method`` (POST by default) to the URL, its body the payload's
compact JSON (none for GET: the firing is in the headers), with ``Content-Type:
application/json``, ``Idempotency-Key: <firing id>``, ``User-Agent: mini-scheduler``,
``X-Mini-Scheduler-Job``, ``X-Mini-Scheduler-Firing``, the mapping's ``headers``, the
``secret_header`` (its value read through ``secrets``, kept :data:`SECRET_TTL` seconds), and
with ``auth: iam`` a SigV4 signature of the ticker's credentials.

An answer in ``expected_status`` (any 2xx by default) is :class:`Ended` SUCCEEDED; any other
(a redirect too: none is followed) is FAILED with ``HTTP <status> <reason>: <the start of the
body>``. The reference is ``https:<host><path>:<status>``. A connection refused, a TLS failure,
no answer within ``timeout`` raise :class:`DispatchError` naming the URL without its query (it
may hold a token) and the cause. The receiver may have had the request when the answer is lost:
the ``Idempotency-Key`` is how it tells a firing sent again.

Server-side request forgery is checked at dispatch as at load: the host's name is resolved,
every address it resolves to must be the internet's (unless ``http.allow_private``; the
metadata service never), and the connection goes to a checked address, so a name that
resolves elsewhere a moment later reaches nothing unchecked. The ``Host`` header, TLS's SNI and
the certificate's check stay on the name. No secret is ever logged, returned or put in an
error.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import SplitResult, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.dispatch.base import Ended
from mini_scheduler.errors import DispatchError, SchedulerError, describe_aws_error
from mini_scheduler.jobs import Target
from mini_scheduler.jobs.http_options import (
    address_problem,
    read_http,
    secret_source,
    shown_url,
    status_expected,
)
from mini_scheduler.model import RunStatus, job_of

__all__ = ["BODY_LIMIT", "SECRET_TTL", "SecretReadError", "WebhookDispatcher", "secret_reader"]

SECRET_TTL: Final = 300.0
"""Seconds a secret header's value is kept before it is read again."""
BODY_LIMIT: Final = 65_536
"""The most bytes of an answer's body read."""
ERROR_BODY: Final = 256
"""The bytes of a failed answer's body its error shows."""
USER_AGENT: Final = "mini-scheduler"

Address = tuple[int, tuple[Any, ...]]
"""A checked address: its family and the ``sockaddr`` to connect to."""


class SecretReadError(SchedulerError):
    """A secret header's value could not be read; the message names the source, never a
    value."""


class WebhookDispatcher:
    """``secrets`` reads a ``secret_header.from`` source's value (:func:`secret_reader`);
    ``credentials`` answers the ticker's credentials for ``auth: iam`` (a boto3 session's
    ``get_credentials``); ``resolve`` is ``socket.getaddrinfo``'s shape; ``ssl_context`` the TLS
    trust (the system's by default); ``clock`` times the kept secrets (a test's is its own)."""

    def __init__(
        self,
        *,
        secrets: Callable[[str], str],
        credentials: Callable[[], Credentials | None],
        resolve: Callable[..., Sequence[tuple[Any, ...]]] = socket.getaddrinfo,
        ssl_context: ssl.SSLContext | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._secrets = secrets
        self._credentials = credentials
        self._resolve = resolve
        self._context = ssl_context if ssl_context is not None else ssl.create_default_context()
        self._clock = clock
        self._kept: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Ended:
        where = f"webhook {shown_url(target.name)}"
        options, reasons = read_http(target.options or None, target.name)
        if options is None:
            raise DispatchError(f"{where} refused: {'; '.join(reasons)}")
        parts = urlsplit(target.name)
        addresses = self._addresses(parts, options["allow_private"], where)
        body = None if options["method"] == "GET" else _compact(payload)
        headers = self._headers(firing_id, body, options, where)
        if options.get("auth") == "iam":
            headers = self._signed(target.name, options, headers, body, where)
        status, reason, start = _exchange(
            _connection(parts, addresses, options["timeout"], self._context),
            options["method"],
            _request_path(parts),
            headers,
            body,
            where,
            options["timeout"],
        )
        secret = options.get("secret_header")
        if secret is not None and status in (401, 403):
            with self._lock:  # a secret rotated since it was read: the next firing reads it again
                self._kept.pop(secret["from"], None)
        reference = f"https:{parts.hostname}{parts.path or '/'}:{status}"
        if status_expected(status, options["expected_status"]):
            return Ended(reference)
        error = f"HTTP {status} {reason}".rstrip()
        return Ended(reference, RunStatus.FAILED, f"{error}: {start}" if start else error)

    def _addresses(self, parts: SplitResult, allow_private: bool, where: str) -> list[Address]:
        """Every address the host resolves to, each one a webhook may reach; DispatchError
        when one is refused or the name resolves to none."""
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            found = self._resolve(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            cause = getattr(exc, "strerror", None) or type(exc).__name__
            raise DispatchError(
                f"{where} could not be reached - {host} does not resolve ({cause})"
            ) from exc
        addresses: list[Address] = []
        for family, _, _, _, sockaddr in found:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            problem = address_problem(address, allow_private)
            if problem:
                raise DispatchError(
                    f"{where} refused: {host} resolves to an address a webhook may not call: "
                    f"{problem}"
                )
            addresses.append((int(family), tuple(sockaddr)))
        if not addresses:
            raise DispatchError(f"{where} could not be reached - {host} resolves to no address")
        return addresses

    def _headers(
        self, firing_id: str, body: bytes | None, options: Mapping[str, Any], where: str
    ) -> dict[str, str]:
        headers = {
            "User-Agent": USER_AGENT,
            "Idempotency-Key": firing_id,
            "X-Mini-Scheduler-Job": job_of(firing_id),
            "X-Mini-Scheduler-Firing": firing_id,
        }
        if body is not None:
            headers["Content-Type"] = "application/json"
        for name, value in options["headers"].items():
            _put(headers, name, value)
        secret = options.get("secret_header")
        if secret is not None:
            _put(headers, secret["name"], self._secret(secret["from"], where))
        return headers

    def _secret(self, source: str, where: str) -> str:
        """The value of ``source``, kept :data:`SECRET_TTL` seconds; DispatchError naming the
        source (never a value) when it cannot be read or is no header's value."""
        now = self._clock()
        with self._lock:
            kept = self._kept.get(source)
        if kept is not None and kept[1] > now:
            return kept[0]
        failed = f"{where}: its secret header could not be read from {source}"
        try:
            value = self._secrets(source)
        except (ClientError, BotoCoreError, SecretReadError) as exc:
            raise DispatchError(f"{failed} - {_secret_cause(exc)}") from exc
        except Exception as exc:  # the reader's own text might hold the value: its type only
            raise DispatchError(f"{failed} - {type(exc).__name__}") from None
        if not (isinstance(value, str) and value and value.isascii() and value.isprintable()):
            raise DispatchError(
                f"{failed} - its value is not a header's (empty, not text, not ASCII, or a "
                "line break)"
            )
        with self._lock:
            self._kept[source] = (value, now + SECRET_TTL)
        return value

    def _signed(
        self,
        url: str,
        options: Mapping[str, Any],
        headers: dict[str, str],
        body: bytes | None,
        where: str,
    ) -> dict[str, str]:
        """``headers`` with a SigV4 signature of the request (Authorization, X-Amz-Date, and
        X-Amz-Security-Token for a role's credentials)."""
        try:
            credentials = self._credentials()
            if credentials is None:
                raise DispatchError(f"{where}: no AWS credentials to sign with (http.auth: iam)")
            request = AWSRequest(
                method=options["method"], url=url, data=body or b"", headers=headers
            )
            SigV4Auth(credentials, options["signing_service"], options["signing_region"]).add_auth(
                request
            )
        except (ClientError, BotoCoreError) as exc:
            raise DispatchError(
                f"{where}: could not sign (http.auth: iam) - {describe_aws_error(exc)}"
            ) from exc
        return {str(name): str(value) for name, value in request.headers.items()}


class _PinnedHTTP(http.client.HTTPConnection):
    """A connection to checked addresses, whose ``Host`` header names the host, bounded as a
    whole by its timeout: the connect, the request and the answer together (a socket's own
    timeout bounds each wait only, and a server may send a byte just often enough)."""

    def __init__(self, host: str, port: int, addresses: list[Address], timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._addresses = addresses
        self.deadline = time.monotonic() + timeout
        self.cut_off = False
        self._cut_lock = threading.Lock()

    def connect(self) -> None:
        sock = _open(self._addresses, self.deadline)
        with self._cut_lock:
            self.sock = sock
            late = self.cut_off
        if late:
            raise TimeoutError("timed out")

    def cut(self) -> None:
        """At the deadline, from a timer's thread: the socket is shut down, which ends the wait
        of the thread reading or writing it."""
        with self._cut_lock:
            self.cut_off = True
            sock = self.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # closed already: the exchange is over
                sock.shutdown(socket.SHUT_RDWR)


class _PinnedHTTPS(_PinnedHTTP):
    """:class:`_PinnedHTTP` over TLS, whose SNI and certificate check name the host."""

    default_port = 443

    def __init__(
        self,
        host: str,
        port: int,
        addresses: list[Address],
        timeout: float,
        context: ssl.SSLContext,
    ) -> None:
        super().__init__(host, port, addresses, timeout)
        self._tls = context

    def connect(self) -> None:
        super().connect()
        self.sock = self._tls.wrap_socket(self.sock, server_hostname=self.host)


def _connection(
    parts: SplitResult, addresses: list[Address], timeout: float, context: ssl.SSLContext
) -> _PinnedHTTP:
    host = parts.hostname or ""
    if parts.scheme == "https":
        return _PinnedHTTPS(host, parts.port or 443, addresses, timeout, context)
    return _PinnedHTTP(host, parts.port or 80, addresses, timeout)


MOST_ADDRESSES: Final = 2
"""Addresses of a name tried in turn, within the one timeout of the whole exchange: each gets
an equal share of what is left, so that one that never answers leaves time for the next."""


def _open(addresses: list[Address], deadline: float) -> socket.socket:
    """A socket connected to the first of ``addresses`` that answers (of the first
    :data:`MOST_ADDRESSES`) before ``deadline`` (``time.monotonic``)."""
    failure: OSError = OSError("no address")
    tried = addresses[:MOST_ADDRESSES]
    for index, (family, sockaddr) in enumerate(tried):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        left /= len(tried) - index
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(left)
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            failure = exc
            continue
        return sock
    raise failure


def _exchange(
    connection: _PinnedHTTP,
    method: str,
    path: str,
    headers: Mapping[str, str],
    body: bytes | None,
    where: str,
    timeout: float,
) -> tuple[int, str, str]:
    """Send the request and read the answer: its status, its reason and the printable start
    of its body (at most :data:`BODY_LIMIT` bytes read); DispatchError when none came."""
    timer = threading.Timer(max(0.0, connection.deadline - time.monotonic()), connection.cut)
    timer.daemon = True
    timer.start()
    try:
        connection.request(method, path, body=body, headers=dict(headers))
        response = connection.getresponse()
        data = response.read(BODY_LIMIT)
        if connection.cut_off:  # the answer ended because it was cut: it is not all there
            raise TimeoutError("timed out")
    except (OSError, http.client.HTTPException) as exc:
        cause = _cause(TimeoutError() if connection.cut_off else exc, timeout)
        raise DispatchError(f"{where} could not be reached - {cause}") from exc
    finally:
        timer.cancel()
        connection.close()
    text = data[:ERROR_BODY].decode("utf-8", "replace")
    start = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return response.status, response.reason or "", start


def _cause(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s (http.timeout)"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"its TLS certificate is not trusted ({exc.verify_message})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({exc.reason or type(exc).__name__})"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, http.client.HTTPException):
        return f"the answer is not HTTP ({type(exc).__name__})"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror}"
    return type(exc).__name__


def _secret_cause(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, SecretReadError) else describe_aws_error(exc)


def _put(headers: dict[str, str], name: str, value: str) -> None:
    """Set ``name`` in ``headers``, replacing a header of the same name in any case."""
    for present in [key for key in headers if key.lower() == name.lower()]:
        del headers[present]
    headers[name] = value


def _compact(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def _request_path(parts: SplitResult) -> str:
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def secret_reader(clients: Callable[[str], Any]) -> Callable[[str], str]:
    """The ``secrets`` of a :class:`WebhookDispatcher` that reads from AWS: ``clients`` makes
    a boto3 client by service name (:class:`mini_scheduler.aws.Clients`). ``secretsmanager:``
    sources are read with GetSecretValue (a ``:<json key>`` picks one text value of a JSON
    object), ``ssm:`` sources with GetParameter WithDecryption. AWS errors pass through; any
    other failure is a :class:`SecretReadError` naming the source, never its value."""

    def read(source: str) -> str:
        found = secret_source(source)
        if found is None:
            raise SecretReadError(
                f"{source[:120]} is not secretsmanager:<secret>[:<key>] or ssm:<name>"
            )
        store, name, key = found
        if store == "ssm":
            answer = clients("ssm").get_parameter(Name=name, WithDecryption=True)
            return str(answer["Parameter"]["Value"])
        text = clients("secretsmanager").get_secret_value(SecretId=name).get("SecretString")
        if not isinstance(text, str):
            raise SecretReadError(f"secret {name} holds binary data, not text")
        return text if key is None else _json_value(text, name, key)

    return read


def _json_value(text: str, name: str, key: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        raise SecretReadError(
            f"secret {name} is not a JSON object (its key {key} was asked)"
        ) from None
    item = value.get(key) if isinstance(value, dict) else None
    if not isinstance(item, str):
        raise SecretReadError(f"secret {name} has no text value under the key {key}")
    return item
