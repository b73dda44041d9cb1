"""The sample targets the template deploys (samplecode/functions/): the report runs once per
firing, however often it is delivered; the heartbeat answers its firing."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.conftest import ROOT, load_event

FUNCTIONS = ROOT / "samplecode" / "functions"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"sample_{name}", FUNCTIONS / name / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Context:
    function_name = "mini-scheduler-sample-report"
    function_version = "$LATEST"
    invoked_function_arn = (
        "arn:aws:lambda:us-east-1:123456789012:function:mini-scheduler-sample-report"
    )
    memory_limit_in_mb = 256
    aws_request_id = "test-request"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@pytest.fixture
def report(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, list[str]]]:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_LAMBDA_FUNCTION_NAME": _Context.function_name,
        "IDEMPOTENCY_TABLE": "idempotency",
        "POWERTOOLS_SERVICE_NAME": "sample-report",
    }.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "POWERTOOLS_IDEMPOTENCY_DISABLED"):
        monkeypatch.delenv(key, raising=False)
    with mock_aws():
        # As the template's IdempotencyTable: Powertools' default key and expiry attributes.
        boto3.client("dynamodb").create_table(
            TableName="idempotency",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        )
        module = _load("report")
        runs: list[str] = []
        work = module.report

        def counted(event: dict[str, Any]) -> dict[str, Any]:
            runs.append(event["firingId"])
            answer: dict[str, Any] = work(event)
            return answer

        monkeypatch.setattr(module, "report", counted)
        yield module, runs


def test_the_report_runs_once_per_firing(report: tuple[ModuleType, list[str]]) -> None:
    module, runs = report
    event = load_event("lambda-destination-success.json")["requestPayload"]
    first = module.handler(event, _Context())
    again = module.handler(dict(event), _Context())  # a second delivery of the same firing
    assert runs == [event["firingId"]]
    assert (
        again
        == first
        == {
            "job": "morning-report",
            "firingId": "morning-report@2026-11-30T14:00:00Z",
            "region": "east",
            "recipients": 0,
        }
    )
    manual = {**event, "firingId": "morning-report@manual-2026-11-30T14:03:07.123Z-0a1b2c3d"}
    module.handler(manual, _Context())
    assert runs == [event["firingId"], manual["firingId"]]


def test_the_report_refuses_an_event_without_a_firing_id(
    report: tuple[ModuleType, list[str]],
) -> None:
    module, runs = report
    from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyKeyError

    with pytest.raises(IdempotencyKeyError):
        module.handler({"job": "morning-report"}, _Context())
    assert runs == []


def test_the_heartbeat_answers_its_firing() -> None:
    module = _load("heartbeat")
    event = {"job": "heartbeat", "firingId": "heartbeat@2026-11-30T14:15:15Z", "origin": "x"}
    assert module.handler(event, None) == {
        "ok": True,
        "job": "heartbeat",
        "firingId": "heartbeat@2026-11-30T14:15:15Z",
    }
