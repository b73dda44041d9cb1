"""A flow's status event that left its input out (issue 11, item 3): a run must close whether or
not Step Functions put the input in the event, whatever the length of the job's name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import JobStart
from mini_scheduler.clock import FixedClock
from mini_scheduler.dispatch.stepfunctions import ExecutionInputs
from mini_scheduler.errors import EventError, StoreError
from mini_scheduler.handlers.events.recorder import completion_from_event
from mini_scheduler.handlers.recorder import record_event
from mini_scheduler.model import Firing, RunStatus, execution_name, payload
from mini_scheduler.recorder import Recorder
from tests.conftest import load_event
from tests.fakeaws import PASS_FLOW, make_role, use_test_credentials

T0 = datetime(2026, 11, 30, 14, 15, tzinfo=UTC)
LONG_JOB = "nightly-warehouse-reconciliation-for-every-region-and-business-u"  # 64 characters
ORIGIN = "us-east-1/prod"


def _firings() -> list[Firing]:
    return [
        Firing(LONG_JOB, T0),
        Firing.manual_run(LONG_JOB, T0, "jane.doe", {}, nonce="0a1b2c3d"),
        # 46 characters: the longest a manual run's name keeps whole is 39
        Firing.manual_run(LONG_JOB[:46], T0, "jane.doe", {}, nonce="0a1b2c3d"),
    ]


@pytest.mark.parametrize("firing", _firings(), ids=["scheduled", "manual", "manual-46"])
def test_a_cut_name_keeps_the_instant_and_never_reads_as_a_firing(firing: Firing) -> None:
    name = execution_name(firing.id)
    assert len(firing.id) > 80 and len(name) == 80
    job, _, rest = name.partition("..@")
    assert LONG_JOB.startswith(job) and len(job) >= 20
    assert rest.startswith(firing.id.partition("@")[2].replace(":", "-"))
    event = load_event("sfn-status-succeeded.json")
    event["detail"].update(name=name, input=None, inputDetails={"included": False})
    with pytest.raises(EventError, match="has no firingId"):
        completion_from_event(event)  # a cut name is never taken for a firing id


def test_two_long_jobs_that_share_their_start_get_two_names() -> None:
    names = {execution_name(Firing(LONG_JOB[:-1] + end, T0).id) for end in "ab"}
    assert len(names) == 2


@pytest.fixture
def sfn(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        yield boto3.client("stepfunctions", region_name="us-east-1")


def _start(sfn: Any, firing: Firing) -> str:
    """The firing's execution, started as the ticker starts it: its ARN."""
    machine = sfn.create_state_machine(
        name="mini-scheduler-reconcile",
        definition=PASS_FLOW,
        roleArn=make_role(boto3.client("iam")),
    )["stateMachineArn"]
    body = json.dumps(payload(firing, {}, ORIGIN), separators=(",", ":"))
    started = sfn.start_execution(
        stateMachineArn=machine, name=execution_name(firing.id), input=body
    )
    arn: str = started["executionArn"]
    return arn


def _dispatched(firing: Firing) -> MemoryClaimStore:
    store = MemoryClaimStore()
    store.claim(firing, now=T0, lease_until=T0 + timedelta(seconds=120), origin=ORIGIN)
    store.mark_dispatched(
        firing,
        now=T0,
        deadline=T0 + timedelta(hours=1),
        start=JobStart(f"flow://{LONG_JOB}", "0 15 * * * ? @UTC", {}),
    )
    return store


def _input_left_out(arn: str, name: str, status: str = "SUCCEEDED") -> dict[str, Any]:
    event = load_event("sfn-status-succeeded.json")
    event["resources"] = [arn]
    event["detail"].update(
        executionArn=arn,
        name=name,
        status=status,
        input=None,
        inputDetails={"included": False},
    )
    return event


@pytest.mark.parametrize("firing", _firings()[:2], ids=["scheduled", "manual"])
def test_without_its_input_a_cut_name_s_run_closes_from_the_execution(
    sfn: Any, firing: Firing
) -> None:
    arn = _start(sfn, firing)
    store = _dispatched(firing)
    recorder, inputs = Recorder(store, FixedClock(T0)), ExecutionInputs(lambda: sfn)
    answer = record_event(recorder, _input_left_out(arn, execution_name(firing.id)), inputs)
    assert answer["recorded"] is True and answer["firingId"] == firing.id
    run = store.run(firing.id)
    assert run is not None and run.status is RunStatus.SUCCEEDED


def test_a_decodable_name_or_an_included_input_needs_no_lookup() -> None:
    def never(arn: str) -> str:
        raise AssertionError(f"DescribeExecution {arn} called")

    short = Firing("hourly-cleanup", T0)
    event = _input_left_out("arn:x", execution_name(short.id))
    assert completion_from_event(event, never).firing_id == short.id  # type: ignore[union-attr]
    included = load_event("sfn-status-succeeded.json")
    included["detail"]["name"] = execution_name(Firing(LONG_JOB, T0).id)
    done = completion_from_event(included, never)
    assert done is not None and done.firing_id == "hourly-cleanup@2026-11-30T14:15:00Z"


def test_an_execution_step_functions_does_not_know_is_rejected_and_nothing_written(
    sfn: Any,
) -> None:
    firing = Firing(LONG_JOB, T0)
    store = _dispatched(firing)
    recorder, inputs = Recorder(store, FixedClock(T0)), ExecutionInputs(lambda: sfn)
    arn = f"arn:aws:states:us-east-1:123456789012:execution:mini-scheduler-x:{'n' * 70}"
    with pytest.raises(EventError, match=r"DescribeExecution .*ExecutionDoesNotExist"):
        record_event(recorder, _input_left_out(arn, execution_name(firing.id)), inputs)
    assert store.run(firing.id).status is RunStatus.DISPATCHED  # type: ignore[union-attr]


@pytest.mark.parametrize("arn", ["", "arn:aws:s3:::bucket/key", "x" * 3000, "arn:aws:states:"])
def test_an_execution_arn_that_is_not_one_is_refused_before_any_call(arn: str) -> None:
    def no_client() -> Any:
        raise AssertionError("a client was made")

    with pytest.raises(EventError, match="is not an execution's ARN"):
        ExecutionInputs(no_client)(arn)


class _Throttled:
    def describe_execution(self, **_: Any) -> dict[str, Any]:
        raise ClientError(
            {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}},
            "DescribeExecution",
        )


def test_when_step_functions_cannot_answer_the_recorder_fails_for_a_retry() -> None:
    """Not an EventError (which would drop the event): Lambda retries the invocation, then
    sends the event to the dead-letter queue."""
    firing = Firing(LONG_JOB, T0)
    store = _dispatched(firing)
    recorder, inputs = Recorder(store, FixedClock(T0)), ExecutionInputs(lambda: _Throttled())
    arn = f"arn:aws:states:us-east-1:123456789012:execution:mini-scheduler-x:{'n' * 70}"
    with pytest.raises(StoreError, match=r"DescribeExecution .* failed - ThrottlingException"):
        record_event(recorder, _input_left_out(arn, execution_name(firing.id)), inputs)
    assert store.run(firing.id).status is RunStatus.DISPATCHED  # type: ignore[union-attr]
