"""AWS for the operator commands: moto, in two regions, each with a state table, a ticker
function, the sample targets and a stack whose outputs name them."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from tests.fakeaws import create_targets, make_role, use_test_credentials

TABLE = "mini-scheduler-state"
TICKER = "mini-scheduler-ticker"
STACK = "mini-scheduler"
PARAMETER = "/mini-scheduler/active-environment"
REGIONS = ("us-east-1", "us-west-2")
ENVIRONMENTS = {"us-east-1": "prod", "us-west-2": "DR"}
FUNCTIONS = ("mini-scheduler-sample-report", "mini-scheduler-sample-heartbeat")
FLOW = "mini-scheduler-sample-cleanup"


def stack_template(outputs: dict[str, str]) -> str:
    return json.dumps(
        {
            "Resources": {"Handle": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {key: {"Value": value} for key, value in outputs.items()},
        }
    )


@functools.cache
def client(service: str, region: str = "us-east-1") -> Any:
    """A client made once for the whole run (making one is slow; moto answers whichever mock
    is active)."""
    return _session().client(service, region_name=region)  # type: ignore[call-overload]


@functools.cache
def _session() -> boto3.session.Session:
    return boto3.session.Session()


@dataclass
class Aws:
    def client(self, service: str, region: str = "us-east-1") -> Any:
        return client(service, region)

    def store(self, region: str = "us-east-1") -> DynamoDBClaimStore:
        # moto's PartiQL ignores conditions: one request a write (claims/dynamodb_batch.py)
        return DynamoDBClaimStore(TABLE, self.client("dynamodb", region), batched=False)

    def items(self, region: str = "us-east-1") -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.client("dynamodb", region).scan(TableName=TABLE)["Items"]
        return items

    def active(self, region: str, parameter: str = PARAMETER) -> str:
        answer = self.client("ssm", region).get_parameter(Name=parameter)
        return str(answer["Parameter"]["Value"])


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    use_test_credentials(monkeypatch)
    monkeypatch.delenv("AWS_REGION")  # each client names its region
    monkeypatch.setenv("STATE_TABLE_BATCH_WRITES", "false")  # as Aws.store, for moto
    with mock_aws(config={"lambda": {"use_docker": False}}):
        role = make_role(client("iam"))
        for region in REGIONS:
            create_state_table(client("dynamodb", region), TABLE)
            create_targets(
                client("lambda", region),
                client("stepfunctions", region),
                role,
                (TICKER, *FUNCTIONS),
                FLOW,
            )
            client("cloudformation", region).create_stack(
                StackName=STACK,
                TemplateBody=stack_template(
                    {
                        "StateTableName": TABLE,
                        "TickerFunctionName": TICKER,
                        "ActiveEnvironmentParameter": PARAMETER,
                        "EnvironmentName": ENVIRONMENTS[region],
                    }
                ),
            )
        yield Aws()
