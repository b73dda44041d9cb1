"""``latest_runs``, many jobs' latest runs in one read (the console's list), held against every
backend; then what only the DynamoDB store shows: its BatchGetItems, 100 keys a request, and the
keys DynamoDB leaves unprocessed, asked again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.claims.base import ClaimStore, Latest
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore
from mini_scheduler.claims.records import JobStart
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs.model import FailurePolicy, Retry
from mini_scheduler.model import Firing, RunStatus

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ORIGIN = "us-east-1/prod"
START = JobStart("report-fn", "0 * * * * ? @UTC", {"_origin": ORIGIN})
RETRIED = JobStart("report-fn", "0 * * * * ? @UTC", {}, FailurePolicy(Retry(retries=2)))


def _ran(
    store: ClaimStore,
    firing: Firing,
    status: RunStatus | None = RunStatus.SUCCEEDED,
    start: JobStart = START,
) -> None:
    """``firing`` claimed, dispatched at its instant and (unless ``status`` is None) ended a
    second later."""
    at = max(firing.scheduled, T0)
    lease = at + timedelta(seconds=120)
    store.watch([firing.id], lease)
    store.claim(firing, now=at, lease_until=lease, origin=ORIGIN)
    store.mark_dispatched(firing, now=at, deadline=at + timedelta(minutes=15), start=start)
    if status is not None:
        store.close(firing.id, status, now=at + timedelta(seconds=1), error="boom")


def _shown(latest: Latest) -> tuple[Any, ...] | None:
    """What the console shows of a job's latest run."""
    state = latest.state
    if state is None or state.start is None:
        return None
    return state.last_firing_id, state.last_status, state.start, state.end


def test_each_job_named_is_answered_with_its_latest_run(claim_store: ClaimStore) -> None:
    older, newer = Firing("report", T0), Firing("report", T0 + timedelta(minutes=1))
    _ran(claim_store, older)
    _ran(claim_store, newer, status=None)  # still running
    _ran(claim_store, Firing("other", T0), RunStatus.FAILED)
    named = {"report": [newer.id, older.id], "other": ["other@2026-11-30T14:00:00Z"], "new": []}
    answer = claim_store.latest_runs(named)
    assert set(answer) == set(named)
    assert _shown(answer["report"]) == (newer.id, RunStatus.DISPATCHED, newer.scheduled, None)
    other = (f"other@{'2026-11-30T14:00:00Z'}", RunStatus.FAILED, T0, T0 + timedelta(seconds=1))
    assert _shown(answer["other"]) == other
    assert _shown(answer["new"]) is None
    for job, latest in answer.items():  # as job_state says it, its open slot aside
        state = claim_store.job_state(job)
        assert _shown(latest) == (_shown(Latest(state, True)) if state is not None else None)
    assert claim_store.latest_runs({}) == {}


def test_a_skipped_or_still_claimed_firing_is_not_a_run_that_started(
    claim_store: ClaimStore,
) -> None:
    ran, skipped, claimed = (Firing("report", T0 + timedelta(minutes=m)) for m in range(3))
    _ran(claim_store, ran)
    claim_store.record_skipped(skipped, now=skipped.scheduled, reason="overlap", origin=ORIGIN)
    claim_store.claim(claimed, now=T0, lease_until=T0 + timedelta(minutes=5), origin=ORIGIN)
    answer = claim_store.latest_runs({"report": [claimed.id, skipped.id, ran.id]})
    assert _shown(answer["report"]) == (ran.id, RunStatus.SUCCEEDED, T0, T0 + timedelta(seconds=1))


def test_a_failed_runs_retry_is_its_latest_though_only_the_first_attempt_is_named(
    claim_store: ClaimStore,
) -> None:
    first = Firing("report", T0)
    _ran(claim_store, first, RunStatus.FAILED, RETRIED)
    answer = claim_store.latest_runs({"report": [first.id]})
    assert _shown(answer["report"]) == (first.id, RunStatus.FAILED, T0, T0 + timedelta(seconds=1))
    second = first.retry()  # its retry's claim, at T0 again (the helper's floor)
    _ran(claim_store, second, RunStatus.FAILED, RETRIED)
    _ran(claim_store, second.retry(), RunStatus.SUCCEEDED, RETRIED)
    latest = claim_store.latest_runs({"report": [first.id]})["report"]
    assert latest.state is not None and latest.state.last_firing_id == second.retry().id
    assert latest.state.last_status is RunStatus.SUCCEEDED


def test_a_store_that_reads_by_key_does_not_see_a_manual_run_it_was_not_named(
    claim_store: ClaimStore,
) -> None:
    """The honest limit: a store that is not exact answers only from the runs it was named
    (a manual run's id has a random part: no caller can name it without having seen it)."""
    scheduled = Firing("report", T0)
    manual = Firing.manual_run("report", T0 + timedelta(minutes=5), "jane", {})
    _ran(claim_store, scheduled)
    _ran(claim_store, manual)
    latest = claim_store.latest_runs({"report": [scheduled.id]})["report"]
    assert latest.state is not None
    if latest.exact:
        assert latest.state.last_firing_id == manual.id
    else:
        assert latest.state.last_firing_id == scheduled.id
    named = claim_store.latest_runs({"report": [scheduled.id, manual.id]})["report"]
    assert named.state is not None and named.state.last_firing_id == manual.id


def test_a_name_that_is_not_a_run_of_its_job_is_refused_before_any_request(
    claim_store: ClaimStore,
) -> None:
    with pytest.raises(ValueError, match="not a firing id"):
        claim_store.latest_runs({"report": ["report"]})
    with pytest.raises(ValueError, match="another job's"):
        claim_store.latest_runs({"report": ["other@2026-11-30T14:00:00Z"]})


# -- DynamoDB: its requests ---------------------------------------------------------------------


class _Batches:
    """A client whose BatchGetItem answers every key it is asked for with a dispatched run
    (``started``: those that started), leaving its last key unprocessed ``times`` times."""

    def __init__(self, times: int = 0) -> None:
        self.times = times
        self.asked: list[int] = []

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        (wanted,) = RequestItems.values()
        keys = wanted["Keys"]
        assert wanted["ConsistentRead"] is True
        self.asked.append(len(keys))
        if self.times > 0:
            self.times -= 1
            answered, left = keys[:-1], keys[-1:]
        else:
            answered, left = keys, []
        items = [{**key, "status": {"S": "SUCCEEDED"}, "startedAt": {"S": _T}} for key in answered]
        unprocessed = {"t": {"Keys": left}} if left else {}
        return {"Responses": {"t": items}, "UnprocessedKeys": unprocessed}


_T = "2026-11-30T14:00:00.000Z"


def _named(jobs: int) -> dict[str, list[str]]:
    return {f"job-{i:03d}": [f"job-{i:03d}@2026-11-30T14:00:00Z"] for i in range(jobs)}


def test_the_runs_are_read_100_keys_a_batch_get() -> None:
    client = _Batches()
    store = DynamoDBClaimStore("t", client, sleep=lambda _: None)  # type: ignore[arg-type]
    assert len(store.latest_runs(_named(50))) == 50 and client.asked == [50]
    client.asked.clear()
    answer = store.latest_runs(_named(250))
    assert client.asked == [100, 100, 50]  # ceil(n / 100) requests
    assert all(latest.state is not None and not latest.exact for latest in answer.values())


def test_keys_left_unprocessed_are_asked_again_with_back_off_then_refused() -> None:
    client = _Batches(times=2)
    slept: list[float] = []
    store = DynamoDBClaimStore("t", client, sleep=slept.append)  # type: ignore[arg-type]
    answer = store.latest_runs(_named(3))
    assert client.asked == [3, 1, 1] and slept == [0.05, 0.1]
    assert all(latest.state is not None for latest in answer.values())
    store = DynamoDBClaimStore("t", _Batches(times=99), sleep=lambda _: None)  # type: ignore[arg-type]
    with pytest.raises(StoreError, match=r"BatchGetItem \(latest runs\) on table t left keys"):
        store.latest_runs(_named(3))
