"""Exactly once with ``jitter`` and ``window`` (issue 30, item 3), on AWS's own DynamoDB Local:
8 tickers race each minute of jobs whose firings are planned across minute edges, then an
outage of two minutes is caught up by racing tickers again. Every firing planned in the span
ends once: dispatched, or recorded SKIPPED by its misfire policy; none twice, none lost."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest

from mini_scheduler.clock import FixedClock
from mini_scheduler.jobs import load
from mini_scheduler.jobs.spread import planned
from mini_scheduler.model import RunStatus
from tests.system.integration.test_exactly_once import T0, Region, region  # noqa: F401

pytestmark = pytest.mark.dynamodb_local


def _cron(jobs: int) -> str:
    kinds = [
        ('"50 * * * * ?"', "jitter: 45", "fire_all"),  # most start in the next minute
        ('"*/20 * * * * ?"', "jitter: 30", "fire_now"),
        ('"0 */2 * * * ?"', "window: 3", "skip"),  # cut to the 2 minutes to the next
    ]
    lines = ["jobs:"]
    for i in range(jobs):
        statement, spread, misfire = kinds[i % 3]
        lines += [
            f'  - name: "job-{i:03d}"',
            f"    cron: {statement}",
            f'    service: "target-{i % 5}"',
            f"    {spread}",
            f"    misfire: {misfire}",
        ]
    return "\n".join(lines) + "\n"


def _race(region: Region, cron: str, minute: int, tickers: int = 8) -> None:  # noqa: F811
    at = T0 + timedelta(minutes=minute)
    barrier = threading.Barrier(tickers)

    def run() -> None:
        ticker = region.ticker(cron, clock=FixedClock(at))
        barrier.wait()
        ticker.tick(at)

    threads = [threading.Thread(target=run) for _ in range(tickers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_racing_tickers_and_a_late_tick_end_each_spread_firing_once(
    region: Region,  # noqa: F811
) -> None:
    cron = _cron(24)
    region.ticker(cron, clock=FixedClock(T0 - timedelta(minutes=1))).tick(
        T0 - timedelta(minutes=1)
    )  # the region's first tick
    first = Counter(region.dispatcher.firing_ids)
    for minute in (0, 1, 2, 3, 6, 7):  # 4 and 5 missed: the tick of 6 catches them up
        _race(region, cron, minute)
    dispatched = Counter(region.dispatcher.firing_ids) - first
    assert dispatched and set(dispatched.values()) == {1}  # none twice
    end = T0 + timedelta(minutes=8)
    expected: dict[str, bool] = {}  # each firing planned in the span -> missed
    for job in load(cron).jobs:
        for nominal in job.firings(T0 - timedelta(minutes=3), end):
            start = planned(job, nominal)
            if T0 <= start < end:
                missed = T0 + timedelta(minutes=4) <= start < T0 + timedelta(minutes=6)
                expected[f"{job.name}@{nominal.strftime('%Y-%m-%dT%H:%M:%SZ')}"] = missed
    assert set(dispatched) <= set(expected)
    skipped = 0
    for firing_id, missed in expected.items():
        run = region.claims.run(firing_id)
        assert run is not None, f"{firing_id} was lost"
        if firing_id in dispatched:
            assert run.status is RunStatus.DISPATCHED
        else:
            assert missed and run.status is RunStatus.SKIPPED, firing_id
            skipped += 1
    on_time = [f for f, missed in expected.items() if not missed]
    assert set(on_time) <= set(dispatched)  # a firing not missed always runs
    assert skipped > 0 and len(on_time) > 100
