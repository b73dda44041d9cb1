"""What pause_after_failures needs of every claim store: a run keeps the policy it was
dispatched with (retry and pause_after_failures), the history shows a job's latest firings with
their attempts, and a pause by the scheduler is listed by control (issue 14, part 2)."""

from __future__ import annotations

from datetime import timedelta

from mini_scheduler.alerts import RecordingAlerts
from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.clock import FixedClock
from mini_scheduler.failures import FinalFailures, failures_in_a_row
from mini_scheduler.jobs.model import FailurePolicy, Retry
from mini_scheduler.metrics import RecordingMetrics
from mini_scheduler.model import Firing, RunStatus
from tests.failing_runs import ORIGIN, T0, ended_run

POLICY = FailurePolicy(Retry(1, 30), 3)
F, S, D = RunStatus.FAILED, RunStatus.SUCCEEDED, RunStatus.DISPATCHED


def test_a_run_keeps_the_policy_it_was_dispatched_with(claim_store: ClaimStore) -> None:
    run = ended_run(claim_store, 0, F, policy=POLICY)
    assert run.policy == POLICY
    assert run.pause_after == 3
    assert run.policy is not None and run.policy.retry == Retry(1, 30)


def test_the_job_s_failures_in_a_row_are_read_from_its_history(claim_store: ClaimStore) -> None:
    ended_run(claim_store, 0, S, 2, policy=POLICY)
    for minute in (1, 2):  # each firing failed twice: no attempt left
        ended_run(claim_store, minute, F, policy=POLICY)
        ended_run(claim_store, minute, F, 2, policy=POLICY)
    claim_store.record_skipped(
        Firing("export", T0 + timedelta(minutes=3)), now=T0, reason="overlap", origin=ORIGIN
    )
    ended_run(claim_store, 4, F, policy=POLICY)  # its retry is to come: passed over
    ended_run(claim_store, 5, D, policy=POLICY)  # still running: passed over
    latest = ended_run(claim_store, 6, F, 2, policy=POLICY)
    assert failures_in_a_row(claim_store.history("export", 20), latest) == 3
    other = ended_run(claim_store, 6, F, 2, policy=POLICY, job="import")
    assert failures_in_a_row(claim_store.history("import", 20), other) == 1


def test_the_third_failure_in_a_row_pauses_the_job_in_the_store(claim_store: ClaimStore) -> None:
    alerts = RecordingAlerts()
    clock = FixedClock(T0 + timedelta(hours=1))
    failures = FinalFailures(claim_store, alerts, clock, RecordingMetrics(), origin=ORIGIN)
    for minute in (0, 1):
        ended_run(claim_store, minute, F, 2, policy=POLICY)
    latest = ended_run(claim_store, 2, F, 2, policy=POLICY)
    failures.failed(latest, latest.pause_after)
    pause = claim_store.control(ORIGIN).paused["export"]
    assert (pause.operator, pause.at) == ("mini-scheduler", T0 + timedelta(hours=1))
    assert [d["failures"] for d in alerts.of("Job Paused")] == [3]
