"""Completion events: what each shape of event closes, and what is refused."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import pytest

from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import JobStart
from mini_scheduler.clock import FixedClock
from mini_scheduler.errors import EventError
from mini_scheduler.handlers import recorder as recorder_handler
from mini_scheduler.handlers.events.recorder import completion_from_event
from mini_scheduler.model import Firing, RunStatus, execution_name
from mini_scheduler.recorder import Recorder
from tests.conftest import EVENTS, load_event
from tests.docs import section
from tests.system.integration.conftest import CONTEXT, Aws
from tests.system.integration.conftest import aws as aws  # the fixtures, for the events/ test
from tests.system.integration.conftest import invoke_recorder as invoke_recorder
from tests.system.integration.conftest import invoke_ticker as invoke_ticker

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
        Firing("hourly-cleanup", T0, attempt=2),
        Firing.manual_run("hourly-cleanup", T0, "jane", {}, nonce="00ff00ff").retry().retry(),
        Firing("hourly-cleanup", T0, attempt=99),
    ],
    ids=["scheduled", "manual", "retry", "manual-retry", "last-attempt"],
)
def test_without_its_input_the_execution_name_names_the_firing(firing: Firing) -> None:
    event = load_event("sfn-status-succeeded.json")
    event["detail"]["input"] = None
    event["detail"]["name"] = execution_name(firing.id)
    done = completion_from_event(event)
    assert done is not None and done.firing_id == firing.id


def test_a_retry_s_end_closes_that_attempt_s_run() -> None:
    """The payload keeps the firing's firingId and says its attempt: the run the end closes is
    ``<firingId>#<attempt>`` from the second attempt on (a payload without ``attempt``, from
    before retries, is a first attempt)."""
    event = load_event("lambda-destination-failure.json")
    event["requestPayload"]["attempt"] = 3
    done = completion_from_event(event)
    assert done is not None and done.firing_id == "morning-report@2026-11-30T14:00:00Z#3"
    event["requestPayload"]["attempt"] = 1
    done = completion_from_event(event)
    assert done is not None and done.firing_id == "morning-report@2026-11-30T14:00:00Z"
    flow = load_event("sfn-status-failed.json")
    body = json.loads(flow["detail"]["input"])
    flow["detail"]["input"] = json.dumps({**body, "attempt": 2})
    done = completion_from_event(flow)
    assert done is not None and done.firing_id == "hourly-cleanup@2026-11-30T14:15:00Z#2"


@pytest.mark.parametrize(
    ("attempt", "firing_id"),
    [
        (0, "morning-report@2026-11-30T14:00:00Z"),
        (100, "morning-report@2026-11-30T14:00:00Z"),
        ("two", "morning-report@2026-11-30T14:00:00Z"),
        (True, "morning-report@2026-11-30T14:00:00Z"),
        (2, "morning-report@2026-11-30T14:00:00Z#2"),
    ],
)
def test_an_attempt_that_is_not_one_is_refused(attempt: Any, firing_id: str) -> None:
    event = load_event("lambda-destination-failure.json")
    event["requestPayload"].update(attempt=attempt, firingId=firing_id)
    with pytest.raises(EventError, match="attempt"):
        completion_from_event(event)


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
        answer = recorder_handler.record_event(
            recorder, load_event("lambda-destination-success.json")
        )
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


# -- every file in events/ through its handler -------------------------------------------------

Invoke = Callable[[Any], dict[str, Any]]
Setup = Callable[[Aws, Invoke], object]
Check = Callable[[dict[str, Any], Aws, dict[str, Any]], None]


@dataclass(frozen=True)
class EventExpectation:
    """What "Events the functions take" (docs/reference.md) documents for one file of events/:
    the function that takes it, what must have happened before (through the ticker), and the
    answer and the state it leaves (``check(answer, aws, event)``)."""

    function: Literal["ticker", "recorder"]
    check: Check
    before: Setup = lambda aws, ticker: None


def _region_ticked(aws: Aws, ticker: Invoke) -> None:
    """The region's first tick (13:59: its watermark), the clock at 14:00."""
    ticker({"tick": "2026-11-30T13:59:00Z"})
    aws.clock.set(datetime(2026, 11, 30, 14, 0, tzinfo=UTC))


def _dispatched_14_00(aws: Aws, ticker: Invoke) -> None:
    """morning-report and heartbeat dispatched at 14:00."""
    _region_ticked(aws, ticker)
    ticker({"tick": "2026-11-30T14:00:00Z"})


def _dispatched_14_15(aws: Aws, ticker: Invoke) -> None:
    """hourly-cleanup's flow started at 14:15."""
    _dispatched_14_00(aws, ticker)
    aws.clock.set(datetime(2026, 11, 30, 14, 15, tzinfo=UTC))
    ticker({"tick": "2026-11-30T14:15:00Z"})


SAMPLE_FUNCTION = "mini-scheduler-sample-report"
TICK_COUNTS = {"claimed", "dispatched", "skipped", "misfired", "errors", "takenOver", "timedOut"}
TICK_COUNTS |= {"held"}


def _a_tick_of(minute: str) -> Check:
    """A tick's answer for ``minute``: its summary with every documented count, the minute's
    five firings (morning-report, four heartbeats) dispatched and recorded."""

    def check(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
        assert answer["minute"] == minute
        assert (answer["environment"], answer["activeEnvironment"], answer["mode"]) == (
            "prod",
            "prod",
            "active",
        )
        assert set(answer["counts"]) >= TICK_COUNTS, answer["counts"]
        assert (answer["counts"]["claimed"], answer["counts"]["dispatched"]) == (5, 5)
        run = aws.store().run(f"morning-report@{minute}")
        assert run is not None and run.status is RunStatus.DISPATCHED

    return check


def _manual_run(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    assert answer["status"] == "DISPATCHED" and answer["manual"] is True
    assert answer["firingId"].startswith("morning-report@manual-2026-11-30T14:00:00")
    # the event's parameters merged over the job's
    assert answer["parameters"] == {"region": "west", "recipients": ["ops@example.com"]}
    [run] = aws.store().history("morning-report")
    assert run.firing_id == answer["firingId"] and run.operator == "jane.doe" and run.manual


def _failed_14_00(aws: Aws, ticker: Invoke) -> None:
    """morning-report's 14:00 firing dispatched, and failed."""
    _dispatched_14_00(aws, ticker)
    recorder_handler.handler(load_event("lambda-destination-failure.json"), CONTEXT)


def _rerun(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    """The failed firing again, as a manual run that names it, with its scheduled time."""
    original = "morning-report@2026-11-30T14:00:00Z"
    assert answer["status"] == "DISPATCHED" and answer["manual"] is True
    assert (answer["reruns"], answer["scheduledTime"]) == (original, "2026-11-30T14:00:00Z")
    assert answer["firingId"].startswith("morning-report@manual-2026-11-30T14:00:45")
    run = aws.store().run(answer["firingId"])
    assert run is not None and (run.reruns, run.operator, run.manual) == (
        original,
        "jane.doe",
        True,
    )
    failed = aws.store().run(original)
    assert failed is not None and failed.status is RunStatus.FAILED  # left as it was


def _environment_status(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    assert answer == {
        "environment": "prod",
        "active": "prod",
        "mode": "active",
        "persistent": True,
        "store": "ssm:/mini-scheduler/active-environment",
    }


def _environment_set(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    assert answer["active"] == "DR" and answer["mode"] == "standby"
    stored = aws.ssm.get_parameter(Name="/mini-scheduler/active-environment")["Parameter"]
    assert stored["Value"] == "DR"
    # one region's store only: the answer says the others were not changed (issue 15)
    assert answer["otherRegions"].startswith(
        "not changed: this wrote ssm:/mini-scheduler/active-environment in us-east-1 only"
    )


def _paused(paused: bool) -> Check:
    def check(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
        assert answer == {"job": "morning-report", "paused": paused, "operator": "jane.doe"}
        stored = aws.store().control("us-east-1/prod").paused
        assert ("morning-report" in stored) is paused

    return check


def _task_started_14_00(aws: Aws, ticker: Invoke) -> None:
    """nightly-export's ECS task started at 14:00: its run written as a tick's dispatch writes
    it (the sample cron.yaml has no ECS job; the events' task is a deployment's)."""
    firing = Firing("nightly-export", T0)
    store = aws.store()
    store.claim(firing, now=T0, lease_until=T0 + timedelta(seconds=120), origin="us-east-1/prod")
    start = JobStart("ecs://batch/nightly-export", "0 0 14 * * ? @UTC", {"format": "parquet"})
    store.mark_dispatched(firing, now=T0, deadline=T0 + timedelta(hours=1), start=start)


def _closed(firing_id: str, status: RunStatus, error: str | None) -> Check:
    """The recorder's answer for a run it closed, and the run as recorded."""

    def check(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
        assert answer["recorded"] is True, answer
        assert (answer["firingId"], answer["status"]) == (firing_id, str(status))
        run = aws.store().run(firing_id)
        assert run is not None and (run.status, run.error) == (status, error)
        assert run.ended_at is not None

    return check


def _batch_recorded(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    """Both completions of the queue's batch recorded: none to deliver again."""
    assert answer == {"batchItemFailures": []}
    for firing_id in ("morning-report@2026-11-30T14:00:00Z", "hourly-cleanup@2026-11-30T14:15:00Z"):
        run = aws.store().run(firing_id)
        assert run is not None and run.status is RunStatus.SUCCEEDED, firing_id


def _failed_14_15(aws: Aws, ticker: Invoke) -> None:
    """hourly-cleanup's flow started at 14:15, and failed."""
    _dispatched_14_15(aws, ticker)
    recorder_handler.handler(load_event("sfn-status-failed.json"), CONTEXT)


def _redriven(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    """The failed run reopened: DISPATCHED again, its failure kept."""
    assert answer == {
        "recorded": True,
        "firingId": "hourly-cleanup@2026-11-30T14:15:00Z",
        "status": "DISPATCHED",
        "redrive": 1,
        "redrivenAt": "2026-11-30T14:30:00Z",
    }
    run = aws.store().run(answer["firingId"])
    assert run is not None and run.status is RunStatus.DISPATCHED and run.redrives == 1
    assert [end.status for end in run.earlier_ends] == [RunStatus.FAILED]


def _schedules_created(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    once, digest = answer["created"]
    assert (once["name"], once["kind"], once["nextFiring"]) == (
        "quarter-close",
        "one-time",
        "2026-12-31T23:00:00Z",
    )
    assert (digest["kind"], digest["nextFiring"]) == ("cron", "2026-12-01T07:30:00Z")
    assert answer["operator"] == "jane.doe"
    stored = aws.store().pending_deferred("schedule")
    assert sorted(item.firing.id for item in stored) == [
        "quarter-close@2026-12-31T23:00:00Z",
        "weekday-digest@2026-12-01T07:30:00Z",
    ]


def _schedules_made(aws: Aws, ticker: Invoke) -> None:
    ticker(load_event("schedule-create.json"))


def _schedules_listed(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    assert [s["name"] for s in answer["schedules"]] == ["quarter-close", "weekday-digest"]


def _schedule_deleted(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    assert answer["deleted"]["name"] == "quarter-close" and answer["operator"] == "jane.doe"
    stored = aws.store().pending_deferred("schedule")
    assert [item.firing.job for item in stored] == ["weekday-digest"]


def _backfill_started(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    assert (answer["job"], answer["total"], answer["pending"], answer["rate"]) == (
        "heartbeat",
        4,
        4,
        10,
    )
    stored = aws.store().pending_deferred("backfill")
    assert [item.firing.id for item in stored] == [
        f"heartbeat@2026-11-30T12:00:{s:02d}Z" for s in (0, 15, 30, 45)
    ]
    assert all(item.firing.backfill for item in stored)


def _backfill_status(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    (found,) = answer["backfills"]
    assert (found["job"], found["pending"], found["done"]) == ("heartbeat", 4, 0)


def _soon_made(aws: Aws, ticker: Invoke) -> None:
    """14:00 ticked; at 14:00:20 a one-time schedule made for 14:00:40, after that tick read
    the deferred firings."""
    _dispatched_14_00(aws, ticker)
    aws.clock.set(datetime(2026, 11, 30, 14, 0, 20, tzinfo=UTC))
    ticker(
        {
            "schedule": "create",
            "operator": "jane.doe",
            "schedules": [
                {"name": "soon", "at": "2026-11-30T14:00:40Z", "service": SAMPLE_FUNCTION}
            ],
        }
    )


def _caught_up(answer: dict[str, Any], aws: Aws, event: dict[str, Any]) -> None:
    assert (answer["minute"], answer["mode"]) == ("2026-11-30T14:00:00Z", "active")
    assert (answer["counts"]["claimed"], answer["counts"]["dispatched"]) == (1, 1)
    (run,) = aws.store().history("soon")
    assert run.firing_id == "soon@2026-11-30T14:00:40Z"
    assert run.started_at == datetime(2026, 11, 30, 14, 0, 40, tzinfo=UTC)  # at its second


EVENT_FILE_EXPECTATIONS: dict[str, EventExpectation] = {
    "catch-up.json": EventExpectation("ticker", _caught_up, _soon_made),
    "tick.json": EventExpectation("ticker", _a_tick_of("2026-11-30T14:00:00Z"), _region_ticked),
    "scheduled-event.json": EventExpectation(
        "ticker", _a_tick_of("2026-11-30T14:00:00Z"), _region_ticked
    ),
    "manual-run.json": EventExpectation("ticker", _manual_run, _region_ticked),
    "rerun.json": EventExpectation("ticker", _rerun, _failed_14_00),
    "environment-get.json": EventExpectation("ticker", _environment_status),
    "environment-set.json": EventExpectation("ticker", _environment_set),
    "pause.json": EventExpectation("ticker", _paused(True)),
    "resume.json": EventExpectation(
        "ticker",
        _paused(False),
        lambda aws, ticker: ticker({"pause": "morning-report", "operator": "jane.doe"}),
    ),
    "lambda-destination-success.json": EventExpectation(
        "recorder",
        _closed("morning-report@2026-11-30T14:00:00Z", RunStatus.SUCCEEDED, None),
        _dispatched_14_00,
    ),
    "lambda-destination-failure.json": EventExpectation(
        "recorder",
        _closed(
            "morning-report@2026-11-30T14:00:00Z",
            RunStatus.FAILED,
            "ConnectionError: report database unreachable",
        ),
        _dispatched_14_00,
    ),
    "sfn-status-succeeded.json": EventExpectation(
        "recorder",
        _closed("hourly-cleanup@2026-11-30T14:15:00Z", RunStatus.SUCCEEDED, None),
        _dispatched_14_15,
    ),
    "sfn-status-failed.json": EventExpectation(
        "recorder",
        _closed(
            "hourly-cleanup@2026-11-30T14:15:00Z",
            RunStatus.FAILED,
            "States.TaskFailed: cleanup task: bucket mini-scheduler-scratch not found",
        ),
        _dispatched_14_15,
    ),
    "sfn-status-redriven.json": EventExpectation("recorder", _redriven, _failed_14_15),
    "ecs-task-stopped.json": EventExpectation(
        "recorder",
        _closed("nightly-export@2026-11-30T14:00:00Z", RunStatus.SUCCEEDED, None),
        _task_started_14_00,
    ),
    "ecs-task-failed.json": EventExpectation(
        "recorder",
        _closed(
            "nightly-export@2026-11-30T14:00:00Z",
            RunStatus.FAILED,
            "EssentialContainerExited: Essential container in task exited; export exit 1",
        ),
        _task_started_14_00,
    ),
    "sqs-completions.json": EventExpectation("recorder", _batch_recorded, _dispatched_14_15),
    "schedule-create.json": EventExpectation("ticker", _schedules_created),
    "schedule-list.json": EventExpectation("ticker", _schedules_listed, _schedules_made),
    "schedule-delete.json": EventExpectation("ticker", _schedule_deleted, _schedules_made),
    "backfill.json": EventExpectation("ticker", _backfill_started),
    "backfill-status.json": EventExpectation(
        "ticker", _backfill_status, lambda aws, ticker: ticker(load_event("backfill.json"))
    ),
}
"""Every file of events/, what its handler must answer. A file added to events/ fails
test_every_event_file_gives_its_documented_answer until it has an entry here (and a row in
"Events the functions take", docs/reference.md)."""

EVENT_FILES = sorted(path.name for path in EVENTS.iterdir() if path.is_file())


def _expectation(name: str) -> EventExpectation:
    expectation = EVENT_FILE_EXPECTATIONS.get(name)
    assert expectation is not None, (
        f"events/{name} has no entry in EVENT_FILE_EXPECTATIONS "
        "(tests/unit/handlers/test_events.py): "
        "add one naming the function that takes it and checking the answer docs/reference.md's "
        '"Events the functions take" documents'
    )
    return expectation


@pytest.mark.dynamodb_local
@pytest.mark.parametrize("name", EVENT_FILES)
def test_every_event_file_gives_its_documented_answer(
    name: str, aws: Aws, invoke_ticker: Invoke, invoke_recorder: Invoke
) -> None:
    expectation = _expectation(name)
    expectation.before(aws, invoke_ticker)
    event = load_event(name)
    handler = invoke_ticker if expectation.function == "ticker" else invoke_recorder
    answer = handler(event)
    assert answer.get("status") != "rejected", answer
    expectation.check(answer, aws, event)


def _documented_event_table() -> dict[str, str]:
    """docs/reference.md's "Events the functions take": each file named in a row, and its
    function."""
    text = section("docs/reference.md", "Events the functions take")
    table: dict[str, str] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 2:
            for file_name in re.findall(r"`([\w.-]+\.json)`", cells[0]):
                table[file_name] = cells[1]
    return table


def test_the_docs_document_every_event_file_with_its_function() -> None:
    assert _documented_event_table() == {name: _expectation(name).function for name in EVENT_FILES}


def test_every_expectation_names_a_file_in_events() -> None:
    assert sorted(EVENT_FILE_EXPECTATIONS) == [
        name for name in EVENT_FILES if name in EVENT_FILE_EXPECTATIONS
    ]


# -- the environment event: a known name, or forced with a reason (issue 15) ----------------------


@pytest.mark.dynamodb_local
@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            {"active": "DRR"},
            "environment.active 'DRR' is not a known environment (known: prod, DR)",
        ),
        ({"active": "DRR", "force": True}, "a forced change needs a reason"),
        ({"active": "DR", "reason": "why"}, 'environment.reason goes with "force": true'),
        ({"active": "DR", "forced": True}, 'environment takes "active", "operator", and "force"'),
    ],
)
def test_the_environment_event_takes_a_known_name_only(
    aws: Aws, invoke_ticker: Invoke, change: dict[str, Any], error: str
) -> None:
    answer = invoke_ticker({"environment": {**change, "operator": "jane.doe"}})
    assert answer["status"] == "rejected" and answer["error"].startswith(error), answer
    with pytest.raises(aws.ssm.exceptions.ParameterNotFound):
        aws.ssm.get_parameter(Name="/mini-scheduler/active-environment")


@pytest.mark.dynamodb_local
def test_a_forced_environment_event_writes_and_says_no_stack_has_the_name(
    aws: Aws, invoke_ticker: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KNOWN_ENVIRONMENTS", "prod,DR,DR2")  # the template's KnownEnvironments
    change = {"active": "DR2", "operator": "jane.doe"}
    assert invoke_ticker({"environment": change})["mode"] == "standby"  # a known name
    change = {"active": "maint", "operator": "jane.doe", "force": True, "reason": "migration"}
    answer = invoke_ticker({"environment": change})
    assert (answer["active"], answer["forced"], answer["reason"]) == ("maint", True, "migration")
    assert answer["warning"].startswith("maint is not a known environment (prod, DR, DR2: ")
    stored = aws.ssm.get_parameter(Name="/mini-scheduler/active-environment")["Parameter"]
    assert stored["Value"] == "maint"
    assert invoke_ticker({"environment": {}})["warning"] == answer["warning"]
