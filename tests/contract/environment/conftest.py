"""The environment store fixture: one contract suite, run against every backend.

Each backend gives three stores: ``store`` (the one under test), ``peer`` (a second store on
the same backend: another container, another region's CLI) and ``broken`` (the same kind of
store, unable to reach its backend).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.claims.dynamodb import create_state_table
from mini_scheduler.config import DEFAULT_PARAMETER
from mini_scheduler.environment.base import EnvironmentStore
from mini_scheduler.environment.dynamodb import DynamoDBEnvironmentStore
from mini_scheduler.environment.memory import MemoryEnvironmentStore
from mini_scheduler.environment.ssm import SSMEnvironmentStore
from tests.contract.claims.conftest import (
    mongodb_server_database,
    mongomock_database,
    new_table_name,
    unreachable_aws_client,
    unreachable_mongodb_database,
)

BACKENDS = [
    "memory",
    "ssm-moto",
    "dynamodb-moto",
    pytest.param("dynamodb-local", marks=pytest.mark.dynamodb_local),
    "mongodb-mock",
    pytest.param("mongodb-server", marks=pytest.mark.mongodb_server),
]


@dataclass
class Stores:
    store: EnvironmentStore
    peer: EnvironmentStore
    broken: EnvironmentStore


@pytest.fixture(params=BACKENDS)
def environment(request: pytest.FixtureRequest) -> Iterator[Stores]:
    kind = request.param
    if kind == "memory":
        store = MemoryEnvironmentStore()
        broken = MemoryEnvironmentStore()
        broken.failing = ConnectionError("down")
        yield Stores(store, store, broken)  # one process: its peer is itself
    elif kind == "ssm-moto":
        with mock_aws():
            yield Stores(
                SSMEnvironmentStore(
                    DEFAULT_PARAMETER, boto3.client("ssm", region_name="us-east-1")
                ),
                SSMEnvironmentStore(
                    DEFAULT_PARAMETER, boto3.client("ssm", region_name="us-east-1")
                ),
                SSMEnvironmentStore(DEFAULT_PARAMETER, unreachable_aws_client("ssm")),
            )
    elif kind == "dynamodb-moto":
        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1")
            table = new_table_name()
            create_state_table(client, table)
            yield Stores(
                DynamoDBEnvironmentStore(table, client),
                DynamoDBEnvironmentStore(table, boto3.client("dynamodb", region_name="us-east-1")),
                DynamoDBEnvironmentStore(table, unreachable_aws_client("dynamodb")),
            )
    elif kind == "dynamodb-local":
        client = request.getfixturevalue("dynamodb_local")
        table = new_table_name()
        create_state_table(client, table)
        yield Stores(
            DynamoDBEnvironmentStore(table, client),
            DynamoDBEnvironmentStore(table, client),
            DynamoDBEnvironmentStore(table, unreachable_aws_client("dynamodb")),
        )
    else:
        from mini_scheduler.environment.mongodb import MongoDBEnvironmentStore
        from mini_scheduler.mongo import make_client

        unreachable = unreachable_mongodb_database()
        broken = MongoDBEnvironmentStore(unreachable)
        try:
            if kind == "mongodb-mock":
                database = mongomock_database()
                peer = database.client[database.name]  # the same in-process server
                yield Stores(
                    MongoDBEnvironmentStore(database), MongoDBEnvironmentStore(peer), broken
                )
            else:
                with mongodb_server_database() as database:
                    # the peer has a client of its own, as another container would
                    other = make_client(os.environ["MONGODB_URI"])
                    try:
                        peer = other[database.name]
                        yield Stores(
                            MongoDBEnvironmentStore(database), MongoDBEnvironmentStore(peer), broken
                        )
                    finally:
                        other.close()
        finally:
            unreachable.client.close()
