"""The MongoDB connection helper (mini_scheduler/mongo.py): where the URI comes from, one client
per container, the client's options, and a password that never shows."""

from __future__ import annotations

import json
import logging
import threading
import traceback
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mini_scheduler import mongo
from mini_scheduler.claims.mongodb import MongoDBClaimStore
from mini_scheduler.environment.mongodb import MongoDBEnvironmentStore
from mini_scheduler.errors import ConfigurationError, EnvironmentStoreError, StoreError
from mini_scheduler.model import Firing
from tests.contract.claims.conftest import closed_port

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
PASSWORD = "Sup3r-s3cret/pw"  # escaped in a URI as Sup3r-s3cret%2Fpw
ESCAPED = "Sup3r-s3cret%2Fpw"


@pytest.fixture(autouse=True)
def _fresh_container(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("MONGODB_URI", "MONGODB_URI_SECRET_ARN", "MONGODB_DATABASE"):
        monkeypatch.delenv(key, raising=False)
    mongo.reset()
    yield
    mongo.reset()


def _uri(path: str = "", query: str = "") -> str:
    return f"mongodb://scheduler:{ESCAPED}@127.0.0.1:{closed_port()}/{path}{query}"


# -- where the URI and the database come from -------------------------------------------------


def test_the_uri_comes_from_mongodb_uri() -> None:
    uri, source = mongo.resolve_uri({"MONGODB_URI": " mongodb://h/db "})
    assert (uri, source) == ("mongodb://h/db", "MONGODB_URI")


def test_no_uri_at_all_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="MONGODB_URI or MONGODB_URI_SECRET_ARN"):
        mongo.resolve_uri({})


def test_a_uri_that_is_not_mongodbs_is_refused_without_being_shown() -> None:
    with pytest.raises(ConfigurationError) as raised:
        mongo.resolve_uri({"MONGODB_URI": f"postgres://u:{PASSWORD}@h/db"})
    assert PASSWORD not in str(raised.value)
    assert "must start with mongodb:// or mongodb+srv://" in str(raised.value)


@pytest.mark.parametrize(
    ("path", "configured", "expected"),
    [
        ("ops", "", "ops"),
        ("", "reports", "reports"),
        ("", "", "mini_scheduler"),
        ("ops", "reports", "ops"),  # the URI's own database wins, with a warning
    ],
)
def test_the_database_is_the_uris_else_mongodb_database_else_the_default(
    path: str, configured: str, expected: str, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"MONGODB_URI": _uri(path)}
    if configured:
        env["MONGODB_DATABASE"] = configured
    assert mongo.connect(env).database.name == expected
    assert ("MONGODB_DATABASE is reports" in caplog.text) is (path == "ops" and bool(configured))


def test_the_uri_can_come_from_a_secret_read_once_per_container() -> None:
    reads = 0
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")
        arn = client.create_secret(Name="mini-scheduler/mongodb", SecretString=_uri("ops"))["ARN"]

        def counting() -> Any:
            nonlocal reads
            reads += 1
            return client

        env = {"MONGODB_URI_SECRET_ARN": arn}
        with ThreadPoolExecutor(max_workers=8) as pool:
            connections = list(pool.map(lambda _: mongo.connect(env, secrets=counting), range(8)))
    assert reads == 1
    assert all(c is connections[0] for c in connections)  # one client per container
    assert connections[0].source == f"secret {arn}" and connections[0].database.name == "ops"


def test_a_secret_may_hold_json_with_a_uri_key() -> None:
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")
        secret = json.dumps({"uri": _uri("ops"), "note": "rotated monthly"})
        arn = client.create_secret(Name="mongodb-json", SecretString=secret)["ARN"]
        uri, _ = mongo.resolve_uri({"MONGODB_URI_SECRET_ARN": arn}, lambda: client)
    assert uri.startswith("mongodb://scheduler:")
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")
        arn = client.create_secret(Name="bad", SecretString='{"url": "x"}')["ARN"]
        with pytest.raises(ConfigurationError, match="without a 'uri' key"):
            mongo.resolve_uri({"MONGODB_URI_SECRET_ARN": arn}, lambda: client)


def test_a_missing_secret_is_a_store_error_naming_the_arn() -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:nope-AbCdEf"
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")
        with pytest.raises(StoreError, match=f"Secrets Manager GetSecretValue {arn} failed"):
            mongo.resolve_uri({"MONGODB_URI_SECRET_ARN": arn}, lambda: client)


def test_the_default_secrets_client_honours_aws_endpoint_url_secrets_manager(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No mock: the endpoint variable alone sends the request to a port that refuses it."""
    port = closed_port()
    monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("MONGODB_URI_SECRET_ARN", "arn:aws:secretsmanager:us-east-1:1:secret:x")
    with pytest.raises(StoreError, match=f"127.0.0.1:{port}"):
        mongo.connect()


# -- the client's options --------------------------------------------------------------------


def test_the_client_has_lambda_options_and_utc_datetimes() -> None:
    client = mongo.make_client(_uri("ops"))
    try:
        options = client.options
        assert options.server_selection_timeout == 5
        assert options.pool_options.connect_timeout == 3
        assert options.pool_options.socket_timeout == 10
        assert options.retry_writes and options.retry_reads
        assert options.pool_options.metadata["application"] == {"name": "mini-scheduler"}
        assert client.codec_options.tz_aware
    finally:
        client.close()


def test_an_option_written_in_the_uri_wins() -> None:
    client = mongo.make_client(_uri("ops", "?serverSelectionTimeoutMS=250&appName=ops-scheduler"))
    try:
        assert client.options.server_selection_timeout == 0.25
        assert client.options.pool_options.metadata["application"] == {"name": "ops-scheduler"}
    finally:
        client.close()


# -- the password never shows --------------------------------------------------------------------


def _full_text(exc: BaseException) -> str:
    """Everything a traceback would print, causes included."""
    return "".join(traceback.format_exception(exc))


def test_a_connection_error_never_shows_the_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)  # pymongo's own loggers included
    env = {"MONGODB_URI": _uri("ops", "?serverSelectionTimeoutMS=300")}
    claims = MongoDBClaimStore(mongo.database(env))
    environment = MongoDBEnvironmentStore(mongo.database(env))
    with pytest.raises(StoreError) as claim_error:
        claims.claim(Firing("report", T0), now=T0, lease_until=T0, origin="us-east-1/prod")
    with pytest.raises(EnvironmentStoreError) as environment_error:
        environment.get()
    for raised in (claim_error.value, environment_error.value):
        assert "ServerSelectionTimeoutError" in str(raised)
        for secret in (PASSWORD, ESCAPED):
            assert secret not in _full_text(raised)
    assert "MongoDB client for database ops (URI from MONGODB_URI)" in caplog.text
    for secret in (PASSWORD, ESCAPED):
        assert secret not in caplog.text


@pytest.mark.parametrize(
    "uri",
    [
        f"mongodb://scheduler:{PASSWORD}@db.example.com/ops",  # '/' not escaped
        "mongodb://scheduler:Sup3r-s3cret@db.example.com:99999/ops",  # a bad port
        "mongodb://scheduler:Sup3r-s3cret",  # no host: the password reads as a port
    ],
    ids=["unescaped-slash", "bad-port", "password-as-port"],
)
def test_a_uri_pymongo_refuses_is_reported_without_the_password(uri: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        mongo.connect({"MONGODB_URI": uri})
    assert "Sup3r-s3cret" not in _full_text(raised.value)


def test_redact_masks_known_secrets_and_any_uris_user_information() -> None:
    mongo.make_client(_uri("ops")).close()
    text = f"failed: mongodb+srv://someone:else@cluster0.example.net/x and {PASSWORD} and {ESCAPED}"
    redacted = mongo.redact(text)
    assert redacted == ("failed: mongodb+srv://***@cluster0.example.net/x and *** and ***")


def test_one_client_per_container_from_any_thread() -> None:
    env = {"MONGODB_URI": _uri("ops")}
    barrier = threading.Barrier(8)

    def connect(_: int) -> mongo.Connection:
        barrier.wait()
        return mongo.connect(env)

    with ThreadPoolExecutor(max_workers=8) as pool:
        connections = list(pool.map(connect, range(8)))
    assert len({id(c.client) for c in connections}) == 1
