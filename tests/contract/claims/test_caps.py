"""The contract of caps (``max_running``, pools): a claim takes a place under each of its caps
before its run is written, a full cap makes it OVERLAP with nothing left taken, and a run's end
gives its places back; every backend (:mod:`mini_scheduler.claims.places`)."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from mini_scheduler.claims.base import ClaimRequest, ClaimResult, ClaimStore
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.predicting import PredictingClaimStore
from mini_scheduler.claims.records import JobStart, Redrive
from mini_scheduler.jobs.model import Place
from mini_scheduler.model import Firing, RunStatus
from tests.contract.claims.recording import Recording

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
LEASE = T0 + timedelta(minutes=5)
ORIGIN = "us-east-1/prod"


def _minute(job: str, minutes: int) -> Firing:
    return Firing(job, T0 + timedelta(minutes=minutes))


def _claim(
    store: ClaimStore, firing: Firing, *places: Place, exclusive: bool = False
) -> ClaimResult:
    store.watch([firing.id], LEASE)
    return store.claim(
        firing, now=T0, lease_until=LEASE, origin=ORIGIN, exclusive=exclusive, places=places
    )


def test_a_cap_lets_its_limit_of_runs_open_and_refuses_the_next(claim_store: ClaimStore) -> None:
    cap = Place("job:report", 2)
    first, second, third = (_minute("report", i) for i in range(3))
    assert _claim(claim_store, first, cap) is ClaimResult.WON
    assert _claim(claim_store, second, cap) is ClaimResult.WON
    assert _claim(claim_store, third, cap) is ClaimResult.OVERLAP
    assert claim_store.run(third.id) is None  # nothing written for the refused claim
    assert set(claim_store.holders(cap.key)) == {first.id, second.id}
    assert claim_store.holders(cap.key)[first.id] == LEASE
    run = claim_store.run(first.id)
    assert run is not None and run.places == {cap.key: 2}
    claim_store.close(first.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=30))
    assert set(claim_store.holders(cap.key)) == {second.id}  # its end gave its place back
    assert _claim(claim_store, third, cap) is ClaimResult.WON


def test_a_pool_is_shared_by_the_jobs_that_name_it(claim_store: ClaimStore) -> None:
    pool = Place("pool:exports", 2)
    a1, b1, c1 = _minute("export-a", 0), _minute("export-b", 0), _minute("export-c", 0)
    assert _claim(claim_store, a1, pool) is ClaimResult.WON
    assert _claim(claim_store, b1, pool) is ClaimResult.WON
    assert _claim(claim_store, c1, pool) is ClaimResult.OVERLAP
    claim_store.fail(b1, now=T0 + timedelta(seconds=5), error="boom")  # a failed end frees too
    assert _claim(claim_store, c1, pool) is ClaimResult.WON
    assert set(claim_store.holders(pool.key)) == {a1.id, c1.id}


def test_a_refused_place_gives_back_the_slot_and_places_taken_before_it(
    claim_store: ClaimStore,
) -> None:
    """An ``overlap: skip`` job in a full pool: its claim took the job's slot (and its own cap)
    before the pool refused it; both are given back, so its next firing is not held by them."""
    pool, own = Place("pool:one", 1), Place("job:sync", 3)
    other = _minute("other", 0)
    assert _claim(claim_store, other, pool) is ClaimResult.WON
    refused, later = _minute("sync", 0), _minute("sync", 1)
    assert _claim(claim_store, refused, own, pool, exclusive=True) is ClaimResult.OVERLAP
    assert claim_store.holders(own.key) == {}
    state = claim_store.job_state("sync")
    assert state is None or state.open_firing is None
    claim_store.close(other.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=30))
    assert _claim(claim_store, later, own, pool, exclusive=True) is ClaimResult.WON
    assert set(claim_store.holders(pool.key)) == {later.id}


def test_a_claim_lost_to_its_own_open_run_keeps_the_place_and_to_an_ended_one_gives_it_back(
    claim_store: ClaimStore,
) -> None:
    cap = Place("job:twice", 1)
    firing = _minute("twice", 0)
    assert _claim(claim_store, firing, cap) is ClaimResult.WON
    assert _claim(claim_store, firing, cap) is ClaimResult.LOST  # a peer: the same place
    assert set(claim_store.holders(cap.key)) == {firing.id}
    claim_store.close(firing.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=30))
    assert _claim(claim_store, firing, cap) is ClaimResult.LOST  # a late peer
    assert claim_store.holders(cap.key) == {}
    assert _claim(claim_store, _minute("twice", 1), cap) is ClaimResult.WON


def test_a_time_out_gives_the_place_back(claim_store: ClaimStore) -> None:
    cap = Place("pool:slow", 1)
    firing = _minute("slow", 0)
    assert _claim(claim_store, firing, cap) is ClaimResult.WON
    start = JobStart("slow-fn", "0 * * * * ? @UTC", {})
    claim_store.mark_dispatched(firing, now=T0, deadline=LEASE, start=start)
    run = claim_store.run(firing.id)
    assert run is not None
    assert claim_store.time_out(run, now=LEASE + timedelta(seconds=1))
    assert claim_store.holders(cap.key) == {}


def test_a_redriven_run_takes_its_place_back(claim_store: ClaimStore) -> None:
    cap = Place("pool:flows", 1)
    firing = _minute("flow", 0)
    assert _claim(claim_store, firing, cap) is ClaimResult.WON
    claim_store.close(firing.id, RunStatus.FAILED, now=T0 + timedelta(seconds=30), error="x")
    assert claim_store.holders(cap.key) == {}
    assert claim_store.redrive(firing.id, Redrive(1, T0 + timedelta(minutes=1))) is not None
    assert set(claim_store.holders(cap.key)) == {firing.id}
    assert _claim(claim_store, _minute("other-flow", 0), cap) is ClaimResult.OVERLAP


def test_claims_in_one_batch_count_against_the_cap_in_order(claim_store: ClaimStore) -> None:
    cap = Place("job:batch", 2)
    firings = [_minute("batch", i) for i in range(4)]
    claim_store.watch([f.id for f in firings], LEASE)
    outcomes = claim_store.claim_many(
        [ClaimRequest(f, places=(cap,)) for f in firings], now=T0, lease_until=LEASE, origin=ORIGIN
    )
    assert outcomes == [ClaimResult.WON, ClaimResult.WON, ClaimResult.OVERLAP, ClaimResult.OVERLAP]


def test_racing_claims_never_open_more_runs_than_the_cap(racing_claim_store: ClaimStore) -> None:
    for limit in (1, 3):
        cap = Place(f"pool:race-{limit}", limit)
        firings = [_minute(f"racer-{limit}-{i}", 0) for i in range(8)]
        barrier = threading.Barrier(len(firings))

        def one(firing: Firing, cap: Place = cap, barrier: threading.Barrier = barrier) -> object:
            barrier.wait()
            return _claim(racing_claim_store, firing, cap)

        with ThreadPoolExecutor(max_workers=len(firings)) as pool:
            answers = list(pool.map(one, firings))
        assert answers.count(ClaimResult.WON) == limit, answers
        assert answers.count(ClaimResult.OVERLAP) == len(firings) - limit, answers
        won = {
            f.id for f, answer in zip(firings, answers, strict=True) if answer is ClaimResult.WON
        }
        assert set(racing_claim_store.holders(cap.key)) == won


# -- places no open run holds: a claimer that died, a release that was lost ---------------------


def _plant(store: object, key: str, firing_id: str, lease: datetime) -> None:
    """Leave a place as a claimer that died before writing its run leaves it (each backend's
    own write: the protocol has no way to make one)."""
    if isinstance(store, Recording):
        _plant(store._inner, key, firing_id, lease)
    elif isinstance(store, PredictingClaimStore):
        _plant(store._real, key, firing_id, lease)  # what the dry run reads, if not read yet
        _plant(store._memory, key, firing_id, lease)  # what it read already
    elif isinstance(store, MemoryClaimStore):
        store._take_all(firing_id, [Place(key, 100)], lease)
    else:
        caps = store._caps  # type: ignore[attr-defined]  # DynamoDB's and MongoDB's
        assert caps.take(key, firing_id, 100, lease=lease, now=T0)


def test_a_place_with_no_run_is_released_once_its_lease_has_passed(
    claim_store: ClaimStore, caplog: pytest.LogCaptureFixture
) -> None:
    cap = Place("pool:crashed", 1)
    dead = _minute("crashed", 0)
    _plant(claim_store, cap.key, dead.id, T0 + timedelta(seconds=90))
    assert _claim(claim_store, _minute("next", 0), cap) is ClaimResult.OVERLAP  # within its lease
    assert set(claim_store.holders(cap.key)) == {dead.id}
    late = _minute("next", 2)
    claim_store.watch([late.id], LEASE)
    later = T0 + timedelta(minutes=2)
    with caplog.at_level(logging.WARNING, "mini_scheduler.claims"):
        won = claim_store.claim(late, now=later, lease_until=LEASE, origin=ORIGIN, places=(cap,))
    assert won is ClaimResult.WON
    assert set(claim_store.holders(cap.key)) == {late.id}
    assert f"place of firing {dead.id} released: no run was recorded" in caplog.text


def test_a_place_whose_run_ended_is_released_once_its_lease_has_passed(
    claim_store: ClaimStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The end's release was lost: the run has ended, its place is still taken."""
    cap = Place("pool:lost-release", 1)
    ended = _minute("ended", 0)
    assert _claim(claim_store, ended, cap) is ClaimResult.WON
    claim_store.close(ended.id, RunStatus.SUCCEEDED, now=T0 + timedelta(seconds=10))
    _plant(claim_store, cap.key, ended.id, T0 + timedelta(seconds=60))  # as if never released
    late = _minute("waiter", 2)
    claim_store.watch([late.id], LEASE)
    later = T0 + timedelta(minutes=2)
    with caplog.at_level(logging.WARNING, "mini_scheduler.claims"):
        won = claim_store.claim(late, now=later, lease_until=LEASE, origin=ORIGIN, places=(cap,))
    assert won is ClaimResult.WON
    assert f"place of firing {ended.id} released: its run has ended" in caplog.text


def test_an_open_run_past_its_claim_lease_keeps_its_place(claim_store: ClaimStore) -> None:
    cap = Place("pool:long", 1)
    running = _minute("long", 0)
    assert _claim(claim_store, running, cap) is ClaimResult.WON
    late = _minute("after", 10)
    claim_store.watch([late.id], LEASE)
    later = T0 + timedelta(minutes=10)  # past the claim's lease: the run is still open
    refused = claim_store.claim(late, now=later, lease_until=LEASE, origin=ORIGIN, places=(cap,))
    assert refused is ClaimResult.OVERLAP
    assert set(claim_store.holders(cap.key)) == {running.id}
