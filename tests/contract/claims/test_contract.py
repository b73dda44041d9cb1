"""The ClaimStore contract (claims/base.py), held against every backend."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from mini_scheduler.claims.base import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    ClaimStore,
    Deferred,
    MarkRequest,
    Pause,
)
from mini_scheduler.claims.records import EarlierEnd, JobStart, Redrive
from mini_scheduler.claims.transitions import EARLIER_ENDS_KEPT, TIMED_OUT_ERROR
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ORIGIN = "us-east-1/prod"
START = JobStart("report-fn", "0 0 * * * ? @UTC", {"region": "east", "_origin": ORIGIN})


def _claim(
    store: ClaimStore,
    firing: Firing,
    *,
    now: datetime = T0,
    lease: int = 120,
    exclusive: bool = False,
) -> ClaimResult:
    """A claim as the ticker makes it: watched (the sweep's ``due_runs``) from its lease on."""
    lease_until = now + timedelta(seconds=lease)
    store.watch([firing.id], lease_until)
    return store.claim(firing, now=now, lease_until=lease_until, origin=ORIGIN, exclusive=exclusive)


def test_the_first_claim_wins_and_every_later_one_loses(claim_store: ClaimStore) -> None:
    firing = Firing("report", T0)
    assert _claim(claim_store, firing) is ClaimResult.WON
    assert _claim(claim_store, firing) is ClaimResult.LOST
    assert _claim(claim_store, firing, exclusive=True) is ClaimResult.LOST
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.CLAIMED
    assert run.firing_id == "report@2026-11-30T14:00:00Z" and run.origin == ORIGIN
    assert run.claimed_at == T0 and run.deadline == T0 + timedelta(seconds=120)


def test_distinct_firings_are_claimed_independently(claim_store: ClaimStore) -> None:
    assert _claim(claim_store, Firing("report", T0)) is ClaimResult.WON
    assert _claim(claim_store, Firing("report", T0 + timedelta(seconds=1))) is ClaimResult.WON
    assert _claim(claim_store, Firing("other", T0)) is ClaimResult.WON


def test_a_skipped_firing_cannot_be_claimed_and_a_claimed_one_cannot_be_skipped(
    claim_store: ClaimStore,
) -> None:
    skipped, claimed = Firing("report", T0), Firing("report", T0 + timedelta(minutes=1))
    assert claim_store.record_skipped(skipped, now=T0, reason="misfire", origin=ORIGIN)
    assert not claim_store.record_skipped(skipped, now=T0, reason="misfire", origin=ORIGIN)
    assert _claim(claim_store, skipped) is ClaimResult.LOST
    assert _claim(claim_store, claimed) is ClaimResult.WON
    assert not claim_store.record_skipped(claimed, now=T0, reason="misfire", origin=ORIGIN)
    run = claim_store.run(skipped.id)
    assert run is not None and run.status is RunStatus.SKIPPED and run.reason == "misfire"
    assert claim_store.run(claimed.id).status is RunStatus.CLAIMED  # type: ignore[union-attr]


def test_each_attempt_of_a_firing_is_a_run_of_its_own(claim_store: ClaimStore) -> None:
    """A retry is claimed by ``<firingId>#<attempt>``: its own claim, run and end, beside the
    first attempt's; the job's history shows the attempts together, the latest first."""
    first = Firing("report", T0)
    second = first.retry()
    assert _claim(claim_store, first) is ClaimResult.WON
    claim_store.mark_dispatched(first, now=T0, deadline=T0 + timedelta(seconds=900), start=START)
    claim_store.close(first.id, RunStatus.FAILED, now=T0 + timedelta(seconds=5), error="boom")
    retried = T0 + timedelta(minutes=2)
    assert _claim(claim_store, second, now=retried) is ClaimResult.WON
    assert _claim(claim_store, second, now=retried) is ClaimResult.LOST
    claim_store.mark_dispatched(
        second, now=retried, deadline=retried + timedelta(seconds=900), start=START
    )
    claim_store.close(second.id, RunStatus.SUCCEEDED, now=retried + timedelta(seconds=5))
    failed, succeeded = claim_store.run(first.id), claim_store.run(second.id)
    assert failed is not None and failed.status is RunStatus.FAILED and failed.error == "boom"
    assert succeeded is not None and succeeded.status is RunStatus.SUCCEEDED
    assert succeeded.firing_id == "report@2026-11-30T14:00:00Z#2"
    assert [run.firing_id for run in claim_store.history("report")] == [second.id, first.id]
    state = claim_store.job_state("report")
    assert state is not None and state.last_status is RunStatus.SUCCEEDED


def test_a_run_moves_from_claimed_to_dispatched_to_its_end(claim_store: ClaimStore) -> None:
    firing = Firing("report", T0)
    _claim(claim_store, firing)
    started = T0 + timedelta(seconds=1)
    claim_store.mark_dispatched(
        firing, now=started, deadline=started + timedelta(seconds=900), start=START
    )
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.DISPATCHED and run.started_at == started
    state = claim_store.job_state("report")
    assert state is not None and state.start == started and state.end is None
    assert state.parameters == {"region": "east", "_origin": ORIGIN}
    assert state.schedule == "0 0 * * * ? @UTC" and state.service == "report-fn"
    assert state.last_status is RunStatus.DISPATCHED
    ended = T0 + timedelta(seconds=5)
    before = claim_store.close(firing.id, RunStatus.SUCCEEDED, now=ended)
    assert before is not None and before.status is RunStatus.DISPATCHED
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.SUCCEEDED and run.ended_at == ended
    state = claim_store.job_state("report")
    assert state is not None and state.end == ended and state.last_status is RunStatus.SUCCEEDED


def test_closing_twice_or_an_unknown_firing_answers_none(claim_store: ClaimStore) -> None:
    firing = Firing("report", T0)
    _claim(claim_store, firing)
    assert claim_store.close(firing.id, RunStatus.FAILED, now=T0, error="boom") is not None
    assert claim_store.close(firing.id, RunStatus.SUCCEEDED, now=T0) is None
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.FAILED and run.error == "boom"
    assert claim_store.close("ghost@2026-11-30T14:00:00Z", RunStatus.SUCCEEDED, now=T0) is None


def test_a_timed_out_run_can_still_be_closed_by_its_late_completion(
    claim_store: ClaimStore,
) -> None:
    firing = Firing("report", T0)
    _claim(claim_store, firing)
    claim_store.mark_dispatched(firing, now=T0, deadline=T0 + timedelta(seconds=60), start=START)
    later = T0 + timedelta(minutes=2)
    due = claim_store.due_runs(later)
    assert [r.firing_id for r in due] == [firing.id]
    assert claim_store.time_out(due[0], now=later)
    assert not claim_store.time_out(due[0], now=later)
    assert claim_store.due_runs(later) == []
    assert claim_store.close(firing.id, RunStatus.SUCCEEDED, now=later) is not None
    assert claim_store.run(firing.id).status is RunStatus.SUCCEEDED  # type: ignore[union-attr]


def test_due_runs_lists_open_runs_past_their_deadline_only(claim_store: ClaimStore) -> None:
    early, late = Firing("a", T0), Firing("b", T0)
    _claim(claim_store, early, lease=60)
    _claim(claim_store, late, lease=600)
    assert claim_store.due_runs(T0 + timedelta(seconds=30)) == []
    assert [r.firing_id for r in claim_store.due_runs(T0 + timedelta(seconds=61))] == [early.id]


def test_one_takeover_wins_per_expired_claim(claim_store: ClaimStore) -> None:
    firing = Firing("report", T0)
    _claim(claim_store, firing, lease=60)
    later = T0 + timedelta(seconds=90)
    (run,) = claim_store.due_runs(later)
    lease = later + timedelta(seconds=120)
    assert claim_store.take_over(run, now=later, lease_until=lease, origin="us-west-2/DR")
    assert not claim_store.take_over(run, now=later, lease_until=lease, origin="us-west-2/DR")
    taken = claim_store.run(firing.id)
    assert taken is not None and taken.claimed_at == later and taken.origin == "us-west-2/DR"
    assert claim_store.due_runs(later) == []


def test_an_exclusive_claim_holds_the_job_until_its_run_ends(claim_store: ClaimStore) -> None:
    first, second = Firing("solo", T0), Firing("solo", T0 + timedelta(seconds=15))
    assert _claim(claim_store, first, exclusive=True) is ClaimResult.WON
    assert _claim(claim_store, second, exclusive=True) is ClaimResult.OVERLAP
    assert claim_store.run(second.id) is None  # nothing written for a refused claim
    claim_store.mark_dispatched(first, now=T0, deadline=T0 + timedelta(seconds=60), start=START)
    claim_store.close(first.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=20))
    assert _claim(claim_store, second, exclusive=True) is ClaimResult.WON


@pytest.mark.parametrize("end", ["fail", "time_out"])
def test_a_failed_or_timed_out_run_releases_the_job(claim_store: ClaimStore, end: str) -> None:
    first, second = Firing("solo", T0), Firing("solo", T0 + timedelta(minutes=5))
    _claim(claim_store, first, exclusive=True)
    if end == "fail":
        claim_store.fail(first, now=T0, error="Lambda Invoke solo-fn failed")
    else:
        claim_store.mark_dispatched(first, now=T0, deadline=T0 + timedelta(seconds=60), start=START)
        (run,) = claim_store.due_runs(T0 + timedelta(minutes=2))
        assert claim_store.time_out(run, now=T0 + timedelta(minutes=2))
    assert _claim(claim_store, second, exclusive=True) is ClaimResult.WON


def test_history_is_newest_first_with_manual_runs_in_time_order(claim_store: ClaimStore) -> None:
    for minute in range(3):
        _claim(claim_store, Firing("report", T0 + timedelta(minutes=minute)))
    manual = Firing.manual_run(
        "report", T0 + timedelta(seconds=90), "jane.doe", {"x": 1.5}, nonce="0a1b2c3d"
    )
    _claim(claim_store, manual)
    claim_store.record_skipped_range(
        "report",
        T0 - timedelta(hours=2),
        T0 - timedelta(hours=1),
        61,
        now=T0,
        reason="misfire_grace",
        origin=ORIGIN,
    )
    history = claim_store.history("report", limit=10)
    assert [r.scheduled_time for r in history] == [
        "2026-11-30T14:02:00Z",
        "2026-11-30T14:01:30.000Z",
        "2026-11-30T14:01:00Z",
        "2026-11-30T14:00:00Z",
        "2026-11-30T12:00:00Z",
    ]
    assert history[1].manual and history[1].operator == "jane.doe"
    assert history[1].parameters == {"x": 1.5}
    assert history[1].firing_id == "report@manual-2026-11-30T14:01:30.000Z-0a1b2c3d"
    assert history[-1].skipped_count == 61 and history[-1].skipped_until == "2026-11-30T13:00:00Z"
    assert [r.scheduled_time for r in claim_store.history("report", limit=2)] == [
        "2026-11-30T14:02:00Z",
        "2026-11-30T14:01:30.000Z",
    ]
    assert claim_store.history("nobody") == []


def _seven_runs(store: ClaimStore) -> list[str]:
    """Seven runs of ``report`` (and one of ``other``): a firing and its retry, a manual run at
    the same instant and its retry, two later firings, a skipped range before; their ids,
    newest first (by sort key: a firing's later attempt first, a manual run after the firing
    of its instant)."""
    scheduled = Firing("report", T0)
    manual = Firing.manual_run("report", T0, "jane.doe", {"x": 1}, nonce="0a1b2c3d")
    later = [Firing("report", T0 + timedelta(minutes=m)) for m in (1, 2)]
    for firing in (scheduled, scheduled.retry(), manual, manual.retry(), *later):
        assert _claim(store, firing) is ClaimResult.WON
    assert _claim(store, Firing("other", T0 + timedelta(seconds=30))) is ClaimResult.WON
    assert store.record_skipped_range(
        "report",
        T0 - timedelta(hours=2),
        T0 - timedelta(hours=1),
        61,
        now=T0,
        reason="misfire_grace",
        origin=ORIGIN,
    )
    return [
        "report@2026-11-30T14:02:00Z",
        "report@2026-11-30T14:01:00Z",
        "report@manual-2026-11-30T14:00:00.000Z-0a1b2c3d#2",
        "report@manual-2026-11-30T14:00:00.000Z-0a1b2c3d",
        "report@2026-11-30T14:00:00Z#2",
        "report@2026-11-30T14:00:00Z",
        "report@2026-11-30T12:00:00Z",
    ]


def test_a_job_s_history_pages_newest_first_each_run_once(claim_store: ClaimStore) -> None:
    """The console's paging: each page's last run's sort key is the next page's cursor; the
    pages hold every run once, in the order of one read of them all, and the page after the
    last is empty."""
    newest_first = _seven_runs(claim_store)
    whole = claim_store.history("report", limit=20)
    assert [r.firing_id for r in whole] == newest_first
    assert [r.sort_key for r in whole] == sorted((r.sort_key for r in whole), reverse=True)
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = claim_store.history("report", limit=3, before=cursor)
        if not page:
            break
        assert all(cursor is None or run.sort_key < cursor for run in page)
        pages.append([run.firing_id for run in page])
        cursor = page[-1].sort_key
        assert len(pages) <= 3, pages  # no cursor may bring the same page back
    assert pages == [newest_first[:3], newest_first[3:6], newest_first[6:]]
    assert claim_store.history("report", limit=3, before=cursor) == []
    assert claim_store.history("other", limit=3, before=whole[-1].sort_key) == []


def test_a_cursor_pages_from_any_run_and_is_a_bound_not_a_key_that_must_exist(
    claim_store: ClaimStore,
) -> None:
    newest_first = _seven_runs(claim_store)
    whole = claim_store.history("report", limit=20)
    for i, run in enumerate(whole):  # strictly older: never the cursor's own run
        after = claim_store.history("report", limit=20, before=run.sort_key)
        assert [r.firing_id for r in after] == newest_first[i + 1 :]
    assert claim_store.history("report", limit=20, before=None) == whole
    # a firing's retry pages to its first attempt; the first attempt, past both
    retry = Firing("report", T0).retry()
    assert [r.firing_id for r in claim_store.history("report", 1, retry.sort_key)] == [
        "report@2026-11-30T14:00:00Z"
    ]
    # a key no run has: the runs sorted before it
    minute = "2026-11-30T14:01:30.000Z"
    assert [r.firing_id for r in claim_store.history("report", 2, minute)] == newest_first[1:3]
    assert [r.firing_id for r in claim_store.history("report", 20, "~")] == newest_first
    assert claim_store.history("report", 20, "0") == []
    assert claim_store.history("report", 20, "x" * 300) == whole  # the longest cursor taken


BAD_CURSORS = [
    pytest.param(7, "a history cursor is a string, not int", id="int"),
    pytest.param(b"2026-11-30T14:00:00.000Z", "a string, not bytes", id="bytes"),
    pytest.param("", "a history cursor cannot be empty", id="empty"),
    pytest.param("x" * 301, "at most 300 characters, not 301", id="too-long"),
    pytest.param("2026-11-30T14:00:00.000Z\n", "printable ASCII", id="control"),
    pytest.param("2026-11-30T14:00:00.000Z#é", "printable ASCII", id="not-ascii"),
    pytest.param("\ud800", "printable ASCII", id="lone-surrogate"),
]


@pytest.mark.parametrize(("cursor", "message"), BAD_CURSORS)
def test_a_cursor_that_is_no_sort_key_is_refused(
    claim_store: ClaimStore, cursor: object, message: str
) -> None:
    _seven_runs(claim_store)
    with pytest.raises(ValueError, match=message):
        claim_store.history("report", 3, cursor)  # type: ignore[arg-type]


def test_the_watermark_only_moves_forward(claim_store: ClaimStore) -> None:
    scope = "us-east-1/prod"
    assert claim_store.control(scope).watermark is None
    claim_store.advance_watermark(scope, T0)
    claim_store.advance_watermark(scope, T0 - timedelta(minutes=5))
    assert claim_store.control(scope).watermark == T0
    claim_store.advance_watermark(scope, T0 + timedelta(minutes=1))
    assert claim_store.control(scope).watermark == T0 + timedelta(minutes=1)
    assert claim_store.control("us-west-2/DR").watermark is None


def test_pauses_are_listed_by_control_until_resumed(claim_store: ClaimStore) -> None:
    claim_store.set_paused("report", True, operator="jane.doe", now=T0)
    paused = claim_store.control("us-east-1/prod").paused
    assert list(paused) == ["report"] and paused["report"].operator == "jane.doe"
    claim_store.set_paused("report", False, operator="joe", now=T0 + timedelta(minutes=1))
    control = claim_store.control("us-east-1/prod")
    assert control.paused == {}
    # A resume is kept, dated: another region's pause can be told from it (carry.py)
    assert control.resumed == {"report": Pause("report", "joe", T0 + timedelta(minutes=1))}
    claim_store.set_paused("report", True, operator="jane.doe", now=T0 + timedelta(minutes=2))
    control = claim_store.control("us-east-1/prod")
    assert list(control.paused) == ["report"] and control.resumed == {}


def test_a_lost_exclusive_claim_leaves_the_winners_slot(claim_store: ClaimStore) -> None:
    """A peer that loses the same exclusive firing must not free the slot the winner holds."""
    first, second = Firing("solo", T0), Firing("solo", T0 + timedelta(minutes=1))
    assert _claim(claim_store, first, exclusive=True) is ClaimResult.WON
    assert _claim(claim_store, first, exclusive=True) is ClaimResult.LOST
    assert _claim(claim_store, second, exclusive=True) is ClaimResult.OVERLAP
    state = claim_store.job_state("solo")
    assert state is not None and state.open_firing == first.id


def test_an_exclusive_claim_of_a_recorded_firing_loses_and_frees_nothing(
    claim_store: ClaimStore,
) -> None:
    skipped, later = Firing("solo", T0), Firing("solo", T0 + timedelta(minutes=1))
    assert claim_store.record_skipped(skipped, now=T0, reason="misfire", origin=ORIGIN)
    assert _claim(claim_store, skipped, exclusive=True) is ClaimResult.LOST
    state = claim_store.job_state("solo")  # no slot left held by a firing that never runs
    assert state is None or state.open_firing is None
    assert _claim(claim_store, later, exclusive=True) is ClaimResult.WON
    # the earlier firing is recorded: LOST, not OVERLAP, even while the slot is held
    assert _claim(claim_store, skipped, exclusive=True) is ClaimResult.LOST
    assert claim_store.run(skipped.id).status is RunStatus.SKIPPED  # type: ignore[union-attr]


def test_a_batch_that_claims_an_ended_firing_again_frees_its_slot_quietly(
    claim_store: ClaimStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A batch claims an exclusive firing whose run has ended (a repeated tick, a catch-up)
    and its job's next firing: the first is LOST, the next WON. The slot the batch took for the
    first (its record is met after the takes) is its own: released for the next without the
    WARNING of a stale slot (a release that was lost), which the next claim's store said."""
    ended, following = Firing("solo", T0), Firing("solo", T0 + timedelta(seconds=1))
    assert _claim(claim_store, ended, exclusive=True) is ClaimResult.WON
    assert claim_store.close(ended.id, RunStatus.SUCCEEDED, now=T0) is not None
    later = T0 + timedelta(seconds=1)
    claim_store.watch([following.id], later + timedelta(seconds=120))
    with caplog.at_level(logging.DEBUG, logger="mini_scheduler.claims"):
        outcomes = claim_store.claim_many(
            [ClaimRequest(ended, True), ClaimRequest(following, True)],
            now=later,
            lease_until=later + timedelta(seconds=120),
            origin=ORIGIN,
        )
    assert outcomes == [ClaimResult.LOST, ClaimResult.WON]
    state = claim_store.job_state("solo")
    assert state is not None and state.open_firing == following.id
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_a_run_closed_before_it_was_marked_dispatched_stays_closed(
    claim_store: ClaimStore,
) -> None:
    """A very fast target's completion can arrive before the ticker marks the dispatch."""
    firing = Firing("report", T0)
    _claim(claim_store, firing)
    ended = T0 + timedelta(milliseconds=300)
    assert claim_store.close(firing.id, RunStatus.SUCCEEDED, now=ended) is not None
    claim_store.mark_dispatched(firing, now=T0, deadline=T0 + timedelta(seconds=60), start=START)
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.SUCCEEDED
    assert claim_store.due_runs(T0 + timedelta(hours=1)) == []
    # the job's latest state records the start and, since the run already ended, its end
    state = claim_store.job_state("report")
    assert state is not None and state.last_firing_id == firing.id
    assert state.start == T0 and state.end == ended
    assert state.last_status is RunStatus.SUCCEEDED


def test_a_dispatched_run_cannot_be_taken_over(claim_store: ClaimStore) -> None:
    firing = Firing("report", T0)
    _claim(claim_store, firing, lease=60)
    (claimed,) = claim_store.due_runs(T0 + timedelta(seconds=61))
    claim_store.mark_dispatched(firing, now=T0, deadline=T0 + timedelta(seconds=900), start=START)
    later = T0 + timedelta(seconds=90)
    assert not claim_store.take_over(
        claimed, now=later, lease_until=later + timedelta(seconds=120), origin="us-west-2/DR"
    )
    assert claim_store.run(firing.id).status is RunStatus.DISPATCHED  # type: ignore[union-attr]


def test_due_runs_come_oldest_deadline_first_up_to_the_limit(claim_store: ClaimStore) -> None:
    for job, lease in (("c", 90), ("a", 30), ("b", 60)):
        _claim(claim_store, Firing(job, T0), lease=lease)
    later = T0 + timedelta(minutes=5)
    assert [r.job for r in claim_store.due_runs(later)] == ["a", "b", "c"]
    assert [r.job for r in claim_store.due_runs(later, limit=2)] == ["a", "b"]


def test_a_skipped_range_is_recorded_once(claim_store: ClaimStore) -> None:
    first, last = T0 - timedelta(hours=2), T0 - timedelta(hours=1)
    for count in (61, 99):
        claim_store.record_skipped_range(
            "report", first, last, count, now=T0, reason="misfire_grace", origin=ORIGIN
        )
    (run,) = claim_store.history("report")
    assert run.status is RunStatus.SKIPPED and run.skipped_count == 61
    assert run.reason == "misfire_grace" and run.ended_at == T0


# -- late ends and redrives (issue 11, items 4 and 5): the same rules on every backend --------

TIMEOUT = timedelta(minutes=10)
SWEPT = T0 + TIMEOUT + timedelta(minutes=1)


def _dispatched(store: ClaimStore, firing: Firing, *, exclusive: bool = False) -> None:
    assert _claim(store, firing, now=firing.scheduled, exclusive=exclusive) is ClaimResult.WON
    store.mark_dispatched(
        firing, now=firing.scheduled, deadline=firing.scheduled + TIMEOUT, start=START
    )


def _time_out(store: ClaimStore, firing: Firing, now: datetime = SWEPT) -> None:
    (run,) = [r for r in store.due_runs(now) if r.firing_id == firing.id]
    assert store.time_out(run, now=now)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (RunStatus.SUCCEEDED, None),
        (RunStatus.FAILED, "States.TaskFailed: boom"),
        (RunStatus.TIMED_OUT, "States.Timeout"),
    ],
)
def test_a_late_end_after_the_sweep_is_recorded_and_keeps_that_it_timed_out(
    claim_store: ClaimStore, status: RunStatus, error: str | None
) -> None:
    firing = Firing("report", T0)
    _dispatched(claim_store, firing)
    _time_out(claim_store, firing)
    swept = claim_store.run(firing.id)
    assert swept is not None and swept.status is RunStatus.TIMED_OUT and swept.swept
    assert swept.timed_out_at == SWEPT == swept.ended_at and swept.error == TIMED_OUT_ERROR
    ended = SWEPT + timedelta(minutes=5)
    before = claim_store.close(firing.id, status, now=ended, error=error)
    assert before is not None and before.status is RunStatus.TIMED_OUT and before.swept
    run = claim_store.run(firing.id)
    assert run is not None and run.status is status and run.ended_at == ended
    assert run.timed_out_at == SWEPT and run.error == error and not run.swept
    assert run.to_json()["timedOutAt"] == "2026-11-30T14:11:00Z"
    state = claim_store.job_state("report")
    assert state is not None and state.last_status is status and state.end == ended
    # a second delivery of the event, or another end, changes nothing
    assert claim_store.close(firing.id, status, now=ended, error=error) is None
    assert claim_store.close(firing.id, RunStatus.FAILED, now=ended, error="again") is None
    assert claim_store.run(firing.id) == run


def test_a_late_end_leaves_the_slot_of_the_run_after_it(claim_store: ClaimStore) -> None:
    first, second = Firing("solo", T0), Firing("solo", SWEPT)
    _dispatched(claim_store, first, exclusive=True)
    _time_out(claim_store, first)  # frees the slot
    _dispatched(claim_store, second, exclusive=True)
    assert claim_store.close(first.id, RunStatus.SUCCEEDED, now=SWEPT) is not None
    state = claim_store.job_state("solo")
    assert state is not None and state.open_firing == second.id
    third = Firing("solo", SWEPT + timedelta(minutes=1))
    assert _claim(claim_store, third, exclusive=True) is ClaimResult.OVERLAP


def test_a_redriven_run_reopens_then_ends_with_its_real_status(claim_store: ClaimStore) -> None:
    firing = Firing("flow", T0)
    _dispatched(claim_store, firing)
    failed = T0 + timedelta(minutes=2)
    claim_store.close(firing.id, RunStatus.FAILED, now=failed, error="States.TaskFailed: boom")
    redriven = T0 + timedelta(hours=1)
    before = claim_store.redrive(firing.id, Redrive(1, redriven))
    assert before is not None and before.status is RunStatus.FAILED
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.DISPATCHED
    assert run.redrives == 1 and run.redriven_at == redriven
    assert run.ended_at is None and run.error is None
    assert run.earlier_ends == (EarlierEnd(RunStatus.FAILED, failed, "States.TaskFailed: boom"),)
    # the job's timeout counts again from the redrive: the sweep sees it then, not before
    assert run.deadline == redriven + TIMEOUT and run.started_at == T0
    assert claim_store.due_runs(redriven + TIMEOUT - timedelta(seconds=1)) == []
    assert [r.firing_id for r in claim_store.due_runs(redriven + TIMEOUT)] == [firing.id]
    state = claim_store.job_state("flow")
    assert state is not None and state.last_status is RunStatus.DISPATCHED and state.end is None
    # the same redrive heard twice, and the first attempt's end delivered again: nothing
    assert claim_store.redrive(firing.id, Redrive(1, redriven)) is None
    assert claim_store.close(firing.id, RunStatus.FAILED, now=failed, error="boom") is None
    ended = redriven + timedelta(minutes=3)
    before = claim_store.close(
        firing.id, RunStatus.SUCCEEDED, now=ended, redrive=Redrive(1, redriven)
    )
    assert before is not None and before.status is RunStatus.DISPATCHED
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.SUCCEEDED and run.ended_at == ended
    assert run.redrives == 1 and len(run.earlier_ends) == 1 and run.error is None
    assert run.to_json()["earlierEnds"] == [
        {"status": "FAILED", "endedAt": "2026-11-30T14:02:00Z", "error": "States.TaskFailed: boom"}
    ]
    state = claim_store.job_state("flow")
    assert state is not None and state.last_status is RunStatus.SUCCEEDED and state.end == ended
    assert claim_store.due_runs(ended + TIMEOUT) == []
    assert (
        claim_store.close(firing.id, RunStatus.SUCCEEDED, now=ended, redrive=Redrive(1, redriven))
        is None
    )


def test_a_redriven_end_heard_without_its_running_event_still_ends_the_run(
    claim_store: ClaimStore,
) -> None:
    firing = Firing("flow", T0)
    _dispatched(claim_store, firing)
    failed = T0 + timedelta(minutes=2)
    claim_store.close(firing.id, RunStatus.FAILED, now=failed, error="boom")
    redrive, ended = Redrive(1, T0 + timedelta(hours=1)), T0 + timedelta(hours=2)
    before = claim_store.close(firing.id, RunStatus.SUCCEEDED, now=ended, redrive=redrive)
    assert before is not None and before.status is RunStatus.FAILED
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.SUCCEEDED and run.ended_at == ended
    assert run.redrives == 1 and run.redriven_at == redrive.at
    assert run.earlier_ends == (EarlierEnd(RunStatus.FAILED, failed, "boom"),)
    # its RUNNING event, delivered late, changes nothing
    assert claim_store.redrive(firing.id, redrive) is None
    assert claim_store.run(firing.id) == run


def test_a_timed_out_run_redriven_twice_keeps_each_earlier_end(claim_store: ClaimStore) -> None:
    firing = Firing("flow", T0)
    _dispatched(claim_store, firing)
    _time_out(claim_store, firing)
    first = Redrive(1, SWEPT + timedelta(minutes=5))
    assert claim_store.redrive(firing.id, first) is not None
    run = claim_store.run(firing.id)
    assert run is not None and run.timed_out_at is None and run.status is RunStatus.DISPATCHED
    failed = first.at + timedelta(minutes=1)
    claim_store.close(firing.id, RunStatus.FAILED, now=failed, error="again", redrive=first)
    second = Redrive(2, failed + timedelta(minutes=5))
    assert claim_store.redrive(firing.id, second) is not None
    ended = second.at + timedelta(minutes=1)
    claim_store.close(firing.id, RunStatus.SUCCEEDED, now=ended, redrive=second)
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.SUCCEEDED and run.redrives == 2
    assert run.earlier_ends == (
        EarlierEnd(RunStatus.TIMED_OUT, SWEPT, TIMED_OUT_ERROR),
        EarlierEnd(RunStatus.FAILED, failed, "again"),
    )
    # an end of the first redrive heard now is older than the second: nothing
    assert claim_store.close(firing.id, RunStatus.FAILED, now=ended, redrive=first) is None


def test_a_redriven_run_keeps_its_first_and_latest_earlier_ends(claim_store: ClaimStore) -> None:
    firing = Firing("flow", T0)
    _dispatched(claim_store, firing)
    at = T0
    for count in range(EARLIER_ENDS_KEPT + 3):
        at += timedelta(minutes=1)
        redrive = Redrive(count, at) if count else None
        claim_store.close(
            firing.id, RunStatus.FAILED, now=at, error=f"failure {count}", redrive=redrive
        )
        at += timedelta(minutes=1)
        assert claim_store.redrive(firing.id, Redrive(count + 1, at)) is not None
    ends = claim_store.run(firing.id).earlier_ends  # type: ignore[union-attr]
    assert len(ends) == EARLIER_ENDS_KEPT
    assert [e.error for e in ends[:2]] == ["failure 0", "failure 4"]
    assert ends[-1].error == f"failure {EARLIER_ENDS_KEPT + 2}"


def test_a_redriven_exclusive_run_takes_the_free_slot_back(claim_store: ClaimStore) -> None:
    first, second = Firing("solo", T0), Firing("solo", T0 + timedelta(minutes=30))
    _dispatched(claim_store, first, exclusive=True)
    claim_store.close(first.id, RunStatus.FAILED, now=T0 + timedelta(minutes=1), error="boom")
    redrive = Redrive(1, T0 + timedelta(minutes=20))
    assert claim_store.redrive(first.id, redrive) is not None
    state = claim_store.job_state("solo")
    assert state is not None and state.open_firing == first.id
    assert _claim(claim_store, second, exclusive=True) is ClaimResult.OVERLAP
    claim_store.close(
        first.id, RunStatus.SUCCEEDED, now=T0 + timedelta(minutes=25), redrive=redrive
    )
    assert _claim(claim_store, second, exclusive=True) is ClaimResult.WON


def test_a_redriven_exclusive_run_leaves_a_slot_another_run_holds(
    claim_store: ClaimStore, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = Firing("solo", T0), Firing("solo", T0 + timedelta(minutes=15))
    _dispatched(claim_store, first, exclusive=True)
    claim_store.close(first.id, RunStatus.FAILED, now=T0 + timedelta(minutes=1), error="boom")
    _dispatched(claim_store, second, exclusive=True)
    redrive = Redrive(1, T0 + timedelta(minutes=20))
    assert claim_store.redrive(first.id, redrive) is not None
    assert claim_store.run(first.id).status is RunStatus.DISPATCHED  # type: ignore[union-attr]
    assert f"firing {first.id} redriven while another run holds the job's slot" in caplog.text
    claim_store.close(
        first.id, RunStatus.SUCCEEDED, now=T0 + timedelta(minutes=25), redrive=redrive
    )
    state = claim_store.job_state("solo")
    assert state is not None and state.open_firing == second.id
    third = Firing("solo", T0 + timedelta(minutes=30))
    assert _claim(claim_store, third, exclusive=True) is ClaimResult.OVERLAP


def test_nothing_redrives_a_run_that_succeeded_was_skipped_or_is_unknown(
    claim_store: ClaimStore,
) -> None:
    done, skipped = Firing("flow", T0), Firing("flow", T0 + timedelta(minutes=1))
    _dispatched(claim_store, done)
    claim_store.close(done.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=5))
    claim_store.record_skipped(skipped, now=T0, reason="overlap", origin=ORIGIN)
    redrive = Redrive(1, T0 + timedelta(hours=1))
    for firing in (done, skipped, Firing("ghost", T0)):
        assert claim_store.redrive(firing.id, redrive) is None
        assert claim_store.close(firing.id, RunStatus.FAILED, now=T0, redrive=redrive) is None
    assert claim_store.run(done.id).status is RunStatus.SUCCEEDED  # type: ignore[union-attr]
    assert claim_store.run(skipped.id).status is RunStatus.SKIPPED  # type: ignore[union-attr]


def test_an_open_run_redriven_before_its_end_was_heard_takes_the_later_end(
    claim_store: ClaimStore,
) -> None:
    """The FAILED event of the first attempt lost or late: the redrive's RUNNING event finds the
    run open, notes the redrive, and only an end of that redrive closes it."""
    firing = Firing("flow", T0)
    _dispatched(claim_store, firing)
    redrive = Redrive(1, T0 + timedelta(minutes=30))
    assert claim_store.redrive(firing.id, redrive) is not None
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.DISPATCHED and run.redrives == 1
    assert run.deadline == redrive.at + TIMEOUT
    assert claim_store.close(firing.id, RunStatus.FAILED, now=T0, error="late") is None
    ended = redrive.at + timedelta(minutes=1)
    assert claim_store.close(firing.id, RunStatus.SUCCEEDED, now=ended, redrive=redrive)
    assert claim_store.run(firing.id).status is RunStatus.SUCCEEDED  # type: ignore[union-attr]


# -- batches ----------------------------------------------------------------------------------


def _claim_many(
    store: ClaimStore, requests: list[ClaimRequest], *, now: datetime = T0, lease: int = 120
) -> list[object]:
    lease_until = now + timedelta(seconds=lease)
    store.watch([r.firing.id for r in requests], lease_until)
    return list(store.claim_many(requests, now=now, lease_until=lease_until, origin=ORIGIN))


def test_a_batch_of_claims_answers_each_firing_in_order(claim_store: ClaimStore) -> None:
    """30 firings (more than one request's 25), two of them a peer's already: those LOST."""
    firings = [Firing(f"job-{i}", T0) for i in range(30)]
    for taken in (firings[3], firings[27]):
        assert _claim(claim_store, taken) is ClaimResult.WON
    outcomes = _claim_many(claim_store, [ClaimRequest(f) for f in firings])
    expected = [ClaimResult.LOST if i in (3, 27) else ClaimResult.WON for i in range(len(firings))]
    assert outcomes == expected
    assert _claim_many(claim_store, [ClaimRequest(f) for f in firings]) == [ClaimResult.LOST] * 30
    for firing in firings:
        run = claim_store.run(firing.id)
        assert run is not None and run.status is RunStatus.CLAIMED and run.origin == ORIGIN


def test_a_batch_mixes_exclusive_and_plain_claims(claim_store: ClaimStore) -> None:
    held = Firing("solo", T0 - timedelta(minutes=1))
    assert _claim(claim_store, held, exclusive=True) is ClaimResult.WON
    requests = [
        ClaimRequest(Firing("solo", T0), exclusive=True),  # its previous run holds the slot
        ClaimRequest(Firing("other-solo", T0), exclusive=True),
        ClaimRequest(Firing("plain", T0)),
    ]
    outcomes = _claim_many(claim_store, requests)
    assert outcomes == [ClaimResult.OVERLAP, ClaimResult.WON, ClaimResult.WON]
    assert claim_store.run(Firing("solo", T0).id) is None  # nothing written for an overlap
    state = claim_store.job_state("other-solo")
    assert state is not None and state.open_firing == Firing("other-solo", T0).id


def test_a_batch_of_marks_marks_each_run_and_leaves_an_ended_one_ended(
    claim_store: ClaimStore,
) -> None:
    firings = [Firing(f"job-{i}", T0) for i in range(27)]
    _claim_many(claim_store, [ClaimRequest(f) for f in firings])
    fast = firings[5]
    claim_store.close(fast.id, RunStatus.SUCCEEDED, now=T0 + timedelta(milliseconds=200))
    started = T0 + timedelta(seconds=1)
    marks = [MarkRequest(f, started + timedelta(seconds=900), START) for f in firings]
    assert claim_store.mark_many(marks, now=started) == [None] * len(firings)
    for firing in firings:
        run = claim_store.run(firing.id)
        assert run is not None
        if firing == fast:
            assert run.status is RunStatus.SUCCEEDED
        else:
            assert run.status is RunStatus.DISPATCHED and run.started_at == started
            assert run.deadline == started + timedelta(seconds=900)
    state = claim_store.job_state(fast.job)
    assert state is not None and state.last_status is RunStatus.SUCCEEDED
    assert state.start == started and state.service == START.service


def test_a_mark_that_carries_its_runs_end_ends_the_run_in_the_same_write(
    claim_store: ClaimStore,
) -> None:
    """Issue 29: a queue's or a webhook's dispatch answers its run's end, which the mark writes
    (one write a firing): the run ended, started and ended at the mark, with the error of a
    FAILED one; the job's latest state says so; a later close changes nothing."""
    firings = [Firing(f"hook-{i}", T0) for i in range(3)]
    _claim_many(claim_store, [ClaimRequest(f) for f in firings])
    at = T0 + timedelta(seconds=1)
    deadline = at + timedelta(seconds=900)
    marks = [
        MarkRequest(firings[0], deadline, START, RunStatus.SUCCEEDED),
        MarkRequest(firings[1], deadline, START, RunStatus.FAILED, "HTTP 503 Service Unavailable"),
        MarkRequest(firings[2], deadline, START),
    ]
    assert claim_store.mark_many(marks, now=at) == [None] * 3
    ok, failed, open_run = (claim_store.run(f.id) for f in firings)
    assert ok is not None and ok.status is RunStatus.SUCCEEDED
    assert ok.started_at == at and ok.ended_at == at and ok.service == START.service
    assert failed is not None and failed.status is RunStatus.FAILED
    assert failed.error == "HTTP 503 Service Unavailable"
    assert open_run is not None and open_run.status is RunStatus.DISPATCHED
    state = claim_store.job_state(firings[1].job)
    assert state is not None and state.last_status is RunStatus.FAILED and state.start == at
    assert claim_store.close(firings[0].id, RunStatus.FAILED, now=at) is None
    due = claim_store.due_runs(deadline + timedelta(seconds=1))
    assert [r.firing_id for r in due] == [firings[2].id]


def test_a_settled_sweep_forgets_ended_runs_and_lists_open_ones_again(
    claim_store: ClaimStore,
) -> None:
    """The tick's sweep settles what it watches: a run still open past its deadline is listed
    again a minute later at the latest (a sweep step that failed is tried again), an ended one
    never again."""
    firings = [Firing(f"job-{i}", T0) for i in range(3)]
    _claim_many(claim_store, [ClaimRequest(f) for f in firings], lease=60)
    claim_store.close(firings[0].id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=5))
    sweep = T0 + timedelta(seconds=61)
    due = claim_store.due_runs(sweep, settle=True)
    assert sorted(r.firing_id for r in due) == sorted(f.id for f in firings[1:])
    claim_store.close(firings[1].id, RunStatus.SUCCEEDED, now=sweep)
    later = sweep + timedelta(minutes=1)
    (claimed,) = claim_store.due_runs(later, settle=True)
    assert claimed.firing_id == firings[2].id
    # taken over, then dispatched: listed again only once its new deadline has passed
    taken = later + timedelta(seconds=1)
    assert claim_store.take_over(
        claimed, now=taken, lease_until=taken + timedelta(seconds=60), origin=ORIGIN
    )
    deadline = taken + timedelta(minutes=10)
    claim_store.mark_dispatched(firings[2], now=taken, deadline=deadline, start=START)
    for minute in range(1, 11):
        at = later + timedelta(minutes=minute)
        assert claim_store.due_runs(at, settle=True) == [], at
    (timed_out,) = claim_store.due_runs(deadline + timedelta(minutes=1), settle=True)
    assert timed_out.firing_id == firings[2].id and timed_out.status is RunStatus.DISPATCHED


def test_a_dry_sweep_changes_nothing(claim_store: ClaimStore) -> None:
    firing = Firing("report", T0)
    _claim(claim_store, firing, lease=60)
    sweep = T0 + timedelta(seconds=61)
    assert [r.firing_id for r in claim_store.due_runs(sweep)] == [firing.id]
    assert [r.firing_id for r in claim_store.due_runs(sweep)] == [firing.id]


# -- deferred firings ------------------------------------------------------------------------

WRITTEN = T0 - timedelta(minutes=3, milliseconds=250)


def _deferred(
    firing: Firing, due: datetime, *, origin: str = ORIGIN, written_at: datetime = WRITTEN
) -> Deferred:
    return Deferred(firing, due, "retry", origin, written_at)


def test_deferred_firings_due_before_an_instant_are_listed_oldest_first(
    claim_store: ClaimStore,
) -> None:
    """Due before ``until``, not at it; each read back whole (firing, due, reason, origin,
    written_at)."""
    first = _deferred(Firing("report", T0 - timedelta(hours=1), attempt=3), T0 - timedelta(hours=1))
    second = _deferred(Firing("cleanup", T0, attempt=2), T0 - timedelta(milliseconds=1))
    at_until = _deferred(Firing("other", T0, attempt=2), T0)
    later = _deferred(Firing("report", T0, attempt=2), T0 + timedelta(minutes=5))
    claim_store.defer([later, second, at_until, first])
    assert claim_store.due_deferred(T0 - timedelta(hours=2)) == []
    assert claim_store.due_deferred(T0) == [first, second]
    assert claim_store.due_deferred(T0, limit=1) == [first]
    assert claim_store.due_deferred(T0 + timedelta(milliseconds=1)) == [first, second, at_until]
    everything = claim_store.due_deferred(T0 + timedelta(days=1))
    assert everything == [first, second, at_until, later]
    assert [d.reason for d in everything] == ["retry"] * 4
    assert all(d.written_at == WRITTEN and d.origin == ORIGIN for d in everything)


def test_a_firing_deferred_twice_is_listed_once(claim_store: ClaimStore) -> None:
    """By one writer (twice in a batch, or again after an error) or by two: one entry, and its
    claim decides that it runs once. Which writer's reason and origin stay is the store's (a
    DynamoDB put replaces an item, a MongoDB insert keeps the document)."""
    firing = Firing("report", T0).retry()
    due = T0 + timedelta(minutes=1)
    once = _deferred(firing, due)
    claim_store.defer([once, once])
    claim_store.defer([once])
    assert claim_store.due_deferred(due + timedelta(seconds=1)) == [once]
    other = _deferred(firing, due, origin="us-west-2/DR", written_at=T0)
    claim_store.defer([other])
    (listed,) = claim_store.due_deferred(due + timedelta(seconds=1))
    assert listed in (once, other) and (listed.firing, listed.due) == (firing, due)


def test_one_run_deferred_to_two_instants_is_two_entries(claim_store: ClaimStore) -> None:
    """Both are listed, each when due: the run's claim lets one of them run."""
    firing = Firing("report", T0, attempt=2)
    early = _deferred(firing, T0 + timedelta(minutes=1))
    late = _deferred(firing, T0 + timedelta(minutes=2))
    claim_store.defer([late, early])
    assert claim_store.due_deferred(T0 + timedelta(minutes=2)) == [early]
    assert claim_store.due_deferred(T0 + timedelta(minutes=3)) == [early, late]


def test_dropped_deferred_firings_are_forgotten_and_only_they(claim_store: ClaimStore) -> None:
    kept = [
        _deferred(Firing(f"job-{i}", T0, attempt=2), T0 + timedelta(seconds=i)) for i in range(4)
    ]
    claim_store.defer(kept)
    claim_store.drop_deferred([kept[3], kept[1]])
    until = T0 + timedelta(minutes=1)
    assert claim_store.due_deferred(until) == [kept[0], kept[2]]
    claim_store.drop_deferred([kept[1], kept[0], kept[0]])  # one gone already, one given twice
    assert claim_store.due_deferred(until) == [kept[2]]
    claim_store.drop_deferred([])
    claim_store.defer([])
    assert claim_store.due_deferred(until) == [kept[2]]


@pytest.mark.parametrize(
    "firing",
    [
        Firing("x", T0, attempt=3),
        Firing("report", T0 + timedelta(milliseconds=123), True, "0a1b2c3d", attempt=2),
        Firing("report.daily_2", T0 + timedelta(seconds=59), attempt=99),
        Firing("report", T0),
    ],
    ids=["attempt-3", "manual-retry", "last-attempt", "first-attempt"],
)
def test_a_deferred_firing_reads_back_its_attempt_and_manual_run(
    claim_store: ClaimStore, firing: Firing
) -> None:
    deferred = _deferred(firing, T0 + timedelta(minutes=2, milliseconds=7))
    claim_store.defer([deferred])
    (read,) = claim_store.due_deferred(T0 + timedelta(minutes=3))
    assert read == deferred and read.firing.id == firing.id and read.key == deferred.key


def test_many_deferred_firings_are_written_listed_and_dropped_in_batches(
    claim_store: ClaimStore,
) -> None:
    """More than a batch of each kind (25 on DynamoDB); a limit cuts the list in due order."""
    many = [
        _deferred(
            Firing(f"job-{i % 7}", T0 + timedelta(minutes=i), attempt=2), T0 + timedelta(seconds=i)
        )
        for i in range(60)
    ]
    claim_store.defer(many[::-1])
    until = T0 + timedelta(minutes=2)
    assert claim_store.due_deferred(until) == many
    assert claim_store.due_deferred(until, limit=50) == many[:50]
    claim_store.drop_deferred(many[:55])
    assert claim_store.due_deferred(until) == many[55:]


def test_a_schedule_advances_only_from_a_firing_still_stored(claim_store: ClaimStore) -> None:
    """The next firing replaces the one dispatched while that one is stored; once it is gone
    (the schedule deleted, or the step made already) nothing is written: a tick that read a
    schedule before its delete never brings it back."""
    detail = {"entry": {"name": "every", "cron": "0 * * * * ?", "service": "fn"}}

    def firing_at(minutes: int) -> Deferred:
        at = T0 + timedelta(minutes=minutes)
        return Deferred(Firing("every", at), at, "schedule", ORIGIN, WRITTEN, detail)

    first, second, third = firing_at(0), firing_at(1), firing_at(2)
    claim_store.defer([first])
    assert claim_store.advance_schedule(first, second) is True
    assert claim_store.pending_deferred("schedule") == [second]
    assert claim_store.advance_schedule(first, third) is False  # a second tick's late step
    assert claim_store.pending_deferred("schedule") == [second]
    claim_store.drop_deferred([second])  # the operator's delete
    assert claim_store.advance_schedule(second, third) is False
    assert claim_store.pending_deferred("schedule") == []


def test_a_deferred_firing_keeps_its_reason_and_detail(claim_store: ClaimStore) -> None:
    """A runtime schedule's entry and a backfill's size read back as written (JSON values at
    any depth); a backfill's firing comes back marked so (its payload says it)."""
    entry = {
        "name": "once",
        "at": "2026-12-01T10:00:00Z",
        "service": "mini-scheduler-report",
        "parameters": {"deep": [1, 2.5, {"x": None, "ok": True}], "text": "é"},
    }
    schedule = Deferred(
        Firing("once", T0), T0, "schedule", ORIGIN, WRITTEN, {"entry": entry, "operator": "jane"}
    )
    backfill = Deferred(
        Firing("report", T0 - timedelta(days=1), backfill=True),
        T0 + timedelta(minutes=1),
        "backfill",
        ORIGIN,
        WRITTEN,
        {"backfill": "report@backfill-1", "total": 3},
    )
    retry = _deferred(Firing("report", T0).retry(), T0 + timedelta(minutes=2))
    claim_store.defer([schedule, backfill, retry])
    read = claim_store.due_deferred(T0 + timedelta(hours=1))
    assert read == [schedule, backfill, retry]
    assert [dict(d.detail) for d in read] == [dict(schedule.detail), dict(backfill.detail), {}]
    assert [d.firing.backfill for d in read] == [False, True, False]
    assert [d.reason for d in read] == ["schedule", "backfill", "retry"]


def test_pending_deferred_firings_of_a_reason_are_listed_however_far_ahead(
    claim_store: ClaimStore,
) -> None:
    """The operator's listing: every one of the reason, due first, years ahead too."""
    far = Deferred(
        Firing("b", T0 + timedelta(days=800)),
        T0 + timedelta(days=800),
        "schedule",
        ORIGIN,
        WRITTEN,
        {"entry": {"name": "b"}},
    )
    near = Deferred(Firing("a", T0), T0, "schedule", ORIGIN, WRITTEN, {"entry": {"name": "a"}})
    retry = _deferred(Firing("a", T0).retry(), T0 - timedelta(minutes=1))
    claim_store.defer([far, retry, near])
    assert claim_store.pending_deferred("schedule") == [near, far]
    assert claim_store.pending_deferred("retry") == [retry]
    assert claim_store.pending_deferred("backfill") == []
    claim_store.drop_deferred([near])
    assert claim_store.pending_deferred("schedule") == [far]


# -- a backfill's claim over a SKIPPED record (issue 14, part 4) -----------------------------


def _backfill(
    store: ClaimStore, firing: Firing, *, exclusive: bool = False, now: datetime = T0
) -> ClaimOutcome:
    """A backfill's claim (``over_skipped``), as the executor makes it, in a batch of one."""
    (outcome,) = _claim_many(
        store, [ClaimRequest(replace(firing, backfill=True), exclusive, True)], now=now
    )
    return outcome


def test_a_backfills_claim_wins_over_a_skipped_firing_once(claim_store: ClaimStore) -> None:
    firing = Firing("report", T0 - timedelta(hours=1))
    assert claim_store.record_skipped(firing, now=T0, reason="misfire", origin="us-west-2/DR")
    assert _claim(claim_store, firing) is ClaimResult.LOST  # without the flag: still LOST
    assert _backfill(claim_store, firing) is ClaimResult.WON
    assert _backfill(claim_store, firing) is ClaimResult.LOST  # it has run now
    assert _claim(claim_store, firing) is ClaimResult.LOST
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.CLAIMED and run.backfill
    assert run.origin == ORIGIN and run.claimed_at == T0 and run.ended_at is None
    assert run.reason is None and run.skipped_count is None
    assert run.replaced_skip == {"reason": "misfire"}
    assert run.to_json()["backfill"] is True
    assert run.to_json()["replacedSkip"] == {"reason": "misfire"}
    assert [r.firing_id for r in claim_store.history("report")] == [firing.id]
    # it runs as any claimed run: dispatched, then ended; the sweep sees it while open
    assert [r.firing_id for r in claim_store.due_runs(T0 + timedelta(minutes=3))] == [firing.id]
    claim_store.mark_dispatched(firing, now=T0, deadline=T0 + TIMEOUT, start=START)
    claim_store.close(firing.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=5))
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.SUCCEEDED and run.backfill


def test_a_backfills_claim_over_a_skipped_range_keeps_the_range(claim_store: ClaimStore) -> None:
    """The range is one record keyed by its first firing: the backfill's run replaces it and
    keeps its reason, last firing and count; the later firings of the range have no record."""
    first, last = T0 - timedelta(hours=2), T0 - timedelta(hours=1)
    claim_store.record_skipped_range(
        "report", first, last, 61, now=T0, reason="misfire_grace", origin=ORIGIN
    )
    assert _backfill(claim_store, Firing("report", first)) is ClaimResult.WON
    (run,) = claim_store.history("report")
    assert run.status is RunStatus.CLAIMED and run.backfill and run.skipped_count is None
    expected = {"reason": "misfire_grace", "until": "2026-11-30T13:00:00Z", "count": 61}
    assert run.replaced_skip == expected and run.to_json()["replacedSkip"] == expected
    assert _backfill(claim_store, Firing("report", first + timedelta(minutes=1))) is (
        ClaimResult.WON
    )


@pytest.mark.parametrize(
    "status",
    [
        RunStatus.CLAIMED,
        RunStatus.DISPATCHED,
        RunStatus.SUCCEEDED,
        RunStatus.FAILED,
        RunStatus.TIMED_OUT,
    ],
)
def test_a_backfills_claim_loses_over_any_run_but_a_skip(
    claim_store: ClaimStore, status: RunStatus
) -> None:
    firing = Firing("report", T0)
    assert _claim(claim_store, firing) is ClaimResult.WON
    if status is not RunStatus.CLAIMED:
        claim_store.mark_dispatched(firing, now=T0, deadline=T0 + TIMEOUT, start=START)
    if status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
        claim_store.close(firing.id, status, now=T0 + timedelta(seconds=5), error="boom")
    if status is RunStatus.TIMED_OUT:
        _time_out(claim_store, firing)
    before = claim_store.run(firing.id)
    assert before is not None and before.status is status
    assert _backfill(claim_store, firing) is ClaimResult.LOST
    assert _backfill(claim_store, firing, exclusive=True) is ClaimResult.LOST
    assert claim_store.run(firing.id) == before


def test_a_claim_of_a_backfills_firing_says_backfill(claim_store: ClaimStore) -> None:
    plain, backfilled = Firing("report", T0), Firing("report", T0 + timedelta(minutes=1))
    assert _claim(claim_store, plain) is ClaimResult.WON
    assert _claim(claim_store, replace(backfilled, backfill=True)) is ClaimResult.WON
    run, other = claim_store.run(backfilled.id), claim_store.run(plain.id)
    assert run is not None and run.backfill and run.replaced_skip is None
    assert run.to_json()["backfill"] is True
    assert other is not None and not other.backfill and "backfill" not in other.to_json()


def test_an_exclusive_backfill_over_a_skip_holds_the_job_and_waits_for_its_slot(
    claim_store: ClaimStore,
) -> None:
    """Over a skip as anywhere: OVERLAP while another run holds the slot (the skip stays), then
    WON with the slot; a batch's later exclusive firing of the job finds the slot held by the
    backfill's firing, whose SKIPPED record is about to be replaced (not a run that ended)."""
    skipped = Firing("solo", T0 - timedelta(hours=1))
    assert claim_store.record_skipped(skipped, now=T0, reason="overlap", origin=ORIGIN)
    held = Firing("solo", T0 - timedelta(minutes=1))
    assert _claim(claim_store, held, exclusive=True) is ClaimResult.WON
    assert _backfill(claim_store, skipped, exclusive=True) is ClaimResult.OVERLAP
    assert claim_store.run(skipped.id).status is RunStatus.SKIPPED  # type: ignore[union-attr]
    claim_store.close(held.id, RunStatus.SUCCEEDED, now=T0)
    later = Firing("solo", T0)
    requests = [
        ClaimRequest(replace(skipped, backfill=True), exclusive=True, over_skipped=True),
        ClaimRequest(later, exclusive=True),
    ]
    assert _claim_many(claim_store, requests) == [ClaimResult.WON, ClaimResult.OVERLAP]
    state = claim_store.job_state("solo")
    assert state is not None and state.open_firing == skipped.id
    assert claim_store.run(skipped.id).exclusive  # type: ignore[union-attr]
    claim_store.close(skipped.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=5))
    assert _claim(claim_store, Firing("solo", T0 + timedelta(minutes=1)), exclusive=True) is (
        ClaimResult.WON
    )


def test_a_lost_exclusive_backfill_leaves_the_job_free(claim_store: ClaimStore) -> None:
    ran = Firing("solo", T0 - timedelta(hours=1))
    _dispatched(claim_store, ran, exclusive=True)
    claim_store.close(ran.id, RunStatus.SUCCEEDED, now=T0 - timedelta(minutes=50))
    assert _backfill(claim_store, ran, exclusive=True) is ClaimResult.LOST
    assert _claim(claim_store, Firing("solo", T0), exclusive=True) is ClaimResult.WON


def test_a_batch_of_backfills_wins_the_skipped_and_new_firings_only(
    claim_store: ClaimStore,
) -> None:
    """30 firings (more than one request's 25): skipped ones (WON), a range's first (WON),
    ones that ran (LOST) and ones with no record (WON), in order."""
    firings = [Firing("report", T0 - timedelta(minutes=30 - i)) for i in range(30)]
    for i in (2, 11, 26):
        claim_store.record_skipped(firings[i], now=T0, reason="misfire", origin=ORIGIN)
    claim_store.record_skipped_range(
        "report", firings[5].scheduled, firings[8].scheduled, 4, now=T0, reason="x", origin=ORIGIN
    )
    for i in (3, 20, 29):
        assert _claim(claim_store, firings[i]) is ClaimResult.WON
    requests = [ClaimRequest(replace(f, backfill=True), over_skipped=True) for f in firings]
    expected = [ClaimResult.LOST if i in (3, 20, 29) else ClaimResult.WON for i in range(30)]
    assert _claim_many(claim_store, requests) == expected
    assert _claim_many(claim_store, requests) == [ClaimResult.LOST] * 30
    for i, firing in enumerate(firings):
        run = claim_store.run(firing.id)
        assert run is not None and run.status is RunStatus.CLAIMED
        assert run.backfill is (i not in (3, 20, 29))
    assert claim_store.run(firings[5].id).replaced_skip == {  # type: ignore[union-attr]
        "reason": "x",
        "until": firings[8].scheduled_time,
        "count": 4,
    }


def test_a_batch_that_holds_a_firing_twice_claims_it_once_and_the_others_beside_it(
    claim_store: ClaimStore,
) -> None:
    """The same firing twice in one batch (plain, and as a backfill's over a skip): the first
    request wins it, the repeat is LOST, and the firings beside them are claimed as usual. A
    store never sends one key twice in one request (DynamoDB refuses the whole request)."""
    skipped = Firing("report", T0 - timedelta(minutes=5))
    claim_store.record_skipped(skipped, now=T0, reason="misfire", origin=ORIGIN)
    backfill = replace(skipped, backfill=True)
    twice = Firing("report", T0)
    requests = [
        ClaimRequest(twice),
        ClaimRequest(Firing("beside", T0)),
        ClaimRequest(backfill, over_skipped=True),
        ClaimRequest(twice),
        ClaimRequest(backfill, over_skipped=True),
        ClaimRequest(Firing("beside-too", T0)),
    ]
    assert _claim_many(claim_store, requests) == [
        ClaimResult.WON,
        ClaimResult.WON,
        ClaimResult.WON,
        ClaimResult.LOST,
        ClaimResult.LOST,
        ClaimResult.WON,
    ]
    run = claim_store.run(skipped.id)
    assert run is not None and run.status is RunStatus.CLAIMED and run.backfill


# -- races (on the backends whose conditional writes are atomic: see conftest) ---------------

RACERS = 8
ROUNDS = 25


def _race(store: ClaimStore, firings: list[Firing], *, exclusive: bool) -> list[ClaimResult]:
    barrier = threading.Barrier(len(firings))

    def one(firing: Firing) -> ClaimResult:
        barrier.wait()
        return _claim(store, firing, exclusive=exclusive)

    with ThreadPoolExecutor(max_workers=len(firings)) as pool:
        return list(pool.map(one, firings))


def test_racing_claimers_of_one_firing_have_exactly_one_winner(
    racing_claim_store: ClaimStore,
) -> None:
    for round_ in range(ROUNDS):
        firing = Firing("race", T0 + timedelta(minutes=round_))
        results = _race(racing_claim_store, [firing] * RACERS, exclusive=False)
        assert results.count(ClaimResult.WON) == 1, results
        assert results.count(ClaimResult.LOST) == RACERS - 1, results


def test_racing_exclusive_claimers_of_one_firing_have_exactly_one_winner(
    racing_claim_store: ClaimStore,
) -> None:
    for round_ in range(ROUNDS):
        firing = Firing(f"solo-{round_}", T0)
        results = _race(racing_claim_store, [firing] * RACERS, exclusive=True)
        assert results.count(ClaimResult.WON) == 1, results
        assert results.count(ClaimResult.LOST) == RACERS - 1, results
        # the losers left the winner's slot in place
        later = Firing(firing.job, T0 + timedelta(minutes=1))
        assert _claim(racing_claim_store, later, exclusive=True) is ClaimResult.OVERLAP


def _together(actions: list[Callable[[], object]]) -> list[object]:
    """Each action on its own thread, all let go at once."""
    barrier = threading.Barrier(len(actions))

    def one(action: Callable[[], object]) -> object:
        barrier.wait()
        return action()

    with ThreadPoolExecutor(max_workers=len(actions)) as pool:
        return list(pool.map(one, actions))


def test_racing_backfills_over_one_skip_have_exactly_one_winner(
    racing_claim_store: ClaimStore,
) -> None:
    """8 claimers over the same SKIPPED firing (a skip, or a range's first), exclusive or not:
    one wins, the others lose to it; an exclusive winner holds the job's slot."""
    store = racing_claim_store
    for round_ in range(ROUNDS):
        exclusive = round_ % 2 == 1
        firing = Firing(f"backfill-{round_}", T0)
        if round_ % 3:
            store.record_skipped(firing, now=T0, reason="misfire", origin=ORIGIN)
        else:
            store.record_skipped_range(
                firing.job, T0, T0 + timedelta(hours=1), 61, now=T0, reason="x", origin=ORIGIN
            )
        results = _together(
            [partial(_backfill, store, firing, exclusive=exclusive) for _ in range(RACERS)]
        )
        assert results.count(ClaimResult.WON) == 1, results
        assert results.count(ClaimResult.LOST) == RACERS - 1, results
        run = store.run(firing.id)
        assert run is not None and run.status is RunStatus.CLAIMED and run.backfill
        assert run.replaced_skip is not None and run.replaced_skip["reason"] in ("misfire", "x")
        if exclusive:
            later = Firing(firing.job, T0 + timedelta(minutes=1))
            assert _claim(store, later, exclusive=True) is ClaimResult.OVERLAP


def test_racing_late_ends_and_redrives_change_a_run_once(racing_claim_store: ClaimStore) -> None:
    """The read-then-write of a late end or a redrive is conditional on the run as read."""
    store = racing_claim_store
    for round_ in range(ROUNDS // 5):
        firing = Firing("late", T0 + timedelta(minutes=round_))
        _dispatched(store, firing)
        swept = firing.scheduled + TIMEOUT + timedelta(minutes=1)
        _time_out(store, firing, swept)
        late = [
            partial(store.close, firing.id, RunStatus.FAILED, now=swept, error=f"racer {n}")
            for n in range(RACERS)
        ]
        assert sum(before is not None for before in _together(late)) == 1
        redrive = Redrive(1, swept + timedelta(minutes=1))
        again = [partial(store.redrive, firing.id, redrive) for _ in range(RACERS)]
        assert sum(before is not None for before in _together(again)) == 1
        run = store.run(firing.id)
        assert run is not None and run.status is RunStatus.DISPATCHED
        assert len(run.earlier_ends) == 1 and run.earlier_ends[0].error.startswith("racer ")  # type: ignore[union-attr]


# -- a store that cannot be reached ----------------------------------------------------------


def test_a_store_that_cannot_be_reached_raises_store_error(
    unreachable_claim_store: ClaimStore,
) -> None:
    firing = Firing("report", T0)
    with pytest.raises(StoreError):
        _claim(unreachable_claim_store, firing)
    with pytest.raises(StoreError):
        _claim(unreachable_claim_store, firing, exclusive=True)
    with pytest.raises(StoreError):
        unreachable_claim_store.run(firing.id)
    with pytest.raises(StoreError):
        unreachable_claim_store.control("us-east-1/prod")
    with pytest.raises(StoreError):
        unreachable_claim_store.due_runs(T0)
    deferred = _deferred(firing.retry(), T0)
    with pytest.raises(StoreError):
        unreachable_claim_store.defer([deferred])
    with pytest.raises(StoreError):
        unreachable_claim_store.due_deferred(T0)
    with pytest.raises(StoreError):
        unreachable_claim_store.drop_deferred([deferred])


@pytest.mark.parametrize(("cursor", "message"), BAD_CURSORS)
def test_a_bad_cursor_is_refused_before_any_request(
    unreachable_claim_store: ClaimStore, cursor: object, message: str
) -> None:
    """A ValueError (the console's 400), not the StoreError of a request that was sent."""
    with pytest.raises(ValueError, match=message):
        unreachable_claim_store.history("report", 3, cursor)  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        unreachable_claim_store.history("report", 3, "2026-11-30T14:00:00.000Z")


def test_a_manual_run_keeps_its_operator_s_reason(claim_store: ClaimStore) -> None:
    """--reason on a manual run (the audit trail's issue): stored with the run, by one claim or
    in a batch, and read back by key and in the history."""
    alone = Firing.manual_run(
        "report", T0, "jane.doe", {}, nonce="0a1b2c3d", operator_reason="incident 4711"
    )
    batched = Firing.manual_run(
        "report", T0 + timedelta(seconds=1), "bob", {}, nonce="0a1b2c3e", operator_reason="drill"
    )
    plain = Firing.manual_run("report", T0 + timedelta(seconds=2), "bob", {}, nonce="0a1b2c3f")
    assert _claim(claim_store, alone) is ClaimResult.WON
    assert _claim_many(claim_store, [ClaimRequest(batched), ClaimRequest(plain)]) == [
        ClaimResult.WON,
        ClaimResult.WON,
    ]
    run = claim_store.run(alone.id)
    assert run is not None and run.operator_reason == "incident 4711"
    history = claim_store.history("report", limit=5)
    assert [r.operator_reason for r in history] == [None, "drill", "incident 4711"]
