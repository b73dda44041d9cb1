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
from pymongo.errors import AutoReconnect, OperationFailure, ServerSelectionTimeoutError

from mini_scheduler import mongo
from mini_scheduler.aws import Clients
from mini_scheduler.claims.base import ClaimResult
from mini_scheduler.claims.mongodb import MongoDBClaimStore
from mini_scheduler.claims.mongodb_documents import DUE_INDEX, EXPIRY_INDEX, HISTORY_INDEX
from mini_scheduler.claims.records import JobStart
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


class _Spy:
    """Wraps a collection method: counts calls, and can run a hook before or after it."""

    def __init__(self, target: Any, name: str, log: list[str] | None = None) -> None:
        self.calls = 0
        self.before: Any = None
        self.after: Any = None
        self._real = getattr(target, name)
        self._label = f"{target.name}.{name}"
        self._log = log
        setattr(target, name, self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
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
    for collection in (store.runs, store.states, store.controls, environment._control):
        assert collection.write_concern.document == {"w": "majority", "wtimeout": 5000}
        assert collection.read_concern.level == "majority"
        assert collection.read_preference == ReadPreference.PRIMARY
    assert [store.runs.name, store.states.name, store.controls.name] == [
        "runs",
        "job_state",
        "control",
    ]


def test_indexes_are_created_once_per_store(store: MongoDBClaimStore) -> None:
    spy = _Spy(store.runs, "create_index")
    for minute in range(3):
        _claim(store, Firing("report", T0 + timedelta(minutes=minute)))
    store.history("report")
    store.due_runs(T0)
    assert spy.calls == 3  # the three indexes, on the first call only
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
    assert _claim(store, Firing("report", T0)) is ClaimResult.WON
    assert "indexes on mini_scheduler.runs not created" in caplog.text


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
    spy = _Spy(store.runs, "insert_one")

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
    spy = _Spy(store.runs, "insert_one")

    def broken(_: int) -> None:
        raise AutoReconnect("connection closed")

    spy.before = broken
    with pytest.raises(StoreError, match=r"MongoDB insert \(claim\) on mini_scheduler.runs"):
        _claim(store, Firing("report", T0))
    assert spy.calls == 3


def test_a_server_that_cannot_be_selected_is_not_retried(store: MongoDBClaimStore) -> None:
    spy = _Spy(store.runs, "insert_one")

    def unselectable(_: int) -> None:
        raise ServerSelectionTimeoutError("no primary")

    spy.before = unselectable
    with pytest.raises(StoreError) as raised:
        _claim(store, Firing("report", T0))
    assert spy.calls == 1 and isinstance(raised.value.__cause__, ServerSelectionTimeoutError)


# -- the exclusive claim's two writes -------------------------------------------------------------


def test_an_exclusive_claim_takes_the_slot_before_it_inserts(store: MongoDBClaimStore) -> None:
    order: list[str] = []
    _Spy(store.states, "update_one", order)
    _Spy(store.runs, "insert_one", order)
    _claim(store, Firing("solo", T0), exclusive=True)
    assert order == ["job_state.update_one", "runs.insert_one"]
    order.clear()
    _claim(store, Firing("free", T0))
    assert order == ["runs.insert_one"]  # the hot path: one write


def test_a_slot_left_by_a_claimer_that_died_between_its_writes_holds_until_its_lease(
    store: MongoDBClaimStore, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = Firing("solo", T0), Firing("solo", T0 + timedelta(minutes=1))
    spy = _Spy(store.runs, "insert_one")

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
def test_a_duplicate_key_on_the_server_is_a_lost_claim(server_store: MongoDBClaimStore) -> None:
    firing = Firing(f"race-{uuid.uuid4().hex[:6]}", T0)
    assert _claim(server_store, firing) is ClaimResult.WON
    assert _claim(server_store, firing) is ClaimResult.LOST
    assert server_store.runs.count_documents({"_id": firing.id}) == 1
