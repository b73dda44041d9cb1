"""A flow's run stopped (``overlap: cancel_other``): StopExecution of the execution its dispatch
named after the firing, on moto's Step Functions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.dispatch.stepfunctions import StepFunctionsDispatcher
from mini_scheduler.jobs import Target
from tests.fakeaws import use_test_credentials

REGION, ACCOUNT = "us-east-1", "123456789012"
DEFINITION = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 600, "End": True}}}


@pytest.fixture
def sfn(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    use_test_credentials(monkeypatch, REGION)
    with mock_aws():
        client = boto3.client("stepfunctions", region_name=REGION)
        client.create_state_machine(
            name="etl",
            definition=json.dumps(DEFINITION),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/sfn",
        )
        yield client


def test_stop_stops_the_firing_s_execution_saying_why(sfn: Any) -> None:
    d = StepFunctionsDispatcher(sfn, region=REGION, account=ACCOUNT)
    target = Target("flow", "etl")
    started = d.dispatch(target, "etl@2026-11-30T14:00:00Z", {"job": "etl"})
    why = "cancelled by firing etl@2026-11-30T14:01:00Z (overlap: cancel_other)"
    assert d.stop(target, "etl@2026-11-30T14:00:00Z", why) == started
    described = sfn.describe_execution(executionArn=started)
    assert described["status"] == "ABORTED"


def test_stopping_an_execution_never_started_is_nothing_to_stop(sfn: Any) -> None:
    d = StepFunctionsDispatcher(sfn, region=REGION, account=ACCOUNT)
    answer = d.stop(Target("flow", "etl"), "etl@2026-11-30T13:00:00Z", "cancelled")
    assert answer.endswith("(not found: nothing to stop)")
