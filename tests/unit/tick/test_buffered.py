"""``overlap: buffer_one`` and ``buffer_all`` on the tick (memory stores): a firing that finds its
job's run open waits, starts when the run ends (the oldest first), and the excess is skipped."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mini_scheduler.claims.base import BUFFER
from mini_scheduler.handlers.routing import route
from mini_scheduler.model import RunStatus
from mini_scheduler.recorder import Completion, Recorder
from mini_scheduler.wake import waker
from tests.unit.tick.harness import Rig, at, rig

BUFFER_ONE = """
jobs:
  - name: "solo"
    cron: "0 * * * * ?"
    service: "solo-fn"
    overlap: "buffer_one"
"""

BUFFER_ALL = """
jobs:
  - name: "solo"
    cron: "0 * * * * ?"
    service: "solo-fn"
    overlap: "buffer_all"
    max_buffered: 2
"""


def _id(minute: int) -> str:
    return f"solo@2026-11-30T14:{minute:02d}:00Z"


def _end(r: Rig, minute: int) -> None:
    assert r.claims.close(_id(minute), RunStatus.SUCCEEDED, now=r.clock.now()) is not None


def _waiting(r: Rig) -> list[str]:
    return [d.firing.id for d in r.claims.pending_deferred(BUFFER)]


def test_buffer_one_keeps_one_firing_waiting_and_starts_it_when_the_run_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    r = rig(BUFFER_ONE)
    r.tick("2026-11-30T14:00:00Z")
    with caplog.at_level(logging.INFO):
        answer = r.tick("2026-11-30T14:01:00Z")
    assert answer["counts"]["waiting"] == 1 and answer["counts"]["skipped"] == {}
    assert f"Job solo - firing {_id(1)} waits: its previous run has not ended " in (
        caplog.text.replace("(overlap: buffer_one)", "")
    )
    assert _waiting(r) == [_id(1)]
    answer = r.tick("2026-11-30T14:02:00Z")  # one waits already: the later one is skipped
    assert answer["counts"]["skipped"] == {"buffer_full": 1}
    skipped = r.claims.run(_id(2))
    assert skipped is not None and skipped.status is RunStatus.SKIPPED
    assert skipped.reason is not None and "a firing is already waiting" in skipped.reason
    assert _waiting(r) == [_id(1)]  # still waiting: not dropped, not skipped
    _end(r, 0)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        r.tick("2026-11-30T14:03:00Z")
    assert r.dispatcher.firing_ids == [_id(0), _id(1)]  # the waiting one went first
    assert f"Job solo - firing {_id(1)} starts: its previous run has ended" in caplog.text
    assert _waiting(r) == [_id(3)]  # the minute's own firing queued behind it, waiting
    _end(r, 1)
    r.tick("2026-11-30T14:04:00Z")
    assert r.dispatcher.firing_ids == [_id(0), _id(1), _id(3)]
    assert r.dispatcher.counts()[_id(1)] == 1


def test_buffer_all_starts_each_waiting_firing_in_order_and_skips_the_excess() -> None:
    r = rig(BUFFER_ALL)
    r.tick("2026-11-30T14:00:00Z")
    for minute in (1, 2, 3):
        r.tick(f"2026-11-30T14:{minute:02d}:00Z")
    assert _waiting(r) == [_id(1), _id(2)]
    run = r.claims.run(_id(3))
    assert run is not None and run.status is RunStatus.SKIPPED
    assert run.reason is not None and "2 firings are already waiting" in run.reason
    _end(r, 0)
    r.tick("2026-11-30T14:04:00Z")
    assert r.dispatcher.firing_ids == [_id(0), _id(1)]
    assert _waiting(r) == [_id(2), _id(4)]
    _end(r, 1)
    r.tick("2026-11-30T14:05:00Z")
    assert r.dispatcher.firing_ids == [_id(0), _id(1), _id(2)]
    assert _waiting(r) == [_id(4), _id(5)]


def test_a_waiting_firing_is_not_dropped_past_the_misfire_grace() -> None:
    r = rig(BUFFER_ONE + "misfire.grace: 60\n")
    r.tick("2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:01:00Z")
    for minute in range(2, 9):
        r.tick(f"2026-11-30T14:{minute:02d}:00Z")
    assert _waiting(r) == [_id(1)]
    _end(r, 0)
    r.tick("2026-11-30T14:09:00Z")
    assert _id(1) in r.dispatcher.firing_ids


def test_a_waiting_firing_read_by_two_tickers_starts_once() -> None:
    first = rig(BUFFER_ONE)
    second = rig(BUFFER_ONE, claims=first.claims, dispatcher=first.dispatcher)
    first.tick("2026-11-30T14:00:00Z")
    first.tick("2026-11-30T14:01:00Z")
    _end(first, 0)
    first.claims._watermarks.clear()  # the second ticker read before the first moved it
    first.tick("2026-11-30T14:02:00Z")
    second.tick("2026-11-30T14:02:00Z")
    assert first.dispatcher.counts()[_id(1)] == 1


def test_a_job_that_no_longer_buffers_skips_its_waiting_firing_once() -> None:
    r = rig(BUFFER_ONE)
    r.tick("2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:01:00Z")
    skipping = rig(BUFFER_ONE.replace("buffer_one", "skip"), claims=r.claims)
    skipping.tick("2026-11-30T14:02:00Z")
    assert _waiting(r) == []
    run = r.claims.run(_id(1))
    assert run is not None and run.status is RunStatus.SKIPPED


def test_a_retry_that_finds_the_run_open_waits_and_runs_once() -> None:
    """A deferred firing (here a retry) kept waiting is stored apart from the one it stands
    for, which is forgotten: the waiting one is not lost with it."""
    retried = BUFFER_ALL.replace('"solo-fn"', '"solo-fn"\n    retry: {retries: 1, backoff: 0}')
    r = rig(retried)
    r.dispatcher.failing.add("solo-fn")
    r.tick("2026-11-30T14:00:00Z")  # fails at once: its retry is deferred
    r.dispatcher.failing.clear()
    assert [d.firing.id for d in r.claims.pending_deferred("retry")] == [_id(0) + "#2"]
    r.tick("2026-11-30T14:01:00Z")  # the minute's firing takes the slot: the retry waits
    assert r.dispatcher.firing_ids == [_id(1)]
    assert _waiting(r) == [_id(0) + "#2"] and r.claims.pending_deferred("retry") == []
    _end(r, 1)
    r.tick("2026-11-30T14:02:00Z")
    assert r.dispatcher.firing_ids == [_id(1), _id(0) + "#2"]
    assert _waiting(r) == [_id(2)]


def _woken(text: str, events: list[dict[str, Any]]) -> Rig:
    """A rig whose wakes are kept in ``events``; its jobs' firing 0 runs, firing 1 met it."""
    holder: list[Rig] = []
    made = rig(text, wake=lambda dues: waker(events.append, holder[0].clock, 0)(dues))
    holder.append(made)
    made.tick("2026-11-30T14:00:00Z")
    made.tick("2026-11-30T14:01:00Z")
    made.clock.set(at("2026-11-30T14:01:20Z"))
    return made


def _recorded_end(r: Rig) -> None:
    recorder = Recorder(r.claims, r.clock, r.metrics, origin="us-east-1/prod", wake=r.ticker.wake)
    recorder.record(Completion(_id(0), RunStatus.SUCCEEDED, r.clock.now(), None, "lambda"))


@pytest.mark.parametrize(("overlap", "woken"), [("buffer_one", 1), ("skip", 0)])
def test_the_end_of_a_run_a_firing_waits_for_wakes_the_ticker(overlap: str, woken: int) -> None:
    """The recorder's close of a buffering job's run wakes the ticker; a job that does not
    buffer wakes nobody (no request more on its path)."""
    events: list[dict[str, Any]] = []
    _recorded_end(_woken(BUFFER_ONE.replace("buffer_one", overlap), events))
    assert len(events) == woken


def test_a_woken_catch_up_starts_the_waiting_firing_at_once_and_once() -> None:
    events: list[dict[str, Any]] = []
    r = _woken(BUFFER_ONE, events)
    _recorded_end(r)
    assert events == [{"tick": "2026-11-30T14:01:00Z", "deferred": True}]
    route(r.ticker, events[0])
    assert r.dispatcher.firing_ids == [_id(0), _id(1)]
    assert r.dispatcher.calls[-1][3] == at("2026-11-30T14:01:20Z")  # at once, not at 14:02
    r.tick("2026-11-30T14:02:00Z")
    assert r.dispatcher.counts()[_id(1)] == 1
    assert _waiting(r) == [_id(2)]


def test_a_carried_waiting_firing_takes_its_job_s_limit_or_the_strictest() -> None:
    """What a failover's carry writes a waiting firing under (mini_scheduler.carry): cron.yaml's
    job's limit, a runtime schedule's (its entry is in the detail), else none known."""
    from mini_scheduler.claims.base import Deferred
    from mini_scheduler.jobs import load
    from mini_scheduler.model import Firing
    from mini_scheduler.tick.waits import carried_limit

    cron_file = load(BUFFER_ALL, source="test.yaml")
    minute = at("2026-11-30T14:01:00Z")

    def waiting(job: str, **detail: Any) -> Deferred:
        return Deferred(Firing(job, minute), minute, BUFFER, "us-east-1/prod", minute, detail)

    assert carried_limit(waiting("solo"), cron_file) == (
        2,
        "2 firings are already waiting for the previous run to end "
        "(overlap: buffer_all, max_buffered 2)",
    )
    entry = {"name": "every", "cron": "0 * * * * ?", "service": "fn", "overlap": "buffer_one"}
    assert carried_limit(waiting("every", entry=entry), cron_file)[0] == 1
    entry |= {"overlap": "buffer_all", "max_buffered": 4}
    assert carried_limit(waiting("every", entry=entry), cron_file)[0] == 4
    assert carried_limit(waiting("gone"), cron_file) is None
    assert carried_limit(waiting("solo"), None) is None
