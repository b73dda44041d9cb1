"""The two Lambda handlers end to end on every sample event in events/."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.handlers import ticker as ticker_handler
from mini_scheduler.model import RunStatus
from tests.conftest import load_event
from tests.system.integration.conftest import Aws, _Context

pytestmark = pytest.mark.dynamodb_local

Invoke = Callable[[Any], dict[str, Any]]


def _first_ticks(aws: Aws, invoke: Invoke) -> dict[str, Any]:
    invoke({"tick": "2026-11-30T13:59:00Z"})  # the region's first tick: its watermark
    aws.clock.set(aws.clock.now().replace(hour=14, minute=0, second=0))
    return invoke(load_event("tick.json"))


def test_a_tick_event_answers_the_summary(aws: Aws, invoke_ticker: Invoke) -> None:
    answer = _first_ticks(aws, invoke_ticker)
    assert answer["minute"] == "2026-11-30T14:00:00Z"
    assert answer["environment"] == "prod" and answer["activeEnvironment"] == "prod"
    assert answer["mode"] == "active"
    assert answer["counts"]["claimed"] == 5 and answer["counts"]["dispatched"] == 5
    run = aws.store().run("morning-report@2026-11-30T14:00:00Z")
    assert run is not None and run.status is RunStatus.DISPATCHED
    state = aws.store().job_state("morning-report")
    assert state is not None and state.schedule == "0 0 9 * * ? @America/New_York"
    assert state.parameters["_origin"] == "us-east-1/prod"


def test_the_classic_scheduled_event_is_a_tick(aws: Aws, invoke_ticker: Invoke) -> None:
    _first_ticks(aws, invoke_ticker)
    again = invoke_ticker(load_event("scheduled-event.json"))
    assert again["minute"] == "2026-11-30T14:00:00Z"
    assert "already handled" in again["note"]
    assert again["counts"]["dispatched"] == 0


def test_a_flow_is_started_under_the_firing_s_name(aws: Aws, invoke_ticker: Invoke) -> None:
    _first_ticks(aws, invoke_ticker)
    aws.clock.set(aws.clock.now().replace(minute=15))
    answer = invoke_ticker({"tick": "2026-11-30T14:15:00Z"})
    assert answer["counts"]["dispatched"] >= 1
    executions = aws.sfn.list_executions(stateMachineArn=aws.flow_arn)["executions"]
    assert [e["name"] for e in executions] == ["hourly-cleanup@2026-11-30T14-15-00Z"]


def test_a_manual_run_is_recorded_with_its_operator(aws: Aws, invoke_ticker: Invoke) -> None:
    _first_ticks(aws, invoke_ticker)
    answer = invoke_ticker(load_event("manual-run.json"))
    assert answer["status"] == "DISPATCHED" and answer["manual"] is True
    assert re.fullmatch(
        r"morning-report@manual-2026-11-30T14:00:\d\d\.\d{3}Z-[0-9a-f]{8}", answer["firingId"]
    )
    assert answer["parameters"] == {"region": "west", "recipients": ["ops@example.com"]}
    history = aws.store().history("morning-report")
    assert history[0].firing_id == answer["firingId"]
    assert history[0].operator == "jane.doe" and history[0].manual
    assert history[1].firing_id == "morning-report@2026-11-30T14:00:00Z"  # its own firing


def test_a_manual_run_goes_ahead_on_standby(aws: Aws, invoke_ticker: Invoke) -> None:
    aws.ssm.put_parameter(Name="/mini-scheduler/active-environment", Value="DR", Type="String")
    answer = invoke_ticker(load_event("manual-run.json"))
    assert answer["status"] == "DISPATCHED" and answer["mode"] == "standby"


def test_the_environment_event_reads_the_status(aws: Aws, invoke_ticker: Invoke) -> None:
    assert invoke_ticker(load_event("environment-get.json")) == {
        "environment": "prod",
        "active": "prod",
        "mode": "active",
        "persistent": True,
        "store": "ssm:/mini-scheduler/active-environment",
    }


def test_the_environment_event_persists_first_then_answers(aws: Aws, invoke_ticker: Invoke) -> None:
    answer = invoke_ticker(load_event("environment-set.json"))
    assert answer["active"] == "DR" and answer["mode"] == "standby"
    stored = aws.ssm.get_parameter(Name="/mini-scheduler/active-environment")["Parameter"]
    assert stored["Value"] == "DR"
    invoke_ticker({"tick": "2026-11-30T13:59:00Z"})
    aws.clock.set(aws.clock.now().replace(hour=14, minute=0))
    tick = invoke_ticker(load_event("tick.json"))
    assert tick["mode"] == "standby" and tick["counts"]["dispatched"] == 0


def test_pause_and_resume_events(aws: Aws, invoke_ticker: Invoke) -> None:
    assert invoke_ticker(load_event("pause.json")) == {
        "job": "morning-report",
        "paused": True,
        "operator": "jane.doe",
    }
    answer = _first_ticks(aws, invoke_ticker)
    assert answer["counts"]["skipped"]["paused"] == 1
    assert aws.store().run("morning-report@2026-11-30T14:00:00Z") is None
    assert invoke_ticker(load_event("resume.json"))["paused"] is False
    assert aws.store().control("us-east-1/prod").paused == {}


@pytest.mark.parametrize(
    ("event", "status", "error"),
    [
        ("lambda-destination-success.json", RunStatus.SUCCEEDED, None),
        (
            "lambda-destination-failure.json",
            RunStatus.FAILED,
            "ConnectionError: report database unreachable",
        ),
    ],
)
def test_the_recorder_closes_a_lambda_run(
    aws: Aws,
    invoke_ticker: Invoke,
    invoke_recorder: Invoke,
    event: str,
    status: RunStatus,
    error: str | None,
) -> None:
    _first_ticks(aws, invoke_ticker)
    answer = invoke_recorder(load_event(event))
    assert answer["recorded"] is True and answer["status"] == status
    run = aws.store().run("morning-report@2026-11-30T14:00:00Z")
    assert run is not None and run.status is status and run.error == error
    state = aws.store().job_state("morning-report")
    assert state is not None and state.last_status is status and state.end is not None
    again = invoke_recorder(load_event(event))
    assert again["recorded"] is False and "already ended" in again["reason"]


@pytest.mark.parametrize(
    ("event", "status", "error"),
    [
        ("sfn-status-succeeded.json", RunStatus.SUCCEEDED, None),
        (
            "sfn-status-failed.json",
            RunStatus.FAILED,
            "States.TaskFailed: cleanup task: bucket mini-scheduler-scratch not found",
        ),
    ],
)
def test_the_recorder_closes_a_flow_run(
    aws: Aws,
    invoke_ticker: Invoke,
    invoke_recorder: Invoke,
    event: str,
    status: RunStatus,
    error: str | None,
) -> None:
    _first_ticks(aws, invoke_ticker)
    aws.clock.set(aws.clock.now().replace(minute=15))
    invoke_ticker({"tick": "2026-11-30T14:15:00Z"})
    answer = invoke_recorder(load_event(event))
    assert answer["status"] == status
    run = aws.store().run("hourly-cleanup@2026-11-30T14:15:00Z")
    assert run is not None and run.status is status and run.error == error
    assert run.ended_at is not None and run.started_at is not None
    assert run.ended_at - run.started_at < timedelta(minutes=1)


def test_the_recorder_ignores_an_unknown_firing(aws: Aws, invoke_recorder: Invoke) -> None:
    answer = invoke_recorder(load_event("lambda-destination-success.json"))
    assert answer == {
        "recorded": False,
        "firingId": "morning-report@2026-11-30T14:00:00Z",
        "reason": "unknown firing",
    }
    assert aws.item_count() == 0


@pytest.mark.parametrize(
    "event",
    [
        [],
        "tick",
        {},
        {"tick": 5},
        {"tick": "yesterday"},
        {"tick": "2026-11-30T14:00:00"},
        {"tick": "2026-11-30T14:00:00Z", "shard": 3, "shards": 2},
        {"job": "morning-report"},
        {"job": "morning-report", "operator": "jane doe"},
        {"job": "morning-report", "operator": "x" * 129},
        {"job": "no-such-job", "operator": "jane.doe"},
        {"job": "morning-report", "operator": "jane.doe", "parameters": ["a"]},
        {"job": "morning-report", "operator": "jane.doe", "parameters": {"blob": "x" * 500_000}},
        {"job": "morning-report", "operator": "jane.doe", "extra": 1},
        {"environment": "DR"},
        {"environment": {"active": "D R", "operator": "jane.doe"}},
        {"environment": {"active": "DR"}},
        {"environment": {"active": "DR", "who": "x"}},
        {"pause": "no-such-job", "operator": "jane.doe"},
        {"resume": "morning-report"},
        {"detail-type": "Scheduled Event"},
        {"tick": "2026-11-30T14:10:00Z"},  # ten minutes ahead of the clock
        {"tick": "2030-01-01T00:00:00Z"},
        {"detail-type": "Scheduled Event", "time": "2027-11-30T14:00:00Z"},
    ],
)
def test_a_malformed_event_is_rejected_and_writes_nothing(
    aws: Aws, invoke_ticker: Invoke, event: Any
) -> None:
    answer = invoke_ticker(event)
    assert answer["status"] == "rejected" and answer["error"]
    assert aws.item_count() == 0
    assert aws.ssm.describe_parameters()["Parameters"] == []


def test_a_tick_from_the_future_is_refused_and_the_scheduler_goes_on(
    aws: Aws, invoke_ticker: Invoke
) -> None:
    """Were it taken, its watermark would hold back every tick until that minute came."""
    _first_ticks(aws, invoke_ticker)
    refused = invoke_ticker({"tick": "2030-01-01T00:00:00Z"})
    assert refused["status"] == "rejected"
    assert "1127 days ahead of this Lambda's clock (2026-11-30T14:00" in refused["error"]
    aws.clock.set(aws.clock.now().replace(minute=1))
    assert invoke_ticker({"tick": "2026-11-30T14:01:00Z"})["mode"] == "active"
    # a tick early by the clock skew between machines is one the scheduler takes
    assert invoke_ticker({"tick": "2026-11-30T14:02:00Z"})["mode"] == "active"


def test_an_event_s_unknown_keys_are_named_within_a_bound(invoke_ticker: Invoke) -> None:
    event = {"job": "morning-report", "operator": "jane.doe"}
    event.update({f"k{i}" + "x" * 1000: i for i in range(100)})
    answer = invoke_ticker(event)
    assert answer["status"] == "rejected"
    assert "and 92 more" in answer["error"] and len(answer["error"]) < 600


@pytest.mark.parametrize(
    "event",
    [
        [],
        {},
        {"requestContext": {"condition": "Maybe"}},
        {"requestContext": {"condition": "Success"}},
        {"requestContext": {"condition": "Success"}, "requestPayload": {"firingId": "nonsense"}},
        {"source": "aws.states", "detail": {"status": "EXPLODED"}},
        {"source": "aws.states", "detail": {"status": "SUCCEEDED", "input": "{}", "name": "x"}},
    ],
)
def test_the_recorder_rejects_malformed_events(
    aws: Aws, invoke_recorder: Invoke, event: Any
) -> None:
    answer = invoke_recorder(event)
    assert answer["status"] == "rejected" and answer["error"]
    assert aws.item_count() == 0


class _ShortOfTime(_Context):
    """An invocation with 30 s left: the tick stops claiming 20 s before its end."""

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def test_the_handler_gives_the_tick_its_invocation_s_deadline(
    aws: Aws, invoke_ticker: Invoke
) -> None:
    invoke_ticker({"tick": "2026-11-30T13:59:00Z"})
    aws.clock.set(aws.clock.now().replace(hour=14, minute=0, second=0))
    answer = ticker_handler.handler({"tick": "2026-11-30T14:00:00Z"}, _ShortOfTime())
    assert answer["counts"]["held"] == 3  # heartbeat at :15, :30 and :45; :00 ran
    run = aws.store().run("heartbeat@2026-11-30T14:00:00Z")
    assert run is not None and run.status is RunStatus.DISPATCHED
    assert aws.store().run("heartbeat@2026-11-30T14:00:15Z") is None


def test_outside_lambda_a_tick_has_no_deadline() -> None:
    assert ticker_handler.deadline_of(object(), datetime(2026, 11, 30, tzinfo=UTC)) is None
