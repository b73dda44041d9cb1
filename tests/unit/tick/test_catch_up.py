"""A deferred firing written after its minute's tick read the deferred firings, and due in that
minute (a one-time schedule made for twenty seconds from now, a retry ten seconds after a
failure, a backfill's first firings), runs at its second: its writer wakes the ticker, whose
catch-up dispatches it (mini_scheduler.wake), once, and the next tick does not run it again. A
deferred firing the minute's tick read is the tick's: the catch-up leaves it alone."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pytest

from mini_scheduler.claims.base import BACKFILL, BUFFER, RETRY, SCHEDULE, Deferred
from mini_scheduler.errors import EventError
from mini_scheduler.handlers.events.ticker import ticker_request
from mini_scheduler.handlers.routing import route
from mini_scheduler.model import Firing, RunStatus
from mini_scheduler.recorder import Completion, Recorder
from mini_scheduler.tick.deferred import unread_by_tick
from mini_scheduler.wake import catch_up_minute, waker
from tests.unit.tick.harness import Rig, at, rig

CRON = """
jobs:
  - name: "report"
    cron: "0 0 9 * * ?"
    service: "report-fn"
    retry: {retries: 1, backoff: 10}
"""


class Woken:
    """The catch-up events a wake sends, kept to be delivered when the test says."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append(event)


def _rig(woken: Woken, **kwargs: Any) -> Rig:
    holder: list[Rig] = []

    def wake(dues: Sequence[datetime]) -> None:
        waker(woken, holder[0].clock, 0)(dues)

    made = rig(CRON, wake=wake, **kwargs)
    holder.append(made)
    return made


def _sent_at(r: Rig, firing_id: str) -> list[datetime | None]:
    return [sent for _, i, _, sent in r.dispatcher.calls if i == firing_id]


def test_a_one_time_schedule_made_during_its_minute_runs_at_its_second() -> None:
    woken = Woken()
    r = _rig(woken)
    r.tick("2026-11-30T14:00:00Z")  # read the deferred firings: none yet
    r.clock.set(at("2026-11-30T14:00:30Z"))
    r.ticker.operator.create_schedules(
        [{"name": "soon", "at": "2026-11-30T14:00:45Z", "service": "fn"}], "jane.doe"
    )
    assert woken.events == [{"tick": "2026-11-30T14:00:00Z", "deferred": True}]
    answer = route(r.ticker, woken.events[0])
    assert answer["counts"]["dispatched"] == 1
    assert _sent_at(r, "soon@2026-11-30T14:00:45Z") == [at("2026-11-30T14:00:45Z")]
    r.tick("2026-11-30T14:01:00Z")  # the next tick does not run it again
    assert _sent_at(r, "soon@2026-11-30T14:00:45Z") == [at("2026-11-30T14:00:45Z")]


def test_a_retry_due_in_the_minute_of_its_failure_runs_at_its_second() -> None:
    woken = Woken()
    r = _rig(woken, start="2026-11-30T09:00:00Z")
    r.tick("2026-11-30T09:00:00Z")
    first = "report@2026-11-30T09:00:00Z"
    assert _sent_at(r, first) == [at("2026-11-30T09:00:00Z")]
    r.clock.set(at("2026-11-30T09:00:20Z"))
    recorder = Recorder(r.claims, r.clock, r.metrics, origin="us-east-1/prod", wake=r.ticker.wake)
    recorder.record(
        Completion(first, RunStatus.FAILED, at("2026-11-30T09:00:20Z"), "boom", "lambda")
    )
    assert woken.events == [{"tick": "2026-11-30T09:00:00Z", "deferred": True}]
    route(r.ticker, woken.events[0])
    assert _sent_at(r, f"{first}#2") == [at("2026-11-30T09:00:30Z")]  # backoff 10 s
    r.tick("2026-11-30T09:01:00Z")
    assert r.dispatcher.counts()[f"{first}#2"] == 1


def test_a_firing_due_in_a_later_minute_wakes_nobody() -> None:
    woken = Woken()
    r = _rig(woken)
    r.tick("2026-11-30T14:00:00Z")
    r.ticker.operator.create_schedules(
        [{"name": "later", "at": "2026-11-30T14:01:00Z", "service": "fn"}], "jane.doe"
    )
    assert woken.events == []


def test_a_catch_up_on_standby_dispatches_nothing() -> None:
    r = rig(CRON, active="DR")
    r.ticker.operator.create_schedules(
        [{"name": "soon", "at": "2026-11-30T14:00:45Z", "service": "fn"}], "jane.doe"
    )
    answer = route(r.ticker, {"tick": "2026-11-30T14:00:00Z", "deferred": True})
    assert answer["mode"] == "standby" and r.dispatcher.calls == []
    assert [s["name"] for s in r.ticker.operator.list_schedules()["schedules"]] == ["soon"]


def test_a_catch_up_moves_no_watermark_and_runs_no_job_of_the_minute() -> None:
    r = rig(CRON, start="2026-11-30T09:00:00Z")
    answer = route(r.ticker, {"tick": "2026-11-30T09:00:00Z", "deferred": True})
    assert answer["counts"]["dispatched"] == 0 and r.dispatcher.calls == []
    r.tick("2026-11-30T09:00:00Z")  # the minute's own tick still runs the job's firing
    assert r.dispatcher.firing_ids == ["report@2026-11-30T09:00:00Z"]


@pytest.mark.parametrize(
    "event",
    [
        {"tick": "2026-11-30T14:00:00Z", "deferred": "yes"},
        {"tick": "2026-11-30T14:00:00Z", "deferred": True, "shard": 0, "shards": 2},
    ],
)
def test_a_catch_up_event_is_checked(event: dict[str, Any]) -> None:
    with pytest.raises(EventError, match="deferred"):
        ticker_request(event)


@pytest.mark.parametrize(
    ("due", "lead", "expected"),
    [
        ("2026-11-30T14:00:45Z", 0, "2026-11-30T14:00:00Z"),
        ("2026-11-30T14:00:10Z", 0, "2026-11-30T14:00:00Z"),  # past already: the tick read
        ("2026-11-30T14:01:00Z", 0, None),  # the next tick's window
        ("2026-11-30T14:01:30Z", 60, "2026-11-30T14:00:00Z"),  # a lead moves the window
    ],
)
def test_the_minute_a_firing_wakes_the_ticker_for(
    due: str, lead: int, expected: str | None
) -> None:
    minute = catch_up_minute([at(due)], at("2026-11-30T14:00:30Z"), lead)
    assert minute == (at(expected) if expected else None)


THRICE = {  # a runtime schedule firing on three seconds in a row, one run at a time
    "name": "thrice",
    "cron": "10,11,12 * * * * ?",
    "service": "thrice-fn",
    "overlap": "buffer_one",
}


def _thrice(second: int) -> str:
    return f"thrice@2026-11-30T14:00:{second:02d}Z"


def test_a_catch_up_during_the_tick_claims_only_what_the_tick_did_not_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The minute's tick read the schedule's firing (one starts, one waits, one is skipped),
    and waits for its job's firing at :30; the first run's end wakes a catch-up of the minute,
    which starts the waiting firing and leaves the schedule's firings to the tick: none
    claimed twice, the waiting one not met again as the schedule's own (due twice)."""
    woken = Woken()
    r = _rig(woken, start="2026-11-30T13:59:30Z")
    r.cron_text[0] = CRON.replace("0 0 9 * * ?", "30 * * * * ?")
    r.ticker.operator.create_schedules([THRICE], "jane.doe")

    def run_ends() -> None:
        recorder = Recorder(
            r.claims, r.clock, r.metrics, origin="us-east-1/prod", wake=r.ticker.wake
        )
        recorder.record(Completion(_thrice(10), RunStatus.SUCCEEDED, r.clock.now(), None, "ecs"))
        assert woken.events == [{"tick": "2026-11-30T14:00:00Z", "deferred": True}]
        assert route(r.ticker, woken.events.pop())["counts"]["dispatched"] == 1

    r.meanwhile("2026-11-30T14:00:14Z", run_ends)
    with caplog.at_level(logging.DEBUG, logger="mini_scheduler"):
        r.tick("2026-11-30T14:00:00Z")
    assert "is due twice" not in caplog.text and "claimed by a peer" not in caplog.text
    assert "moved on by another tick" not in caplog.text  # the schedule moved on once
    counts = r.dispatcher.counts()
    assert [counts[_thrice(s)] for s in (10, 11, 12)] == [1, 1, 0]
    assert _sent_at(r, _thrice(11)) == [at("2026-11-30T14:00:14Z")]  # at its wake
    assert counts["report@2026-11-30T14:00:30Z"] == 1
    assert r.claims.pending_deferred(BUFFER) == []


def _deferred(reason: str, written: str) -> Deferred:
    firing = Firing("job", at("2026-11-30T14:00:40Z"))
    return Deferred(firing, firing.scheduled, reason, "us-east-1/prod", at(written))


@pytest.mark.parametrize(
    ("reason", "written", "read"),
    [
        (SCHEDULE, "2026-11-30T13:59:58Z", False),  # moved on by the tick before: read at 14:00
        (RETRY, "2026-11-30T13:59:50Z", False),
        (BACKFILL, "2026-11-30T13:58:00Z", False),
        (SCHEDULE, "2026-11-30T14:00:00Z", True),  # made once the minute began
        (RETRY, "2026-11-30T14:00:20Z", True),
        (BUFFER, "2026-11-30T13:50:00Z", True),  # waiting: its wake is its run's end
    ],
)
def test_a_catch_up_reads_what_its_tick_may_not_have(reason: str, written: str, read: bool) -> None:
    item = _deferred(reason, written)
    assert unread_by_tick([item], at("2026-11-30T14:00:00Z")) == ([item] if read else [])
