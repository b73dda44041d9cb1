"""The contract of a run claimed with where it goes (``ClaimRequest.start``) and marked in a
batch: every backend answers as if each run were marked on its record (DynamoDB writes a claim
batch's marks in one item, :mod:`mini_scheduler.claims.dynamodb_marks`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mini_scheduler.claims.base import ClaimRequest, ClaimResult, ClaimStore, MarkRequest
from mini_scheduler.claims.records import JobStart
from mini_scheduler.model import Firing, RunStatus

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ORIGIN = "us-east-1/prod"
LEASE = T0 + timedelta(minutes=2)
MARKED = T0 + timedelta(seconds=1)


def _start(job: str) -> JobStart:
    return JobStart(f"lambda:{job}-fn", "0 * * * * ? @UTC", {"size": 3, "_origin": ORIGIN})


def _claimed(store: ClaimStore, *jobs: str) -> list[Firing]:
    firings = [Firing(job, T0) for job in jobs]
    store.watch([f.id for f in firings], LEASE)
    requests = [ClaimRequest(f, start=_start(f.job)) for f in firings]
    outcomes = store.claim_many(requests, now=T0, lease_until=LEASE, origin=ORIGIN)
    assert outcomes == [ClaimResult.WON] * len(firings)
    return firings


def _marks(firings: list[Firing], minutes: int = 60) -> list[MarkRequest]:
    deadline = MARKED + timedelta(minutes=minutes)
    return [MarkRequest(f, deadline, _start(f.job)) for f in firings]


def test_a_claim_with_its_start_says_where_the_run_goes_before_its_mark(
    claim_store: ClaimStore,
) -> None:
    (firing,) = _claimed(claim_store, "report")
    run = claim_store.run(firing.id)
    assert run is not None and run.status is RunStatus.CLAIMED
    assert (run.service, run.schedule, run.started_at) == (
        "lambda:report-fn",
        "0 * * * * ? @UTC",
        None,
    )
    assert run.deadline == LEASE


def test_a_batch_marked_reads_dispatched_everywhere(claim_store: ClaimStore) -> None:
    firings = _claimed(claim_store, "a", "b", "c")
    assert claim_store.mark_many(_marks(firings), now=MARKED) == [None, None, None]
    for firing in firings:
        run = claim_store.run(firing.id)
        assert run is not None
        assert (run.status, run.started_at) == (RunStatus.DISPATCHED, MARKED)
        assert run.deadline == MARKED + timedelta(minutes=60)
        assert run.service == f"lambda:{firing.job}-fn"
    (latest,) = claim_store.history("b", limit=1)
    assert (latest.status, latest.started_at) == (RunStatus.DISPATCHED, MARKED)
    state = claim_store.job_state("c")
    assert state is not None and state.last_firing_id == firings[2].id
    assert state.start == MARKED and state.service == "lambda:c-fn"
    found = claim_store.latest_runs({"a": [firings[0].id]})["a"].state
    assert found is not None and found.start == MARKED


def test_a_marked_run_closed_keeps_its_start(claim_store: ClaimStore) -> None:
    (firing,) = _claimed(claim_store, "quick")
    claim_store.mark_many(_marks([firing]), now=MARKED)
    ended = MARKED + timedelta(seconds=3)
    before = claim_store.close(firing.id, RunStatus.SUCCEEDED, now=ended)
    assert before is not None and before.started_at == MARKED  # the end line's duration
    run = claim_store.run(firing.id)
    assert run is not None
    assert (run.status, run.started_at, run.ended_at) == (RunStatus.SUCCEEDED, MARKED, ended)


def test_a_run_claimed_but_never_marked_is_due_at_its_lease_and_a_marked_one_is_not(
    claim_store: ClaimStore,
) -> None:
    marked, unmarked = _claimed(claim_store, "went", "died")
    claim_store.mark_many(_marks([marked]), now=MARKED)
    due = claim_store.due_runs(LEASE + timedelta(seconds=1), settle=True)
    assert [(run.firing_id, run.status) for run in due] == [(unmarked.id, RunStatus.CLAIMED)]
    failed_at = LEASE + timedelta(seconds=2)
    claim_store.fail(unmarked, now=failed_at, error="its claimer died")
    run = claim_store.run(unmarked.id)
    assert run is not None and (run.status, run.started_at) == (RunStatus.FAILED, None)


def test_a_marked_run_times_out_past_its_deadline(claim_store: ClaimStore) -> None:
    (firing,) = _claimed(claim_store, "slow")
    claim_store.mark_many(_marks([firing], minutes=5), now=MARKED)
    late = MARKED + timedelta(minutes=6)
    due = claim_store.due_runs(late, settle=True)
    assert [(run.firing_id, run.status) for run in due] == [(firing.id, RunStatus.DISPATCHED)]
    assert claim_store.time_out(due[0], now=late)
    run = claim_store.run(firing.id)
    assert run is not None
    assert (run.status, run.started_at, run.timed_out_at) == (RunStatus.TIMED_OUT, MARKED, late)


def test_a_mark_for_a_batch_marked_already_is_written_too(claim_store: ClaimStore) -> None:
    """A batch's marks in two calls (a tick that failed flushes what it has): both read."""
    first, second = _claimed(claim_store, "one", "two")
    claim_store.mark_many(_marks([first]), now=MARKED)
    later = MARKED + timedelta(seconds=2)
    assert claim_store.mark_many(_marks([second]), now=later) == [None]
    runs = [claim_store.run(f.id) for f in (first, second)]
    assert [(r.status, r.started_at) for r in runs if r is not None] == [
        (RunStatus.DISPATCHED, MARKED),
        (RunStatus.DISPATCHED, later),
    ]
