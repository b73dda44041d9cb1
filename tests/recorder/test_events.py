"""Completion events: what each shape of event closes, and what is refused."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.claims.base import JobStart
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.clock import FixedClock
from mini_scheduler.errors import EventError
from mini_scheduler.model import Firing, RunStatus, execution_name
from mini_scheduler.recorder import Recorder, completion_from_event
from tests.conftest import load_event

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


def test_a_lambda_success_record_closes_the_run_succeeded() -> None:
    done = completion_from_event(load_event("lambda-destination-success.json"))
    assert done is not None and done.status is RunStatus.SUCCEEDED and done.error is None
    assert done.firing_id == "morning-report@2026-11-30T14:00:00Z"
    assert done.ended_at == datetime(2026, 11, 30, 14, 0, 3, 512000, tzinfo=UTC)


def test_a_lambda_failure_record_carries_the_function_s_error() -> None:
    done = completion_from_event(load_event("lambda-destination-failure.json"))
    assert done is not None and done.status is RunStatus.FAILED
    assert done.error == "ConnectionError: report database unreachable"


def test_an_expired_event_is_a_failure_with_its_reason() -> None:
    event = load_event("lambda-destination-failure.json")
    event["requestContext"]["condition"] = "EventAgeExceeded"
    del event["responsePayload"]
    done = completion_from_event(event)
    assert done is not None and done.status is RunStatus.FAILED
    assert done.error is not None and done.error.startswith("EventAgeExceeded")


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("sfn-status-succeeded.json", RunStatus.SUCCEEDED),
        ("sfn-status-failed.json", RunStatus.FAILED),
    ],
)
def test_step_functions_status_events(name: str, status: RunStatus) -> None:
    done = completion_from_event(load_event(name))
    assert done is not None and done.status is status
    assert done.firing_id == "hourly-cleanup@2026-11-30T14:15:00Z"
    assert done.ended_at is not None and done.ended_at.year == 2026


@pytest.mark.parametrize(
    "firing",
    [
        Firing("hourly-cleanup", T0),
        Firing.manual_run("hourly-cleanup", T0, "jane", {}, nonce="00ff00ff"),
    ],
)
def test_without_its_input_the_execution_name_names_the_firing(firing: Firing) -> None:
    event = load_event("sfn-status-succeeded.json")
    event["detail"]["input"] = None
    event["detail"]["name"] = execution_name(firing.id)
    done = completion_from_event(event)
    assert done is not None and done.firing_id == firing.id


def test_a_step_functions_timeout_is_timed_out_and_aborted_is_failed() -> None:
    event = load_event("sfn-status-failed.json")
    event["detail"].update(status="TIMED_OUT", error="States.Timeout", cause=None)
    done = completion_from_event(event)
    assert done is not None and done.status is RunStatus.TIMED_OUT
    assert done.error == "States.Timeout"
    event["detail"].update(status="ABORTED", error=None)
    done = completion_from_event(event)
    assert done is not None and done.status is RunStatus.FAILED and done.error == "ABORTED"


def test_a_running_execution_is_not_an_end() -> None:
    event = load_event("sfn-status-succeeded.json")
    event["detail"]["status"] = "RUNNING"
    assert completion_from_event(event) is None


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.pop("requestPayload"),
        lambda e: e["requestPayload"].pop("firingId"),
        lambda e: e["requestPayload"].update(firingId="not a firing"),
        lambda e: e["requestContext"].update(condition="Later"),
    ],
)
def test_malformed_lambda_records_are_refused(mutate: Any) -> None:
    event = copy.deepcopy(load_event("lambda-destination-success.json"))
    mutate(event)
    with pytest.raises(EventError):
        completion_from_event(event)


def test_the_recorder_logs_the_end_with_its_duration(caplog: pytest.LogCaptureFixture) -> None:
    claims = MemoryClaimStore()
    firing = Firing("morning-report", T0)
    claims.claim(firing, now=T0, lease_until=T0 + timedelta(seconds=120), origin="us-east-1/prod")
    claims.mark_dispatched(
        firing,
        now=T0 + timedelta(seconds=1),
        deadline=T0 + timedelta(seconds=900),
        start=JobStart("fn", "0 0 9 * * ? @America/New_York", {}),
    )
    recorder = Recorder(claims, FixedClock(T0))
    with caplog.at_level("INFO"):
        answer = recorder.record(load_event("lambda-destination-success.json"))
    assert answer == {
        "recorded": True,
        "firingId": firing.id,
        "status": "SUCCEEDED",
        "endedAt": "2026-11-30T14:00:03Z",
        "durationMs": 2512,
    }
    assert (
        "Job morning-report ended SUCCEEDED after 2512 ms - firing "
        "morning-report@2026-11-30T14:00:00Z"
    ) in caplog.messages
    assert recorder.metrics.totals["RunsSucceeded"] == 1  # type: ignore[attr-defined]


def test_sample_events_are_valid_json_objects() -> None:
    for name in ("lambda-destination-success.json", "sfn-status-failed.json"):
        assert isinstance(json.loads(json.dumps(load_event(name))), dict)
