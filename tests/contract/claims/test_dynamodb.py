"""What only the DynamoDB claim store has to show (the shared contract is test_contract.py)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.claims.base import ClaimRequest, ClaimResult, Deferred
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.claims.records import Definition, JobStart, Redrive, new_generation
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus
from tests.contract.claims.conftest import new_table_name

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
LEASE = timedelta(seconds=120)
MINUTE = timedelta(minutes=1)


@contextlib.contextmanager
def _counted(client: object) -> Iterator[list[str]]:
    """The DynamoDB operations ``client`` calls inside the block, in order."""
    calls: list[str] = []

    def count(model: Any, **_: Any) -> None:
        calls.append(model.name)

    events = client.meta.events  # type: ignore[attr-defined]
    events.register("before-call.dynamodb", count)
    try:
        yield calls
    finally:
        events.unregister("before-call.dynamodb", count)


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


@pytest.mark.dynamodb_local
def test_a_watch_item_groups_its_firings_by_instant_and_the_old_form_is_still_swept(
    dynamodb_local: object,
) -> None:
    """A tick's firings share a few instants: the watch item keeps each instant once and a job
    name per firing (half the bytes of whole ids, written and deleted every tick). An item
    written before the grouping (whole ids in ``firings``) is still read by the sweep."""
    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    store = DynamoDBClaimStore(table, dynamodb_local, sleep=lambda _: None)  # type: ignore[arg-type]
    manual = Firing("report", T0, True, "0a1b2c3d")
    firings = [Firing("report", T0), Firing("heartbeat", T0), manual]
    store.watch([f.id for f in firings], T0 + timedelta(minutes=2))

    def items() -> list[dict[str, object]]:
        return dynamodb_local.query(  # type: ignore[attr-defined, no-any-return]
            TableName=table,
            KeyConditionExpression="pk = :w",
            ExpressionAttributeValues={":w": {"S": "WATCH"}},
            ConsistentRead=True,
        )["Items"]

    (item,) = items()
    assert "firings" not in item
    assert item["jobs"] == {
        "M": {
            "2026-11-30T14:00:00Z": {"L": [{"S": "report"}, {"S": "heartbeat"}]},
            manual.id.rpartition("@")[2]: {"L": [{"S": "report"}]},
        }
    }
    # the old form, and a run it lists that is open past its deadline
    old = Firing("cleanup", T0)
    lease = T0 + timedelta(seconds=60)
    assert store.claim(old, now=T0, lease_until=lease, origin="a") is ClaimResult.WON
    dynamodb_local.put_item(  # type: ignore[attr-defined]
        TableName=table,
        Item={
            "pk": {"S": "WATCH"},
            "sk": {"S": "2026-11-30T14:01:00.000Z#000000000000"},
            "firings": {"L": [{"S": old.id}]},
        },
    )
    later = T0 + timedelta(minutes=5)
    assert [run.firing_id for run in store.due_runs(later, 10, settle=True)] == [old.id]
    # settled: both items read and deleted, the open run watched again from the next minute
    (again,) = items()
    assert again["sk"]["S"].startswith("2026-11-30T14:06:00.000Z#")
    assert again["jobs"] == {"M": {"2026-11-30T14:00:00Z": {"L": [{"S": "cleanup"}]}}}


@pytest.mark.dynamodb_local
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "one-by-one"])
@pytest.mark.parametrize(
    ("manual", "attempt"),
    [(False, 1), (True, 1), (False, 2), (True, 12)],
    ids=["scheduled", "manual", "retry", "manual-retry"],
)
def test_a_run_item_keeps_no_field_its_key_says_nor_a_settled_claim_token(
    dynamodb_local: object, batched: bool, manual: bool, attempt: int
) -> None:
    """The firing id, job and scheduled time are the key's (``RUN#<job>`` / the sort key), and
    the claim token has done its work once the run is marked: none is stored, about 140 bytes
    of each item kept for RUN_TTL_DAYS. They read back the same; an item written before, which
    has them, too."""
    from mini_scheduler.claims.base import ClaimRequest, MarkRequest
    from mini_scheduler.claims.records import JobStart

    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    store = DynamoDBClaimStore(
        table,
        dynamodb_local,  # type: ignore[arg-type]
        sleep=lambda _: None,
        batched=batched,
    )
    firing = Firing("report", T0, manual, "0a1b2c3d" if manual else "", attempt=attempt)
    lease = T0 + timedelta(seconds=120)
    assert store.claim_many([ClaimRequest(firing)], now=T0, lease_until=lease, origin="a") == [
        ClaimResult.WON
    ]
    start = JobStart("mini-scheduler-report", "0 0 14 * * ? @UTC", {"size": 1})
    assert store.mark_many([MarkRequest(firing, T0 + timedelta(minutes=15), start)], now=T0) == [
        None
    ]
    key = {"pk": {"S": "RUN#report"}, "sk": {"S": firing.sort_key}}
    item = dynamodb_local.get_item(TableName=table, Key=key)["Item"]  # type: ignore[attr-defined]
    assert not {"firingId", "job", "scheduledTime", "claimToken"} & set(item)
    run = store.run(firing.id)
    assert run is not None
    assert (run.firing_id, run.job, run.scheduled_time) == (
        firing.id,
        "report",
        firing.scheduled_time,
    )
    assert [r.firing_id for r in store.history("report")] == [firing.id]
    # an item written before the trim, with the fields: read as it says
    old = {**item, "firingId": {"S": firing.id}, "job": {"S": "report"}}
    old["scheduledTime"] = {"S": firing.scheduled_time}
    dynamodb_local.put_item(TableName=table, Item=old)  # type: ignore[attr-defined]
    assert store.run(firing.id) == run


def test_a_key_that_is_not_a_run_s_is_refused() -> None:
    from mini_scheduler.claims.dynamodb_table import firing_from_key

    assert firing_from_key("RUN#a@b", "2026-11-30T14:00:00.000Z") == Firing("a@b", T0)
    for pk, sk in (("JOB#report", "STATE"), ("RUN#", "2026-11-30T14:00:00.000Z"), ("RUN#r", "x")):
        with pytest.raises(ValueError):
            firing_from_key(pk, sk)


# -- deferred firings ---------------------------------------------------------------------------


def _deferred(firing: Firing, due: datetime) -> Deferred:
    return Deferred(firing, due, "retry", "us-east-1/prod", T0 - timedelta(minutes=1))


@pytest.mark.dynamodb_local
def test_no_deferred_firing_due_is_one_request_however_many_wait(dynamodb_local: object) -> None:
    """Issue 14: the tick reads the deferred firings due with one range Query on the due
    instant, so a thousand due later cost it nothing more than none. An item keeps what its key
    does not say, and nothing its key says."""
    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    store = DynamoDBClaimStore(table, dynamodb_local, sleep=lambda _: None)  # type: ignore[arg-type]
    waiting = [
        _deferred(Firing(f"job-{i:03d}", T0, attempt=2), T0 + timedelta(hours=1, seconds=i))
        for i in range(1000)
    ]
    store.defer(waiting)
    with _counted(dynamodb_local) as calls:
        assert store.due_deferred(T0 + timedelta(minutes=59)) == []
    assert calls == ["Query"]
    assert len(store.due_deferred(T0 + timedelta(hours=2))) == 1000
    first = waiting[0]
    item = dynamodb_local.get_item(  # type: ignore[attr-defined]
        TableName=table, Key={"pk": {"S": "DEFER"}, "sk": {"S": first.key}}
    )["Item"]
    assert item == {
        "pk": {"S": "DEFER"},
        "sk": {"S": "2026-11-30T15:00:00.000Z#job-000@2026-11-30T14:00:00Z#2"},
        "reason": {"S": "retry"},
        "origin": {"S": "us-east-1/prod"},
        "writtenAt": {"S": "2026-11-30T13:59:00.000Z"},
        "expiresAt": {"N": str(int((first.due + timedelta(days=30)).timestamp()))},
    }


@pytest.mark.dynamodb_local
def test_a_history_page_is_a_key_condition_on_the_sort_key_not_a_filter(
    dynamodb_local: object,
) -> None:
    """A page past a cursor is one Query that starts at the cursor: it reads the page's items
    only (ScannedCount is the page), however many newer runs the job has."""
    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    store = DynamoDBClaimStore(table, dynamodb_local, sleep=lambda _: None)  # type: ignore[arg-type]
    firings = [Firing("report", T0 + timedelta(minutes=m)) for m in range(30)]
    for firing in firings:
        store.claim(firing, now=T0, lease_until=T0 + timedelta(seconds=120), origin="a")
    sent: list[dict[str, Any]] = []
    scanned: list[tuple[int, int]] = []

    def request(params: dict[str, Any], **_: Any) -> None:
        sent.append(dict(params))

    def answer(parsed: dict[str, Any], **_: Any) -> None:
        scanned.append((parsed["ScannedCount"], parsed["Count"]))

    events = dynamodb_local.meta.events  # type: ignore[attr-defined]
    events.register("before-parameter-build.dynamodb.Query", request)
    events.register("after-call.dynamodb.Query", answer)
    try:
        page = store.history("report", limit=3, before=firings[5].sort_key)
    finally:
        events.unregister("before-parameter-build.dynamodb.Query", request)
        events.unregister("after-call.dynamodb.Query", answer)
    assert [r.firing_id for r in page] == [f.id for f in reversed(firings[2:5])]
    ((query,),) = [sent]
    assert query["KeyConditionExpression"] == "#pk = :pk AND #sk < :before"
    assert query["ExpressionAttributeValues"][":before"] == {"S": "2026-11-30T14:05:00.000Z"}
    assert query["ExpressionAttributeNames"] == {"#pk": "pk", "#sk": "sk"}
    assert "FilterExpression" not in query and query["ScanIndexForward"] is False
    assert scanned == [(3, 3)]


class _Unprocessing:
    """A client whose BatchWriteItem leaves its last request unprocessed ``times`` times."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.sent: list[list[dict[str, Any]]] = []

    def batch_write_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        (requests,) = RequestItems.values()
        self.sent.append(requests)
        if self.times > 0:
            self.times -= 1
            return {"UnprocessedItems": {"t": requests[-1:]}}
        return {}


def test_deferred_firings_are_written_25_a_request_and_unprocessed_ones_again() -> None:
    client = _Unprocessing(times=2)
    slept: list[float] = []
    store = DynamoDBClaimStore("t", client, sleep=slept.append)  # type: ignore[arg-type]
    many = [
        _deferred(Firing("report", T0, attempt=2), T0 + timedelta(seconds=i)) for i in range(30)
    ]
    store.defer([*many, many[0]])  # one given twice is written once: a batch refuses it
    assert [len(sent) for sent in client.sent] == [25, 1, 1, 5]
    assert client.sent[1] == client.sent[0][-1:] and slept == [0.05, 0.1]
    assert client.sent[0][0] == {"PutRequest": {"Item": client.sent[0][0]["PutRequest"]["Item"]}}
    client.sent.clear()
    store.drop_deferred(many[:2])
    assert client.sent == [
        [{"DeleteRequest": {"Key": {"pk": {"S": "DEFER"}, "sk": {"S": d.key}}}} for d in many[:2]]
    ]


def test_deferred_firings_left_unprocessed_raise_but_watch_items_are_left_to_the_next_sweep() -> (
    None
):
    from mini_scheduler.claims.dynamodb_watch import Watch

    store = DynamoDBClaimStore("t", _Unprocessing(times=99), sleep=lambda _: None)  # type: ignore[arg-type]
    deferred = [_deferred(Firing("report", T0, attempt=2), T0)]
    with pytest.raises(StoreError, match=r"BatchWriteItem \(defer\) on table t left 1 of 1"):
        store.defer(deferred)
    with pytest.raises(StoreError, match=r"BatchWriteItem \(drop deferred\) on table t left 1"):
        store.drop_deferred(deferred)
    client = _Unprocessing(times=99)
    watch = Watch(client, "t", timedelta(days=1), sleep=lambda _: None)  # type: ignore[arg-type]
    watch._delete([{"pk": {"S": "WATCH"}, "sk": {"S": "x"}}])  # read again later: no error
    assert len(client.sent) == 5


def test_a_deferred_item_reads_back_from_its_key() -> None:
    from mini_scheduler.claims.dynamodb_deferred import deferred_from, deferred_item

    manual = Firing("a.b-c_d", T0 + timedelta(milliseconds=5), True, "0a1b2c3d", attempt=12)
    deferred = _deferred(manual, T0 + timedelta(minutes=3, milliseconds=999))
    item = deferred_item(deferred, timedelta(days=1))
    assert item["sk"]["S"] == f"2026-11-30T14:03:00.999Z#{manual.id}"
    assert deferred_from(item) == deferred
    with pytest.raises(ValueError, match="not a deferred firing's key"):
        deferred_from({**item, "sk": {"S": "2026-11-30T14:03:00.999Z"}})


def _refused(operation: str) -> Any:
    """A client method that answers AccessDeniedException (not one the store retries)."""
    from botocore.exceptions import ClientError

    def call(**_: object) -> Any:
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, operation)

    return call


def test_an_end_or_a_skip_that_cannot_be_written_raises_naming_its_request() -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_state_table(client, "t")
        store = DynamoDBClaimStore("t", client, batched=False)
        firing = Firing("report", T0)
        store.claim(firing, now=T0, lease_until=T0 + timedelta(seconds=60), origin="a")
        start = JobStart("svc", "* * * * *", {})
        store.mark_dispatched(firing, now=T0, deadline=T0 + timedelta(seconds=900), start=start)
        store.close(firing.id, RunStatus.FAILED, now=T0, error="boom")
        client.update_item = _refused("UpdateItem")  # type: ignore[method-assign]
        client.put_item = _refused("PutItem")  # type: ignore[method-assign]
        with pytest.raises(StoreError, match=r"DynamoDB UpdateItem \(close run\) on table t"):
            store.fail(firing, now=T0, error="boom")
        with pytest.raises(StoreError, match=r"DynamoDB UpdateItem \(end run\) on table t"):
            store.redrive(firing.id, Redrive(1, T0 + timedelta(minutes=1)))
        later = Firing("report", T0 + timedelta(minutes=1))
        with pytest.raises(StoreError, match=r"DynamoDB PutItem \(skip\) on table t"):
            store.record_skipped(later, now=T0, reason="paused", origin="a")
        with pytest.raises(StoreError, match=r"DynamoDB PutItem \(skipped range\) on table t"):
            store.record_skipped_range(
                "report", later.scheduled, later.scheduled, 1, now=T0, reason="x", origin="a"
            )


@pytest.mark.dynamodb_local
def test_a_batch_of_overlap_skip_claims_takes_its_slots_in_one_request(
    dynamodb_local: object,
) -> None:
    """Issue 28: the slots of a claim batch's ``overlap: skip`` firings are taken together, not
    one ``UpdateItem`` after another: an ``UPDATE`` per slot in one request, an ``INSERT`` for
    those refused (a job's first run has no item), then the claims. A slot still held (its run
    open) is that firing's OVERLAP, and is the only one asked alone."""
    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    store = DynamoDBClaimStore(table, dynamodb_local, sleep=lambda _: None)  # type: ignore[arg-type]
    calls: list[str] = []

    def claim(minute: int) -> list[ClaimResult | StoreError]:
        now = T0 + timedelta(minutes=minute)
        requests = [ClaimRequest(Firing(f"job-{i:02d}", now), exclusive=True) for i in range(25)]
        with _counted(dynamodb_local) as counted:
            outcomes = list(
                store.claim_many(requests, now=now, lease_until=now + LEASE, origin="a")
            )
        calls[:] = counted
        return outcomes

    assert claim(0) == [ClaimResult.WON] * 25
    assert calls == ["BatchExecuteStatement"] * 3  # the slots' UPDATEs, their INSERTs, claims
    for i in range(25):  # the runs end: their slots are released
        store.close(Firing(f"job-{i:02d}", T0).id, RunStatus.SUCCEEDED, now=T0 + LEASE)
    assert claim(1) == [ClaimResult.WON] * 25
    assert calls == ["BatchExecuteStatement"] * 2  # every job has its item: UPDATEs, claims
    store.close(Firing("job-00", T0 + MINUTE).id, RunStatus.SUCCEEDED, now=T0 + LEASE)
    assert claim(2) == [ClaimResult.WON] + [ClaimResult.OVERLAP] * 24  # 24 slots held
    assert calls[:2] == ["BatchExecuteStatement"] * 2  # UPDATEs, INSERTs (refused)
    assert calls.count("UpdateItem") == 24  # then each held slot asked alone: its holder read
    assert calls[-1] == "BatchExecuteStatement"  # and the one claim


@pytest.mark.dynamodb_local
def test_a_claim_batch_s_marks_are_one_item_of_under_a_kilobyte(dynamodb_local: object) -> None:
    """25 runs claimed with where they go are marked in one item, a write unit for the batch
    where each run's mark was one; their records are not written again, and read DISPATCHED. A
    later mark of the same batch (a failed tick's flush) is written on its run."""
    from mini_scheduler.claims.base import MarkRequest

    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    store = DynamoDBClaimStore(table, dynamodb_local)  # type: ignore[arg-type]
    firings = [Firing(f"job-{i:02}", T0) for i in range(26)]
    start = JobStart("lambda:fn", "0 * * * * ? @UTC", {})
    requests = [ClaimRequest(f, start=start) for f in firings[:25]]
    store.claim_many(requests, now=T0, lease_until=T0 + LEASE, origin="a")
    store.claim_many(
        [ClaimRequest(firings[25], start=start)], now=T0, lease_until=T0 + LEASE, origin="a"
    )
    deadline, marked = T0 + timedelta(minutes=15), T0 + timedelta(seconds=1)
    marks = [MarkRequest(f, deadline, start) for f in firings]
    assert store.mark_many(marks[:25], now=marked) == [None] * 25
    items = dynamodb_local.scan(TableName=table)["Items"]  # type: ignore[attr-defined]
    batches = [item for item in items if item["pk"]["S"].startswith("MARKS#")]
    assert len(batches) == 1
    size = sum(len(k) + len(str(v)) for k, v in batches[0].items())  # an upper bound
    assert size < 1024, size
    runs = [item for item in items if item["pk"]["S"].startswith("RUN#")]
    assert len(runs) == 26 and not any("startedAt" in item for item in runs)
    assert all(store.run(f.id).status is RunStatus.DISPATCHED for f in firings[:25])  # type: ignore[union-attr]
    # the same batch marked again, and a batch of one: each its own way
    assert store.mark_many([marks[0], marks[25]], now=marked) == [None, None]
    again = dynamodb_local.get_item(  # type: ignore[attr-defined]
        TableName=table, Key={"pk": {"S": "RUN#job-00"}, "sk": {"S": firings[0].sort_key}}
    )["Item"]
    assert again["status"]["S"] == "DISPATCHED"  # on its record: its batch's item was written


@pytest.mark.dynamodb_local
def test_a_close_whose_marks_cannot_be_read_stands_and_counts_from_the_claim(
    dynamodb_local: object, caplog: pytest.LogCaptureFixture
) -> None:
    """The end is written before the marks item is read: a read that fails after it leaves the
    end as written (the recorder must not fail a message whose end is recorded), its start
    unread, and says so."""
    from botocore.exceptions import ClientError

    from mini_scheduler.claims.base import MarkRequest

    class NoBatchReads:
        def __init__(self, client: Any) -> None:
            self._client = client

        def __getattr__(self, name: str) -> Any:
            return getattr(self._client, name)

        def batch_get_item(self, **_: Any) -> Any:
            error = {"Error": {"Code": "AccessDeniedException", "Message": "no BatchGetItem"}}
            raise ClientError(error, "BatchGetItem")  # type: ignore[arg-type]

    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    ticker = DynamoDBClaimStore(table, dynamodb_local)  # type: ignore[arg-type]
    firing, start = Firing("report", T0), JobStart("lambda:fn", "0 * * * * ? @UTC", {})
    ticker.claim_many(
        [ClaimRequest(firing, start=start)], now=T0, lease_until=T0 + LEASE, origin="a"
    )
    ticker.mark_many([MarkRequest(firing, T0 + MINUTE, start)], now=T0 + timedelta(seconds=1))
    recorder = DynamoDBClaimStore(table, NoBatchReads(dynamodb_local))  # type: ignore[arg-type]
    ended = T0 + timedelta(seconds=5)
    before = recorder.close(firing.id, RunStatus.SUCCEEDED, now=ended)
    assert before is not None and (before.started_at, before.claimed_at) == (None, T0)
    assert "when it started is unread" in caplog.text
    run = ticker.run(firing.id)
    assert run is not None and (run.status, run.ended_at) == (RunStatus.SUCCEEDED, ended)
    assert run.started_at == T0 + timedelta(seconds=1)  # read with its marks where they can be


@pytest.mark.dynamodb_local
def test_marks_items_left_unprocessed_past_their_attempts_are_errors_then_marked_on_their_runs(
    dynamodb_local: object,
) -> None:
    """DynamoDB throttles a BatchWriteItem's items one by one (``UnprocessedItems``): the store
    sends them again with back-off; items still left are their marks' StoreError, and a mark
    tried again is written on its run (its batch's item is never written twice)."""
    from mini_scheduler.claims.base import MarkRequest

    class Throttled:
        def __init__(self, client: Any) -> None:
            self._client = client
            self.sent = 0

        def __getattr__(self, name: str) -> Any:
            return getattr(self._client, name)

        def batch_write_item(self, **request: Any) -> Any:
            self.sent += 1
            return {"UnprocessedItems": request["RequestItems"]}  # nothing written

    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    client = Throttled(dynamodb_local)
    store = DynamoDBClaimStore(table, client, sleep=lambda _: None)  # type: ignore[arg-type]
    firings = [Firing("one", T0), Firing("two", T0)]
    start = JobStart("lambda:fn", "0 * * * * ? @UTC", {})
    store.claim_many(
        [ClaimRequest(f, start=start) for f in firings], now=T0, lease_until=T0 + LEASE, origin="a"
    )
    marks = [MarkRequest(f, T0 + MINUTE, start) for f in firings]
    errors = store.mark_many(marks, now=T0 + timedelta(seconds=1))
    assert all(isinstance(e, StoreError) for e in errors) and client.sent > 1
    assert [store.run(f.id).status for f in firings] == [RunStatus.CLAIMED] * 2  # type: ignore[union-attr]
    sent = client.sent
    assert store.mark_many(marks, now=T0 + timedelta(seconds=2)) == [None, None]
    assert client.sent == sent  # on the runs: no second marks item
    runs = [store.run(f.id) for f in firings]
    assert [(r.status, r.started_at) for r in runs if r] == [
        (RunStatus.DISPATCHED, T0 + timedelta(seconds=2))
    ] * 2


@pytest.mark.dynamodb_local
def test_runtime_schedules_definitions_are_written_25_a_request(dynamodb_local: object) -> None:
    """Creating 60 runtime schedules writes their definitions in 3 requests (PartiQL INSERTs),
    not 60 PutItems; a name whose tombstone is stored is refused there and made alone."""
    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    store = DynamoDBClaimStore(table, dynamodb_local, sleep=lambda _: None)  # type: ignore[arg-type]

    def definition(name: str) -> Definition:
        entry = {"name": name, "cron": "0 * * * * ?", "service": "fn"}
        return Definition(name, new_generation(T0), entry, "jane", T0, T0 + MINUTE)

    gone = definition("s-00")
    assert store.create_schedule(gone)
    store.delete_schedule("s-00", gone.generation, operator="joe", now=T0)
    with _counted(dynamodb_local) as calls:
        answers = store.create_schedules([definition(f"s-{i:02d}") for i in range(60)])
    assert answers == [True] * 60
    # s-00 is refused in the first request (its tombstone is an item) and made alone after it
    assert calls == ["BatchExecuteStatement", "PutItem", *["BatchExecuteStatement"] * 2]
    assert len(store.schedules()) == 60


@pytest.mark.dynamodb_local
def test_the_sweep_reads_what_says_a_run_is_due_and_only_the_due_ones_whole(
    dynamodb_local: object,
) -> None:
    """Every watched run is read once past its lease, most of them running or ended: that read
    asks for the key, status, deadline, start and claim token only; a run found due (never
    marked) is read again whole, and answered with where it goes."""
    from mini_scheduler.claims.base import MarkRequest

    table = new_table_name()
    create_state_table(dynamodb_local, table)  # type: ignore[arg-type]
    store = DynamoDBClaimStore(table, dynamodb_local, sleep=lambda _: None)  # type: ignore[arg-type]
    firings = [Firing(f"job-{i:02}", T0) for i in range(5)]
    start = JobStart("lambda:fn", "0 * * * * ? @UTC", {"region": "east"})
    store.watch([f.id for f in firings], T0 + LEASE)
    store.claim_many(
        [ClaimRequest(f, start=start) for f in firings], now=T0, lease_until=T0 + LEASE, origin="a"
    )
    deadline = T0 + timedelta(minutes=15)
    store.mark_many([MarkRequest(f, deadline, start) for f in firings[1:]], now=T0)
    reads: list[dict[str, Any]] = []

    def seen(params: dict[str, Any], **_: Any) -> None:
        reads.extend(params["RequestItems"].values())

    events = dynamodb_local.meta.events  # type: ignore[attr-defined]
    events.register("provide-client-params.dynamodb.BatchGetItem", seen)
    try:
        (due,) = store.due_runs(T0 + LEASE + MINUTE, 10)
    finally:
        events.unregister("provide-client-params.dynamodb.BatchGetItem", seen)
    assert due.firing_id == firings[0].id and due.status is RunStatus.CLAIMED
    assert due.service == "lambda:fn" and due.parameters == {"region": "east"}
    runs = [r for r in reads if r["Keys"][0]["pk"]["S"].startswith("RUN#")]
    assert [len(r["Keys"]) for r in runs] == [5, 1]  # all five, then the due one
    assert sorted(runs[0]["ExpressionAttributeNames"].values()) == sorted(
        ["pk", "sk", "status", "deadline", "startedAt", "claimToken"]
    )
    assert "ProjectionExpression" not in runs[1]  # whole
