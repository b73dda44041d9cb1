"""DynamoDB Local as the claim tests need it: real validation, and atomic conditional puts."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections import Counter
from typing import TYPE_CHECKING

import pytest
from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.dynamodb_local

THREADS = 8
TRIALS = 300


def _create_claims_table(client: DynamoDBClient, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1})
    return name


def test_table_name_of_two_characters_is_refused(dynamodb_local: DynamoDBClient) -> None:
    with pytest.raises(ClientError) as caught:
        dynamodb_local.create_table(
            TableName="ab",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
    error = caught.value.response["Error"]
    assert error["Code"] == "ValidationException", error
    assert "between 3 and 255 characters" in error["Message"], error
    assert "ab" not in dynamodb_local.list_tables()["TableNames"]


def test_key_of_the_wrong_type_is_refused(dynamodb_local: DynamoDBClient) -> None:
    table = _create_claims_table(dynamodb_local, "validation")
    with pytest.raises(ClientError) as caught:
        dynamodb_local.put_item(TableName=table, Item={"pk": {"N": "1"}})
    assert caught.value.response["Error"]["Code"] == "ValidationException"


def test_conditional_put_has_exactly_one_winner(dynamodb_local: DynamoDBClient) -> None:
    """8 threads put the same new key at once, 300 times over: exactly one wins each time."""
    client = dynamodb_local  # boto3 clients are thread-safe: one shared by all contenders
    table = _create_claims_table(client, "claims")
    barrier = threading.Barrier(THREADS, timeout=30)
    outcomes = [[""] * THREADS for _ in range(TRIALS)]
    errors: list[BaseException] = []

    def contend(index: int) -> None:
        try:
            for trial in range(TRIALS):
                barrier.wait()
                try:
                    client.put_item(
                        TableName=table,
                        Item={"pk": {"S": f"claim-{trial}"}, "owner": {"N": str(index)}},
                        ConditionExpression="attribute_not_exists(pk)",
                    )
                except ClientError as exc:
                    if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                        raise
                    outcomes[trial][index] = "lost"
                else:
                    outcomes[trial][index] = "won"
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()  # release the others rather than leave them waiting

    contenders = [
        threading.Thread(target=contend, args=(index,), name=f"contender-{index}")
        for index in range(THREADS)
    ]
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave the threads as aggressively as possible
    started = time.monotonic()
    try:
        for thread in contenders:
            thread.start()
        for thread in contenders:
            thread.join()
    finally:
        sys.setswitchinterval(switch_interval)
    elapsed = time.monotonic() - started

    first_errors = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    assert not errors, f"contenders failed: {(first_errors or errors)[:3]!r}"

    totals = Counter(outcome for row in outcomes for outcome in row)
    summary = (
        f"{TRIALS} trials x {THREADS} threads in {elapsed:.1f} s: "
        f"{totals['won']} winners, {totals['lost']} ConditionalCheckFailedException losers"
    )
    print(summary)
    not_one = {
        trial: row.count("won") for trial, row in enumerate(outcomes) if row.count("won") != 1
    }
    assert not not_one, (
        f"{len(not_one)} of {TRIALS} trials had not exactly one winner "
        f"(trial: winners, first 20: {dict(list(not_one.items())[:20])}); {summary}"
    )
    assert totals == {"won": TRIALS, "lost": TRIALS * (THREADS - 1)}, summary

    # What is stored is the winner's write, and only it.
    stored: dict[str, int] = {}
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        for item in page["Items"]:
            stored[item["pk"]["S"]] = int(item["owner"]["N"])
    expected = {f"claim-{trial}": row.index("won") for trial, row in enumerate(outcomes)}
    assert stored == expected, summary
