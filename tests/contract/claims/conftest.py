"""The claim store fixture: one contract suite, run against every backend.

* ``memory``: the in-process store.
* ``recording``: the memory store behind :class:`.recording.Recording`, the fake the tick's
  tests record writes with: a fake honours the contract it stands in for.
* ``predicting``: :class:`~mini_scheduler.claims.predicting.PredictingClaimStore` over a memory
  store, the dry run's: every write stays in it, and it answers as the store it reads would.
* ``dynamodb-moto`` and ``dynamodb-local``: the DynamoDB store on moto and on AWS's DynamoDB
  Local (moto's conditional writes are not atomic: races run on DynamoDB Local only);
  ``dynamodb-local-steps`` as a global table in strong consistency mode has it (no
  transaction: a runtime schedule moves on in conditional steps).
* ``mongodb-mock``: the MongoDB store on mongomock (in process; no write concern, read concern,
  index use, TTL or atomicity under threads to speak of: races run on a real server only).
* ``mongodb-server``: the MongoDB store on the server ``MONGODB_URI`` names, a fresh database
  per test (dropped after); skipped, saying why, when ``MONGODB_URI`` is not set.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import mongomock
import pytest
from botocore.config import Config
from moto import mock_aws

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.predicting import PredictingClaimStore
from tests.contract.claims.recording import Recording

BACKENDS = [
    "memory",
    "recording",
    "predicting",
    "dynamodb-moto",
    pytest.param("dynamodb-local", marks=pytest.mark.dynamodb_local),
    pytest.param("dynamodb-local-steps", marks=pytest.mark.dynamodb_local),
    "mongodb-mock",
    pytest.param("mongodb-server", marks=pytest.mark.mongodb_server),
]
# Backends whose conditional writes hold under real concurrency: the race tests run on these.
ATOMIC_BACKENDS = [
    "memory",
    pytest.param("dynamodb-local", marks=pytest.mark.dynamodb_local),
    pytest.param("dynamodb-local-steps", marks=pytest.mark.dynamodb_local),
    pytest.param("mongodb-server", marks=pytest.mark.mongodb_server),
]
NO_MONGODB_SERVER = (
    "MONGODB_URI is not set: no MongoDB server to test against (none can be installed on this "
    "machine); set MONGODB_URI to a replica set's URI to run the MongoDB contract on a server"
)


def new_table_name() -> str:
    return f"mini-scheduler-{uuid.uuid4().hex[:12]}"


def closed_port() -> int:
    """A local port nothing listens on (a connection to it is refused at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def mongomock_takes_pymongo_sort() -> None:
    """Let mongomock run ``bulk_write`` of pymongo's UpdateOne, as the marks write them.

    pymongo 4.10 and later pass ``sort`` to a bulk's ``add_update``; mongomock 4.3 does not
    take it (mongomock issue 912, open), so every ``bulk_write`` of an UpdateOne raises
    TypeError on it. An update without a sort is the update mongomock knows. Idempotent.
    Every mongomock store of the suite comes from :func:`mongomock_database`, which calls it."""
    from mongomock.collection import BulkOperationBuilder

    add_update = BulkOperationBuilder.add_update
    if getattr(add_update, "takes_sort", False):
        return

    def without_sort(self: Any, *args: Any, sort: Any = None, **kwargs: Any) -> Any:
        if sort is not None:
            raise NotImplementedError("mongomock: a sort in a bulk update")
        return add_update(self, *args, **kwargs)

    without_sort.takes_sort = True  # type: ignore[attr-defined]
    BulkOperationBuilder.add_update = without_sort


def mongomock_database() -> Any:
    """A fresh in-process mongomock database, as the store is given one in production."""
    mongomock_takes_pymongo_sort()
    return mongomock.MongoClient(tz_aware=True)["mini_scheduler"]


@contextmanager
def mongodb_server_database() -> Iterator[Any]:
    """A fresh database on the server MONGODB_URI names (skips when it is not set)."""
    uri = os.environ.get("MONGODB_URI", "").strip()
    if not uri:
        pytest.skip(NO_MONGODB_SERVER)
    from mini_scheduler.mongo import make_client

    client = make_client(uri)
    name = f"mini_scheduler_test_{uuid.uuid4().hex[:12]}"
    try:
        yield client[name]
    finally:
        client.drop_database(name)
        client.close()


def unreachable_mongodb_database() -> Any:
    """A real pymongo database whose server refuses connections (fails in 300 ms)."""
    from mini_scheduler.mongo import make_client

    client = make_client(
        f"mongodb://127.0.0.1:{closed_port()}/mini_scheduler?serverSelectionTimeoutMS=300"
    )
    return client["mini_scheduler"]


def unreachable_aws_client(service: str) -> Any:
    """A boto3 client for an endpoint that refuses connections (one attempt, no retries)."""
    return boto3.client(
        service,  # type: ignore[call-overload]
        region_name="us-east-1",
        endpoint_url=f"http://127.0.0.1:{closed_port()}",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=1, read_timeout=1),
    )


@contextmanager
def open_claim_store(kind: str, request: pytest.FixtureRequest) -> Iterator[ClaimStore]:
    if kind == "memory":
        yield MemoryClaimStore()
    elif kind == "recording":
        yield Recording(MemoryClaimStore(), watched_first=False)
    elif kind == "predicting":
        yield PredictingClaimStore(MemoryClaimStore())
    elif kind == "dynamodb-moto":
        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1")
            table = new_table_name()
            create_state_table(client, table)
            # moto's PartiQL ignores conditions: its writes go one by one (dynamodb_batch.py)
            yield DynamoDBClaimStore(table, client, sleep=lambda _: None, batched=False)
    elif kind in ("dynamodb-local", "dynamodb-local-steps"):
        client = request.getfixturevalue("dynamodb_local")
        table = new_table_name()
        create_state_table(client, table)
        steps = kind == "dynamodb-local-steps"  # a global table's: no transaction
        yield DynamoDBClaimStore(table, client, sleep=lambda _: None, transactions=not steps)
    elif kind == "mongodb-mock":
        from mini_scheduler.claims.mongodb import MongoDBClaimStore

        yield MongoDBClaimStore(mongomock_database(), sleep=lambda _: None)
    elif kind == "mongodb-server":
        from mini_scheduler.claims.mongodb import MongoDBClaimStore

        with mongodb_server_database() as database:
            yield MongoDBClaimStore(database, sleep=lambda _: None)
    else:
        raise AssertionError(f"unknown backend {kind}")


@pytest.fixture(params=BACKENDS)
def claim_store(request: pytest.FixtureRequest) -> Iterator[ClaimStore]:
    with open_claim_store(request.param, request) as store:
        yield store


@pytest.fixture(params=ATOMIC_BACKENDS)
def racing_claim_store(request: pytest.FixtureRequest) -> Iterator[ClaimStore]:
    with open_claim_store(request.param, request) as store:
        yield store


@pytest.fixture(params=["dynamodb", "mongodb"])
def unreachable_claim_store(request: pytest.FixtureRequest) -> Iterator[ClaimStore]:
    """A store of each kind whose backend cannot be reached (the memory store cannot fail)."""
    if request.param == "dynamodb":
        client = unreachable_aws_client("dynamodb")
        yield DynamoDBClaimStore("mini-scheduler-state", client, sleep=lambda _: None)
        client.close()
        return
    from mini_scheduler.claims.mongodb import MongoDBClaimStore

    database = unreachable_mongodb_database()
    yield MongoDBClaimStore(database, sleep=lambda _: None)
    database.client.close()
