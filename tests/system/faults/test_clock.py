"""Clocks that disagree with the schedule. The minute a tick handles comes from its event, never
from the container's clock, so a clock 30 s ahead or behind between ticks, duplicate deliveries
to containers whose clocks disagree, and a tick delivered two hours late run nothing twice and
lose nothing; what was recorded skipped stays skipped. Claims on DynamoDB Local."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

import pytest

from mini_scheduler.claims.records import RunRecord
from mini_scheduler.clock import FixedClock
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.jobs import load
from mini_scheduler.model import iso_seconds, parse_instant
from mini_scheduler.tick import Ticker
from tests.system.faults.conftest import T0, Cloud
from tests.unit.tick.harness import FakeDispatcher

pytestmark = pytest.mark.dynamodb_local

MINUTE = timedelta(minutes=1)
CRON = """
jobs:
  - name: "minutely"
    cron: "0 * * * * ?"
    service: "fault-target"
  - name: "quarter"
    cron: "*/15 * * * * ?"
    service: "fault-target"
  - name: "half"
    cron: "30 * * * * ?"
    service: "fault-target"
    overlap: "skip"
    timeout: 20
"""


def _expected(cron: str, start: datetime, end: datetime) -> Counter[str]:
    parsed = load(cron, source="clock.yaml")
    return Counter(
        f"{job.name}@{iso_seconds(at)}"
        for job in parsed.jobs
        for at in job.expression.firings(start, end, job.tz)
    )


def _container(cloud: Cloud, dispatcher: FakeDispatcher, clock: FixedClock) -> Ticker:
    return cloud.ticker(
        cloud.write_cron(CRON),
        clock=clock,
        dispatch=Dispatchers({"lambda": dispatcher, "flow": dispatcher}),
    )


def _accounted(records: list[RunRecord], firing_id: str) -> bool:
    return any(r.firing_id == firing_id for r in records)


@pytest.mark.parametrize(
    "skews",
    [[30] * 10, [-30] * 10, [30, -30] * 5, [-30, 30] * 5],
    ids=["ahead", "behind", "ahead-then-behind", "behind-then-ahead"],
)
def test_a_clock_30_s_off_between_ticks_runs_every_firing_once_never_early(
    cloud: Cloud, skews: list[int]
) -> None:
    clock = FixedClock(T0 - MINUTE)
    dispatcher = FakeDispatcher(clock)
    ticker = _container(cloud, dispatcher, clock)
    ticker.tick(T0 - MINUTE)  # the region's first tick
    for index, skew in enumerate(skews):
        minute = T0 + index * MINUTE
        clock.set(minute + timedelta(seconds=skew))  # delivered early or late, by this clock
        answer = ticker.tick(minute).to_json()
        assert answer["minute"] == iso_seconds(minute)  # the event's minute, not the clock's

    end = T0 + len(skews) * MINUTE
    expected = _expected(CRON, T0 - MINUTE, end)
    counts = dispatcher.counts()
    assert [f for f, n in counts.items() if n > 1] == []  # none twice
    store = cloud.store()
    for firing_id in expected:  # none lost: each dispatched, or recorded skipped (overlap)
        record = store.run(firing_id)
        assert record is not None, firing_id
        assert (counts[firing_id] == 1) == (record.status.value != "SKIPPED"), record
    for _, firing_id, _, dispatched_at in dispatcher.calls:  # never before its second
        scheduled = parse_instant(firing_id.rpartition("@")[2])
        assert dispatched_at is not None and dispatched_at >= scheduled, firing_id
    assert store.control("us-east-1/prod").watermark == end


def test_every_tick_delivered_to_two_containers_30_s_apart_runs_each_firing_once(
    cloud: Cloud,
) -> None:
    ahead, behind = FixedClock(T0 - MINUTE), FixedClock(T0 - MINUTE)
    dispatcher = FakeDispatcher()
    first = _container(cloud, dispatcher, ahead)
    second = _container(cloud, dispatcher, behind)
    first.tick(T0 - MINUTE)
    for index in range(8):
        minute = T0 + index * MINUTE
        ahead.set(minute + timedelta(seconds=30))
        behind.set(minute - timedelta(seconds=30))
        pair = (first, second) if index % 2 else (second, first)
        for ticker in pair:  # a duplicate delivery, each to a container of its own
            ticker.tick(minute)
    expected = _expected(CRON, T0 - MINUTE, T0 + 8 * MINUTE)
    counts = dispatcher.counts()
    assert [f for f, n in counts.items() if n > 1] == []
    store = cloud.store()
    assert [f for f in expected if store.run(f) is None] == []


def test_a_tick_delivered_two_hours_late_runs_nothing_twice_and_skips_stay_skipped(
    cloud: Cloud,
) -> None:
    cron = """
jobs:
  - name: "now"
    cron: "0 * * * * ?"
    service: "fault-target"
  - name: "all"
    cron: "0 */5 * * * ?"
    service: "fault-target"
    misfire: "fire_all"
  - name: "skip"
    cron: "0 * * * * ?"
    service: "fault-target"
    misfire: "skip"
"""
    clock = FixedClock(T0 - MINUTE)
    dispatcher = FakeDispatcher(clock)
    ticker = cloud.ticker(
        cloud.write_cron(cron),
        clock=clock,
        dispatch=Dispatchers({"lambda": dispatcher, "flow": dispatcher}),
    )
    ticker.tick(T0 - MINUTE)
    clock.set(T0)
    ticker.tick(T0)
    # The ticker then gets no tick for two hours. The first to arrive is T0+1's, two hours late;
    # the next is the current minute's, which finds two hours of misfires.
    late = T0 + 2 * 60 * MINUTE
    clock.set(late + timedelta(seconds=5))
    ticker.tick(T0 + MINUTE)
    ticker.tick(late)
    store = cloud.store()
    history = {job: list(store.history(job, limit=1000)) for job in ("now", "all", "skip")}
    dispatched = Counter(dispatcher.counts())

    # Then the other ticks of the outage arrive, two hours late and more, some twice.
    for minutes in (1, 2, 30, 59, 60, 61, 90, 119, 1, 30):
        clock.advance(7)
        answer = ticker.tick(T0 + minutes * MINUTE).to_json()
        assert "already handled" in answer["note"]
    assert dispatcher.counts() == dispatched  # nothing ran again
    assert {job: list(store.history(job, limit=1000)) for job in history} == history

    assert [f for f, n in dispatched.items() if n > 1] == []
    covered: Counter[str] = Counter()  # every firing has a record, or lies in a skipped range
    for records in history.values():
        for record in records:
            if record.skipped_until is None:
                covered[record.firing_id] += 1
                continue
            start = parse_instant(record.scheduled_time)
            until = parse_instant(record.skipped_until)
            job = load(cron, source="late.yaml").job(record.job)
            assert job is not None
            for at in job.expression.firings(start, until + timedelta(seconds=1), job.tz):
                covered[f"{record.job}@{iso_seconds(at)}"] += 1
    expected = _expected(cron, T0 - MINUTE, late + MINUTE)
    assert [f for f in expected if covered[f] != 1] == []
    skip_reasons = Counter(r.reason for rs in history.values() for r in rs if r.reason)
    assert skip_reasons["misfire_grace"] == 3  # one range per job, older than misfire.grace
    assert dispatched["skip@2026-11-30T15:59:00Z"] == 0  # skip: missed firings are not run
    assert dispatched["now@2026-11-30T15:59:00Z"] == 1  # fire_now: the latest missed one runs
