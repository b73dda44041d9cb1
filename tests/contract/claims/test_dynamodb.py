"""What only the DynamoDB claim store has to show (the shared contract is test_contract.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from mini_scheduler.claims.base import ClaimResult
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.model import Firing
from tests.contract.claims.conftest import new_table_name

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


@pytest.mark.dynamodb_local
def test_a_claim_retried_after_its_answer_was_lost_still_wins(
    dynamodb_local: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK retries a PutItem whose answer timed out; the retry meets the item its own first
    attempt wrote. The claim token tells that from a peer's claim."""
    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    store = DynamoDBClaimStore(table, dynamodb_local)  # type: ignore[arg-type]
    firing = Firing("report", T0)
    fixed = uuid.UUID(int=7)
    monkeypatch.setattr(uuid, "uuid4", lambda: fixed)
    lease = T0 + timedelta(seconds=120)
    assert store.claim(firing, now=T0, lease_until=lease, origin="a") is ClaimResult.WON
    # the same attempt again (same token): our own claim
    assert store.claim(firing, now=T0, lease_until=lease, origin="a") is ClaimResult.WON
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=8))
    assert store.claim(firing, now=T0, lease_until=lease, origin="b") is ClaimResult.LOST


@pytest.mark.dynamodb_local
def test_run_records_expire_by_ttl(dynamodb_local: object) -> None:
    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    store = DynamoDBClaimStore(table, dynamodb_local, run_ttl_days=30)  # type: ignore[arg-type]
    firing = Firing("report", T0)
    store.claim(firing, now=T0, lease_until=T0 + timedelta(seconds=120), origin="a")
    item = dynamodb_local.get_item(  # type: ignore[attr-defined]
        TableName=table, Key={"pk": {"S": "RUN#report"}, "sk": {"S": firing.sort_key}}
    )["Item"]
    assert int(item["expiresAt"]["N"]) == int((T0 + timedelta(days=30)).timestamp())
    ttl = dynamodb_local.describe_time_to_live(TableName=table)  # type: ignore[attr-defined]
    assert ttl["TimeToLiveDescription"]["AttributeName"] == "expiresAt"


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "one-by-one"])
def test_a_replicated_write_conflict_is_retried_not_read_as_a_lost_claim(batched: bool) -> None:
    """In a multi-Region strongly consistent global table a concurrent write in another region
    answers ReplicatedWriteConflictException: the claim's outcome is not known yet."""
    from botocore.exceptions import ClientError

    class Conflicted:
        def __init__(self) -> None:
            self.calls = 0

        def _answer(self, operation: str, answer: dict[str, object]) -> dict[str, object]:
            self.calls += 1
            if self.calls < 3:
                raise ClientError(
                    {"Error": {"Code": "ReplicatedWriteConflictException", "Message": "conflict"}},
                    operation,
                )
            return answer

        def put_item(self, **request: object) -> dict[str, object]:
            return self._answer("PutItem", {})

        def batch_execute_statement(self, **request: object) -> dict[str, object]:
            return self._answer("BatchExecuteStatement", {"Responses": [{"TableName": "t"}]})

    client = Conflicted()
    slept: list[float] = []
    store = DynamoDBClaimStore("t", client, sleep=slept.append, batched=batched)  # type: ignore[arg-type]
    result = store.claim(
        Firing("report", T0), now=T0, lease_until=T0 + timedelta(seconds=60), origin="a"
    )
    assert result is ClaimResult.WON and client.calls == 3 and len(slept) == 2
