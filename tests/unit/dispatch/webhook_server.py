"""A webhook receiver for the HTTPS dispatcher's tests: a ``ThreadingHTTPServer`` on
127.0.0.1 behind a self-signed certificate made here for ``localhost``, ``hooks.test`` and
127.0.0.1, the client TLS context that trusts exactly that certificate, and the requests the
server received.

The server answers each request with :attr:`Receiver.answer` (status, headers, body); with
:attr:`Receiver.hold` set it waits first on :attr:`Receiver.release` (a test sets it; the wait
is bounded), for a dispatcher's timeout; with :attr:`Receiver.drip` it sends its answer a byte
at a time, that many seconds apart (a server that answers, too slowly)."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

NAME = "hooks.test"
"""A name the certificate holds that no resolver but a test's knows (``.test`` is reserved)."""
HOLD_LIMIT = 10.0
"""The most seconds a held answer waits for its release (a test that forgets it still ends)."""


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    port: int
    trust: ssl.SSLContext
    """A client context that trusts the receiver's certificate, and nothing else."""
    answer: tuple[int, dict[str, str], bytes] = (200, {}, b"ok")
    hold: bool = False
    drip: float | None = None
    release: threading.Event = field(default_factory=threading.Event)
    requests: list[Received] = field(default_factory=list)

    def url(self, path: str = "/hook", host: str = "localhost") -> str:
        return f"https://{host}:{self.port}{path}"


def certificate(folder: Path) -> tuple[Path, Path, str]:
    """A self-signed certificate for ``localhost``, :data:`NAME` and 127.0.0.1: its file, its
    key's file, and its PEM text (what a client trusts)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.DNSName(NAME),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(pem)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file, pem.decode()


def _handler(receiver: Receiver) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            receiver.requests.append(
                Received(self.command, self.path, dict(self.headers.items()), body)
            )
            if receiver.hold:
                receiver.release.wait(HOLD_LIMIT)
            status, headers, content = receiver.answer
            if receiver.drip is not None:
                self._drip(status, content, receiver.drip)
                return
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def _drip(self, status: int, content: bytes, seconds: float) -> None:
            head = f"HTTP/1.1 {status} OK\r\nContent-Length: {len(content)}\r\n\r\n"
            for byte in head.encode() + content:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                if receiver.release.wait(seconds):  # the test is over
                    return

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        def log_message(self, format: str, *args: object) -> None:  # quiet
            return

    return Handler


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that left (a dispatch that timed out) breaks the answer's pipe."""


@contextmanager
def receiver(folder: Path) -> Iterator[Receiver]:
    """A running receiver; stopped (its held answers released) on the way out."""
    cert_file, key_file, pem = certificate(folder)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert_file, key_file)
    trust = ssl.create_default_context(cadata=pem)
    server = _Server(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    found = Receiver(port=server.server_address[1], trust=trust)
    server.RequestHandlerClass = _handler(found)
    server.socket = server_side.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield found
    finally:
        found.release.set()
        server.shutdown()
        server.server_close()
        thread.join(HOLD_LIMIT)
