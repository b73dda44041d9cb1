"""What only the MongoDB claim store has to show (the shared contract is test_contract.py).

mongomock runs these in process. What it cannot prove is listed in docs/mongodb.md (Testing) and
checked, where a server can check it, by the ``mongodb_server`` tests at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo import ReadPreference
from pymongo.errors import (
    AutoReconnect,
    BulkWriteError,
    OperationFailure,
    ServerSelectionTimeoutError,
)

from mini_scheduler import mongo
from mini_scheduler.aws import Clients
from mini_scheduler.claims.base import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    Deferred,
    MarkRequest,
)
from mini_scheduler.claims.mongodb import MongoDBClaimStore
from mini_scheduler.claims.mongodb_deferred import DEFERRED_DUE_INDEX, DEFERRED_EXPIRY_INDEX
from mini_scheduler.claims.mongodb_documents import DUE_INDEX, EXPIRY_INDEX, HISTORY_INDEX
from mini_scheduler.claims.records import JobStart, Redrive
from mini_scheduler.config import Settings
from mini_scheduler.environment.mongodb import MongoDBEnvironmentStore
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus
from mini_scheduler.wiring import claim_store, environment_store
from tests.contract.claims.conftest import closed_port, mongodb_server_database, mongomock_database

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ORIGIN = "us-east-1/prod"
LEASE = timedelta(seconds=120)
START = JobStart(
    "report-fn", "0 0 9 * * ? @America/New_York", {"region": "east", "_origin": ORIGIN}
)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def store() -> MongoDBClaimStore:
    return MongoDBClaimStore(mongomock_database(), sleep=lambda _: None)


@pytest.fixture(autouse=True)
def _no_container_client() -> Iterator[None]:
    mongo.reset()
    yield
    mongo.reset()


def _claim(
    store: MongoDBClaimStore, firing: Firing, *, now: datetime = T0, exclusive: bool = False
) -> ClaimResult:
    return store.claim(firing, now=now, lease_until=now + LEASE, origin=ORIGIN, exclusive=exclusive)


def _claim_many(
    store: MongoDBClaimStore, *requests: ClaimRequest | Firing, now: datetime = T0
) -> list[ClaimOutcome]:
    batch = [r if isinstance(r, ClaimRequest) else ClaimRequest(r) for r in requests]
    return store.claim_many(batch, now=now, lease_until=now + LEASE, origin=ORIGIN)


def _mark(firing: Firing, *, now: datetime = T0) -> MarkRequest:
    return MarkRequest(firing, now + timedelta(seconds=900), START)


def _peer(store: MongoDBClaimStore) -> MongoDBClaimStore:
    """Another ticker's store on the same database."""
    return MongoDBClaimStore(store.runs.database, sleep=lambda _: None)


WON, LOST, OVERLAP = ClaimResult.WON, ClaimResult.LOST, ClaimResult.OVERLAP


class _Spy:
    """Wraps a collection method: counts calls, and can run a hook before or after it."""

    def __init__(self, target: Any, name: str, log: list[str] | None = None) -> None:
        self.calls = 0
        self.args: tuple[Any, ...] = ()  # the last call's
        self.before: Any = None
        self.after: Any = None
        self._real = getattr(target, name)
        self._label = f"{target.name}.{name}"
        self._log = log
        setattr(target, name, self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        self.args = args
        if self._log is not None:
            self._log.append(self._label)
        if self.before is not None:
            self.before(self.calls)
        result = self._real(*args, **kwargs)
        if self.after is not None:
            self.after(self.calls)
        return result


# -- write concern, read concern, indexes, expiry ----------------------------------------------


def test_every_collection_writes_and_reads_with_majority_on_the_primary(
    store: MongoDBClaimStore,
) -> None:
    environment = MongoDBEnvironmentStore(mongomock_database())
    collections = (store.runs, store.states, store.controls, store.deferred, environment._control)
    for collection in collections:
        assert collection.write_concern.document == {"w": "majority", "wtimeout": 5000}
        assert collection.read_concern.level == "majority"
        assert collection.read_preference == ReadPreference.PRIMARY
    assert [c.name for c in collections[:4]] == ["runs", "job_state", "control", "deferred"]


def test_a_history_page_asks_for_the_runs_below_the_cursor_on_the_history_index(
    store: MongoDBClaimStore,
) -> None:
    for minute in range(5):
        _claim(store, Firing("report", T0 + timedelta(minutes=minute)))
    store.history("report")  # the indexes, made on the first read
    spy = _Spy(store.runs, "find")
    page = store.history("report", limit=2, before="2026-11-30T14:03:00.000Z")
    assert [r.scheduled_time for r in page] == ["2026-11-30T14:02:00Z", "2026-11-30T14:01:00Z"]
    assert spy.calls == 1
    assert spy.args == ({"job": "report", "sortKey": {"$lt": "2026-11-30T14:03:00.000Z"}},)
    store.history("report")
    assert spy.args == ({"job": "report"},)


def test_indexes_are_created_once_per_store(store: MongoDBClaimStore) -> None:
    spy = _Spy(store.runs, "create_index")
    deferred = _Spy(store.deferred, "create_index")
    for minute in range(3):
        _claim(store, Firing("report", T0 + timedelta(minutes=minute)))
    store.history("report")
    store.due_runs(T0)
    store.due_deferred(T0)
    assert spy.calls == 3  # the three indexes, on the first call only
    assert deferred.calls == 2
    indexes = store.runs.index_information()
    assert list(indexes[HISTORY_INDEX]["key"]) == [("job", 1), ("sortKey", -1)]
    assert list(indexes[DUE_INDEX]["key"]) == [("deadline", 1)]
    assert indexes[DUE_INDEX]["partialFilterExpression"] == {"open": True}
    assert list(indexes[EXPIRY_INDEX]["key"]) == [("expiresAt", 1)]
    assert indexes[EXPIRY_INDEX]["expireAfterSeconds"] == 0


def test_indexes_the_server_refuses_are_logged_and_claims_go_on(
    store: MongoDBClaimStore, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise OperationFailure("not authorized on mini_scheduler to execute createIndexes", 13)

    store.runs.create_index = refuse  # type: ignore[method-assign]
    store.deferred.create_index = refuse  # type: ignore[method-assign]
    assert _claim(store, Firing("report", T0)) is ClaimResult.WON
    assert "indexes on mini_scheduler.runs not created" in caplog.text
    assert "indexes on mini_scheduler.deferred not created - the read of deferred" in caplog.text
    deferred = Deferred(Firing("report", T0, attempt=2), T0, "retry", ORIGIN, T0)
    store.defer([deferred])
    assert store.due_deferred(T0 + timedelta(seconds=1)) == [deferred]


def test_run_records_expire_run_ttl_days_after_they_are_written() -> None:
    store = MongoDBClaimStore(mongomock_database(), run_ttl_days=7)
    firing = Firing("report", T0)
    _claim(store, firing)
    store.record_skipped(
        Firing("report", T0 + timedelta(minutes=1)), now=T0, reason="x", origin="o"
    )
    for doc in store.runs.find():
        assert doc["expiresAt"] == T0 + timedelta(days=7)


# -- the documents ------------------------------------------------------------------------------


def test_the_job_state_document_is_seed_000s(store: MongoDBClaimStore) -> None:
    firing = Firing("morning-report", T0)
    _claim(store, firing)
    store.mark_dispatched(firing, now=T0, deadline=T0 + timedelta(seconds=900), start=START)
    store.close(firing.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=3))
    doc = store.states.find_one({"_id": "morning-report"})
    assert doc == {
        "_id": "morning-report",
        "service": "report-fn",
        "schedule": "0 0 9 * * ? @America/New_York",
        "parameters": {"region": "east", "_origin": ORIGIN},
        "start": T0,
        "end": T0 + timedelta(seconds=3),
        "lastFiringId": "morning-report@2026-11-30T14:00:00Z",
        "lastStatus": "SUCCEEDED",
    }


def test_a_claim_is_one_document_keyed_by_the_firing_id(store: MongoDBClaimStore) -> None:
    firing = Firing("report", T0)
    _claim(store, firing)
    doc = store.runs.find_one({"_id": firing.id})
    assert doc is not None
    assert doc["status"] == "CLAIMED" and doc["open"] is True and doc["deadline"] == T0 + LEASE
    assert doc["sortKey"] == "2026-11-30T14:00:00.000Z" and len(doc["claimToken"]) == 32
    store.close(firing.id, RunStatus.SUCCEEDED, now=T0)
    closed = store.runs.find_one({"_id": firing.id})
    # out of the sweep's index; the deadline stays (a redrive counts the job's timeout from it)
    assert closed is not None and "open" not in closed and closed["deadline"] == T0 + LEASE


def test_watermarks_pauses_and_the_environment_share_the_control_collection(
    store: MongoDBClaimStore,
) -> None:
    database = store.runs.database
    environment = MongoDBEnvironmentStore(database)
    store.advance_watermark("us-east-1/prod", T0)
    store.set_paused("report", True, operator="jane.doe", now=T0)
    environment.set("DR", operator="jane.doe", now=T0)
    ids = sorted(doc["_id"] for doc in database["control"].find())
    assert ids == ["environment", "pause#report", "watermark#us-east-1/prod"]
    control = store.control("us-east-1/prod")
    assert control.watermark == T0 and list(control.paused) == ["report"]
    assert control.paused["report"].at == T0


# -- a claim whose answer was lost ------------------------------------------------------------


def test_a_claim_retried_after_its_answer_was_lost_still_wins(store: MongoDBClaimStore) -> None:
    """The insert lands, then the connection breaks before the answer: the retry meets our own
    document, and its token says it is ours."""
    spy = _Spy(store.runs, "insert_many")

    def lose_first_answer(call: int) -> None:
        if call == 1:
            raise AutoReconnect("connection closed")

    spy.after = lose_first_answer
    firing = Firing("report", T0)
    assert _claim(store, firing) is ClaimResult.WON
    assert spy.calls == 2 and store.runs.count_documents({}) == 1
    assert _claim(store, firing) is ClaimResult.LOST


def test_a_claim_whose_connection_stays_broken_raises_store_error(
    store: MongoDBClaimStore,
) -> None:
    spy = _Spy(store.runs, "insert_many")

    def broken(_: int) -> None:
        raise AutoReconnect("connection closed")

    spy.before = broken
    with pytest.raises(StoreError, match=r"MongoDB insert \(claims\) on mini_scheduler.runs"):
        _claim(store, Firing("report", T0))
    assert spy.calls == 3


def test_a_server_that_cannot_be_selected_is_not_retried(store: MongoDBClaimStore) -> None:
    spy = _Spy(store.runs, "insert_many")

    def unselectable(_: int) -> None:
        raise ServerSelectionTimeoutError("no primary")

    spy.before = unselectable
    with pytest.raises(StoreError) as raised:
        _claim(store, Firing("report", T0))
    assert spy.calls == 1 and isinstance(raised.value.__cause__, ServerSelectionTimeoutError)


# -- batches of claims: one insert_many ----------------------------------------------------------
# mongomock's insert_many(ordered=False) inserts what it can and raises BulkWriteError whose
# writeErrors name each refused document by index with code 11000, as a server does; it never
# adds writeConcernErrors (no replication) and refuses a document for a duplicate key only (no
# schema validation, no size limit): the other errors are played here as a server answers them.


def _refusing(
    store: MongoDBClaimStore, refused: int, details: dict[str, Any], collection: Any = None
) -> list[Any]:
    """Make the runs' (or ``collection``'s) insert_many insert all but document ``refused``
    (-1: all) and answer a BulkWriteError with ``details``; the list gets each call's
    documents."""
    collection = store.runs if collection is None else collection
    real, calls = collection.insert_many, []

    def insert_many(docs: list[Any], ordered: bool = True) -> Any:
        calls.append(docs)
        kept = [doc for index, doc in enumerate(docs) if index != refused]
        if kept:
            real(kept, ordered=ordered)
        raise BulkWriteError({"writeErrors": [], "writeConcernErrors": [], **details})

    collection.insert_many = insert_many
    return calls


def _losing_first_answer(target: Any, name: str) -> list[Any]:
    """Make ``target.name`` do its work, then lose its first answer (whatever it was) to a
    broken connection; the list gets each call's first argument."""
    real, calls = getattr(target, name), []

    def lossy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        try:
            return real(*args, **kwargs)
        finally:
            if len(calls) == 1:
                raise AutoReconnect("connection closed before the answer")

    setattr(target, name, lossy)
    return calls


def test_a_batch_of_claims_is_one_insert_and_a_peers_claim_in_it_is_lost(
    store: MongoDBClaimStore,
) -> None:
    firings = [Firing("report", T0 + timedelta(minutes=minute)) for minute in range(3)]
    assert _claim(_peer(store), firings[1]) is WON
    peers = store.runs.find_one({"_id": firings[1].id})
    spy = _Spy(store.runs, "insert_many")
    assert _claim_many(store, *firings) == [WON, LOST, WON]
    assert spy.calls == 1 and spy.args[0][1]["_id"] == firings[1].id
    assert store.runs.find_one({"_id": firings[1].id}) == peers  # the peer's claim stays
    assert store.runs.count_documents({"status": "CLAIMED"}) == 3


def test_a_batch_retried_after_its_answer_was_lost_wins_its_own_claims(
    store: MongoDBClaimStore,
) -> None:
    """The documents landed, the answer did not: the whole batch is tried again with the same
    documents, and each duplicate whose token is ours is WON; the peer's stays LOST."""
    firings = [Firing("report", T0 + timedelta(minutes=minute)) for minute in range(3)]
    assert _claim(_peer(store), firings[1]) is WON
    calls = _losing_first_answer(store.runs, "insert_many")
    assert _claim_many(store, *firings) == [WON, LOST, WON]
    assert len(calls) == 2 and calls[0] == calls[1] and store.runs.count_documents({}) == 3
    assert _claim_many(store, *firings) == [LOST, LOST, LOST]  # a new claim: new tokens


def test_a_documents_error_other_than_a_duplicate_key_is_that_firings_store_error(
    store: MongoDBClaimStore,
) -> None:
    firings = [Firing("report", T0 + timedelta(minutes=minute)) for minute in range(3)]
    error = {"index": 1, "code": 121, "errmsg": "Document failed validation"}
    calls = _refusing(store, 1, {"writeErrors": [error], "nInserted": 2})
    first, failed, last = _claim_many(store, *firings)
    assert (first, last) == (WON, WON) and len(calls) == 1  # not retried
    assert isinstance(failed, StoreError)
    assert str(failed) == (
        "MongoDB insert (claim) on mini_scheduler.runs failed - WriteError: Document failed "
        "validation"
    )
    assert store.run(firings[1].id) is None
    single = _peer(store)
    _refusing(single, 0, {"writeErrors": [{**error, "index": 0}]})
    with pytest.raises(StoreError, match="Document failed validation"):  # a batch of one
        _claim(single, Firing("report", T0 + timedelta(minutes=9)))


@pytest.mark.parametrize(
    ("error", "calls"),
    [
        pytest.param(AutoReconnect("connection closed"), 3, id="retried-then-raised"),
        pytest.param(ServerSelectionTimeoutError("no primary"), 1, id="no-server-no-retry"),
    ],
)
def test_a_batch_that_fails_as_a_whole_raises(
    store: MongoDBClaimStore, error: Exception, calls: int
) -> None:
    spy = _Spy(store.runs, "insert_many")
    spy.before = lambda _: (_ for _ in ()).throw(error)
    firings = [Firing("report", T0 + timedelta(minutes=minute)) for minute in range(3)]
    with pytest.raises(StoreError, match=r"MongoDB insert \(claims\)") as raised:
        _claim_many(store, *firings)
    assert spy.calls == calls and raised.value.__cause__ is error


def test_a_batch_a_majority_did_not_acknowledge_raises(store: MongoDBClaimStore) -> None:
    """Written on the primary, not replicated in time (``wtimeout``): as a single insert's
    WriteConcernError, the batch fails as a whole and is not retried."""
    unacknowledged = {"code": 64, "errmsg": "waiting for replication timed out"}
    calls = _refusing(store, -1, {"writeConcernErrors": [unacknowledged], "nInserted": 2})
    with pytest.raises(StoreError, match="waiting for replication timed out"):
        _claim_many(store, Firing("a", T0), Firing("b", T0))
    assert len(calls) == 1


def test_claim_holders_that_cannot_be_read_fail_those_firings_only(
    store: MongoDBClaimStore,
) -> None:
    firings = [Firing("report", T0 + timedelta(minutes=minute)) for minute in range(3)]
    _claim(_peer(store), firings[1])
    _Spy(store.runs, "find").before = lambda _: (_ for _ in ()).throw(AutoReconnect("closed"))
    first, failed, last = _claim_many(store, *firings)
    assert (first, last) == (WON, WON)
    assert isinstance(failed, StoreError) and "find (claim holders)" in str(failed)


def test_a_batchs_exclusive_claims_take_their_slots_before_its_one_insert(
    store: MongoDBClaimStore,
) -> None:
    _claim(store, Firing("busy", T0 - timedelta(minutes=1)), exclusive=True)  # holds the slot
    order: list[str] = []
    _Spy(store.states, "update_one", order)
    _Spy(store.states, "bulk_write", order)
    _Spy(store.runs, "insert_many", order)
    outcomes = _claim_many(
        store,
        ClaimRequest(Firing("solo", T0), exclusive=True),
        Firing("free", T0),
        ClaimRequest(Firing("busy", T0), exclusive=True),
    )
    assert outcomes == [WON, WON, OVERLAP]
    # Issue 28: the batch's slots in one bulk_write, the one refused (held) asked again alone,
    # then the one insert
    assert order == ["job_state.bulk_write", "job_state.update_one", "runs.insert_many"]
    assert store.run(Firing("busy", T0).id) is None  # nothing inserted for the overlap
    assert store.run(Firing("solo", T0).id) is not None
    assert store.run(Firing("free", T0).id) is not None


def test_a_lost_exclusive_claim_in_a_batch_releases_the_slot_it_took_unless_its_own(
    store: MongoDBClaimStore,
) -> None:
    skipped, held = Firing("solo", T0), Firing("other", T0)
    store.record_skipped(skipped, now=T0, reason="misfire", origin=ORIGIN)
    assert _claim(_peer(store), held, exclusive=True) is WON
    requests = [ClaimRequest(skipped, exclusive=True), ClaimRequest(held, exclusive=True)]
    assert _claim_many(store, *requests) == [LOST, LOST]
    assert store.job_state("solo").open_firing is None  # type: ignore[union-attr]
    assert store.job_state("other").open_firing == held.id  # type: ignore[union-attr]


def test_a_slot_that_cannot_be_written_fails_its_firing_or_an_unreachable_store_the_batch(
    store: MongoDBClaimStore,
) -> None:
    spies = [_Spy(store.states, "update_one"), _Spy(store.states, "bulk_write")]
    for spy in spies:  # the batch's takes, and a take refused there asked again alone
        spy.before = lambda _: (_ for _ in ()).throw(OperationFailure("not authorized", 13))
    failed, free = _claim_many(store, ClaimRequest(Firing("solo", T0), True), Firing("free", T0))
    assert isinstance(failed, StoreError) and "take job slot" in str(failed) and free is WON
    inserts = _Spy(store.runs, "insert_many")
    for spy in spies:
        spy.before = lambda _: (_ for _ in ()).throw(ServerSelectionTimeoutError("no primary"))
    later = T0 + timedelta(minutes=1)
    with pytest.raises(StoreError, match="take job slot"):
        _claim_many(store, ClaimRequest(Firing("solo", later), True), Firing("free", later))
    assert inserts.calls == 0


# -- batches of marks: two bulk_writes -----------------------------------------------------------
# mongomock 4.3 runs pymongo's UpdateOne in bulk_write only with
# mongomock_takes_pymongo_sort (conftest.py). Its bulk_write answers nMatched and writeErrors
# by index as a server does, but gives
# some refusals no code (an _id changed: the server's 66; no answer here depends on a code), and
# it applies an unordered batch in order where a server need not (the store sends one job-state
# update a job, so no answer depends on the order either).


def _refusing_marks(store: MongoDBClaimStore, refused: int, error: dict[str, Any]) -> None:
    """Make the runs' bulk_write apply all but request ``refused`` and name it in writeErrors."""
    real = store.runs.bulk_write

    def bulk_write(requests: list[Any], ordered: bool = True) -> Any:
        kept = [request for index, request in enumerate(requests) if index != refused]
        result = real(kept, ordered=ordered)
        raise BulkWriteError(
            {
                "writeErrors": [{**error, "index": refused}],
                "writeConcernErrors": [],
                "nMatched": result.matched_count,
                "nModified": result.modified_count,
            }
        )

    store.runs.bulk_write = bulk_write  # type: ignore[method-assign]


def test_a_batch_of_marks_is_one_write_of_the_runs_and_one_of_the_jobs(
    store: MongoDBClaimStore,
) -> None:
    firings = [Firing(job, T0) for job in ("a", "b", "c")]
    _claim_many(store, *firings)
    runs, states = _Spy(store.runs, "bulk_write"), _Spy(store.states, "bulk_write")
    reads = _Spy(store.runs, "find")
    now = T0 + timedelta(seconds=2)
    assert store.mark_many([_mark(f, now=now) for f in firings], now=now) == [None] * 3
    assert (runs.calls, states.calls, reads.calls) == (1, 1, 0)  # all matched: nothing read
    for firing in firings:
        run = store.run(firing.id)
        assert run is not None and run.status is RunStatus.DISPATCHED and run.started_at == now
        assert run.deadline == now + timedelta(seconds=900)
        state = store.job_state(firing.job)
        assert state is not None and state.last_status is RunStatus.DISPATCHED
        assert state.start == now and state.last_firing_id == firing.id


def test_a_batch_of_marks_leaves_a_closed_run_closed_and_its_end_goes_to_the_job(
    store: MongoDBClaimStore,
) -> None:
    fast, slow, unknown = Firing("fast", T0), Firing("slow", T0), Firing("ghost", T0)
    _claim_many(store, fast, slow)
    store.close(fast.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=1))
    reads = _Spy(store.runs, "find")
    now = T0 + timedelta(seconds=2)
    marks = [_mark(f, now=now) for f in (fast, slow, unknown)]
    assert store.mark_many(marks, now=now) == [None] * 3
    assert reads.calls == 1  # two of three matched: the runs are read back, once
    assert store.run(fast.id).status is RunStatus.SUCCEEDED  # type: ignore[union-attr]
    fast_state = store.job_state("fast")
    assert fast_state is not None and fast_state.last_status is RunStatus.SUCCEEDED
    assert fast_state.start == now and fast_state.end == T0 + timedelta(seconds=1)
    assert store.job_state("slow").last_status is RunStatus.DISPATCHED  # type: ignore[union-attr]
    assert store.job_state("ghost") is None and store.run(unknown.id) is None


def test_two_marks_of_one_job_in_a_batch_write_its_state_once_for_the_last(
    store: MongoDBClaimStore,
) -> None:
    firings = [Firing("report", T0), Firing("report", T0 + timedelta(minutes=1))]
    _claim_many(store, *firings)
    states = _Spy(store.states, "bulk_write")
    store.mark_many([_mark(f) for f in firings], now=T0)
    assert states.calls == 1 and len(states.args[0]) == 1
    assert store.job_state("report").last_firing_id == firings[1].id  # type: ignore[union-attr]


def test_a_marks_error_is_that_firings_store_error_and_its_job_is_left_alone(
    store: MongoDBClaimStore,
) -> None:
    firings = [Firing(job, T0) for job in ("a", "b", "c")]
    _claim_many(store, *firings)
    _refusing_marks(store, 1, {"code": 121, "errmsg": "Document failed validation"})
    first, failed, last = store.mark_many([_mark(f) for f in firings], now=T0)
    assert first is None and last is None
    assert isinstance(failed, StoreError)
    assert "update (mark dispatched)" in str(failed) and "Document failed validation" in str(failed)
    assert store.run(firings[1].id).status is RunStatus.CLAIMED  # type: ignore[union-attr]
    assert store.job_state("b") is None
    assert store.job_state("a") is not None and store.job_state("c") is not None


def test_a_batch_of_marks_retried_after_its_answer_was_lost_finds_its_own_marks(
    store: MongoDBClaimStore,
) -> None:
    """The runs were marked, the answer was lost: the executor tries the batch again with the
    same ``now``; nothing matches CLAIMED any more, and the runs read back are DISPATCHED at
    that instant until their deadlines, so the jobs' starts are written. A run another ticker
    took over and marked at another instant is not this batch's: its job is left alone."""
    mine, theirs = Firing("mine", T0), Firing("theirs", T0)
    _claim_many(store, mine, theirs)
    elsewhere = T0 + timedelta(seconds=1)
    _peer(store).mark_dispatched(
        theirs, now=elsewhere, deadline=elsewhere + timedelta(seconds=60), start=START
    )
    _losing_first_answer(store.runs, "bulk_write")
    now = T0 + timedelta(seconds=2)
    marks = [_mark(mine, now=now), _mark(theirs, now=now)]
    with pytest.raises(StoreError, match=r"update \(mark dispatched\)"):
        store.mark_many(marks, now=now)
    assert store.job_state("mine") is None
    assert store.mark_many(marks, now=now) == [None, None]
    assert store.job_state("mine").start == now  # type: ignore[union-attr]
    assert store.job_state("theirs").start == elsewhere  # type: ignore[union-attr]
    assert store.run(theirs.id).started_at == elsewhere  # type: ignore[union-attr]


def test_a_batch_of_marks_that_fails_as_a_whole_raises(store: MongoDBClaimStore) -> None:
    _claim(store, Firing("a", T0))
    spy = _Spy(store.runs, "bulk_write")
    spy.before = lambda _: (_ for _ in ()).throw(ServerSelectionTimeoutError("no primary"))
    with pytest.raises(StoreError, match=r"MongoDB update \(mark dispatched\) on"):
        store.mark_many([_mark(Firing("a", T0))], now=T0)
    with pytest.raises(StoreError, match="no primary"):  # a batch of one
        store.mark_dispatched(Firing("a", T0), now=T0, deadline=T0, start=START)
    assert store.mark_many([], now=T0) == [] and spy.calls == 2


def test_a_job_state_that_cannot_be_written_is_logged_not_raised(
    store: MongoDBClaimStore, caplog: pytest.LogCaptureFixture
) -> None:
    firing = Firing("report", T0)
    _claim(store, firing)
    spy = _Spy(store.states, "bulk_write")
    spy.before = lambda _: (_ for _ in ()).throw(AutoReconnect("closed"))
    assert store.mark_many([_mark(firing)], now=T0) == [None]
    assert store.run(firing.id).status is RunStatus.DISPATCHED  # type: ignore[union-attr]
    assert f"firing {firing.id}: the job's latest state was not updated" in caplog.text


def test_an_end_whose_job_state_cannot_be_written_is_logged_not_raised(
    store: MongoDBClaimStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The job's state and slot follow a run's end in writes of their own, after the run's:
    the end the caller asked for is done, and what did not follow is logged."""
    firing = Firing("solo", T0)
    _claim(store, firing, exclusive=True)
    store.mark_dispatched(firing, now=T0, deadline=T0 + timedelta(seconds=900), start=START)
    spy = _Spy(store.states, "update_one")
    spy.before = lambda _: (_ for _ in ()).throw(AutoReconnect("closed"))
    ended = T0 + timedelta(seconds=3)
    before = store.close(firing.id, RunStatus.SUCCEEDED, now=ended)
    assert before is not None and before.status is RunStatus.DISPATCHED
    assert store.run(firing.id).status is RunStatus.SUCCEEDED  # type: ignore[union-attr]
    assert f"firing {firing.id} ended SUCCEEDED, but the job's latest state was not updated" in (
        caplog.text
    )
    assert spy.calls == 1  # the job's state failed: its slot was not tried
    state = store.job_state("solo")
    assert state is not None and state.open_firing == firing.id and state.end is None


def test_an_end_or_a_skip_that_cannot_be_written_raises_naming_its_request(
    store: MongoDBClaimStore,
) -> None:
    firing = Firing("report", T0)
    _claim(store, firing)
    store.mark_dispatched(firing, now=T0, deadline=T0 + timedelta(seconds=900), start=START)
    store.close(firing.id, RunStatus.FAILED, now=T0, error="boom")

    def broken(_: int) -> None:
        raise AutoReconnect("closed")

    for name in ("find_one_and_update", "update_one", "insert_one"):
        _Spy(store.runs, name).before = broken
    with pytest.raises(StoreError, match=r"MongoDB findAndModify \(close run\) on .*closed"):
        store.fail(firing, now=T0, error="boom")
    with pytest.raises(StoreError, match=r"MongoDB update \(end run\) on mini_scheduler.runs"):
        store.redrive(firing.id, Redrive(1, T0 + timedelta(minutes=1)))
    later = Firing("report", T0 + timedelta(minutes=1))
    with pytest.raises(StoreError, match=r"MongoDB insert \(skip\) on mini_scheduler.runs"):
        store.record_skipped(later, now=T0, reason="paused", origin=ORIGIN)
    with pytest.raises(StoreError, match=r"MongoDB insert \(skipped range\) on"):
        store.record_skipped_range(
            "report", later.scheduled, later.scheduled, 1, now=T0, reason="x", origin=ORIGIN
        )


# -- the exclusive claim's two writes -------------------------------------------------------------


def test_an_exclusive_claim_takes_the_slot_before_it_inserts(store: MongoDBClaimStore) -> None:
    order: list[str] = []
    _Spy(store.states, "update_one", order)
    _Spy(store.states, "bulk_write", order)
    _Spy(store.runs, "insert_many", order)
    _claim(store, Firing("solo", T0), exclusive=True)
    assert order == ["job_state.bulk_write", "runs.insert_many"]  # the batch's slots, at once
    order.clear()
    _claim(store, Firing("free", T0))
    assert order == ["runs.insert_many"]  # the hot path: one write


def test_a_slot_left_by_a_claimer_that_died_between_its_writes_holds_until_its_lease(
    store: MongoDBClaimStore, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = Firing("solo", T0), Firing("solo", T0 + timedelta(minutes=1))
    spy = _Spy(store.runs, "insert_many")

    def die(call: int) -> None:
        if call == 1:
            raise ServerSelectionTimeoutError("no primary")

    spy.before = die
    with pytest.raises(StoreError):
        _claim(store, first, exclusive=True)
    assert store.run(first.id) is None
    assert store.job_state("solo").open_firing == first.id  # type: ignore[union-attr]
    # within the lease: skipped, never run twice
    assert _claim(store, second, now=T0 + timedelta(seconds=60), exclusive=True) is (
        ClaimResult.OVERLAP
    )
    # the same firing, claimed again (the misfire policy's retry), takes its own slot back
    assert _claim(store, first, now=T0 + timedelta(seconds=60), exclusive=True) is ClaimResult.WON
    store.close(first.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=70))
    assert store.job_state("solo").open_firing is None  # type: ignore[union-attr]

    # died again, and nobody retried: the lease passes, the next claim frees the slot
    third = Firing("solo", T0 + timedelta(minutes=2))
    spy.before = lambda _: (_ for _ in ()).throw(ServerSelectionTimeoutError("no primary"))
    with pytest.raises(StoreError):
        _claim(store, second, now=T0 + timedelta(minutes=1), exclusive=True)
    spy.before = None
    after_lease = T0 + timedelta(minutes=1) + LEASE + timedelta(seconds=1)
    assert _claim(store, third, now=after_lease, exclusive=True) is ClaimResult.WON
    assert f"open slot of firing {second.id} released" in caplog.text


def test_a_slot_whose_run_has_ended_is_released_by_the_next_claim(
    store: MongoDBClaimStore,
) -> None:
    first, second = Firing("solo", T0), Firing("solo", T0 + timedelta(minutes=1))
    _claim(store, first, exclusive=True)
    store.close(first.id, RunStatus.SUCCEEDED, now=T0)
    # the release after the close was lost (the close logs it and answers the run)
    store.states.update_one({"_id": "solo"}, {"$set": {"openFiring": first.id}})
    assert _claim(store, second, exclusive=True) is ClaimResult.WON


def test_a_slot_held_by_an_open_run_past_its_lease_is_left_to_the_sweep(
    store: MongoDBClaimStore,
) -> None:
    first, second = Firing("solo", T0), Firing("solo", T0 + timedelta(minutes=5))
    _claim(store, first, exclusive=True)
    assert _claim(store, second, now=T0 + timedelta(minutes=5), exclusive=True) is (
        ClaimResult.OVERLAP
    )


# -- deferred firings ------------------------------------------------------------------------------


def test_a_deferred_firing_is_one_document_keyed_by_its_due_instant_and_run_id() -> None:
    store = MongoDBClaimStore(mongomock_database(), run_ttl_days=7)
    firing = Firing("report", T0, True, "0a1b2c3d", attempt=2)
    due = T0 + timedelta(minutes=2, microseconds=1500)  # kept to the millisecond
    store.defer([Deferred(firing, due, "retry", ORIGIN, T0)])
    (doc,) = store.deferred.find()
    at = T0 + timedelta(minutes=2, milliseconds=1)
    assert doc == {
        "_id": f"2026-11-30T14:02:00.001Z#{firing.id}",
        "firingId": "report@manual-2026-11-30T14:00:00.000Z-0a1b2c3d#2",
        "due": at,
        "reason": "retry",
        "origin": ORIGIN,
        "writtenAt": T0,
        "expiresAt": at + timedelta(days=7),
    }
    indexes = store.deferred.index_information()
    assert list(indexes[DEFERRED_DUE_INDEX]["key"]) == [("due", 1), ("_id", 1)]
    assert list(indexes[DEFERRED_EXPIRY_INDEX]["key"]) == [("expiresAt", 1)]
    assert indexes[DEFERRED_EXPIRY_INDEX]["expireAfterSeconds"] == 0


def test_deferring_is_one_insert_where_a_document_there_already_is_no_error(
    store: MongoDBClaimStore,
) -> None:
    deferred = [
        Deferred(Firing(f"job-{i}", T0, attempt=2), T0, "retry", ORIGIN, T0) for i in range(3)
    ]
    store.defer(deferred[1:2])
    spy = _Spy(store.deferred, "insert_many")
    store.defer(deferred)
    assert spy.calls == 1 and spy.args[0][1]["_id"] == deferred[1].key
    assert store.deferred.count_documents({}) == 3
    store.drop_deferred([])
    store.defer([])
    assert spy.calls == 1


def test_a_deferred_document_refused_otherwise_or_unacknowledged_raises(
    store: MongoDBClaimStore,
) -> None:
    """The caller writes them all again: the ones written are there already, no error."""
    deferred = [
        Deferred(Firing(f"job-{i}", T0, attempt=2), T0, "retry", ORIGIN, T0) for i in range(3)
    ]
    error = {"index": 1, "code": 121, "errmsg": "Document failed validation"}
    duplicate = {"index": 2, "code": 11000, "errmsg": "E11000 duplicate key error"}
    _refusing(store, 1, {"writeErrors": [error, duplicate]}, store.deferred)
    with pytest.raises(StoreError) as raised:
        store.defer(deferred)
    assert str(raised.value) == (
        "MongoDB insert (defer: 1 of 3 refused) on mini_scheduler.deferred failed - WriteError: "
        "Document failed validation"
    )
    del store.deferred.insert_many  # mongomock's again: job-0 and job-2 are there already
    store.defer(deferred)
    assert store.due_deferred(T0 + timedelta(seconds=1)) == deferred
    unacknowledged = {"code": 64, "errmsg": "waiting for replication timed out"}
    _refusing(store, -1, {"writeConcernErrors": [unacknowledged]}, store.deferred)
    with pytest.raises(StoreError, match="waiting for replication timed out"):
        store.defer([Deferred(Firing("job-3", T0, attempt=2), T0, "retry", ORIGIN, T0)])


def test_deferred_reads_and_deletes_that_fail_raise_store_error(store: MongoDBClaimStore) -> None:
    deferred = [Deferred(Firing("report", T0, attempt=2), T0, "retry", ORIGIN, T0)]
    _Spy(store.deferred, "find").before = lambda _: (_ for _ in ()).throw(AutoReconnect("closed"))
    _Spy(store.deferred, "delete_many").before = lambda _: (_ for _ in ()).throw(
        AutoReconnect("closed")
    )
    with pytest.raises(StoreError, match=r"MongoDB find \(deferred\) on mini_scheduler.deferred"):
        store.due_deferred(T0)
    with pytest.raises(StoreError, match=r"MongoDB delete \(deferred\) on mini_scheduler"):
        store.drop_deferred(deferred)


# -- errors ---------------------------------------------------------------------------------------


def test_a_pymongo_error_becomes_a_redacted_store_error(store: MongoDBClaimStore) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise OperationFailure("bad auth for mongodb://scheduler:hunter2@db.example.com/x", 18)

    store.runs.find_one = refuse  # type: ignore[method-assign]
    with pytest.raises(StoreError) as raised:
        store.run("report@2026-11-30T14:00:00Z")
    assert "hunter2" not in str(raised.value)
    assert "mongodb://***@db.example.com/x" in str(raised.value)
    assert isinstance(raised.value.__cause__, OperationFailure)


# -- the wiring, and pymongo kept out of DynamoDB deployments ------------------------------------


def test_the_wiring_builds_both_mongodb_stores_on_one_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MONGODB_URI", f"mongodb://u:p@127.0.0.1:{closed_port()}/ops")
    monkeypatch.delenv("MONGODB_URI_SECRET_ARN", raising=False)
    settings = Settings(
        state_table="t", claim_store="mongodb", active_environment_store="mongodb", run_ttl_days=9
    )
    clients = Clients("us-east-1")
    claims = claim_store(settings, clients)
    environment = environment_store(settings, clients)
    assert isinstance(claims, MongoDBClaimStore) and isinstance(
        environment, MongoDBEnvironmentStore
    )
    assert claims.name == environment.name == "mongodb:ops"
    assert claims.runs.database.client is environment._control.database.client
    assert claims._ttl == timedelta(days=9)


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MONGODB_", "CLAIM_"))}
    environ.update(env, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"), ROOT]))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_a_dynamodb_deployment_never_imports_pymongo() -> None:
    result = _python(
        """
        import sys
        import mini_scheduler.handlers.ticker
        import mini_scheduler.handlers.recorder
        from mini_scheduler.config import Settings
        from mini_scheduler.aws import Clients
        from mini_scheduler.wiring import claim_store, environment_store

        settings = Settings.from_environment()
        clients = Clients("us-east-1")
        claim_store(settings, clients)
        environment_store(settings, clients)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("pymongo", "bson"))
        print(loaded)
        assert not loaded, loaded
        """,
        STATE_TABLE="mini-scheduler-state",
        AWS_DEFAULT_REGION="us-east-1",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_mongodb_deployment_imports_pymongo_when_it_builds_the_store() -> None:
    result = _python(
        """
        import sys
        import mini_scheduler.handlers.ticker
        assert "pymongo" not in sys.modules
        from mini_scheduler.config import Settings
        from mini_scheduler.aws import Clients
        from mini_scheduler.wiring import claim_store

        store = claim_store(Settings.from_environment(), Clients("us-east-1"))
        print(type(store).__name__, "pymongo" in sys.modules)
        """,
        STATE_TABLE="mini-scheduler-state",
        CLAIM_STORE="mongodb",
        MONGODB_URI=f"mongodb://127.0.0.1:{closed_port()}/?serverSelectionTimeoutMS=100",
    )
    assert result.returncode == 0, result.stderr
    # the last line: the handler module routes the package's log lines to stdout as JSON
    assert result.stdout.strip().splitlines()[-1] == "MongoDBClaimStore True"


# -- on a real server (MONGODB_URI) ---------------------------------------------------------------


@pytest.fixture
def server_store() -> Iterator[MongoDBClaimStore]:
    with mongodb_server_database() as database:
        yield MongoDBClaimStore(database)


def _winning_plan(explanation: dict[str, Any]) -> str:
    return str(explanation["queryPlanner"]["winningPlan"])


@pytest.mark.mongodb_server
def test_the_sweep_and_the_history_are_served_by_their_indexes(
    server_store: MongoDBClaimStore,
) -> None:
    for minute in range(5):
        _claim(server_store, Firing("report", T0 + timedelta(minutes=minute)))
    due = server_store.runs.find({"open": True, "deadline": {"$lte": T0}}).sort("deadline", 1)
    assert DUE_INDEX in _winning_plan(due.explain())
    history = server_store.runs.find({"job": "report"}).sort("sortKey", -1).limit(20)
    assert HISTORY_INDEX in _winning_plan(history.explain())
    info = server_store.runs.index_information()
    assert info[EXPIRY_INDEX]["expireAfterSeconds"] == 0


@pytest.mark.mongodb_server
def test_a_history_page_past_a_cursor_is_a_bound_on_the_history_index(
    server_store: MongoDBClaimStore,
) -> None:
    """``sortKey: {$lt: cursor}`` is a range of the index: no sort stage, and the server looks
    at the page's keys only, however many newer runs the job has."""
    firings = [Firing("report", T0 + timedelta(minutes=m)) for m in range(30)]
    for firing in firings:
        _claim(server_store, firing)
    page = server_store.history("report", limit=3, before=firings[5].sort_key)
    assert [r.firing_id for r in page] == [f.id for f in reversed(firings[2:5])]
    query = {"job": "report", "sortKey": {"$lt": firings[5].sort_key}}
    found = server_store.runs.find(query).sort("sortKey", -1).limit(3)
    explanation = found.explain("executionStats")
    assert HISTORY_INDEX in _winning_plan(explanation)
    assert "'stage': 'SORT'" not in _winning_plan(explanation)
    assert explanation["executionStats"]["totalKeysExamined"] <= 4


@pytest.mark.mongodb_server
def test_the_read_of_deferred_firings_is_served_by_its_index(
    server_store: MongoDBClaimStore,
) -> None:
    later = [
        Deferred(Firing(f"job-{i}", T0, attempt=2), T0 + timedelta(hours=1), "retry", ORIGIN, T0)
        for i in range(20)
    ]
    server_store.defer(later)
    assert server_store.due_deferred(T0) == []
    found = server_store.deferred.find({"due": {"$lt": T0}}).sort([("due", 1), ("_id", 1)])
    explanation = found.limit(1000).explain()
    assert DEFERRED_DUE_INDEX in _winning_plan(explanation)
    assert "'stage': 'SORT'" not in _winning_plan(explanation)  # in index order, no sort


@pytest.mark.mongodb_server
def test_a_duplicate_key_on_the_server_is_a_lost_claim(server_store: MongoDBClaimStore) -> None:
    firing = Firing(f"race-{uuid.uuid4().hex[:6]}", T0)
    assert _claim(server_store, firing) is ClaimResult.WON
    assert _claim(server_store, firing) is ClaimResult.LOST
    assert server_store.runs.count_documents({"_id": firing.id}) == 1


@pytest.mark.mongodb_server
def test_a_batch_on_the_server_loses_a_peers_firing_and_wins_the_rest(
    server_store: MongoDBClaimStore,
) -> None:
    """The server's BulkWriteError for an unordered insert_many: code 11000 at the duplicate's
    index, the other documents inserted."""
    job = f"race-{uuid.uuid4().hex[:6]}"
    firings = [Firing(job, T0 + timedelta(minutes=minute)) for minute in range(3)]
    assert _claim(_peer(server_store), firings[1]) is WON
    assert _claim_many(server_store, *firings) == [WON, LOST, WON]


@pytest.mark.mongodb_server
def test_a_batch_of_marks_on_the_server_reads_back_a_run_that_closed_first(
    server_store: MongoDBClaimStore,
) -> None:
    fast, slow = Firing(f"fast-{uuid.uuid4().hex[:6]}", T0), Firing("slow", T0)
    _claim_many(server_store, fast, slow)
    server_store.close(fast.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=1))
    now = T0 + timedelta(seconds=2)
    assert server_store.mark_many([_mark(fast, now=now), _mark(slow, now=now)], now=now) == [
        None,
        None,
    ]
    state = server_store.job_state(fast.job)
    assert state is not None and state.last_status is RunStatus.SUCCEEDED
    assert server_store.run(slow.id).status is RunStatus.DISPATCHED  # type: ignore[union-attr]
