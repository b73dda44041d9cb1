"""``overlap: buffer_one`` and ``buffer_all`` on AWS's own DynamoDB Local: a waiting firing
survives a ticker that dies between its waiting and its start (at each step), tickers racing
for one minute start it exactly once and keep at most the job's limit waiting, and a catch-up
woken by a run's end while the minute's tick runs starts the firing waiting for it, and claims
nothing the tick read."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from mini_scheduler.claims.base import BUFFER, ClaimStore
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.handlers.routing import route
from mini_scheduler.model import RunStatus
from mini_scheduler.recorder import Completion, Recorder
from mini_scheduler.wake import waker
from tests.emulators.dynamodb_local import make_client
from tests.unit.tick.harness import FakeDispatcher, Rig, at, rig

pytestmark = pytest.mark.dynamodb_local

BUFFERED = """
jobs:
  - name: "solo"
    cron: "0 * * * * ?"
    service: "solo-fn"
    overlap: "{overlap}"
"""


class Crash(BaseException):
    """The ticker's process dies here (nothing in the tick catches it)."""


class CrashingAt:
    """The claim store, until the first call of ``operation``: that call does its work, or
    not (``after``), then the process dies."""

    def __init__(self, inner: ClaimStore, operation: str, *, after: bool) -> None:
        self._inner = inner
        self._operation = operation
        self._after = after

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name != self._operation:
            return found

        def crashing(*args: Any, **kwargs: Any) -> Any:
            if self._after:
                found(*args, **kwargs)
            raise Crash(name)

        return crashing


@pytest.fixture
def table(dynamodb_local_endpoint: str) -> Iterator[tuple[Any, str]]:
    client = make_client(dynamodb_local_endpoint)
    name = f"mini-scheduler-{uuid.uuid4().hex[:12]}"
    create_state_table(client, name)
    yield client, name
    client.delete_table(TableName=name)


def _id(minute: int) -> str:
    return f"solo@2026-11-30T14:{minute:02d}:00Z"


def _rig(table: tuple[Any, str], dispatcher: FakeDispatcher, claims: Any = None, **kw: Any) -> Rig:
    client, name = table
    store = claims or DynamoDBClaimStore(name, client, sleep=lambda _: None)
    text = BUFFERED.format(overlap=kw.pop("overlap", "buffer_all"))
    if "buffer_all" in text:
        text += "    max_buffered: 2\n"
    return rig(text, claims=store, dispatcher=dispatcher, **kw)


def _waiting(store: ClaimStore) -> list[str]:
    return [d.firing.id for d in store.pending_deferred(BUFFER)]


@pytest.mark.parametrize(
    ("operation", "after"),
    [
        ("buffer", False),  # dies as it would keep the firing waiting: a later tick does
        ("buffer", True),  # dies once it waits, before the tick's end
        ("claim_many", True),  # dies once its claim is won, before its dispatch
        ("drop_deferred", False),  # dies after its dispatch, before it is forgotten
    ],
)
def test_a_waiting_firing_survives_a_crash_and_starts_once(
    table: tuple[Any, str], operation: str, after: bool
) -> None:
    dispatcher = FakeDispatcher()
    first = _rig(table, dispatcher)
    first.tick("2026-11-30T14:00:00Z")
    store = first.claims
    if operation == "buffer":
        dying = _rig(table, dispatcher, CrashingAt(store, operation, after=after))
        with pytest.raises(Crash):
            dying.tick("2026-11-30T14:01:00Z")
        ticker = _rig(table, dispatcher, start="2026-11-30T14:01:30Z")
        ticker.tick("2026-11-30T14:01:00Z")  # the next tick (a misfire if it held the minute)
    else:
        first.tick("2026-11-30T14:01:00Z")
        ticker = first
    assert _waiting(store) == [_id(1)]
    assert store.close(_id(0), RunStatus.SUCCEEDED, now=ticker.clock.now()) is not None
    if operation != "buffer":
        dying = _rig(table, dispatcher, CrashingAt(store, operation, after=after))
        dying.clock.set(ticker.clock.now())
        with pytest.raises(Crash):
            dying.tick("2026-11-30T14:02:00Z")
    survivor = _rig(table, dispatcher, start="2026-11-30T14:05:00Z")  # past the claim's lease
    for minute in (3, 4, 5):
        survivor.tick(f"2026-11-30T14:{minute:02d}:00Z")
    assert dispatcher.counts()[_id(1)] == 1
    run = store.run(_id(1))
    assert run is not None and run.status is RunStatus.DISPATCHED
    state = store.job_state("solo")
    assert state is not None and _id(1) not in state.waiting


def _together(rigs: list[Rig], minute: str) -> None:
    barrier = threading.Barrier(len(rigs))

    def one(r: Rig) -> None:
        barrier.wait()
        r.tick(minute)

    with ThreadPoolExecutor(max_workers=len(rigs)) as pool:
        list(pool.map(one, rigs))


@pytest.mark.parametrize("overlap", ["buffer_one", "buffer_all"])
def test_racing_tickers_keep_one_waiting_firing_and_start_it_once(
    table: tuple[Any, str], overlap: str
) -> None:
    dispatcher = FakeDispatcher()
    tickers = [_rig(table, dispatcher, overlap=overlap) for _ in range(4)]
    tickers[0].tick("2026-11-30T14:00:00Z")
    store = tickers[0].claims
    for minute in (1, 2):
        _together(tickers, f"2026-11-30T14:{minute:02d}:00Z")
    limit = 1 if overlap == "buffer_one" else 2
    assert _waiting(store) == [_id(1), _id(2)][:limit]
    state = store.job_state("solo")
    assert state is not None and len(state.waiting) == limit
    assert store.close(_id(0), RunStatus.SUCCEEDED, now=tickers[0].clock.now()) is not None
    _together(tickers, "2026-11-30T14:03:00Z")
    assert dispatcher.counts()[_id(1)] == 1
    assert [c[1] for c in dispatcher.calls] == [_id(0), _id(1)]  # one at a time, oldest first


SCHEDULED = """
jobs:
  - name: "late"
    cron: "50 * * * * ?"
    service: "late-fn"
"""

THRICE = {  # a runtime schedule firing on three seconds in a row, one run at a time
    "name": "thrice",
    "cron": "10,11,12 * * * * ?",
    "service": "thrice-fn",
    "overlap": "buffer_one",
}
LATER = {"name": "later", "cron": "45 * * * * ?", "service": "later-fn"}  # a tick's later firing
ORIGIN = "us-east-1/prod"


def _thrice(second: int, minute: int = 0) -> str:
    return f"thrice@2026-11-30T14:{minute:02d}:{second:02d}Z"


def _runs_end(r: Rig, events: list[dict[str, Any]]) -> None:
    """While the tick waits for its later firings: at :14 the first run of ``thrice`` ends,
    at :17 the second (if it started); each end wakes the ticker (a firing may wait for the
    slot), and the catch-up of the minute runs then, beside the tick and each other."""
    recorder = Recorder(r.claims, r.clock, r.metrics, origin=ORIGIN, wake=r.ticker.wake)

    def ends(second: int) -> None:
        if r.dispatcher.counts()[_thrice(second)]:
            recorder.record(
                Completion(_thrice(second), RunStatus.SUCCEEDED, r.clock.now(), None, "ecs")
            )
        while events:
            event = events.pop(0)
            assert event == {"tick": "2026-11-30T14:00:00Z", "deferred": True}
            route(r.ticker, event)

    r.meanwhile("2026-11-30T14:00:14Z", lambda: ends(10))
    r.meanwhile("2026-11-30T14:00:17Z", lambda: ends(11))


@pytest.mark.parametrize("batched", [True, False])  # False: make run's, one request a write
def test_a_catch_up_during_the_tick_leaves_its_schedule_firings_to_it(
    table: tuple[Any, str], caplog: pytest.LogCaptureFixture, batched: bool
) -> None:
    """The minute's tick read the runtime schedule's firing and runs its three firings (one
    starts, one waits, one is skipped: buffer_one); each run's end wakes a catch-up of the same
    minute while the tick still waits for its later firings. The first starts the waiting
    firing, once; neither claims the schedule's firings again: no slot taken for a firing
    recorded already (another claim then released it as stale, with a WARNING), no waiting
    firing dropped as due twice. Nothing is left waiting or holding the slot."""
    client, name = table
    store = DynamoDBClaimStore(name, client, sleep=lambda _: None, batched=batched)
    events: list[dict[str, Any]] = []
    holder: list[Rig] = []
    r = rig(
        SCHEDULED,
        claims=store,
        start="2026-11-30T13:59:50Z",
        wake=lambda dues: waker(events.append, holder[0].clock, 0)(dues),
    )
    holder.append(r)
    r.ticker.operator.create_schedules([THRICE, LATER], "jane.doe")
    _runs_end(r, events)
    with caplog.at_level(logging.DEBUG, logger="mini_scheduler"):
        r.tick("2026-11-30T14:00:00Z")
    assert "released: its run has ended" not in caplog.text
    assert "is due twice" not in caplog.text
    assert "claimed by a peer" not in caplog.text  # no firing claimed twice
    assert "moved on by another tick" not in caplog.text  # the schedule moved on once
    counts = r.dispatcher.counts()
    assert [counts[_thrice(s)] for s in (10, 11, 12)] == [1, 1, 0]
    started = [sent for _, firing, _, sent in r.dispatcher.calls if firing == _thrice(11)]
    assert started == [at("2026-11-30T14:00:14Z")]  # by the first catch-up, at the run's end
    assert counts["later@2026-11-30T14:00:45Z"] == counts["late@2026-11-30T14:00:50Z"] == 1
    skipped = store.run(_thrice(12))
    assert skipped is not None and skipped.status is RunStatus.SKIPPED
    assert _waiting(store) == []
    state = store.job_state("thrice")
    assert state is not None and state.open_firing is None and state.waiting == ()
    r.tick("2026-11-30T14:01:00Z")  # its next minute runs as ever
    assert r.dispatcher.counts()[_thrice(10, minute=1)] == 1
