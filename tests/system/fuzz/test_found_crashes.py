"""Regression tests for the crashes the fuzz tests found, one test each (its cases in turn).

Each crashed a handler or the loader before its fix: an instant past datetime's range, a bad
Step Functions stopDate, a responseContext that is not an object, a firing id whose job part is
not a job name, a zone name the file system refuses, and parameters valid as JSON that DynamoDB
cannot store.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from mini_scheduler.cron import parse
from mini_scheduler.errors import UnknownTimeZoneError
from mini_scheduler.jobs import load
from tests.conftest import load_event
from tests.system.fuzz.conftest import Judge
from tests.unit.jobs.helpers import errors

Invoke = Callable[[Any], dict[str, Any]]


def _rejected(answer: dict[str, Any]) -> None:
    assert answer.get("status") == "rejected" and answer.get("error"), answer


def _fresh_run(judge: Judge, invoke_ticker: Invoke, job: str) -> str:
    """A run the recorder has not closed yet: a manual run's firing id."""
    answer = judge(invoke_ticker, {"job": job, "operator": "jane.doe"})
    assert answer["status"] == "DISPATCHED", answer
    firing_id: str = answer["firingId"]
    return firing_id


@pytest.mark.dynamodb_local
def test_a_tick_at_an_instant_past_datetime_s_range_is_rejected(
    judge: Judge, invoke_ticker: Invoke, invoke_recorder: Invoke
) -> None:
    for event in (
        {"tick": "9999-12-31T23:59:59-01:00"},
        {"tick": "0001-01-01T00:00:00+01:00"},
        {"detail-type": "Scheduled Event", "time": "9999-12-31T23:59:59-01:00"},
    ):
        _rejected(judge(invoke_ticker, event))
    # a completion whose own timestamp cannot be read closes the run now
    completion = load_event("lambda-destination-success.json")
    completion["requestPayload"]["firingId"] = _fresh_run(judge, invoke_ticker, "morning-report")
    completion["timestamp"] = "9999-12-31T23:59:59-01:00"
    answer = judge(invoke_recorder, completion)
    assert answer["recorded"] is True and answer["status"] == "SUCCEEDED"


@pytest.mark.dynamodb_local
def test_a_tick_whose_window_ends_past_datetime_s_range_is_rejected(
    judge: Judge, invoke_ticker: Invoke
) -> None:
    for event in (
        {"tick": "9999-12-31T23:59:00Z"},
        {"detail-type": "Scheduled Event", "time": "9999-12-31T23:59:30Z"},
    ):
        _rejected(judge(invoke_ticker, event))


@pytest.mark.dynamodb_local
def test_a_step_functions_stop_date_out_of_range_falls_back_to_the_event_time(
    judge: Judge, invoke_ticker: Invoke, invoke_recorder: Invoke
) -> None:
    for stop in (1e300, -(10**17), float("nan"), float("inf"), True):
        event = load_event("sfn-status-succeeded.json")
        body = json.loads(event["detail"]["input"])
        body["firingId"] = _fresh_run(judge, invoke_ticker, "hourly-cleanup")
        event["detail"]["input"] = json.dumps(body)
        event["detail"]["stopDate"] = stop
        answer = judge(invoke_recorder, event)
        assert answer["recorded"] is True and answer["endedAt"] == event["time"], (stop, answer)


@pytest.mark.dynamodb_local
def test_a_response_context_that_is_not_an_object_is_no_function_error(
    judge: Judge, invoke_ticker: Invoke, invoke_recorder: Invoke
) -> None:
    for context in ("x", ["functionError"], 5):
        event = load_event("lambda-destination-success.json")
        event["requestPayload"]["firingId"] = _fresh_run(judge, invoke_ticker, "morning-report")
        event["responseContext"] = context
        answer = judge(invoke_recorder, event)
        assert answer["recorded"] is True and answer["status"] == "SUCCEEDED", (context, answer)


@pytest.mark.dynamodb_local
def test_a_firing_id_whose_job_is_not_a_job_name_is_rejected(
    judge: Judge, invoke_recorder: Invoke
) -> None:
    for firing_id in (
        "x" * 3000 + "@2026-11-30T14:00:00Z",
        "\ud800@2026-11-30T14:00:00Z",
        "morning report@2026-11-30T14:00:00Z",
        "a" * 65 + "@2026-11-30T14:00:00Z",
    ):
        event = load_event("lambda-destination-success.json")
        event["requestPayload"]["firingId"] = firing_id
        answer = judge(invoke_recorder, event)
        _rejected(answer)
        assert len(answer["error"]) < 500, "the error echoes at most a bounded part of the id"


def test_a_time_zone_name_too_long_for_the_file_system_skips_only_its_entry() -> None:
    zone = "x" * 300
    text = (
        "jobs:\n"
        f"  - {{name: a, cron: '0 0 9 * * ?', service: fn, timezone: {zone}}}\n"
        "  - {name: b, cron: '0 0 9 * * ?', service: fn}\n"
    )
    cron_file = load(text)
    assert [job.name for job in cron_file.jobs] == ["b"]
    (error,) = errors(cron_file)
    assert "unknown time zone" in error
    with pytest.raises(UnknownTimeZoneError):
        parse("0 0 9 * * ?").next_after(datetime(2026, 1, 1, tzinfo=UTC), zone)


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


DYNAMODB_CANNOT_STORE = {
    "a number past DynamoDB's range": {"n": 1e300},
    "a number DynamoDB underflows": {"n": 1e-300},
    "an integer of 41 digits": {"n": 10**40},
    "an empty key": {"": 1},
    "an empty key deeper down": {"n": {"": 1}},
    "31 levels of lists": {"d": _nested(31)},
    "an item over 400 KB in DynamoDB, 390 KB as JSON": {"l": [[] for _ in range(130_000)]},
}


def test_a_parameter_dynamodb_cannot_store_makes_the_entry_invalid() -> None:
    for value in ("1.0e+300", "1.0e+126", "100000000000000000000000000000000000000001", "{'': 1}"):
        cron_file = load(
            "jobs:\n"
            f"  - {{name: a, cron: '0 0 9 * * ?', service: fn, parameters: {{n: {value}}}}}\n"
            "  - {name: b, cron: '0 0 9 * * ?', service: fn, parameters: {n: 1.5}}\n"
        )
        assert [job.name for job in cron_file.jobs] == ["b"], value
        assert errors(cron_file)[0].startswith("Invalid job entry#1 (a) - "), value


@pytest.mark.dynamodb_local
def test_a_manual_run_with_parameters_dynamodb_cannot_store_is_rejected(
    judge: Judge, invoke_ticker: Invoke
) -> None:
    for name, parameters in DYNAMODB_CANNOT_STORE.items():
        event = {"job": "morning-report", "operator": "jane.doe", "parameters": parameters}
        answer = judge(invoke_ticker, event)
        assert answer.get("status") == "rejected" and answer.get("error"), (name, answer)


@pytest.mark.dynamodb_local
def test_a_firing_whose_parameters_dynamodb_cannot_store_is_not_dispatched_again_and_again(
    aws: Any, invoke_ticker: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The symptom: the firing was dispatched, recording it failed, and every lease the sweep
    took it over and dispatched it again."""
    from mini_scheduler.dispatch.base import Dispatchers

    dispatched: list[str] = []
    original = Dispatchers.dispatch

    def counting(self: Dispatchers, target: Any, firing_id: str, payload: Any) -> str:
        dispatched.append(firing_id)
        return original(self, target, firing_id, payload)

    monkeypatch.setattr(Dispatchers, "dispatch", counting)
    aws.cron_path.write_text(
        "jobs:\n  - {name: big, cron: '0 0 * * * ?', service: mini-scheduler-sample-heartbeat,"
        " parameters: {n: 1.0e+300}}\n"
    )
    invoke_ticker({"tick": "2026-11-30T13:59:00Z"})
    for minute in range(8):
        aws.clock.set(aws.clock.now().replace(hour=14, minute=minute, second=30))
        invoke_ticker({"tick": f"2026-11-30T14:{minute:02d}:00Z"})
    assert len(dispatched) <= 1, dispatched
