"""What only the memory store has to show: each operation is one call, under its one lock (the
shared contract is tests/contract/claims/test_contract.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import JobStart, Redrive, RunRecord
from mini_scheduler.model import Firing, RunStatus

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
FIRING = Firing("solo", T0)
LATER = T0 + timedelta(hours=1)


def _failed_exclusive_run() -> MemoryClaimStore:
    store = MemoryClaimStore()
    store.claim(FIRING, now=T0, lease_until=T0 + timedelta(minutes=2), origin="o", exclusive=True)
    start = JobStart("svc", "* * * * * @UTC", {})
    store.mark_dispatched(FIRING, now=T0, deadline=T0 + timedelta(minutes=15), start=start)
    store.fail(FIRING, now=T0, error="boom")
    return store


OPERATIONS: dict[str, Callable[[MemoryClaimStore, RunRecord], Any]] = {
    # an end after the run ended: the one-write end is refused, then the run is read and
    # decided on (a duplicate: nothing written), all in one call
    "close": lambda s, _: s.close(FIRING.id, RunStatus.SUCCEEDED, now=LATER),
    "redrive": lambda s, _: s.redrive(FIRING.id, Redrive(1, LATER)),
    "fail": lambda s, _: s.fail(FIRING, now=LATER, error="again"),
    "time_out": lambda s, run: s.time_out(run, now=LATER),
    "record_skipped": lambda s, _: s.record_skipped(
        Firing("solo", LATER), now=LATER, reason="x", origin="o"
    ),
    "record_skipped_range": lambda s, _: s.record_skipped_range(
        "solo", LATER, LATER + timedelta(minutes=5), 6, now=LATER, reason="x", origin="o"
    ),
}


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_an_end_a_redrive_or_a_skip_is_one_call_under_the_lock(name: str) -> None:
    store = _failed_exclusive_run()
    run = store.run(FIRING.id)
    assert run is not None
    calls = store.calls
    held: list[bool] = []
    real = store._write_job

    def write_job(*args: Any) -> bool:
        held.append(store._lock.locked())
        return real(*args)

    store._write_job = write_job  # type: ignore[method-assign]
    OPERATIONS[name](store, run)
    assert store.calls == calls + 1
    assert all(held)


def test_a_redrive_follows_in_the_job_state_and_slot_under_the_same_lock() -> None:
    store = _failed_exclusive_run()
    entered = threading.Event()
    done: list[object] = []
    with store._lock:
        worker = threading.Thread(
            target=lambda: (entered.set(), done.append(store.redrive(FIRING.id, Redrive(1, LATER))))
        )
        worker.start()
        entered.wait()
        worker.join(timeout=0.2)
        assert worker.is_alive() and done == []  # it waits for the lock
    worker.join(timeout=5)
    assert done and done[0] is not None
    state = store.job_state("solo")
    assert state is not None and state.open_firing == FIRING.id
    assert state.last_status is RunStatus.DISPATCHED
