"""A final failure: its event, and the job's pause after pause_after_failures in a row (issue
14, part 2). What the recorder and the ticker do with it is tests/unit/recorder and
tests/unit/tick; the stores' part is tests/contract/claims/test_failures_in_a_row.py; the
events' details, and their schemas, tests/unit/alerts/test_schema.py."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from mini_scheduler import alerts
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.clock import FixedClock
from mini_scheduler.errors import StoreError
from mini_scheduler.failures import FinalFailures, failures_in_a_row
from mini_scheduler.jobs.model import FailurePolicy, Retry
from mini_scheduler.metrics import RecordingMetrics
from mini_scheduler.model import Firing, RunStatus
from tests.failing_runs import ended_run

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ORIGIN = "us-east-1/prod"
RETRY = FailurePolicy(Retry(1, 60), 3)  # one retry; paused after 3 final failures in a row
F, T, S, D, K = (
    RunStatus.FAILED,
    RunStatus.TIMED_OUT,
    RunStatus.SUCCEEDED,
    RunStatus.DISPATCHED,
    RunStatus.SKIPPED,
)


def run(minute: int, status: RunStatus, attempt: int = 1, **more: object) -> RunRecord:
    firing = Firing("export", T0 + timedelta(minutes=minute), attempt=attempt)
    fields: dict[str, object] = {"policy": RETRY, "origin": ORIGIN, **more}
    return RunRecord(firing.id, "export", firing.scheduled_time, status, **fields)  # type: ignore[arg-type]


def manual(minute: int, status: RunStatus) -> RunRecord:
    firing = Firing.manual_run("export", T0 + timedelta(minutes=minute), "jane", {}, "0a1b2c3d")
    return RunRecord(firing.id, "export", firing.scheduled_time, status, manual=True, policy=RETRY)


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        pytest.param([], 1, id="the-latest-alone"),
        pytest.param([run(2, F, 2), run(2, F)], 2, id="a-firing-s-last-attempt-failed"),
        pytest.param([run(2, S, 2), run(2, F)], 1, id="a-retry-succeeded-before-it"),
        pytest.param([run(1, F, 2), run(4, S)], 0, id="a-later-firing-succeeded"),
        pytest.param([run(2, F)], 1, id="a-failure-with-a-retry-to-come-is-passed-over"),
        pytest.param([run(2, T, 2), run(1, T, 2), run(0, S, 2)], 3, id="timed-out-in-a-row"),
        pytest.param([run(2, D), run(1, K), run(0, F, 2)], 2, id="open-and-skipped-passed-over"),
        pytest.param([manual(2, F), run(1, F, 2)], 3, id="a-manual-run-counts"),
        pytest.param([manual(4, S), run(1, F, 2)], 0, id="a-manual-success-too"),
        pytest.param(
            [run(2, F, 2, policy=None)], 2, id="a-failed-dispatch-s-record-kept-no-policy"
        ),
        pytest.param([run(0, F, 2), run(2, F, 2), run(1, F, 2)], 4, id="any-order-read"),
        pytest.param(
            [run(3, D, 2), run(2, F, 2)], 2, id="the-latest-read-a-moment-before-still-open"
        ),
    ],
)
def test_failures_in_a_row(history: list[RunRecord], expected: int) -> None:
    """``latest`` is attempt 2 of 14:03 (no attempt left): it counts whatever the read saw."""
    assert failures_in_a_row(history, run(3, F, 2)) == expected


def test_a_run_record_without_a_firing_id_of_ours_is_passed_over() -> None:
    odd = RunRecord("export@yesterday", "export", "?", F)
    assert failures_in_a_row([odd, run(2, F, 2)], run(3, F, 2)) == 2


def _failures(store: MemoryClaimStore) -> tuple[FinalFailures, alerts.RecordingAlerts]:
    published = alerts.RecordingAlerts()
    metrics = RecordingMetrics()
    clock = FixedClock(T0 + timedelta(hours=1))
    return FinalFailures(store, published, clock, metrics, origin=ORIGIN), published


def _record(store: MemoryClaimStore, *runs: RunRecord) -> None:
    """``runs`` written as the scheduler writes them (their status, attempt and policy)."""
    for record in runs:
        minute = int(record.scheduled_time[14:16])
        ended_run(store, minute, record.status, record.attempt, policy=record.policy)


def test_the_third_final_failure_in_a_row_pauses_the_job_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryClaimStore()
    failures, published = _failures(store)
    _record(store, run(0, S, 2), run(1, F, 2), run(2, F, 2))
    with caplog.at_level(logging.INFO):
        failures.failed(run(3, F, 2), pause_after=3)
    pause = store.control(ORIGIN).paused["export"]
    assert (pause.operator, pause.at) == ("mini-scheduler", T0 + timedelta(hours=1))
    assert [kind for kind, _ in published.published] == ["Job Run Failed", "Job Paused"]
    assert published.of("Job Paused") == [
        {
            "schemaVersion": 1,
            "job": "export",
            "failures": 3,
            "firingId": "export@2026-11-30T14:03:00Z",
            "origin": ORIGIN,
            "operator": "mini-scheduler",
            "pausedAt": "2026-11-30T15:00:00Z",
        }
    ]
    assert (
        "Job export paused after 3 failures in a row - resume it with: mini-scheduler resume export"
    ) in caplog.messages
    assert failures.metrics.totals["JobsPaused"] == 1  # type: ignore[attr-defined]
    # a fourth, while it is paused: published, not paused again
    failures.failed(run(4, F, 2), pause_after=3)
    assert len(published.of("Job Run Failed")) == 2
    assert len(published.of("Job Paused")) == 1


def test_fewer_failures_in_a_row_or_no_pause_after_failures_leave_the_job() -> None:
    store = MemoryClaimStore()
    failures, published = _failures(store)
    _record(store, run(1, S, 2), run(2, F, 2))
    failures.failed(run(3, F, 2), pause_after=3)
    _record(store, run(3, F, 2))
    failures.failed(run(4, F, 2), pause_after=None)
    assert store.control(ORIGIN).paused == {}
    assert len(published.of("Job Run Failed")) == 2
    assert published.of("Job Paused") == []


def test_a_resumed_job_that_fails_again_is_paused_again() -> None:
    store = MemoryClaimStore()
    failures, published = _failures(store)
    _record(store, run(1, F, 2), run(2, F, 2))
    failures.failed(run(3, F, 2), pause_after=3)
    store.set_paused("export", False, operator="jane", now=T0)
    _record(store, run(3, F, 2))
    failures.failed(run(4, F, 2), pause_after=3)
    assert "export" in store.control(ORIGIN).paused
    assert [e["failures"] for e in published.of("Job Paused")] == [3, 4]


def test_an_event_that_is_not_published_is_said_and_counted_and_the_pause_still_happens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryClaimStore()
    failures, published = _failures(store)
    published.failing = True
    _record(store, run(1, F, 2), run(2, F, 2))
    with caplog.at_level(logging.ERROR):
        failures.failed(run(3, F, 2), pause_after=3)
    assert "export" in store.control(ORIGIN).paused
    assert failures.metrics.totals["AlertsUnpublished"] == 2  # type: ignore[attr-defined]
    assert any(
        m.startswith("Job export - event Job Run Failed of firing export@2026-11-30T14:03:00Z#2")
        and m.endswith("not published: Job Run Failed not kept: the recording alerts are failing")
        for m in caplog.messages
    )


class _Unreadable(MemoryClaimStore):
    def history(self, job: str, limit: int = 20, before: str | None = None) -> list[RunRecord]:
        raise StoreError("Query (history) failed - ProvisionedThroughputExceededException")


def test_a_history_that_cannot_be_read_leaves_the_job_and_raises_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = _Unreadable()
    failures, published = _failures(store)
    with caplog.at_level(logging.ERROR):
        failures.failed(run(3, F, 2), pause_after=1)
    assert store.control(ORIGIN).paused == {}
    assert len(published.of("Job Run Failed")) == 1  # published before the count
    assert caplog.messages == [
        "Job export - its failures in a row were not counted, the job is not paused: "
        "Query (history) failed - ProvisionedThroughputExceededException"
    ]


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"pause_after_failures": 3}, 3),
        ({"retries": 1, "pause_after_failures": 100}, 100),
        ({"retries": 1}, None),
        ({"pause_after_failures": 0}, None),
        ({"pause_after_failures": 101}, None),
        ({"pause_after_failures": True}, None),
        ({"pause_after_failures": "3"}, None),
        (None, None),
        ("3", None),
    ],
)
def test_pause_after_failures_is_read_back_from_a_run_s_policy(
    record: object, expected: int | None
) -> None:
    policy = FailurePolicy.from_record(record)
    assert (policy.pause_after if policy is not None else None) == expected


def test_a_run_s_policy_keeps_the_retry_and_the_pause_and_the_retry_reads_it_back() -> None:
    assert FailurePolicy.of(None, None, None) is None
    pause_only = FailurePolicy.of(None, 2, None)
    assert pause_only is not None and pause_only.as_record() == {"pause_after_failures": 2}
    assert FailurePolicy.from_record(pause_only.as_record()) == FailurePolicy(None, 2)
    both = FailurePolicy.of(Retry(2, 30), 2, {"name": "s"})
    assert both is not None and FailurePolicy.from_record(both.as_record()) == both
    assert FailurePolicy.of(None, 2, {"name": "s"}) == FailurePolicy(None, 2)  # no retry to read it


def test_the_failures_in_a_row_of_the_region_before_a_failover_count() -> None:
    """Two final failures ran in us-west-2 before the failover, the third here: the job is
    paused (the count follows the active region, read from each peer's history); a region that
    cannot be read is said, and this region's count stands alone."""
    from mini_scheduler.carry.carrier import Peers

    here, there = MemoryClaimStore(), MemoryClaimStore()
    _record(there, run(0, S, 2), run(1, F, 2), run(2, F, 2))
    published = alerts.RecordingAlerts()
    peers = Peers("us-east-1", {"us-west-2": lambda: there})
    failures = FinalFailures(
        here, published, FixedClock(T0), RecordingMetrics(), origin=ORIGIN, peers=peers
    )
    failures.failed(run(3, F, 2), pause_after=3)
    assert "export" in here.control(ORIGIN).paused

    def unreachable() -> MemoryClaimStore:
        raise StoreError("us-west-2: could not connect")

    alone = FinalFailures(
        MemoryClaimStore(),
        published,
        FixedClock(T0),
        RecordingMetrics(),
        origin=ORIGIN,
        peers=Peers("us-east-1", {"us-west-2": unreachable}),
    )
    alone.failed(run(3, F, 2), pause_after=3)
    assert alone.claims.control(ORIGIN).paused == {}
