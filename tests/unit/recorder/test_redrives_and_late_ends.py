"""A flow redriven by Step Functions (issue 11, item 4) and a completion that arrives after the
sweep marked the run TIMED_OUT (item 5): what the recorder writes, answers, logs and counts."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import EarlierEnd, JobStart
from mini_scheduler.claims.transitions import TIMED_OUT_ERROR
from mini_scheduler.clock import FixedClock
from mini_scheduler.errors import EventError
from mini_scheduler.handlers.events.recorder import completion_from_event
from mini_scheduler.handlers.recorder import record_event
from mini_scheduler.metrics import RecordingMetrics
from mini_scheduler.model import Firing, RunStatus
from mini_scheduler.recorder import Recorder, Redriven
from tests.conftest import load_event

T0 = datetime(2026, 11, 30, 14, 15, tzinfo=UTC)
FLOW = Firing("hourly-cleanup", T0)
REDRIVEN_AT = datetime(2026, 11, 30, 14, 30, 0, 205000, tzinfo=UTC)
START = JobStart("flow://mini-scheduler-sample-cleanup", "0 15 * * * ? @UTC", {})


def _recorder() -> Recorder:
    store = MemoryClaimStore()
    store.claim(FLOW, now=T0, lease_until=T0 + timedelta(seconds=120), origin="us-east-1/prod")
    store.mark_dispatched(FLOW, now=T0, deadline=T0 + timedelta(hours=1), start=START)
    return Recorder(store, FixedClock(T0), RecordingMetrics())


def _redriven_end(status: str = "SUCCEEDED", stop: datetime | None = None) -> dict[str, Any]:
    """The end of the execution's first redrive."""
    event = load_event("sfn-status-succeeded.json")
    stopped = stop or REDRIVEN_AT + timedelta(minutes=3)
    event["detail"].update(
        status=status,
        redriveCount=1,
        redriveDate=int(REDRIVEN_AT.timestamp() * 1000),
        stopDate=int(stopped.timestamp() * 1000),
    )
    return event


def _totals(recorder: Recorder) -> dict[str, float]:
    return dict(recorder.metrics.totals)  # type: ignore[attr-defined]


def test_the_sample_redrive_event_names_the_firing_and_the_redrive() -> None:
    found = completion_from_event(load_event("sfn-status-redriven.json"))
    assert found == Redriven(FLOW.id, 1, REDRIVEN_AT)


def test_a_redriven_flow_ends_with_its_real_status(caplog: pytest.LogCaptureFixture) -> None:
    recorder = _recorder()
    with caplog.at_level(logging.INFO):
        failed = record_event(recorder, load_event("sfn-status-failed.json"))
        reopened = record_event(recorder, load_event("sfn-status-redriven.json"))
        ended = record_event(recorder, _redriven_end())
    assert failed["status"] == "FAILED"
    assert reopened == {
        "recorded": True,
        "firingId": FLOW.id,
        "status": "DISPATCHED",
        "redrive": 1,
        "redrivenAt": "2026-11-30T14:30:00Z",
    }
    assert ended == {
        "recorded": True,
        "firingId": FLOW.id,
        "status": "SUCCEEDED",
        "endedAt": "2026-11-30T14:33:00Z",
        "durationMs": 180_000,  # the redriven attempt's, from its redrive
        "redrive": 1,
    }
    run = recorder.claims.run(FLOW.id)
    assert run is not None and run.status is RunStatus.SUCCEEDED and run.redrives == 1
    assert run.redriven_at == REDRIVEN_AT and run.error is None
    assert run.earlier_ends == (
        EarlierEnd(
            RunStatus.FAILED,
            datetime(2026, 11, 30, 14, 15, 9, 20000, tzinfo=UTC),
            "States.TaskFailed: cleanup task: bucket mini-scheduler-scratch not found",
        ),
    )
    assert (
        f"Job hourly-cleanup - firing {FLOW.id} redriven by Step Functions (redrive 1): running "
        "again after it ended FAILED"
    ) in caplog.messages
    assert (
        f"Job hourly-cleanup ended SUCCEEDED after 180000 ms - firing {FLOW.id} - redrive 1"
    ) in caplog.messages
    # the run was counted once, at its first end (final then: no retry follows it)
    assert _totals(recorder) == {"RunsFailed": 1, "RunsFailedFinal": 1}
    # the same events delivered again change nothing
    assert record_event(recorder, load_event("sfn-status-redriven.json"))["reason"] == (
        "redrive 1 is recorded already"
    )
    assert record_event(recorder, load_event("sfn-status-failed.json"))["reason"] == (
        "the run was redriven 1 time(s): this event is older"
    )
    assert record_event(recorder, _redriven_end())["reason"] == "already ended SUCCEEDED"


def test_the_end_of_a_redrive_heard_without_its_running_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = _recorder()
    record_event(recorder, load_event("sfn-status-failed.json"))
    with caplog.at_level(logging.INFO):
        answer = record_event(recorder, _redriven_end("FAILED"))
    assert answer["status"] == "FAILED" and answer["redrive"] == 1
    run = recorder.claims.run(FLOW.id)
    assert run is not None and run.status is RunStatus.FAILED and run.redrives == 1
    assert [end.status for end in run.earlier_ends] == [RunStatus.FAILED]
    assert f"Job hourly-cleanup ended FAILED after 180000 ms - firing {FLOW.id} - redrive 1" in (
        caplog.messages
    )
    assert _totals(recorder) == {"RunsFailed": 1, "RunsFailedFinal": 1}


def test_a_redrive_of_a_run_that_succeeded_or_is_unknown_changes_nothing() -> None:
    recorder = _recorder()
    record_event(recorder, load_event("sfn-status-succeeded.json"))
    answer = record_event(recorder, load_event("sfn-status-redriven.json"))
    assert answer == {"recorded": False, "firingId": FLOW.id, "reason": "already ended SUCCEEDED"}
    unknown = Recorder(MemoryClaimStore(), FixedClock(T0))
    assert (
        record_event(unknown, load_event("sfn-status-redriven.json"))["reason"] == "unknown firing"
    )


@pytest.mark.parametrize("count", ["1", -1, True, 1.0, 10**20, [1]])
def test_a_redrive_count_that_is_not_a_count_is_rejected(count: Any) -> None:
    event = load_event("sfn-status-redriven.json")
    event["detail"]["redriveCount"] = count
    with pytest.raises(EventError, match=r"redriveCount .* is not a count"):
        completion_from_event(event)


def test_a_first_running_event_and_a_pending_redrive_are_not_ends() -> None:
    event = load_event("sfn-status-redriven.json")
    event["detail"]["redriveCount"] = 0
    assert completion_from_event(event) is None
    event["detail"].update(status="PENDING_REDRIVE", redriveCount=1)
    assert completion_from_event(event) is None


def _swept(recorder: Recorder, at: datetime) -> None:
    """The sweep marks the run TIMED_OUT (the ticker counts RunsTimedOut then)."""
    (run,) = recorder.claims.due_runs(at)
    assert recorder.claims.time_out(run, now=at)


@pytest.mark.parametrize(
    ("event", "status", "level"),
    [
        ("sfn-status-succeeded.json", "SUCCEEDED", logging.WARNING),
        ("sfn-status-failed.json", "FAILED", logging.ERROR),
    ],
)
def test_a_completion_after_the_sweep_records_the_real_end_and_the_timeout(
    caplog: pytest.LogCaptureFixture, event: str, status: str, level: int
) -> None:
    recorder = _recorder()
    swept = T0 + timedelta(hours=1, minutes=1)
    _swept(recorder, swept)
    late = load_event(event)
    stopped = swept + timedelta(minutes=4)
    late["detail"]["stopDate"] = int(stopped.timestamp() * 1000)
    with caplog.at_level(logging.INFO):
        answer = record_event(recorder, late)
    assert answer == {
        "recorded": True,
        "firingId": FLOW.id,
        "status": status,
        "endedAt": "2026-11-30T15:20:00Z",
        "durationMs": 65 * 60_000,
        "timedOutAt": "2026-11-30T15:16:00Z",
    }
    run = recorder.claims.run(FLOW.id)
    assert run is not None and run.status is RunStatus(status) and run.ended_at == stopped
    assert run.timed_out_at == swept and run.started_at == T0
    (record,) = [r for r in caplog.records if r.name == "mini_scheduler.recorder"]
    assert record.levelno == level
    assert record.getMessage() == (
        f"Job hourly-cleanup ended {status} after 3900000 ms - firing {FLOW.id} - it had been "
        "marked TIMED_OUT at 2026-11-30T15:16:00Z: the job's timeout is shorter than this run"
    )
    # counted as RunsTimedOut by the sweep, not again
    assert _totals(recorder) == {}
    assert record_event(recorder, late)["reason"] == f"already ended {status}"


def test_a_lambda_completion_after_the_sweep_is_recorded_too() -> None:
    firing = Firing("morning-report", datetime(2026, 11, 30, 14, 0, tzinfo=UTC))
    store = MemoryClaimStore()
    store.claim(firing, now=firing.scheduled, lease_until=T0, origin="us-east-1/prod")
    store.mark_dispatched(firing, now=firing.scheduled, deadline=firing.scheduled, start=START)
    (run,) = store.due_runs(firing.scheduled)
    store.time_out(run, now=firing.scheduled)
    answer = record_event(
        Recorder(store, FixedClock(T0)), load_event("lambda-destination-success.json")
    )
    assert answer["status"] == "SUCCEEDED" and answer["timedOutAt"] == "2026-11-30T14:00:00Z"
    ended = store.run(firing.id)
    assert ended is not None and ended.status is RunStatus.SUCCEEDED
    assert ended.timed_out_at == firing.scheduled


def test_the_cli_s_history_notes_a_late_end_and_a_redrive() -> None:
    from mini_scheduler.cli.render import run_note

    redriven = _recorder()
    for event in ("sfn-status-failed.json", "sfn-status-redriven.json"):
        record_event(redriven, load_event(event))
    record_event(redriven, _redriven_end())
    run = redriven.claims.run(FLOW.id)
    assert run is not None and run_note(run) == "redriven 1x after FAILED"
    late = _recorder()
    _swept(late, T0 + timedelta(hours=2))
    assert run_note(late.claims.run(FLOW.id)) == TIMED_OUT_ERROR  # type: ignore[arg-type]
    record_event(late, load_event("sfn-status-succeeded.json"))
    run = late.claims.run(FLOW.id)
    assert run is not None
    assert run_note(run) == "ended after it was marked TIMED_OUT at 2026-11-30 16:15:00Z"
