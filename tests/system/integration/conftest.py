"""AWS for integration tests: moto for SSM, S3, Lambda and Step Functions; AWS's own DynamoDB
Local for the state table (claims need a real engine: moto's conditional writes are not atomic).
The code under test reaches both through the standard variables (AWS_ENDPOINT_URL_DYNAMODB)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto import mock_aws

from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.clock import FixedClock
from mini_scheduler.handlers import recorder as recorder_handler
from mini_scheduler.handlers import ticker as ticker_handler
from tests.conftest import ROOT
from tests.fakeaws import create_targets, make_role, use_test_credentials

SAMPLE_CRON = ROOT / "samplecode" / "cron.yaml"
FUNCTIONS = ("mini-scheduler-sample-report", "mini-scheduler-sample-heartbeat")
FLOW = "mini-scheduler-sample-cleanup"
ACCOUNT = "123456789012"


@dataclass
class Aws:
    table: str
    clock: FixedClock
    dynamodb: Any
    ssm: Any
    sfn: Any
    s3: Any
    cron_path: Path
    flow_arn: str

    def store(self) -> DynamoDBClaimStore:
        return DynamoDBClaimStore(self.table, self.dynamodb)

    def item_count(self) -> int:
        return int(self.dynamodb.scan(TableName=self.table, Select="COUNT")["Count"])


class _Context:
    invoked_function_arn = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:mini-scheduler-ticker"
    function_name = "mini-scheduler-ticker"
    function_version = "$LATEST"
    memory_limit_in_mb = 512
    aws_request_id = "test-request"

    def get_remaining_time_in_millis(self) -> int:
        return 120_000


CONTEXT = _Context()


@pytest.fixture
def aws(
    monkeypatch: pytest.MonkeyPatch, dynamodb_local_endpoint: str, tmp_path: Path
) -> Iterator[Aws]:
    use_test_credentials(monkeypatch, dynamodb=dynamodb_local_endpoint)
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "MiniSchedulerTest")
    table = f"mini-scheduler-{uuid.uuid4().hex[:12]}"
    cron_path = tmp_path / "cron.yaml"
    cron_path.write_text(SAMPLE_CRON.read_text())
    with mock_aws(config={"lambda": {"use_docker": False}}):
        dynamodb = boto3.client("dynamodb", config=Config(max_pool_connections=64))
        create_state_table(dynamodb, table)
        sfn = boto3.client("stepfunctions")
        role = make_role(boto3.client("iam"))
        flow_arn = create_targets(boto3.client("lambda"), sfn, role, FUNCTIONS, FLOW)
        assert flow_arn is not None
        monkeypatch.setenv("STATE_TABLE", table)
        monkeypatch.setenv("CRON_FILE", f"file:{cron_path}")
        monkeypatch.setenv("ENVIRONMENT_NAME", "prod")
        monkeypatch.delenv("ACTIVE_ENVIRONMENT_STORE", raising=False)
        clock = FixedClock(datetime.fromisoformat("2026-11-30T13:59:00+00:00"))
        monkeypatch.setattr(ticker_handler, "CLOCK", clock)
        monkeypatch.setattr(recorder_handler, "CLOCK", clock)
        ticker_handler.reset()
        recorder_handler.reset()
        try:
            yield Aws(
                table,
                clock,
                dynamodb,
                boto3.client("ssm"),
                sfn,
                boto3.client("s3"),
                cron_path,
                flow_arn,
            )
        finally:
            ticker_handler.reset()
            recorder_handler.reset()


@pytest.fixture
def invoke_ticker(aws: Aws) -> Callable[[Any], dict[str, Any]]:
    def call(event: Any) -> dict[str, Any]:
        answer: dict[str, Any] = ticker_handler.handler(event, CONTEXT)
        return answer

    return call


@pytest.fixture
def invoke_recorder(aws: Aws) -> Callable[[Any], dict[str, Any]]:
    def call(event: Any) -> dict[str, Any]:
        answer: dict[str, Any] = recorder_handler.handler(event, CONTEXT)
        return answer

    return call
