"""The webhook dispatcher's secret reader on moto: Secrets Manager (a whole text, a JSON key,
by name or ARN) and SSM (SecureString, decrypted); a failure names the source, never a value."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from mini_scheduler.aws import Clients
from mini_scheduler.dispatch.https import SecretReadError, WebhookDispatcher, secret_reader
from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target
from mini_scheduler.jobs.http_options import read_http
from tests.fakeaws import use_test_credentials

VALUE = "t0k3n-value"


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clients]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        clients = Clients("us-east-1")
        clients("secretsmanager").create_secret(Name="mini-scheduler/plain", SecretString=VALUE)
        clients("secretsmanager").create_secret(
            Name="mini-scheduler/json", SecretString=json.dumps({"token": VALUE, "n": 1})
        )
        clients("secretsmanager").create_secret(
            Name="mini-scheduler/binary", SecretBinary=VALUE.encode()
        )
        clients("ssm").put_parameter(Name="/mini-scheduler/hook", Value=VALUE, Type="SecureString")
        yield clients


def test_reads_each_kind_of_source(clients: Clients) -> None:
    read = secret_reader(clients)
    arn = clients("secretsmanager").describe_secret(SecretId="mini-scheduler/json")["ARN"]
    for source in (
        "secretsmanager:mini-scheduler/plain",
        "secretsmanager:mini-scheduler/json:token",
        f"secretsmanager:{arn}:token",
        "ssm:/mini-scheduler/hook",
    ):
        assert read(source) == VALUE, source


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "secretsmanager:mini-scheduler/json:missing",
            "secret mini-scheduler/json has no text value under the key missing",
        ),
        (
            "secretsmanager:mini-scheduler/json:n",
            "secret mini-scheduler/json has no text value under the key n",
        ),
        (
            "secretsmanager:mini-scheduler/plain:token",
            "secret mini-scheduler/plain is not a JSON object (its key token was asked)",
        ),
        (
            "secretsmanager:mini-scheduler/binary",
            "secret mini-scheduler/binary holds binary data, not text",
        ),
        ("vault:x", "vault:x is not secretsmanager:<secret>[:<key>] or ssm:<name>"),
    ],
)
def test_a_failure_names_the_source_never_the_value(
    clients: Clients, source: str, message: str
) -> None:
    with pytest.raises(SecretReadError) as raised:
        secret_reader(clients)(source)
    assert str(raised.value) == message and VALUE not in str(raised.value)


@pytest.mark.parametrize(
    "source", ["secretsmanager:mini-scheduler/none", "ssm:/mini-scheduler/none"]
)
def test_an_aws_error_passes_through(clients: Clients, source: str) -> None:
    with pytest.raises(ClientError):
        secret_reader(clients)(source)


def test_a_missing_secret_is_a_dispatch_error_naming_it(clients: Clients) -> None:
    source = "secretsmanager:mini-scheduler/none"
    options, _ = read_http(
        {"allow_private": True, "secret_header": {"name": "X-Token", "from": source}},
        "https://localhost:1/hook",
    )
    assert options is not None
    dispatcher = WebhookDispatcher(
        secrets=secret_reader(clients),
        credentials=lambda: None,
        resolve=lambda *args, **kwargs: [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 1))
        ],
    )
    target = Target("https", "https://localhost:1/hook", options)
    with pytest.raises(DispatchError) as raised:
        dispatcher.dispatch(target, "hook@2026-12-04T03:00:00Z", {})
    assert str(raised.value).startswith(
        "webhook https://localhost:1/hook: its secret header could not be read from "
        f"{source} - ResourceNotFoundException: "
    )
