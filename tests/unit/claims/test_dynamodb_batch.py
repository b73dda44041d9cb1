"""The batch writer's requests: never one key twice in a request (DynamoDB refuses the whole
request), and a request refused whole as invalid sent again statement by statement, so that one
bad statement never sinks the writes beside it."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.stub import ANY, Stubber

from mini_scheduler.claims.dynamodb_batch import BATCH_SIZE, BatchWriter, Insert, requests_of
from mini_scheduler.errors import StoreError


def _insert(sk: str) -> Insert:
    return Insert({"pk": {"S": "RUN#job"}, "sk": {"S": sk}, "status": {"S": "CLAIMED"}})


def test_a_repeated_key_starts_the_next_request_and_order_is_kept() -> None:
    statements = [_insert("a"), _insert("b"), _insert("a"), _insert("c"), _insert("a")]
    assert requests_of(statements) == [[0, 1], [2, 3], [4]]


def test_requests_hold_at_most_a_batch_of_distinct_keys() -> None:
    statements = [_insert(str(i)) for i in range(2 * BATCH_SIZE + 3)]
    requests = requests_of(statements)
    assert [len(r) for r in requests] == [BATCH_SIZE, BATCH_SIZE, 3]
    assert [i for r in requests for i in r] == list(range(len(statements)))


def _client() -> Any:
    return boto3.client(
        "dynamodb",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",  # a stubbed client sends nothing
    )


def _refuse(stub: Stubber, code: str, message: str) -> None:
    stub.add_client_error(
        "batch_execute_statement",
        service_error_code=code,
        service_message=message,
        http_status_code=400,
    )


def test_a_request_refused_whole_as_invalid_is_sent_again_one_statement_at_a_time() -> None:
    client = _client()
    statements = [_insert("a"), _insert("b"), _insert("c")]
    with Stubber(client) as stub:
        _refuse(stub, "ValidationException", "One statement says what this request cannot hold")
        stub.add_response("batch_execute_statement", {"Responses": [{}]}, {"Statements": ANY})
        _refuse(stub, "ValidationException", "Item size has exceeded the maximum allowed size")
        stub.add_response(
            "batch_execute_statement",
            {"Responses": [{"Error": {"Code": "DuplicateItem", "Message": "exists"}}]},
            {"Statements": ANY},
        )
        outcomes = BatchWriter(client, "state", sleep=lambda _: None).write(statements)
        stub.assert_no_pending_responses()
    assert outcomes[0] is True
    assert isinstance(outcomes[1], StoreError) and "maximum allowed size" in str(outcomes[1])
    assert outcomes[2] is False


def test_a_request_that_fails_for_another_reason_still_raises() -> None:
    client = _client()
    with Stubber(client) as stub:
        _refuse(stub, "AccessDeniedException", "no")
        writer = BatchWriter(client, "state", sleep=lambda _: None)
        try:
            writer.write([_insert("a"), _insert("b")])
        except StoreError as exc:
            assert "AccessDeniedException" in str(exc)
        else:
            raise AssertionError("a request refused for access must raise")
