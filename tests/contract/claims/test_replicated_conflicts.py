"""The DynamoDB claim store over a multi-Region strongly consistent (MRSC) global table
(docs/global-table.md): a write to an item another region is writing fails with
ReplicatedWriteConflictException, which AWS documents as retryable ("will succeed if the item is
no longer being modified in another Region"). The outcome of such a write is not known yet, so a
claim must never read it as LOST: the store sends it again, and one that keeps conflicting is a
StoreError (the firing is held, claimed again next tick). test_dynamodb.py shows a single claim
won after two conflicts; here each write path a tick and the recorder take meets them over
DynamoDB Local, through a client that answers the first writes of one operation with the
conflict: a batch of claims, the marks, a close, the deferred firings; and the transaction MRSC
refuses."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from mini_scheduler.aws import RETRIES
from mini_scheduler.claims.base import SCHEDULE, ClaimRequest, ClaimResult, Deferred, MarkRequest
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.claims.records import JobStart
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus
from tests.contract.claims.conftest import new_table_name
from tests.emulators.dynamodb_local import make_client

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
LEASE = T0 + timedelta(seconds=120)
START = JobStart("lambda", "0 0 14 * * ? @UTC", {"_origin": "a"})
CONFLICT = "ReplicatedWriteConflictException"
ALWAYS = 1000


class Conflicting:
    """A DynamoDB client whose next ``conflicts[operation]`` calls of an operation fail with
    ReplicatedWriteConflictException (nothing written); every other call goes through."""

    def __init__(self, client: Any, **conflicts: int) -> None:
        self.client = client
        self.conflicts = dict(conflicts)
        self.refused: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.client, name)
        if name not in self.conflicts:
            return call

        def conflicting(**request: Any) -> Any:
            if self.conflicts[name] > 0:
                self.conflicts[name] -= 1
                self.refused[name] = self.refused.get(name, 0) + 1
                error = {"Code": CONFLICT, "Message": "item being modified in another Region"}
                raise ClientError({"Error": error}, name)
            return call(**request)

        return conflicting


@pytest.fixture
def table(dynamodb_local: Any) -> str:
    name = new_table_name()
    create_state_table(dynamodb_local, name)
    return name


def _store(table: str, client: Any, *, batched: bool = True) -> DynamoDBClaimStore:
    return DynamoDBClaimStore(table, client, sleep=lambda _: None, batched=batched)


def _firings(count: int = 3) -> list[Firing]:
    return [Firing(f"job-{i}", T0) for i in range(count)]


def _claim(store: DynamoDBClaimStore, firings: list[Firing], origin: str = "a") -> list[Any]:
    requests = [ClaimRequest(firing) for firing in firings]
    return store.claim_many(requests, now=T0, lease_until=LEASE, origin=origin)


# PartiQL statements 25 a BatchExecuteStatement, or one PutItem / UpdateItem each (batched=False)
WRITES = pytest.mark.parametrize(
    ("batched", "claims", "marks"),
    [
        (True, "batch_execute_statement", "batch_execute_statement"),
        (False, "put_item", "update_item"),
    ],
    ids=["batched", "one-by-one"],
)


@pytest.mark.dynamodb_local
@WRITES
def test_a_batch_of_claims_that_met_conflicts_is_won(
    dynamodb_local: Any, table: str, batched: bool, claims: str, marks: str
) -> None:
    client = Conflicting(dynamodb_local, **{claims: 2})
    firings = _firings()
    assert _claim(_store(table, client, batched=batched), firings) == [ClaimResult.WON] * 3
    assert client.refused == {claims: 2}
    # written for real: another region's claim of the same firings loses
    assert _claim(_store(table, dynamodb_local), firings, "b") == [ClaimResult.LOST] * 3


@pytest.mark.dynamodb_local
@WRITES
def test_a_claim_that_keeps_conflicting_is_a_store_error_never_lost(
    dynamodb_local: Any, table: str, batched: bool, claims: str, marks: str
) -> None:
    """Five sends (write_retried), then the claim's answer is a StoreError: the firing is held
    and claimed again, never counted as another region's."""
    store = _store(table, Conflicting(dynamodb_local, **{claims: ALWAYS}), batched=batched)
    firings = _firings()
    outcomes = _claim(store, firings)
    assert all(isinstance(outcome, StoreError) for outcome in outcomes), outcomes
    assert CONFLICT in str(outcomes[0])
    assert [_store(table, dynamodb_local).run(f.id) for f in firings] == [None] * 3


@pytest.mark.dynamodb_local
def test_a_statement_error_dynamodb_does_not_list_is_a_store_error_never_lost(
    dynamodb_local: Any, table: str
) -> None:
    """AWS does not say how a conflict reaches one statement of a BatchExecuteStatement (its
    error codes list no replicated conflict; TransactionConflict is sent again): whatever a
    statement's unknown code is, the claim is a StoreError, not LOST."""

    class Answering(Conflicting):
        def batch_execute_statement(self, **request: Any) -> dict[str, Any]:
            error = {"Code": "ReplicatedWriteConflict", "Message": "being modified elsewhere"}
            return {"Responses": [{"Error": error} for _ in request["Statements"]]}

    (outcome,) = _claim(_store(table, Answering(dynamodb_local)), _firings(1))
    assert isinstance(outcome, StoreError) and "ReplicatedWriteConflict" in str(outcome)


@pytest.mark.dynamodb_local
@WRITES
def test_marks_that_met_conflicts_are_written_and_ones_that_keep_conflicting_fail(
    dynamodb_local: Any, table: str, batched: bool, claims: str, marks: str
) -> None:
    firings = _firings()
    assert _claim(_store(table, dynamodb_local), firings) == [ClaimResult.WON] * 3
    requests = [MarkRequest(f, T0 + timedelta(minutes=5), START) for f in firings[:2]]
    client = Conflicting(dynamodb_local, **{marks: 2})
    assert _store(table, client, batched=batched).mark_many(requests, now=T0) == [None, None]
    assert client.refused == {marks: 2}
    reader = _store(table, dynamodb_local)
    assert [reader.run(f.id).status for f in firings[:2]] == [RunStatus.DISPATCHED] * 2  # type: ignore[union-attr]
    # one that keeps conflicting: the batch's request failed whole (mark_many raises, as for
    # any request that fails), or the one write's StoreError
    failing = _store(table, Conflicting(dynamodb_local, **{marks: ALWAYS}), batched=batched)
    late = [MarkRequest(firings[2], LEASE, START)]
    if batched:
        with pytest.raises(StoreError, match=CONFLICT):
            failing.mark_many(late, now=T0)
    else:
        (error,) = failing.mark_many(late, now=T0)
        assert isinstance(error, StoreError) and CONFLICT in str(error)
    assert reader.run(firings[2].id).status is RunStatus.CLAIMED  # type: ignore[union-attr]


@pytest.mark.dynamodb_local
def test_a_close_that_met_conflicts_is_written(dynamodb_local: Any, table: str) -> None:
    """The recorder's close is one conditional UpdateItem: sent again after a conflict; one
    that keeps conflicting raises StoreError (Lambda retries the event, then the dead letters)."""
    first, second = _firings(2)
    assert _claim(_store(table, dynamodb_local), [first, second]) == [ClaimResult.WON] * 2
    later = T0 + timedelta(seconds=30)
    client = Conflicting(dynamodb_local, update_item=2)
    closed = _store(table, client).close(first.id, RunStatus.SUCCEEDED, now=later)
    assert closed is not None and client.refused == {"update_item": 2}
    assert _store(table, dynamodb_local).run(first.id).status is RunStatus.SUCCEEDED  # type: ignore[union-attr]
    failing = _store(table, Conflicting(dynamodb_local, update_item=ALWAYS))
    with pytest.raises(StoreError, match=CONFLICT):
        failing.close(second.id, RunStatus.SUCCEEDED, now=later)


def _retry(firing: Firing) -> Deferred:
    return Deferred(firing.retry(), T0 + timedelta(minutes=1), "retry", "a", T0)


@pytest.mark.dynamodb_local
def test_a_deferred_firing_that_met_a_conflict_is_written_by_the_store(
    dynamodb_local: Any, table: str
) -> None:
    store = _store(table, Conflicting(dynamodb_local, batch_write_item=1))
    store.defer([_retry(Firing("report", T0))])
    assert len(store.due_deferred(T0 + timedelta(minutes=2))) == 1


class _Body:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        yield self.body


@pytest.mark.dynamodb_local
def test_the_functions_sdk_retries_a_conflicting_batch_write(
    dynamodb_local_endpoint: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The functions' clients retry as aws.RETRIES says (adaptive), and AWS's model of
    DynamoDB marks ReplicatedWriteConflictException retryable for PutItem, UpdateItem,
    DeleteItem and BatchWriteItem: the SDK sends a conflicting BatchWriteItem again by itself
    (up to five attempts), so a deferred firing survives a passing conflict."""
    monkeypatch.setattr(time, "sleep", lambda _: None)  # the SDK's back-off
    client = make_client(dynamodb_local_endpoint, retries=RETRIES)
    sent: list[str] = []

    def conflict_twice(request: Any, **_: Any) -> AWSResponse | None:
        sent.append("BatchWriteItem")
        if len(sent) > 2:
            return None
        body = {"__type": f"com.amazonaws.dynamodb.v20120810#{CONFLICT}", "message": "conflict"}
        headers = {"x-amzn-RequestId": "conflict", "Content-Type": "application/x-amz-json-1.0"}
        return AWSResponse(request.url, 400, headers, _Body(json.dumps(body).encode()))

    client.meta.events.register("before-send.dynamodb.BatchWriteItem", conflict_twice)
    store = _store(table, client)
    store.defer([_retry(Firing("report", T0))])
    assert len(sent) == 3
    assert len(store.due_deferred(T0 + timedelta(minutes=2))) == 1


class NoTransactions(Conflicting):
    """An MRSC replica: "Global tables configured for multi-Region strong consistency (MRSC) do
    not support transaction operations, and will return an error if those operations are
    invoked on an MRSC replica" (AWS's global tables guide; the code it answers is not
    documented: ValidationException here)."""

    def transact_write_items(self, **request: Any) -> Any:
        error = {"Code": "ValidationException", "Message": "transactions are not supported"}
        raise ClientError({"Error": error}, "TransactWriteItems")


@pytest.mark.dynamodb_local
def _schedule_firings() -> tuple[Deferred, Deferred]:
    detail = {
        "generation": "g1",
        "createdAt": "2026-11-30T13:00:00.000Z",
        "operator": "ops",
        "entry": {"name": "nightly", "schedule": "0 0 14 * * ?", "target": "x"},
    }
    done = Deferred(Firing("nightly", T0), T0, SCHEDULE, "a", T0, detail)
    following = Deferred(
        Firing("nightly", T0 + timedelta(days=1)), T0 + timedelta(days=1), SCHEDULE, "a", T0, detail
    )
    return done, following


def _mrsc(table: str, client: Any) -> DynamoDBClaimStore:
    """The store as the template configures it over a global table (STATE_TABLE_TRANSACTIONS
    false)."""
    return DynamoDBClaimStore(table, client, sleep=lambda _: None, transactions=False)


def test_a_runtime_schedule_in_one_transaction_is_refused_by_an_mrsc_table(
    dynamodb_local: Any, table: str
) -> None:
    """Why global-table mode moves schedules on in steps: the transaction is refused."""
    done, following = _schedule_firings()
    store = _store(table, NoTransactions(dynamodb_local))
    store.defer([done])
    with pytest.raises(StoreError, match="TransactWriteItems"):
        store.advance_schedule(done, following)


def test_a_runtime_schedule_moves_on_over_an_mrsc_table(dynamodb_local: Any, table: str) -> None:
    done, following = _schedule_firings()
    store = _mrsc(table, NoTransactions(dynamodb_local))
    store.defer([done])
    assert store.advance_schedule(done, following) is True
    assert [d.key for d in store.pending_deferred(SCHEDULE)] == [following.key]
    definition = store.schedule("nightly")
    assert definition is not None and definition.next_firing == following.firing.scheduled
    # A second tick that answered the same firing makes the same step: refused, and the next
    # firing the first one put stays.
    assert store.advance_schedule(done, following) is False
    assert [d.key for d in store.pending_deferred(SCHEDULE)] == [following.key]


def test_a_schedule_deleted_between_the_steps_is_not_brought_back(
    dynamodb_local: Any, table: str
) -> None:
    done, following = _schedule_firings()
    store = _mrsc(table, NoTransactions(dynamodb_local))
    store.defer([done])
    assert store.advance_schedule(done, following) is True
    after = Deferred(
        Firing("nightly", T0 + timedelta(days=2)),
        T0 + timedelta(days=2),
        SCHEDULE,
        "a",
        T0,
        following.detail,
    )
    assert store.delete_schedule("nightly", "g1", operator="joe", now=T0) is not None
    assert store.advance_schedule(following, after) is False  # its definition is a tombstone
    assert store.pending_deferred(SCHEDULE) == []
