"""A failover carries everything, on AWS's own DynamoDB Local, two regions each with its own
state table: the runtime schedules (recurring and one-time), a pause, a retry and a backfill
waiting at the moment of the failover run in the region that takes over, each firing once
across the two, none lost; and when the old region cannot be reached, a firing it may have run
is recorded SKIPPED with the reason, never run twice (docs/fail-over.md, "What a failover
carries")."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.carry.carrier import Peers
from mini_scheduler.claims.base import RETRY, ClaimRequest, ClaimStore, Deferred
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.clock import FixedClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.environment.memory import MemoryEnvironmentStore
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs import load
from mini_scheduler.model import Firing, RunStatus
from mini_scheduler.tick import Ticker
from tests.emulators.dynamodb_local import make_client
from tests.unit.tick.harness import FakeDispatcher

pytestmark = pytest.mark.dynamodb_local

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
FAILOVER = T0 + timedelta(minutes=3)
CRON = """\
jobs:
  - name: "minutely"
    cron: "0 * * * * ?"
    service: "minutely-fn"
  - name: "quiet"
    cron: "15 * * * * ?"
    service: "quiet-fn"
  - name: "flaky"
    cron: "0 0 3 * * ?"
    service: "flaky-fn"
    retry: {retries: 3}
"""


class Reachable:
    """A region's store as another region reaches it: every call fails while ``down``."""

    def __init__(self, store: ClaimStore) -> None:
        self._store = store
        self.down = False

    def __getattr__(self, name: str) -> Any:
        if self.down:
            raise StoreError(f"{name}: could not connect to the endpoint URL")
        return getattr(self._store, name)


@dataclass
class Region:
    name: str
    environment: str
    claims: DynamoDBClaimStore
    store: MemoryEnvironmentStore = field(default_factory=MemoryEnvironmentStore)
    dispatcher: FakeDispatcher = field(default_factory=FakeDispatcher)
    seen_by_peer: Reachable | None = None
    peers: Peers | None = None
    cron: str = CRON

    def ticker(
        self, at: datetime, *, carrying: bool = True, claims: ClaimStore | None = None
    ) -> Ticker:
        parsed = load(self.cron, source="cron.yaml")
        return Ticker(
            settings=Settings(state_table="t", environment_name=self.environment, region=self.name),
            cron=lambda: parsed,
            claims=claims or self.claims,
            environment=ActiveEnvironment(self.store, self.environment),
            dispatchers=Dispatchers({"lambda": self.dispatcher, "flow": self.dispatcher}),
            clock=FixedClock(at),
            peers=self.peers if carrying else None,
        )


@pytest.fixture
def regions(dynamodb_local_endpoint: str) -> Iterator[tuple[Region, Region]]:
    client = make_client(dynamodb_local_endpoint)
    made = []
    for name, environment in (("us-east-1", "prod"), ("us-west-2", "DR")):
        table = f"carry-{name}-{uuid.uuid4().hex[:8]}"
        create_state_table(client, table)
        region = Region(name, environment, DynamoDBClaimStore(table, client))
        region.seen_by_peer = Reachable(region.claims)
        made.append(region)
    east, west = made

    def reach(region: Region) -> Callable[[], ClaimStore]:
        return lambda: region.seen_by_peer  # type: ignore[return-value]

    east.peers = Peers("us-east-1", {"us-west-2": reach(west)})
    west.peers = Peers("us-west-2", {"us-east-1": reach(east)})
    yield east, west


def _fail_over(east: Region, west: Region) -> None:
    for region in (east, west):  # the region giving up first, as docs/fail-over.md says
        region.store.value = "DR"


def _tick_both(east: Region, west: Region, at: datetime) -> None:
    east.ticker(at).tick(at)
    west.ticker(at).tick(at)


def _seed(east: Region) -> None:
    """What the operator did in us-east-1 at 13:59: two runtime schedules, a one-time one
    due after the failover, a pause, a backfill of 30 firings at 5 a minute, and a retry of
    flaky's failed run due after the failover."""
    operator = east.ticker(T0 - timedelta(minutes=1)).operator
    answer = operator.create_schedules(
        [
            {"name": "every", "cron": "30 * * * * ?", "service": "every-fn"},
            {"name": "once-before", "at": "2026-11-30T14:01:10Z", "service": "once-fn"},
            {"name": "once-after", "at": "2026-11-30T14:05:10Z", "service": "once-fn"},
        ],
        "jane.doe",
    )
    assert answer["regions"] == {"inStep": ["us-west-2"]}  # after the answer, in both
    operator.set_paused("quiet", True, "jane.doe")
    operator.backfill("minutely", "2026-11-30T13:00:00Z", "2026-11-30T13:30:00Z", 5, "jane.doe")
    failed = Firing("flaky", datetime(2026, 11, 30, 3, 0, tzinfo=UTC))
    east.claims.defer(
        [Deferred(failed.retry(), FAILOVER + timedelta(seconds=20), RETRY, "us-east-1/prod", T0)]
    )


def _expected() -> Counter[str]:
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    minutes = [T0 - timedelta(minutes=1) + timedelta(minutes=k) for k in range(11)]
    expected = Counter(f"minutely@{m.strftime(stamp)}" for m in minutes)
    expected.update(["minutely@2026-11-30T13:58:00Z", "quiet@2026-11-30T13:58:15Z"])  # unpaused
    expected.update(f"every@{(m + timedelta(seconds=30)).strftime(stamp)}" for m in minutes)
    expected.update(["once-before@2026-11-30T14:01:10Z", "once-after@2026-11-30T14:05:10Z"])
    expected.update(
        f"minutely@{(T0 - timedelta(minutes=60 - k)).strftime(stamp)}" for k in range(30)
    )
    expected.update(["flaky@2026-11-30T03:00:00Z#2"])
    return expected


def test_a_failover_runs_every_waiting_firing_once_in_the_region_taking_over(
    regions: tuple[Region, Region],
) -> None:
    east, west = regions
    _tick_both(east, west, T0 - timedelta(minutes=2))  # the regions' first ticks
    _seed(east)
    assert {d.name for d in west.claims.schedules()} == {"every", "once-before", "once-after"}
    assert set(west.claims.control("").paused) == {"quiet"}
    for minute in range(-1, 3):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    # A retry the recorder of us-east-1 deferred after its last tick brought us-west-2 in step
    late = Firing("flaky", datetime(2026, 11, 30, 2, 0, tzinfo=UTC)).retry()
    east.claims.defer(
        [Deferred(late, FAILOVER + timedelta(seconds=5), RETRY, "us-east-1/prod", T0)]
    )
    _fail_over(east, west)
    _tick_both(east, west, FAILOVER)
    assert late.id in west.dispatcher.firing_ids  # taken over at the first active tick
    for minute in range(4, 10):
        _tick_both(east, west, T0 + timedelta(minutes=minute))

    ran = east.dispatcher.counts() + west.dispatcher.counts()
    assert ran == _expected() + Counter([late.id])  # each firing once, none lost
    assert all(_at(f) < FAILOVER for f in east.dispatcher.firing_ids if "@2026-11-30T14" in f)
    assert {f for f in west.dispatcher.firing_ids if not f.startswith("minutely@")} >= {
        "once-after@2026-11-30T14:05:10Z",
        "flaky@2026-11-30T03:00:00Z#2",
    }
    assert [f for f in ran if f.startswith("quiet@")] == ["quiet@2026-11-30T13:58:15Z"]
    taken = east.claims.run("flaky@2026-11-30T03:00:00Z#2")  # east's history says where
    assert taken is not None and taken.status is RunStatus.SKIPPED
    assert taken.reason == "taken over by us-west-2: it runs there"
    backfilled_west = [c for c in west.dispatcher.calls if c[2].get("backfill")]
    assert backfilled_west  # the backfill went on in us-west-2
    assert east.claims.pending_deferred("backfill") == []
    assert west.claims.pending_deferred("backfill") == []


def test_an_unreachable_region_s_firings_that_may_have_run_there_are_skipped_not_run_twice(
    regions: tuple[Region, Region],
) -> None:
    """us-east-1 runs its 14:02 tick and is gone before it brings us-west-2 in step: its
    firings of 14:02 may have run, so us-west-2 records them SKIPPED, naming us-east-1; what
    falls due after us-west-2 became active runs there (docs/fail-over.md, the window)."""
    east, west = regions
    _tick_both(east, west, T0 - timedelta(minutes=2))
    _seed(east)
    for minute in range(-1, 2):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    last = T0 + timedelta(minutes=2)
    east.ticker(last, carrying=False).tick(last)  # its last tick: gone before the carry
    west.ticker(last).tick(last)
    assert east.seen_by_peer is not None
    east.seen_by_peer.down = True
    west.store.value = "DR"  # east's parameter cannot be written: it is gone
    for minute in range(3, 10):
        at = T0 + timedelta(minutes=minute)
        west.ticker(at).tick(at)

    ran = east.dispatcher.counts() + west.dispatcher.counts()
    assert max(ran.values()) == 1  # nothing ran twice
    skipped = west.claims.run("every@2026-11-30T14:02:30Z")
    assert skipped is not None and skipped.status is RunStatus.SKIPPED
    assert skipped.reason is not None and skipped.reason.startswith("us-east-1 cannot be reached")
    assert "every@2026-11-30T14:02:30Z" in east.dispatcher.firing_ids
    for after in ("every@2026-11-30T14:03:30Z", "once-after@2026-11-30T14:05:10Z"):
        assert after in west.dispatcher.firing_ids  # due after the takeover: run
    assert "flaky@2026-11-30T03:00:00Z#2" in west.dispatcher.firing_ids
    lost = _expected() - ran
    assert all(
        T0 + timedelta(minutes=2) <= _at(f) < FAILOVER for f in lost if "@2026-11-30T14" in f
    )


def _at(firing_id: str) -> datetime:
    return datetime.fromisoformat(firing_id.partition("@")[2].split("#")[0].replace("Z", "+00:00"))


SOAK_CRON = """\
jobs:
  - name: "minutely"
    cron: "0 * * * * ?"
    service: "minutely-fn"
  - name: "flaky"
    cron: "30 * * * * ?"
    service: "flaky-fn"
    retry: {retries: 3, backoff: 45, factor: 1}
    timeout: 3600  # its second attempts stay open through the soak (nothing closes them)
"""


class FirstAttemptsFail(FakeDispatcher):
    """flaky-fn refuses every first attempt: each firing of flaky waits for its retry, so a
    retry is waiting at every failover."""

    def dispatch(self, target: Any, firing_id: str, payload: Any) -> str:
        if target.name == "flaky-fn" and "#" not in firing_id:
            from mini_scheduler.errors import DispatchError

            raise DispatchError("Lambda Invoke flaky-fn failed - TooManyRequestsException")
        return super().dispatch(target, firing_id, payload)


def test_a_soak_of_four_failovers_runs_every_kind_of_firing_once(
    regions: tuple[Region, Region],
) -> None:
    """20 minutes, two regions, four failovers (to DR at 14:04, back at 14:09, to DR at 14:13,
    back at 14:17): cron.yaml's firings, retries that wait across every failover, a runtime
    schedule three times a minute, 17 one-time schedules, and a backfill of 60 firings at 4 a
    minute. Each firing reaches its target exactly once, none is lost."""
    east, west = regions
    east.dispatcher, west.dispatcher = FirstAttemptsFail(), FirstAttemptsFail()
    east.cron = west.cron = SOAK_CRON
    start = T0 - timedelta(minutes=1)
    operator = east.ticker(start).operator  # before the first tick: its minute's firings run
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    once = [T0 + timedelta(seconds=70 * k + 5) for k in range(17)]
    operator.create_schedules(
        [{"name": "thrice", "cron": "10/20 * * * * ?", "service": "thrice-fn"}]
        + [
            {"name": f"once-{k:02d}", "at": at.strftime(stamp), "service": "once-fn"}
            for k, at in enumerate(once)
        ],
        "jane.doe",
    )
    operator.backfill("minutely", "2026-11-30T12:00:00Z", "2026-11-30T13:00:00Z", 4, "jane.doe")
    active = "prod"
    east.ticker(start).tick(start)
    west.ticker(start).tick(start)
    for minute in range(20):
        if minute in (4, 9, 13, 17):
            active = "DR" if active == "prod" else "prod"
            for region in (east, west) if active == "DR" else (west, east):
                region.store.value = active  # the region giving up first
        at = T0 + timedelta(minutes=minute)
        east.ticker(at).tick(at)
        west.ticker(at).tick(at)

    ran = east.dispatcher.counts() + west.dispatcher.counts()
    minutes = [start + timedelta(minutes=k) for k in range(21)]
    expected = Counter(f"minutely@{m.strftime(stamp)}" for m in minutes)
    expected.update(  # the retries of 13:59:30 .. 14:18:30 (14:19:30's is due after the soak)
        f"flaky@{(m + timedelta(seconds=30)).strftime(stamp)}#2" for m in minutes[:-1]
    )
    expected.update(
        f"thrice@{(m + timedelta(seconds=s)).strftime(stamp)}"
        for m in minutes
        for s in (10, 30, 50)
    )
    expected.update(f"once-{k:02d}@{at.strftime(stamp)}" for k, at in enumerate(once))
    expected.update(
        f"minutely@{(T0 - timedelta(minutes=120 - k)).strftime(stamp)}" for k in range(60)
    )
    duplicates = {f: n for f, n in ran.items() if n > 1}
    assert duplicates == {}
    assert sorted(expected - ran) == []  # none lost
    assert sorted(ran - expected) == []  # nothing else ran
    for region in (east, west):
        assert region.claims.pending_deferred("backfill") == []


BUFFERED_CRON = """\
jobs:
  - name: "solo"
    cron: "0 * * * * ?"
    service: "solo-fn"
    overlap: "buffer_all"
    max_buffered: 2
    timeout: 3600
"""


def _solo(minute: int) -> str:
    return (T0 + timedelta(minutes=minute)).strftime("solo@%Y-%m-%dT%H:%M:%SZ")


def test_a_waiting_firing_carried_keeps_the_job_s_limit_and_starts_once_where_it_went(
    regions: tuple[Region, Region],
) -> None:
    """buffer_all, max_buffered 2: us-east-1's run of 13:58 is still open when it fails over
    at 14:02, with 13:59 and 14:00 waiting (14:01 skipped: two wait). us-west-2 takes them over
    with their places: 13:59 starts there at once (its slot there is free), 14:02 waits beside
    14:00 and 14:03 is skipped as us-east-1 would have (two wait); 14:00 starts only once
    13:59's run there has ended. Nothing of it starts in us-east-1 after the failover, even
    once its own run ends."""
    east, west = regions
    east.cron = west.cron = BUFFERED_CRON
    for minute in (-2, -1, 0, 1):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    assert [d.firing.id for d in west.claims.pending_deferred("buffer")] == [_solo(-1), _solo(0)]
    west_state = west.claims.job_state("solo")
    assert west_state is not None and west_state.waiting == (_solo(-1), _solo(0))
    failover = T0 + timedelta(minutes=2)
    _fail_over(east, west)
    _tick_both(east, west, failover)
    assert west.dispatcher.firing_ids == [_solo(-1)]
    _tick_both(east, west, T0 + timedelta(minutes=3))
    skipped = west.claims.run(_solo(3))
    assert skipped is not None and skipped.status is RunStatus.SKIPPED
    assert skipped.reason == (
        "2 firings are already waiting for the previous run to end "
        "(overlap: buffer_all, max_buffered 2)"
    )
    assert [d.firing.id for d in west.claims.pending_deferred("buffer")] == [_solo(0), _solo(2)]
    assert _solo(0) not in west.dispatcher.firing_ids  # its run there is open yet
    now = T0 + timedelta(minutes=3, seconds=30)
    assert east.claims.close(_solo(-2), RunStatus.SUCCEEDED, now=now) is not None
    assert west.claims.close(_solo(-1), RunStatus.SUCCEEDED, now=now) is not None
    for minute in (4, 5):
        _tick_both(east, west, T0 + timedelta(minutes=minute))

    assert east.dispatcher.firing_ids == [_solo(-2)]
    assert west.dispatcher.firing_ids == [_solo(-1), _solo(0)]
    ran = east.dispatcher.counts() + west.dispatcher.counts()
    assert max(ran.values()) == 1
    full = east.claims.run(_solo(1))
    assert full is not None and full.status is RunStatus.SKIPPED
    for firing_id in (_solo(-1), _solo(0)):  # east's history says where they ran
        taken = east.claims.run(firing_id)
        assert taken is not None and taken.reason == "taken over by us-west-2: it runs there"
    still = west.claims.pending_deferred("buffer")  # us-west-2's own, carried back
    assert [d.firing.id for d in still] == [_solo(2), _solo(4)]
    assert east.claims.pending_deferred("buffer") == still
    east_state = east.claims.job_state("solo")
    assert east_state is not None and east_state.waiting == (_solo(2), _solo(4))


def test_a_firing_taken_over_and_still_waiting_at_a_fail_back_runs_once(
    regions: tuple[Region, Region],
) -> None:
    """us-east-1 fails over at 14:02 with 13:59 and 14:00 waiting; us-west-2 takes both over,
    starts 13:59 and keeps 14:00 waiting behind its run; it fails back at 14:04 while that run
    is open. 14:00 must still start once, somewhere."""
    east, west = regions
    east.cron = west.cron = BUFFERED_CRON
    for minute in (-2, -1, 0, 1):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    _fail_over(east, west)
    for minute in (2, 3):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    for region in (west, east):  # back: the region giving up first
        region.store.value = "prod"
    now = T0 + timedelta(minutes=4)
    assert east.claims.close(_solo(-2), RunStatus.SUCCEEDED, now=now) is not None
    for minute in range(4, 9):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    assert west.claims.close(_solo(-1), RunStatus.SUCCEEDED, now=now) is not None
    for minute in range(9, 12):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    ran = east.dispatcher.counts() + west.dispatcher.counts()
    assert ran[_solo(0)] == 1


def _buffered_failover_and_back(east: Region, west: Region) -> None:
    """The scenario above up to the fail-back: us-east-1 fails over at 14:02 with 13:59 and
    14:00 waiting behind its open run of 13:58; us-west-2 takes both over, starts 13:59 and
    keeps 14:00 waiting behind it; at 14:04 it fails back (the region giving up first)."""
    east.cron = west.cron = BUFFERED_CRON
    for minute in (-2, -1, 0, 1):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    _fail_over(east, west)
    for minute in (2, 3):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    assert west.dispatcher.firing_ids == [_solo(-1)]
    assert _solo(0) in {d.firing.id for d in west.claims.pending_deferred("buffer")}
    for region in (west, east):
        region.store.value = "prod"


class ClaimsTogether:
    """A region's store whose claims of ``firing_id`` wait for ``parties`` tickers to be there,
    so that they claim it at once."""

    def __init__(self, store: ClaimStore, firing_id: str, parties: int) -> None:
        self._store = store
        self._firing_id = firing_id
        self._barrier = threading.Barrier(parties, timeout=20)

    def claim_many(self, requests: list[ClaimRequest], **kwargs: Any) -> Any:
        if any(r.firing.id == self._firing_id for r in requests):
            self._barrier.wait()
        return self._store.claim_many(requests, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_two_tickers_of_the_region_failed_back_to_race_for_a_firing_taken_back_one_runs_it(
    regions: tuple[Region, Region],
) -> None:
    """At the fail-back, two tickers of us-east-1 tick the same minute: both take 14:00 back
    (one writes the fence in us-west-2's store, the other finds it) and claim it over the
    takeover's record at once; exactly one wins, and us-west-2 never runs it."""
    east, west = regions
    _buffered_failover_and_back(east, west)
    at = T0 + timedelta(minutes=4)
    assert east.claims.close(_solo(-2), RunStatus.SUCCEEDED, now=at) is not None
    west.ticker(at).tick(at)
    together = ClaimsTogether(east.claims, _solo(0), 2)
    tickers = [east.ticker(at, claims=together) for _ in range(2)]  # type: ignore[arg-type]
    errors: list[BaseException] = []

    def tick(ticker: Ticker) -> None:
        try:
            ticker.tick(at)
        except BaseException as exc:  # said by the test
            errors.append(exc)

    threads = [threading.Thread(target=tick, args=(t,)) for t in tickers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert east.dispatcher.counts()[_solo(0)] == 1
    run = east.claims.run(_solo(0))
    assert run is not None and run.replaced_skip is not None
    assert run.replaced_skip["reason"] == "taken over by us-west-2: it runs there"
    assert west.claims.close(_solo(-1), RunStatus.SUCCEEDED, now=at) is not None
    for minute in (5, 6):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    _fail_over(east, west)  # to us-west-2 again: its copy is gone, its claim would lose
    for minute in (7, 8):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    ran = east.dispatcher.counts() + west.dispatcher.counts()
    assert ran[_solo(0)] == 1 and max(ran.values()) == 1
    fence = west.claims.run(_solo(0))
    assert fence is not None and fence.status is RunStatus.SKIPPED
    assert fence.reason == "taken over by us-east-1: it runs there"


def test_a_firing_taken_back_waits_for_the_slot_of_the_region_failed_back_to_and_runs_there(
    regions: tuple[Region, Region],
) -> None:
    """At the fail-back 14:00 still waits in us-west-2 and us-east-1's run of 13:58 is still
    open: us-east-1 takes 14:00 back and keeps it waiting; us-west-2's run of 13:59 ends (its
    slot there frees, while it stands by); us-east-1's slot frees at 14:06 and 14:00 starts
    there, once; never in us-west-2, even once it is active again."""
    east, west = regions
    _buffered_failover_and_back(east, west)
    for minute in (4, 5):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    assert _solo(0) not in east.dispatcher.firing_ids  # its slot is held: it waits
    assert _solo(0) in {d.firing.id for d in east.claims.pending_deferred("buffer")}
    ended = T0 + timedelta(minutes=5, seconds=30)
    assert west.claims.close(_solo(-1), RunStatus.SUCCEEDED, now=ended) is not None
    assert east.claims.close(_solo(-2), RunStatus.SUCCEEDED, now=ended) is not None
    _tick_both(east, west, T0 + timedelta(minutes=6))
    assert east.dispatcher.firing_ids == [_solo(-2), _solo(0)]
    _fail_over(east, west)
    for minute in (7, 8, 9):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    assert _solo(0) not in west.dispatcher.firing_ids
    ran = east.dispatcher.counts() + west.dispatcher.counts()
    assert ran[_solo(0)] == 1 and max(ran.values()) == 1
    assert _solo(0) not in {d.firing.id for d in west.claims.pending_deferred("buffer")}
    assert _solo(0) not in {d.firing.id for d in east.claims.pending_deferred("buffer")}


def test_a_firing_taken_back_and_still_waiting_at_a_second_failover_waits_for_its_region(
    regions: tuple[Region, Region],
) -> None:
    """At the fail-back us-east-1 takes 14:00 back and keeps it waiting behind its open run;
    it fails over to us-west-2 again at 14:06, whose slot is free: us-west-2 took it over
    first, so its fence is the earlier, and it never runs it (the two fences decide who may
    run it: the later one's region). It waits in us-east-1 and starts there once, at the next
    fail-back; us-west-2's own waiting firing, which us-east-1 took over, starts in us-west-2
    first."""
    east, west = regions
    _buffered_failover_and_back(east, west)
    for minute in (4, 5):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    _fail_over(east, west)
    ended = T0 + timedelta(minutes=5, seconds=30)
    assert west.claims.close(_solo(-1), RunStatus.SUCCEEDED, now=ended) is not None
    for minute in (6, 7, 8):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    # 14:02, us-west-2's own, taken over by us-east-1 at the fail-back, is taken back here
    # and starts first, ahead of 14:06; 14:00 (us-east-1's, taken back there) waits there
    assert west.dispatcher.firing_ids == [_solo(-1), _solo(2)]
    assert _solo(0) in {d.firing.id for d in east.claims.pending_deferred("buffer")}
    for region in (west, east):
        region.store.value = "prod"
    assert east.claims.close(_solo(-2), RunStatus.SUCCEEDED, now=ended) is not None
    for minute in (9, 10):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    ran = east.dispatcher.counts() + west.dispatcher.counts()
    assert ran[_solo(0)] == 1 and max(ran.values()) == 1
    assert _solo(0) in east.dispatcher.firing_ids


class ClaimsAfter:
    """A region's store that runs ``between`` (once) before it claims ``firing_id``."""

    def __init__(self, store: ClaimStore, firing_id: str, between: Callable[[], None]) -> None:
        self._store = store
        self._firing_id = firing_id
        self._between: Callable[[], None] | None = between

    def claim_many(self, requests: list[ClaimRequest], **kwargs: Any) -> Any:
        if self._between is not None and any(r.firing.id == self._firing_id for r in requests):
            between, self._between = self._between, None
            between()
        return self._store.claim_many(requests, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_second_failover_between_a_take_back_and_its_claim_runs_the_firing_once(
    regions: tuple[Region, Region],
) -> None:
    """us-east-1's tick at the fail-back takes 14:00 back (its fence is in us-west-2's store)
    and, before it claims it, a second failover makes us-west-2 active, whose slot is free and
    whose tick runs then: us-west-2 sees the later fence is us-east-1's and does not run it;
    us-east-1's claim, over its own fence, does: once."""
    east, west = regions
    _buffered_failover_and_back(east, west)
    at = T0 + timedelta(minutes=4)
    assert east.claims.close(_solo(-2), RunStatus.SUCCEEDED, now=at) is not None
    assert west.claims.close(_solo(-1), RunStatus.SUCCEEDED, now=at) is not None

    def second_failover() -> None:
        fence = west.claims.run(_solo(0))
        assert fence is not None and fence.reason == "taken over by us-east-1: it runs there"
        west.store.value = "DR"
        west.ticker(at).tick(at)

    east.ticker(at, claims=ClaimsAfter(east.claims, _solo(0), second_failover)).tick(at)  # type: ignore[arg-type]
    assert west.store.value == "DR"  # the second failover came between
    east.store.value = "DR"
    for minute in (5, 6):
        _tick_both(east, west, T0 + timedelta(minutes=minute))
    ran = east.dispatcher.counts() + west.dispatcher.counts()
    assert ran[_solo(0)] == 1 and max(ran.values()) == 1
    assert _solo(0) in east.dispatcher.firing_ids
