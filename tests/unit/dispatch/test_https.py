"""HTTPS webhooks against a local TLS receiver (issue 29): the request that arrives (body,
headers, secret header, SigV4 signature), the answer as the run's end (expected status, a
failure with its status and body, a redirect not followed), the failures that raise (timeout,
refused connection, untrusted certificate, a secret that cannot be read) and the SSRF guard at
dispatch (a name that resolves to the metadata service or a private address, a connection made
to the address that was checked)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from botocore.credentials import Credentials

from mini_scheduler.dispatch.base import Ended
from mini_scheduler.dispatch.https import SecretReadError, WebhookDispatcher
from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target
from mini_scheduler.jobs.http_options import read_http
from mini_scheduler.model import RunStatus
from tests.unit.dispatch.webhook_server import NAME, Receiver, receiver

FIRING = "nightly-report@2026-12-04T03:00:00Z"
PAYLOAD = {"job": "nightly-report", "firingId": FIRING, "attempt": 1, "parameters": {"é": 1}}
SECRET = "s3cr3t-value"
SOURCE = "secretsmanager:mini-scheduler/hook:token"


class Secrets:
    """A secret reader that counts its reads; ``failure`` makes the next read raise it."""

    def __init__(self, value: str = SECRET) -> None:
        self.value = value
        self.reads: list[str] = []
        self.failure: Exception | None = None

    def __call__(self, source: str) -> str:
        self.reads.append(source)
        if self.failure is not None:
            raise self.failure
        return self.value


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Resolver:
    """``socket.getaddrinfo``'s shape: answers ``addresses`` in turn, one list a call (the last
    again once they run out), and keeps the names it was asked."""

    def __init__(self, *addresses: Sequence[str]) -> None:
        self.answers = [list(found) for found in addresses]
        self.asked: list[str] = []

    def __call__(
        self, host: str, port: int, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> list[tuple[Any, ...]]:
        self.asked.append(host)
        found = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return [
            (
                socket.AF_INET6 if ":" in address else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (address, port),
            )
            for address in found
        ]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Receiver]:
    with receiver(tmp_path) as found:
        yield found


def hook(url: str, **http: Any) -> Target:
    """A webhook target with its options read as cron.yaml's load reads them."""
    options, reasons = read_http({"allow_private": True, **http}, url)
    assert options is not None, reasons
    return Target("https", url, options)


def dispatcher(
    server: Receiver,
    secrets: Secrets | None = None,
    *,
    resolve: Resolver | None = None,
    clock: Clock | None = None,
    credentials: Credentials | None = None,
) -> WebhookDispatcher:
    return WebhookDispatcher(
        secrets=secrets or Secrets(),
        credentials=lambda: credentials,
        resolve=resolve or Resolver(["127.0.0.1"]),
        ssl_context=server.trust,
        clock=clock or Clock(),
    )


# -- the request ----------------------------------------------------------------------------------


def test_a_post_arrives_with_its_body_and_headers(server: Receiver) -> None:
    target = hook(
        server.url("/hook?token=abc"),
        headers={"X-Team": "ops"},
        secret_header={"name": "X-Hook-Token", "from": SOURCE},
    )
    secrets = Secrets()
    answer = dispatcher(server, secrets).dispatch(target, FIRING, PAYLOAD)
    assert answer == Ended("https:localhost/hook:200")
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/hook?token=abc")
    assert request.body == json.dumps(PAYLOAD, separators=(",", ":"), ensure_ascii=False).encode()
    headers = request.headers
    assert headers["Host"] == f"localhost:{server.port}"
    assert headers["Content-Type"] == "application/json"
    assert headers["Idempotency-Key"] == FIRING
    assert headers["User-Agent"] == "mini-scheduler"
    assert headers["X-Mini-Scheduler-Job"] == "nightly-report"
    assert headers["X-Mini-Scheduler-Firing"] == FIRING
    assert headers["X-Team"] == "ops"
    assert headers["X-Hook-Token"] == SECRET
    assert secrets.reads == [SOURCE]


def test_a_get_carries_the_firing_in_its_headers_only(server: Receiver) -> None:
    answer = dispatcher(server).dispatch(hook(server.url(), method="GET"), FIRING, PAYLOAD)
    assert isinstance(answer, Ended) and answer.status is RunStatus.SUCCEEDED
    (request,) = server.requests
    assert (request.method, request.body) == ("GET", b"")
    assert "Content-Type" not in request.headers and "Content-Length" not in request.headers
    assert request.headers["Idempotency-Key"] == FIRING


def test_a_mapping_header_replaces_the_scheduler_s_in_any_case(server: Receiver) -> None:
    target = hook(server.url(), headers={"content-type": "application/cloudevents+json"})
    dispatcher(server).dispatch(target, FIRING, PAYLOAD)
    (request,) = server.requests
    assert request.headers["content-type"] == "application/cloudevents+json"
    assert "application/json" not in request.headers.values()


def test_auth_iam_signs_with_sigv4(server: Receiver) -> None:
    target = hook(
        server.url(), auth="iam", signing_service="execute-api", signing_region="eu-west-1"
    )
    credentials = Credentials("AKIDTESTTESTTEST", "test-secret-key", "test-session-token")
    dispatcher(server, credentials=credentials).dispatch(target, FIRING, PAYLOAD)
    (request,) = server.requests
    authorization = request.headers["Authorization"]
    assert (
        authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDTESTTESTTEST/")
        and "/eu-west-1/execute-api/aws4_request" in authorization
    )
    signed = authorization.split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
    assert {"host", "idempotency-key", "x-amz-date", "x-amz-security-token"} <= set(signed)
    assert len(request.headers["X-Amz-Date"]) == len("20261204T030000Z")
    assert request.headers["X-Amz-Security-Token"] == "test-session-token"
    assert "test-secret-key" not in json.dumps(request.headers)


def test_auth_iam_without_credentials_is_a_dispatch_error(server: Receiver) -> None:
    target = hook(server.url(), auth="iam", signing_service="lambda", signing_region="us-east-1")
    with pytest.raises(DispatchError, match="no AWS credentials to sign with"):
        dispatcher(server).dispatch(target, FIRING, PAYLOAD)
    assert server.requests == []


# -- the answer -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [200, 201, 204, 299])
def test_a_2xx_succeeds(server: Receiver, status: int) -> None:
    server.answer = (status, {}, b"")
    answer = dispatcher(server).dispatch(hook(server.url("/x")), FIRING, PAYLOAD)
    assert answer == Ended(f"https:localhost/x:{status}", RunStatus.SUCCEEDED)


def test_a_500_fails_with_its_status_and_the_start_of_its_body(server: Receiver) -> None:
    server.answer = (500, {}, b"database\n\x00down " + b"x" * 1000)
    answer = dispatcher(server).dispatch(hook(server.url()), FIRING, PAYLOAD)
    start = "database down " + "x" * (256 - len(b"database\n\x00down "))
    assert answer == Ended(
        "https:localhost/hook:500", RunStatus.FAILED, f"HTTP 500 Internal Server Error: {start}"
    )


def test_an_unexpected_status_without_a_body(server: Receiver) -> None:
    server.answer = (503, {}, b"")
    answer = dispatcher(server).dispatch(hook(server.url()), FIRING, PAYLOAD)
    assert answer == Ended(
        "https:localhost/hook:503", RunStatus.FAILED, "HTTP 503 Service Unavailable"
    )


def test_a_redirect_is_an_answer_not_followed(server: Receiver) -> None:
    server.answer = (302, {"Location": server.url("/elsewhere")}, b"")
    answer = dispatcher(server).dispatch(hook(server.url()), FIRING, PAYLOAD)
    assert answer == Ended("https:localhost/hook:302", RunStatus.FAILED, "HTTP 302 Found")
    assert [request.path for request in server.requests] == ["/hook"]


def test_an_expected_status_succeeds(server: Receiver) -> None:
    server.answer = (302, {"Location": "/elsewhere"}, b"")
    target = hook(server.url(), expected_status=[302])
    assert dispatcher(server).dispatch(target, FIRING, PAYLOAD) == Ended("https:localhost/hook:302")
    server.answer = (200, {}, b"")
    answer = dispatcher(server).dispatch(target, FIRING, PAYLOAD)
    assert isinstance(answer, Ended) and answer.status is RunStatus.FAILED


# -- what raises ----------------------------------------------------------------------------------


def test_no_answer_within_the_timeout(server: Receiver) -> None:
    server.hold = True
    target = hook(server.url("/slow?token=abc"), timeout=1)
    with pytest.raises(DispatchError) as raised:
        dispatcher(server).dispatch(target, FIRING, PAYLOAD)
    server.release.set()
    assert str(raised.value) == (
        f"webhook https://localhost:{server.port}/slow could not be reached - no answer within "
        "1 s (http.timeout)"
    )
    assert len(server.requests) == 1


def test_an_answer_that_keeps_coming_too_slowly_is_cut_at_the_timeout(server: Receiver) -> None:
    server.drip, server.answer = 0.25, (200, {}, b"ok" * 10)  # each byte in time, the whole not
    target = hook(server.url("/drip"), timeout=1)
    with pytest.raises(DispatchError) as raised:
        dispatcher(server).dispatch(target, FIRING, PAYLOAD)
    server.release.set()
    assert str(raised.value).endswith("no answer within 1 s (http.timeout)")


def test_a_refused_connection(server: Receiver) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"https://localhost:{port}/hook?token=abc"
    with pytest.raises(DispatchError) as raised:
        dispatcher(server).dispatch(hook(url), FIRING, PAYLOAD)
    assert str(raised.value) == (
        f"webhook https://localhost:{port}/hook could not be reached - connection refused"
    )


def test_an_untrusted_certificate(server: Receiver) -> None:
    found = WebhookDispatcher(
        secrets=Secrets(), credentials=lambda: None, resolve=Resolver(["127.0.0.1"])
    )
    with pytest.raises(DispatchError, match="its TLS certificate is not trusted"):
        found.dispatch(hook(server.url()), FIRING, PAYLOAD)
    assert server.requests == []


def test_the_certificate_is_checked_on_the_host_name(server: Receiver) -> None:
    """The connection goes to 127.0.0.1, but the certificate must name the URL's host."""
    with pytest.raises(DispatchError, match="its TLS certificate is not trusted"):
        dispatcher(server).dispatch(hook(server.url(host="other.test")), FIRING, PAYLOAD)
    assert server.requests == []


@pytest.mark.parametrize(
    "failure",
    [
        ValueError(f"no JSON in {SECRET}"),
        SecretReadError("secret mini-scheduler/hook has no text value under the key token"),
    ],
    ids=["any-error", "reader-error"],
)
def test_a_secret_that_cannot_be_read(server: Receiver, failure: Exception) -> None:
    secrets = Secrets()
    secrets.failure = failure
    target = hook(server.url(), secret_header={"name": "X-Hook-Token", "from": SOURCE})
    with pytest.raises(DispatchError) as raised:
        dispatcher(server, secrets).dispatch(target, FIRING, PAYLOAD)
    message = str(raised.value)
    assert message.startswith(
        f"webhook https://localhost:{server.port}/hook: its secret header could not be read "
        f"from {SOURCE} - "
    )
    assert SECRET not in message and server.requests == []
    if isinstance(failure, SecretReadError):
        assert message.endswith(str(failure)) and raised.value.__cause__ is failure
    else:
        assert message.endswith("- ValueError") and raised.value.__cause__ is None


def test_a_secret_that_is_not_a_header_value(server: Receiver) -> None:
    secrets = Secrets("line\r\nX-Injected: 1")
    target = hook(server.url(), secret_header={"name": "X-Hook-Token", "from": SOURCE})
    with pytest.raises(DispatchError) as raised:
        dispatcher(server, secrets).dispatch(target, FIRING, PAYLOAD)
    assert "Injected" not in str(raised.value) and "not a header's" in str(raised.value)
    assert server.requests == []


def test_a_secret_is_kept_five_minutes(server: Receiver) -> None:
    secrets, clock = Secrets(), Clock()
    found = dispatcher(server, secrets, clock=clock)
    target = hook(server.url(), secret_header={"name": "X-Hook-Token", "from": SOURCE})
    found.dispatch(target, FIRING, PAYLOAD)
    clock.now += 299
    found.dispatch(target, FIRING, PAYLOAD)
    assert len(secrets.reads) == 1
    clock.now += 2
    found.dispatch(target, FIRING, PAYLOAD)
    assert len(secrets.reads) == 2 and len(server.requests) == 3


def test_a_refused_secret_is_read_again_next_time(server: Receiver) -> None:
    secrets = Secrets()
    found = dispatcher(server, secrets)
    target = hook(server.url(), secret_header={"name": "X-Hook-Token", "from": SOURCE})
    server.answer = (401, {}, b"")
    answer = found.dispatch(target, FIRING, PAYLOAD)
    assert isinstance(answer, Ended) and answer.error == "HTTP 401 Unauthorized"
    found.dispatch(target, FIRING, PAYLOAD)
    assert len(secrets.reads) == 2


def test_options_are_checked_again_at_dispatch(server: Receiver) -> None:
    target = Target("https", f"http://localhost:{server.port}/hook?token=abc")
    with pytest.raises(DispatchError) as raised:
        dispatcher(server).dispatch(target, FIRING, PAYLOAD)
    assert str(raised.value).startswith(
        f"webhook http://localhost:{server.port}/hook refused: service http://localhost:"
    )
    assert "token=abc" not in str(raised.value) and server.requests == []


# -- server-side request forgery ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("addresses", "allow_private", "problem"),
    [
        (["169.254.169.254"], True, "169.254.169.254 is the instance metadata service"),
        (["10.0.0.1"], False, "10.0.0.1 is a private address"),
        (["93.184.216.34", "10.0.0.1"], False, "10.0.0.1 is a private address"),
        (["::ffff:169.254.169.254"], True, "169.254.169.254 is the instance metadata service"),
        (["127.0.0.1"], False, "127.0.0.1 is a loopback address"),
    ],
    ids=["metadata", "private", "one-of-two", "mapped-metadata", "loopback"],
)
def test_a_name_that_resolves_where_a_webhook_may_not_go(
    server: Receiver, addresses: list[str], allow_private: bool, problem: str
) -> None:
    resolve = Resolver(addresses)
    options, _ = read_http({"allow_private": allow_private}, "https://hooks.example.com/x")
    assert options is not None
    target = Target("https", "https://hooks.example.com/x", options)
    with pytest.raises(DispatchError) as raised:
        dispatcher(server, resolve=resolve).dispatch(target, FIRING, PAYLOAD)
    assert str(raised.value).startswith(
        "webhook https://hooks.example.com/x refused: hooks.example.com resolves to an address "
        f"a webhook may not call: {problem}"
    )
    assert resolve.asked == ["hooks.example.com"] and server.requests == []


def test_the_connection_goes_to_the_checked_address(server: Receiver) -> None:
    """A resolver that answers 127.0.0.1 once and the metadata service after: the request
    reaches the receiver, and the name (which only the test's resolver knows) is resolved once:
    the connection never asks again. Host header, SNI and certificate name the host."""
    resolve = Resolver(["127.0.0.1"], ["169.254.169.254"])
    target = hook(server.url(host=NAME))
    answer = dispatcher(server, resolve=resolve).dispatch(target, FIRING, PAYLOAD)
    assert answer == Ended(f"https:{NAME}/hook:200")
    assert resolve.asked == [NAME] and len(server.requests) == 1
    assert server.requests[0].headers["Host"] == f"{NAME}:{server.port}"


def test_an_address_that_does_not_answer_is_passed_for_the_next(server: Receiver) -> None:
    """Nothing listens on ::1 (the receiver is on 127.0.0.1 only)."""
    resolve = Resolver(["::1", "127.0.0.1"])
    answer = dispatcher(server, resolve=resolve).dispatch(hook(server.url()), FIRING, PAYLOAD)
    assert answer == Ended("https:localhost/hook:200") and len(server.requests) == 1


def test_a_name_that_does_not_resolve(server: Receiver) -> None:
    def resolve(*args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    found = WebhookDispatcher(
        secrets=Secrets(), credentials=lambda: None, resolve=resolve, ssl_context=server.trust
    )
    with pytest.raises(DispatchError) as raised:
        found.dispatch(hook("https://nowhere.invalid/x"), FIRING, PAYLOAD)
    assert str(raised.value) == (
        "webhook https://nowhere.invalid/x could not be reached - nowhere.invalid does not "
        "resolve (Name or service not known)"
    )


def test_at_most_two_of_a_names_addresses_are_tried(server: Receiver) -> None:
    """Each address may take the job's timeout to refuse: a name's third address is never
    tried (the receiver listens on 127.0.0.1 only; 127.0.0.2 and .3 refuse at once)."""
    target = hook(server.url(host=NAME))
    second = Resolver(["127.0.0.2", "127.0.0.1"])
    assert dispatcher(server, resolve=second).dispatch(target, FIRING, PAYLOAD) == Ended(
        f"https:{NAME}/hook:200"
    )
    third = Resolver(["127.0.0.2", "127.0.0.3", "127.0.0.1"])
    with pytest.raises(DispatchError, match="could not be reached"):
        dispatcher(server, resolve=third).dispatch(target, FIRING, PAYLOAD)
    assert len(server.requests) == 1
