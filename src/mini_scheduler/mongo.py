"""The MongoDB connection: one client per container, its URI from the environment or from Secrets
Manager, and never shown.

* The URI comes from ``MONGODB_URI``, or from the secret ``MONGODB_URI_SECRET_ARN`` names (its
  SecretString: the URI itself, or a JSON object with a ``uri`` key), read once per container
  with a boto3 ``secretsmanager`` client (which honours ``AWS_ENDPOINT_URL_SECRETS_MANAGER``).
* The database: the URI's default database (``mongodb://…/<name>``), else ``MONGODB_DATABASE``,
  else ``mini_scheduler``.
* One ``MongoClient`` per container, made on first use behind a lock (never at import), with
  options for Lambda (:data:`CLIENT_DEFAULTS`); an option written in the URI wins over them.
* The URI carries a password: it never appears in a log line or an error. Every message about a
  MongoDB failure goes through :func:`describe_error` / :func:`redact`.

pymongo is imported only inside :func:`make_client`: this module, like the MongoDB stores, is
imported only when ``CLAIM_STORE`` or ``ACTIVE_ENVIRONMENT_STORE`` is ``mongodb``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote

from mini_scheduler.errors import ConfigurationError, StoreError, describe_aws_error

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient
    from pymongo import MongoClient
    from pymongo.collection import Collection
    from pymongo.database import Database

Document = dict[str, Any]

DEFAULT_DATABASE = "mini_scheduler"
APP_NAME = "mini-scheduler"

# Collections, shared by the claim store and the environment store.
RUNS = "runs"
JOB_STATE = "job_state"
CONTROL = "control"

# Options for a Lambda function: answer within a tick rather than after pymongo's 30 s server
# selection, retry a write or read once across a primary election, and name the application in
# the server's logs. Applied only where the URI does not set the option itself.
CLIENT_DEFAULTS: Mapping[str, Any] = {
    "appname": APP_NAME,
    "serverSelectionTimeoutMS": 5_000,
    "connectTimeoutMS": 3_000,
    "socketTimeoutMS": 10_000,
    "retryWrites": True,
    "retryReads": True,
}
# The claim's write concern waits at most this long for a majority (then WriteConcernError).
MAJORITY_WTIMEOUT_MS = 5_000

log = logging.getLogger("mini_scheduler.mongo")

_MASK = "***"
_USERINFO = re.compile(r"(mongodb(?:\+srv)?://)[^@/?#\s]*@", re.IGNORECASE)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_MESSAGE_MAX = 600
_SECRET_MIN = 4

_secrets_lock = threading.Lock()
_secrets: set[str] = set()  # the URIs and passwords this container knows: never shown


def _remember(uri: str) -> None:
    """Register ``uri`` (and its user information, escaped and not) for redaction."""
    found = {uri}
    rest = uri.partition("://")[2]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    for userinfo in (authority.rpartition("@")[0], rest.rpartition("@")[0]):
        if userinfo:
            password = userinfo.partition(":")[2]
            found.update({userinfo, unquote(userinfo), password, unquote(password)})
    with _secrets_lock:
        # A secret shorter than 4 characters would mask every word that holds it; inside a
        # URI it is masked with the user information all the same.
        _secrets.update(s for s in found if len(s) >= _SECRET_MIN)


def redact(text: str) -> str:
    """``text`` without any known URI or password, and without the user information of any
    MongoDB URI written in it (``mongodb://***@host``)."""
    with _secrets_lock:
        known = sorted(_secrets, key=len, reverse=True)
    for secret in known:
        text = text.replace(secret, _MASK)
    return _USERINFO.sub(rf"\1{_MASK}@", text)


def describe_error(exc: BaseException) -> str:
    """``<type>: <message>`` of a pymongo (or any) error, redacted and bounded in length."""
    text = redact(str(exc))
    if len(text) > _MESSAGE_MAX:
        text = text[: _MESSAGE_MAX - 1] + "…"
    return f"{type(exc).__name__}: {text}"


def _uri_options(uri: str) -> set[str]:
    """The names (lower case) of the options the URI's query string sets."""
    query = uri.partition("?")[2]
    return {key.lower() for key, _ in parse_qsl(query, keep_blank_values=True)}


def majority(database: Database[Document], name: str) -> Collection[Document]:
    """Collection ``name`` with majority write concern (bounded by
    :data:`MAJORITY_WTIMEOUT_MS`), majority read concern and reads on the primary: what a
    claim, a run record or the active environment needs to survive a primary election and to
    be read back as acknowledged."""
    from pymongo import ReadPreference
    from pymongo.read_concern import ReadConcern
    from pymongo.write_concern import WriteConcern

    return database.get_collection(
        name,
        write_concern=WriteConcern("majority", wtimeout=MAJORITY_WTIMEOUT_MS),
        read_concern=ReadConcern("majority"),
        read_preference=ReadPreference.PRIMARY,
    )


def make_client(uri: str) -> MongoClient[Document]:
    """A new ``MongoClient`` for ``uri`` with :data:`CLIENT_DEFAULTS` (the URI's own options
    win) and UTC-aware datetimes. A URI pymongo refuses raises ConfigurationError, redacted."""
    import pymongo
    from pymongo.errors import PyMongoError

    _remember(uri)
    set_in_uri = _uri_options(uri)
    options = {k: v for k, v in CLIENT_DEFAULTS.items() if k.lower() not in set_in_uri}
    try:
        client: MongoClient[Document] = pymongo.MongoClient(
            uri, tz_aware=True, tzinfo=UTC, **options
        )
    except (PyMongoError, ValueError, TypeError) as exc:  # pymongo raises ValueError for a bad port
        # pymongo quotes the part it refuses, which can be a piece of a mistyped password:
        # quoted values are masked too, and the chain is dropped because it holds them verbatim.
        reason = _QUOTED.sub(_MASK, describe_error(exc))
        raise ConfigurationError(f"The MongoDB URI is not valid - {reason}") from None
    return client


def resolve_uri(
    env: Mapping[str, str], secrets: Callable[[], SecretsManagerClient] | None = None
) -> tuple[str, str]:
    """The URI and where it came from (``MONGODB_URI`` or ``secret <arn>``), for the log."""
    uri = env.get("MONGODB_URI", "").strip()
    arn = env.get("MONGODB_URI_SECRET_ARN", "").strip()
    if uri:
        if arn:
            log.warning("MONGODB_URI and MONGODB_URI_SECRET_ARN are both set - using MONGODB_URI")
        source = "MONGODB_URI"
    elif arn:
        uri = _read_secret(arn, secrets)
        source = f"secret {arn}"
    else:
        raise ConfigurationError(
            "MongoDB needs MONGODB_URI or MONGODB_URI_SECRET_ARN "
            "(CLAIM_STORE=mongodb or ACTIVE_ENVIRONMENT_STORE=mongodb)"
        )
    _remember(uri)
    if not uri.lower().startswith(("mongodb://", "mongodb+srv://")):
        raise ConfigurationError(
            f"The MongoDB URI from {source} must start with mongodb:// or mongodb+srv://"
        )
    return uri, source


def _read_secret(arn: str, secrets: Callable[[], SecretsManagerClient] | None) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client = secrets() if secrets is not None else _default_secrets_client()
        answer = client.get_secret_value(SecretId=arn)
    except (ClientError, BotoCoreError) as exc:
        raise StoreError(
            f"Secrets Manager GetSecretValue {arn} failed - {describe_aws_error(exc)}"
        ) from exc
    text = str(answer.get("SecretString") or "").strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        text = str(value.get("uri", "")).strip() if isinstance(value, dict) else ""
        if not text:
            raise ConfigurationError(
                f"Secret {arn} holds JSON without a 'uri' key: store the MongoDB URI as the "
                'secret string, or as {"uri": "mongodb+srv://…"}'
            )
    if not text:
        raise ConfigurationError(f"Secret {arn} has no SecretString: store the MongoDB URI in it")
    return text


def _default_secrets_client() -> SecretsManagerClient:
    import boto3

    from mini_scheduler.aws import client_config

    client: SecretsManagerClient = boto3.session.Session().client(
        "secretsmanager", config=client_config(pool=2)
    )
    return client


@dataclass(frozen=True, slots=True)
class Connection:
    client: MongoClient[Document]
    database: Database[Document]
    source: str


_lock = threading.Lock()
_connection: Connection | None = None


def connect(
    env: Mapping[str, str] | None = None,
    *,
    secrets: Callable[[], SecretsManagerClient] | None = None,
) -> Connection:
    """The container's connection: made by the first call (reading the secret then), answered
    as it is by every later call, from any thread."""
    global _connection
    with _lock:
        if _connection is None:
            _connection = _connect(os.environ if env is None else env, secrets)
        return _connection


def database(
    env: Mapping[str, str] | None = None,
    *,
    secrets: Callable[[], SecretsManagerClient] | None = None,
) -> Database[Document]:
    """The container's database (see :func:`connect`)."""
    return connect(env, secrets=secrets).database


def _connect(
    env: Mapping[str, str], secrets: Callable[[], SecretsManagerClient] | None
) -> Connection:
    uri, source = resolve_uri(env, secrets)
    client = make_client(uri)
    name = database_name(client, env)
    log.info("MongoDB client for database %s (URI from %s)", name, source)
    return Connection(client, client.get_database(name), source)


def database_name(client: MongoClient[Document], env: Mapping[str, str]) -> str:
    """The URI's default database, else ``MONGODB_DATABASE``, else ``mini_scheduler``."""
    from pymongo.errors import ConfigurationError as NoDefaultDatabase

    configured = env.get("MONGODB_DATABASE", "").strip()
    try:
        in_uri: str | None = client.get_default_database().name
    except NoDefaultDatabase:
        in_uri = None
    if in_uri and configured and configured != in_uri:
        log.warning(
            "MONGODB_DATABASE is %s but the MongoDB URI names database %s - using %s",
            configured,
            in_uri,
            in_uri,
        )
    return in_uri or configured or DEFAULT_DATABASE


def reset() -> None:
    """Close and forget the container's client (tests; a new configuration)."""
    global _connection
    with _lock:
        if _connection is not None:
            _connection.client.close()
        _connection = None
    with _secrets_lock:
        _secrets.clear()
