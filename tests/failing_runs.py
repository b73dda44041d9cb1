"""Runs of a job that ended as a test needs them, written through the ClaimStore contract
(claim, mark, then close or time out), so every backend holds them as the scheduler would."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.claims.records import JobStart, RunRecord
from mini_scheduler.jobs.model import FailurePolicy
from mini_scheduler.model import Firing, RunStatus

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ORIGIN = "us-east-1/prod"


def ended_run(
    store: ClaimStore,
    minute: int,
    status: RunStatus,
    attempt: int = 1,
    *,
    policy: FailurePolicy | None,
    job: str = "export",
) -> RunRecord:
    """The run of ``job``'s firing at T0 + ``minute`` (its ``attempt``), dispatched with
    ``policy`` and ended ``status`` 30 s later (DISPATCHED: left open); its record as stored."""
    firing = Firing(job, T0 + timedelta(minutes=minute), attempt=attempt)
    start = firing.scheduled + timedelta(seconds=attempt)
    store.watch([firing.id], start + timedelta(seconds=120))
    store.claim(firing, now=start, lease_until=start + timedelta(seconds=120), origin=ORIGIN)
    store.mark_dispatched(
        firing,
        now=start,
        deadline=start + timedelta(seconds=60),
        start=JobStart(f"{job}-fn", "0 * * * * ? @UTC", {"_origin": ORIGIN}, policy),
    )
    end = start + timedelta(seconds=30)
    if status is RunStatus.TIMED_OUT:
        (run,) = [r for r in store.due_runs(end + timedelta(minutes=1)) if r.firing_id == firing.id]
        assert store.time_out(run, now=end + timedelta(minutes=1))
    elif status is not RunStatus.DISPATCHED:
        store.close(
            firing.id, status, now=end, error="boom" if status is RunStatus.FAILED else None
        )
    record = store.run(firing.id)
    assert record is not None and record.status is status
    return record
