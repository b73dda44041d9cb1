"""The claim store fixture: one contract suite, run against every backend."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.claims.memory import MemoryClaimStore

BACKENDS = [
    "memory",
    "dynamodb-moto",
    pytest.param("dynamodb-local", marks=pytest.mark.dynamodb_local),
]


def new_table_name() -> str:
    return f"mini-scheduler-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=BACKENDS)
def claim_store(request: pytest.FixtureRequest) -> Iterator[ClaimStore]:
    if request.param == "memory":
        yield MemoryClaimStore()
    elif request.param == "dynamodb-moto":
        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1")
            table = new_table_name()
            create_state_table(client, table)
            yield DynamoDBClaimStore(table, client, sleep=lambda _: None)
    else:
        client = request.getfixturevalue("dynamodb_local")
        table = new_table_name()
        create_state_table(client, table)
        yield DynamoDBClaimStore(table, client, sleep=lambda _: None)
