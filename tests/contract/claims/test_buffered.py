"""The contract of a buffered firing (``overlap: buffer_one``, ``buffer_all``): ``buffer`` keeps
it waiting, at most ``limit`` a job, and ``drop_deferred`` gives its place back; every backend."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from mini_scheduler.claims.base import BUFFER, RETRY, ClaimResult, ClaimStore, Deferred
from mini_scheduler.model import Firing

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ORIGIN = "us-east-1/prod"


def _waiting(firing: Firing, reason: str = BUFFER) -> Deferred:
    return Deferred(firing, firing.scheduled, reason, ORIGIN, T0)


def _minute(job: str, minutes: int) -> Firing:
    return Firing(job, T0 + timedelta(minutes=minutes))


def _claim(store: ClaimStore, firing: Firing) -> ClaimResult:
    lease = T0 + timedelta(minutes=5)
    store.watch([firing.id], lease)
    return store.claim(firing, now=T0, lease_until=lease, origin=ORIGIN, exclusive=True)


def test_one_firing_waits_and_the_next_is_refused_until_it_is_dropped(
    claim_store: ClaimStore,
) -> None:
    first, second = _waiting(_minute("solo", 1)), _waiting(_minute("solo", 2))
    assert claim_store.buffer(first, 1)
    assert not claim_store.buffer(second, 1)  # a firing is already waiting
    assert claim_store.due_deferred(T0 + timedelta(hours=1)) == [first]  # the refused one left
    claim_store.drop_deferred([first])  # its claim has an answer: its place is given back
    assert claim_store.due_deferred(T0 + timedelta(hours=1)) == []
    assert claim_store.buffer(second, 1)
    assert claim_store.due_deferred(T0 + timedelta(hours=1)) == [second]


def test_buffering_one_firing_twice_keeps_one_place(claim_store: ClaimStore) -> None:
    """A peer that buffers the same firing (two tickers, one minute) waits with it: True, one
    entry, one place."""
    first, other = _waiting(_minute("solo", 1)), _waiting(_minute("solo", 2))
    assert claim_store.buffer(first, 2)
    assert claim_store.buffer(first, 2)
    assert claim_store.buffer(other, 2)
    assert claim_store.due_deferred(T0 + timedelta(hours=1)) == [first, other]
    assert not claim_store.buffer(_waiting(_minute("solo", 3)), 2)


def test_each_job_has_its_own_places_up_to_its_limit(claim_store: ClaimStore) -> None:
    waiting = [_waiting(_minute("many", i)) for i in range(1, 4)]
    assert all(claim_store.buffer(item, 3) for item in waiting)
    assert not claim_store.buffer(_waiting(_minute("many", 4)), 3)
    assert claim_store.buffer(_waiting(_minute("other", 4)), 1)
    claim_store.drop_deferred([waiting[0], waiting[0]])  # given twice: one place back
    assert claim_store.buffer(_waiting(_minute("many", 5)), 3)
    assert not claim_store.buffer(_waiting(_minute("many", 6)), 3)


def test_the_waiting_firings_are_the_jobs_state(claim_store: ClaimStore) -> None:
    """The dry run reads them from there (its predicting store asks the real one)."""
    first = _waiting(_minute("solo", 1))
    claim_store.buffer(first, 1)
    state = claim_store.job_state("solo")
    assert state is not None and state.waiting == (first.firing.id,)
    claim_store.drop_deferred([first])
    state = claim_store.job_state("solo")
    assert state is None or state.waiting == ()


def test_dropping_another_reasons_firing_gives_no_place_back(claim_store: ClaimStore) -> None:
    firing = _minute("solo", 1)
    assert claim_store.buffer(_waiting(firing), 1)
    claim_store.defer([_waiting(firing.retry(), RETRY)])
    claim_store.drop_deferred([_waiting(firing.retry(), RETRY)])
    assert not claim_store.buffer(_waiting(_minute("solo", 2)), 1)


def test_a_waiting_firing_claims_once_its_slot_is_free(claim_store: ClaimStore) -> None:
    running, waiting = _minute("solo", 0), _minute("solo", 1)
    assert _claim(claim_store, running) is ClaimResult.WON
    assert _claim(claim_store, waiting) is ClaimResult.OVERLAP
    assert claim_store.buffer(_waiting(waiting), 1)
    assert _claim(claim_store, waiting) is ClaimResult.OVERLAP  # still held: it stays
    claim_store.fail(running, now=T0, error="Lambda Invoke solo-fn failed")
    assert _claim(claim_store, waiting) is ClaimResult.WON
    claim_store.drop_deferred([_waiting(waiting)])
    assert _claim(claim_store, waiting) is ClaimResult.LOST  # read again after a crash: once
    assert claim_store.buffer(_waiting(_minute("solo", 2)), 1)


def _race(store: ClaimStore, items: list[Deferred], limit: int) -> list[bool]:
    barrier = threading.Barrier(len(items))

    def one(item: Deferred) -> bool:
        barrier.wait()
        return store.buffer(item, limit)

    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        return list(pool.map(one, items))


def test_racing_buffers_of_one_job_keep_at_most_its_limit(racing_claim_store: ClaimStore) -> None:
    for limit in (1, 2):
        job = f"racing-{limit}"
        items = [_waiting(_minute(job, i)) for i in range(1, 7)]
        answers = _race(racing_claim_store, items, limit)
        assert answers.count(True) == limit, answers
        kept = sorted(item.key for item, waits in zip(items, answers, strict=True) if waits)
        stored = racing_claim_store.due_deferred(T0 + timedelta(hours=1))
        assert sorted(d.key for d in stored if d.firing.job == job) == kept


def test_a_waiting_backfill_firing_reads_back_as_a_backfill_s(claim_store: ClaimStore) -> None:
    """A backfill's firing kept waiting keeps the backfill's detail (its id): read back, it is
    still a backfill's firing, so that its claim wins over its SKIPPED record and its payload
    says ``"backfill": true``. Another firing waiting is none."""
    firing = replace(Firing("solo", T0 - timedelta(hours=1)), backfill=True)
    detail = {"backfill": "solo@backfill-2026-11-30T14:00:00.000Z-0a1b2c3d", "total": 1}
    backfilled = Deferred(firing, T0, BUFFER, ORIGIN, T0, detail)
    plain = _waiting(_minute("solo", 1))
    assert claim_store.buffer(backfilled, 2)
    assert claim_store.buffer(plain, 2)
    found = claim_store.due_deferred(T0 + timedelta(hours=1))
    assert [(d.firing.id, d.firing.backfill) for d in found] == [
        (firing.id, True),
        (plain.firing.id, False),
    ]
    assert claim_store.pending_deferred(BUFFER) == found
