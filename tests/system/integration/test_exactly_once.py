"""Exactly once, proved on AWS's own DynamoDB Local (moto's conditional writes are not atomic):
duplicate ticks, retried ticks, 8 tickers racing the same minutes, a ticker that dies between
claim and dispatch, and a failover between two regions."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.clock import FixedClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.environment.memory import MemoryEnvironmentStore
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs import load
from mini_scheduler.model import RunStatus
from mini_scheduler.tick import Ticker
from tests.emulators.dynamodb_local import make_client
from tests.unit.tick.harness import FakeDispatcher

pytestmark = pytest.mark.dynamodb_local

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


def _cron(jobs: int, *, overlap_skips: bool = False) -> str:
    """Half the jobs every minute, half every 15 s; with ``overlap_skips`` every fifth job has
    ``overlap: skip`` (and, with no recorder here, skips every firing after its first run)."""
    lines = ["jobs:"]
    for i in range(jobs):
        statement = "*/15 * * * * ?" if i % 2 else "0 * * * * ?"
        overlap = "skip" if overlap_skips and i % 5 == 0 else "allow"
        lines += [
            f'  - name: "job-{i:03d}"',
            f'    cron: "{statement}"',
            f'    service: "target-{i % 7}"',
            f'    overlap: "{overlap}"',
        ]
    return "\n".join(lines) + "\n"


@dataclass
class Region:
    claims: ClaimStore
    store: MemoryEnvironmentStore
    dispatcher: FakeDispatcher

    def ticker(
        self,
        cron: str,
        *,
        name: str = "prod",
        region: str = "us-east-1",
        clock: FixedClock | None = None,
    ) -> Ticker:
        parsed = load(cron, source="race.yaml")
        return Ticker(
            settings=Settings(
                state_table="t", environment_name=name, region=region, dispatch_workers=16
            ),
            cron=lambda: parsed,
            claims=self.claims,
            environment=ActiveEnvironment(self.store, name),
            dispatchers=Dispatchers({"lambda": self.dispatcher, "flow": self.dispatcher}),
            clock=clock or FixedClock(T0),
        )


@pytest.fixture
def region(dynamodb_local_endpoint: str) -> Iterator[Region]:
    client = make_client(dynamodb_local_endpoint)
    table = f"race-{uuid.uuid4().hex[:12]}"
    create_state_table(client, table)
    yield Region(DynamoDBClaimStore(table, client), MemoryEnvironmentStore(), FakeDispatcher())


def _race(region: Region, cron: str, minute: datetime, tickers: int = 8) -> None:
    """``tickers`` tickers of ``cron`` tick ``minute`` at once (a barrier starts them)."""
    barrier = threading.Barrier(tickers)

    def run() -> None:
        ticker = region.ticker(cron, clock=FixedClock(minute))
        barrier.wait()
        ticker.tick(minute)

    threads = [threading.Thread(target=run) for _ in range(tickers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _expected(cron: str, start: datetime, minutes: int) -> Counter[str]:
    parsed = load(cron, source="race.yaml")
    expected: Counter[str] = Counter()
    for job in parsed.jobs:
        for at in job.expression.firings(start, start + timedelta(minutes=minutes), job.tz):
            expected[f"{job.name}@{at.strftime('%Y-%m-%dT%H:%M:%SZ')}"] += 1
    return expected


def test_eight_tickers_racing_the_same_minutes_dispatch_each_firing_once(
    region: Region, capsys: pytest.CaptureFixture[str]
) -> None:
    cron = _cron(40, overlap_skips=True)
    region.ticker(cron).tick(T0 - timedelta(minutes=1))  # the region's first tick
    first = Counter(region.dispatcher.firing_ids)
    minutes, tickers = 3, 8
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()
    for minute in range(minutes):
        at = T0 + timedelta(minutes=minute)
        barrier = threading.Barrier(tickers)

        def run(at: datetime = at, barrier: threading.Barrier = barrier) -> None:
            ticker = region.ticker(cron, clock=FixedClock(at))
            barrier.wait()
            answer = ticker.tick(at).to_json()
            with lock:
                answers.append(answer)

        threads = [threading.Thread(target=run) for _ in range(tickers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    dispatched = Counter(region.dispatcher.firing_ids) - first
    expected = _expected(cron, T0, minutes)
    duplicates = sum(n - 1 for n in dispatched.values() if n > 1)
    claimed = sum(a["counts"]["claimed"] for a in answers)
    lost = sum(a["counts"]["skipped"].get("lost_claim", 0) for a in answers)
    overlap = sum(a["counts"]["skipped"].get("overlap", 0) for a in answers)
    with capsys.disabled():
        print(
            f"\nexactly once: {len(answers)} ticks, {sum(expected.values())} firings, "
            f"{sum(dispatched.values())} dispatches, {duplicates} duplicates, "
            f"{claimed} claims won, {lost} claims lost, {overlap} overlap skips"
        )
    assert duplicates == 0
    assert set(dispatched) <= set(expected)
    # every firing is claimed once: dispatched, or (overlap: skip) recorded SKIPPED
    assert claimed == sum(dispatched.values())
    assert claimed + overlap == sum(expected.values())
    # every other ticker lost each claimed firing; a firing skipped for overlap is lost too by
    # the tickers that came after the one that recorded it
    assert (tickers - 1) * claimed <= lost <= (tickers - 1) * (claimed + overlap)
    for firing_id in expected:
        run = region.claims.run(firing_id)
        assert run is not None and run.status in (RunStatus.DISPATCHED, RunStatus.SKIPPED)


def test_eight_tickers_racing_the_same_deferred_retries_dispatch_each_attempt_once(
    region: Region,
) -> None:
    """100 retries waiting, each deferred twice (a recorder and the sweep saw the failure):
    8 tickers read them in the same minute; each attempt reaches its target once, and every
    deferred firing is forgotten."""
    from mini_scheduler.claims.base import Deferred
    from mini_scheduler.model import Firing

    cron = "jobs:\n" + "".join(
        f'  - name: "job-{i:03d}"\n    cron: "0 0 3 * * ?"\n    service: "target-{i % 7}"\n'
        "    retry: {retries: 3}\n"
        for i in range(20)
    )
    region.ticker(cron).tick(T0 - timedelta(minutes=1))  # the region's first tick
    first = Counter(region.dispatcher.firing_ids)
    earlier = T0 - timedelta(hours=1)
    waiting = [
        Deferred(
            Firing(f"job-{i % 20:03d}", earlier + timedelta(minutes=i), attempt=2),
            due,
            "retry",
            who,
            T0,
        )
        for i in range(100)
        for due, who in (
            (T0 + timedelta(seconds=i % 60), "us-east-1/prod"),
            (T0 + timedelta(seconds=i % 60) + timedelta(milliseconds=1), "recorder"),
        )
    ]
    region.claims.defer(waiting)
    _race(region, cron, T0)
    dispatched = Counter(region.dispatcher.firing_ids) - first
    retries = {run_id: n for run_id, n in dispatched.items() if run_id.endswith("#2")}
    assert len(retries) == 100 and set(retries.values()) == {1}
    assert region.claims.due_deferred(T0 + timedelta(days=1)) == []


def test_eight_tickers_racing_runtime_schedules_and_a_backfill_dispatch_each_once(
    region: Region,
) -> None:
    """40 runtime cron schedules (their first firing 10 minutes late) and 20 one-time ones due
    in one minute, and a backfill of 30 past firings (10 of which ran): 8 tickers tick that
    minute at once. Each firing reaches its target once; each cron schedule keeps exactly one
    next firing (8 tickers wrote it: one item), the one-time ones end, the backfill is
    forgotten; what ran is not run again."""
    cron = 'jobs:\n  - name: "past"\n    cron: "0 * * * * ?"\n    service: "past-fn"\n'
    minute = T0 - timedelta(minutes=40)
    seed = region.ticker(cron, clock=FixedClock(minute))
    seed.tick(minute - timedelta(minutes=1))  # the region's first tick
    for k in range(10):  # past@13:20 .. 13:29 run on schedule
        seed.tick(minute + timedelta(minutes=k))
    operator = region.ticker(cron, clock=FixedClock(T0 - timedelta(minutes=10))).operator
    operator.create_schedules(
        [
            {"name": f"cron-{i:02d}", "cron": f"{i} * * * * ?", "service": f"target-{i % 7}"}
            for i in range(1, 41)
        ]
        + [
            {"name": f"once-{i:02d}", "at": f"2026-11-30T14:00:{40 + i}Z", "service": "once-fn"}
            for i in range(20)
        ],
        "jane.doe",
    )
    operator.backfill("past", "2026-11-30T13:20:00Z", "2026-11-30T13:50:00Z", 1000, "jane.doe")
    before = Counter(region.dispatcher.firing_ids)
    _race(region, cron, T0)
    sent = Counter(region.dispatcher.firing_ids) - before
    assert set(sent.values()) == {1}
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    assert {i for i in sent if i.startswith("cron-")} == {
        f"cron-{i:02d}@2026-11-30T{hm}:{i:02d}Z"
        for i in range(1, 41)
        for hm in ("13:50", "14:00")  # the first, 10 minutes late, then the window's own
    }
    assert sum(1 for i in sent if i.startswith("once-")) == 20
    backfilled = sorted(c[1] for c in region.dispatcher.calls if c[2].get("backfill"))
    assert backfilled == [
        f"past@{(T0 - timedelta(minutes=30 - k)).strftime(stamp)}" for k in range(20)
    ]  # 13:30 to 13:49: 13:20 to 13:29 ran
    pending = region.claims.pending_deferred("schedule")
    assert sorted(item.firing.id for item in pending) == [
        f"cron-{i:02d}@2026-11-30T14:01:{i:02d}Z" for i in range(1, 41)
    ]
    assert region.claims.pending_deferred("backfill") == []


def test_a_duplicate_tick_and_a_retried_tick_dispatch_nothing_twice(region: Region) -> None:
    cron = _cron(10)
    ticker = region.ticker(cron)
    ticker.tick(T0 - timedelta(minutes=1))
    ticker.tick(T0)
    ticker.tick(T0)  # a duplicate delivery of the same minute
    # a retried tick: the first attempt dispatched everything but failed to move the watermark
    real = region.claims.advance_watermark

    def broken(scope: str, to: datetime) -> None:
        raise StoreError("DynamoDB UpdateItem (watermark) failed - InternalServerError")

    region.claims.advance_watermark = broken  # type: ignore[method-assign]
    with pytest.raises(StoreError):
        region.ticker(cron, clock=FixedClock(T0 + timedelta(minutes=1))).tick(
            T0 + timedelta(minutes=1)
        )
    region.claims.advance_watermark = real  # type: ignore[method-assign]
    retry = region.ticker(cron, clock=FixedClock(T0 + timedelta(minutes=1)))
    answer = retry.tick(T0 + timedelta(minutes=1)).to_json()
    assert answer["counts"]["claimed"] == 0 and answer["counts"]["dispatched"] == 0
    assert max(Counter(region.dispatcher.firing_ids).values()) == 1
    assert Counter(region.dispatcher.firing_ids) == _expected(cron, T0 - timedelta(minutes=1), 3)


class _Crash(Exception):
    """The ticker's container dies (a timeout, an out-of-memory kill)."""


def test_a_ticker_that_dies_between_claim_and_dispatch_is_taken_over_once(region: Region) -> None:
    cron = """
jobs:
  - name: "nightly"
    cron: "0 0 14 * * ?"
    service: "nightly-fn"
"""
    region.ticker(cron).tick(T0 - timedelta(minutes=1))
    dying = region.ticker(cron)
    dying.executor.dispatching.dispatchers = Dispatchers({"lambda": _Dying()})  # type: ignore[assignment]
    with pytest.raises(_Crash):
        dying.tick(T0)
    run = region.claims.run("nightly@2026-11-30T14:00:00Z")
    assert run is not None and run.status is RunStatus.CLAIMED
    for minute in (1, 2, 3, 4):  # the watermark never moved: later ticks see it as a misfire
        at = T0 + timedelta(minutes=minute)
        region.ticker(cron, clock=FixedClock(at)).tick(at)
    assert region.dispatcher.firing_ids == ["nightly@2026-11-30T14:00:00Z"]
    run = region.claims.run("nightly@2026-11-30T14:00:00Z")
    assert run is not None and run.status is RunStatus.DISPATCHED


class _Dying:
    def dispatch(self, *args: Any) -> str:
        raise _Crash


def test_a_failover_between_two_regions_runs_every_firing_once_where_it_was_active(
    dynamodb_local_endpoint: str,
) -> None:
    cron = _cron(6)
    client = make_client(dynamodb_local_endpoint)
    regions = {}
    for name in ("us-east-1", "us-west-2"):  # a stack (and a state table) per region
        table = f"region-{name}-{uuid.uuid4().hex[:8]}"
        create_state_table(client, table)
        regions[name] = Region(
            DynamoDBClaimStore(table, client), MemoryEnvironmentStore(), FakeDispatcher()
        )
    east, west = regions["us-east-1"], regions["us-west-2"]

    def tick_both(at: datetime) -> None:
        east.ticker(cron, name="prod", clock=FixedClock(at)).tick(at)
        west.ticker(cron, name="DR", region="us-west-2", clock=FixedClock(at)).tick(at)

    tick_both(T0 - timedelta(minutes=1))
    east_before = len(east.dispatcher.firing_ids)
    for minute in range(3):
        tick_both(T0 + timedelta(minutes=minute))
    for store in (east.store, west.store):  # aws ssm put-parameter --value DR in each region
        store.value = "DR"
    for minute in range(3, 6):
        tick_both(T0 + timedelta(minutes=minute))
    ran_east = Counter(east.dispatcher.firing_ids[east_before:])
    ran_west = Counter(west.dispatcher.firing_ids)
    expected = _expected(cron, T0, 6)
    assert ran_east + ran_west == expected  # each firing exactly once, none lost
    failover = T0 + timedelta(minutes=3)
    assert all(
        datetime.fromisoformat(f.partition("@")[2].replace("Z", "+00:00")) < failover
        for f in ran_east
    )
    assert all(
        datetime.fromisoformat(f.partition("@")[2].replace("Z", "+00:00")) >= failover
        for f in ran_west
    )
