"""What every test on moto (and DynamoDB Local) sets up the same way: test credentials and no
route to a real account, stand-in code for Lambda functions, and the sample targets."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable
from typing import Any

import pytest

_CLEARED = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ACCOUNT_ID",
    "AWS_MAX_ATTEMPTS",
    "AWS_RETRY_MODE",
)


def use_test_credentials(
    monkeypatch: pytest.MonkeyPatch, region: str = "us-east-1", *, dynamodb: str | None = None
) -> None:
    """moto's test credentials and ``region``, no profile, no endpoint but DynamoDB Local's
    (``dynamodb``, when given): nothing a test does can reach a real account."""
    for key in _CLEARED:
        monkeypatch.delenv(key, raising=False)
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
    }.items():
        monkeypatch.setenv(key, value)
    if dynamodb is not None:
        monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb)


def handler_zip() -> bytes:
    """A Lambda function's code that answers its event (moto stores it, never runs it)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


PASS_FLOW = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


def create_targets(
    lambda_client: Any,
    sfn_client: Any,
    role_arn: str,
    functions: Iterable[str],
    flow: str | None = None,
    runtime: str = "python3.13",
) -> str | None:
    """The functions and (with ``flow``) a one-state flow, inside mock_aws: the flow's ARN."""
    for name in functions:
        lambda_client.create_function(
            FunctionName=name,
            Runtime=runtime,
            Role=role_arn,
            Handler="app.handler",
            Code={"ZipFile": handler_zip()},
        )
    if flow is None:
        return None
    arn: str = sfn_client.create_state_machine(name=flow, roleArn=role_arn, definition=PASS_FLOW)[
        "stateMachineArn"
    ]
    return arn


def make_role(iam_client: Any, name: str = "mini-scheduler-test") -> str:
    """An IAM role for moto's functions and flows (moto checks that one exists)."""
    arn: str = iam_client.create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    return arn
