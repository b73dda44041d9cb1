"""The recorder's "ECS Task State Change" events (events/ecs-task-*.json, built on AWS's
documented example): a STOPPED task the ticker started closes its run, SUCCEEDED when its
containers exited 0, else FAILED with the stop code, the reason and each container's end; any
other ECS event is not the end of a run."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from mini_scheduler.dispatch.ecs import FIRING_VARIABLE, started_by
from mini_scheduler.errors import EventError
from mini_scheduler.handlers.events.recorder import completion_from_event, queued_messages
from mini_scheduler.model import RunStatus
from mini_scheduler.recorder import Completion
from tests.conftest import load_event

FIRING = "nightly-export@2026-11-30T14:00:00Z"


def stopped(name: str = "ecs-task-stopped.json") -> dict[str, Any]:
    return copy.deepcopy(load_event(name))


def closed(event: dict[str, Any]) -> Completion:
    done = completion_from_event(event)
    assert isinstance(done, Completion), done
    return done


def test_the_samples_were_started_for_their_firing() -> None:
    for name in ("ecs-task-stopped.json", "ecs-task-failed.json"):
        assert stopped(name)["detail"]["startedBy"] == started_by(FIRING)


def test_a_task_whose_containers_exited_0_closes_its_run_succeeded() -> None:
    done = closed(stopped())
    assert (done.firing_id, done.status, done.error, done.source) == (
        FIRING,
        RunStatus.SUCCEEDED,
        None,
        "ecs",
    )
    assert done.ended_at == datetime(2026, 11, 30, 14, 3, 20, 512000, tzinfo=UTC)  # stoppedAt


def test_a_container_that_exited_1_fails_the_run_with_the_task_s_story() -> None:
    done = closed(stopped("ecs-task-failed.json"))
    assert done.status is RunStatus.FAILED
    assert done.error == (
        "EssentialContainerExited: Essential container in task exited; export exit 1"
    )


def test_a_task_that_never_started_failed() -> None:
    event = stopped()
    detail = event["detail"]
    detail["stopCode"] = "TaskFailedToStart"
    detail["stoppedReason"] = (
        "CannotPullContainerError: pull image manifest has been retried 5 times"
    )
    for container in detail["containers"]:
        del container["exitCode"]
    done = closed(event)
    assert done.status is RunStatus.FAILED
    assert done.error == (
        "TaskFailedToStart: CannotPullContainerError: pull image manifest has been retried 5 times"
    )


def test_the_jobs_container_decides_and_a_sidecars_end_does_not() -> None:
    """The container given the firing (the job's) exited 0: a sidecar stopped with the task
    (an exit 143, or no exit code and a reason) does not fail the run."""
    event = stopped()
    sidecar = {"name": "log-router", "lastStatus": "STOPPED", "reason": "OutOfMemoryError"}
    event["detail"]["containers"].append(sidecar)
    event["detail"]["containers"].append({"name": "envoy", "exitCode": 143})
    assert closed(event).status is RunStatus.SUCCEEDED


def test_a_container_that_stopped_with_a_reason_and_no_exit_code_fails_the_run() -> None:
    """Without the job's container named (no override: a task another build started), every
    container that says how it ended decides."""
    event = stopped()
    sidecar = {"name": "log-router", "lastStatus": "STOPPED", "reason": "OutOfMemoryError"}
    event["detail"]["containers"].append(sidecar)
    for override in event["detail"]["overrides"]["containerOverrides"]:
        override["name"] = "not-in-the-event"
    done = closed(event)
    assert done.status is RunStatus.FAILED and done.error is not None
    assert done.error.endswith("; export exit 0, log-router no exit code (OutOfMemoryError)")


def test_a_task_stopped_with_no_container_s_end_failed() -> None:
    event = stopped()
    detail = event["detail"]
    detail["stopCode"], detail["stoppedReason"] = "UserInitiated", "Task stopped by user"
    del detail["containers"][0]["exitCode"]
    assert closed(event).error == "UserInitiated: Task stopped by user"


def test_the_error_is_cut_to_500_characters() -> None:
    event = stopped("ecs-task-failed.json")
    event["detail"]["stoppedReason"] = "x" * 2000
    error = closed(event).error
    assert error is not None and len(error) == 500 and error.endswith("...")


def test_a_retry_s_task_closes_that_attempt() -> None:
    event = stopped()
    run_id = f"{FIRING}#2"
    event["detail"]["startedBy"] = started_by(run_id)
    variables = event["detail"]["overrides"]["containerOverrides"][0]["environment"]
    variables[0] = {"name": FIRING_VARIABLE, "value": run_id}
    assert closed(event).firing_id == run_id


@pytest.mark.parametrize("status", ["PROVISIONING", "PENDING", "RUNNING", "DEPROVISIONING"])
def test_a_task_not_stopped_is_not_an_end(status: str) -> None:
    event = stopped()
    event["detail"]["lastStatus"] = status
    assert completion_from_event(event) is None


@pytest.mark.parametrize("started", ["ecs-svc/9223370545345641169", None, "events-rule/nightly"])
def test_a_task_the_ticker_did_not_start_is_not_an_end(started: str | None) -> None:
    event = stopped("ecs-task-failed.json")
    event["detail"]["startedBy"] = started
    assert completion_from_event(event) is None


def test_another_ecs_event_is_not_an_end() -> None:
    event = stopped()
    event["detail-type"] = "ECS Container Instance State Change"
    assert completion_from_event(event) is None


def test_a_task_of_ours_without_its_firing_is_refused() -> None:
    event = stopped()
    event["detail"]["overrides"] = {"containerOverrides": [{"name": "export"}]}
    with pytest.raises(EventError, match=r"ECS task arn:aws:ecs:.* has no firingId"):
        completion_from_event(event)


def test_a_task_of_ours_whose_firing_is_not_one_is_refused() -> None:
    event = stopped()
    variables = event["detail"]["overrides"]["containerOverrides"][0]["environment"]
    variables[0]["value"] = "not a firing"
    with pytest.raises(EventError, match="ECS task arn:aws:ecs:"):
        completion_from_event(event)


def test_an_ecs_event_comes_through_the_completion_queue() -> None:
    body = json.dumps(stopped())
    batch = {"Records": [{"eventSource": "aws:sqs", "messageId": "m-1", "body": body}]}
    (message,) = queued_messages(batch) or []
    assert closed(message.event).firing_id == FIRING
