"""Job parameters are bounded so that a dispatch fits its target: an asynchronous Lambda invoke
(1 MB), a Step Functions input (256 KiB), and the 400 KB DynamoDB items that record the run and
the job's state. Too large is a clear error when cron.yaml loads
(tests/unit/jobs/test_parameters.py) and for a manual run's overrides (here, end to end: the
merged parameters are what counts).

Here too: the reserve kept beside the parameters holds the largest envelope the scheduler can
build (a 64-character job, a manual firing id, a 128-character operator, the longest origin),
so parameters at their limit, in any script, still fit the carrier, measured in UTF-8 bytes as
the dispatchers send them; and at the limit, DynamoDB Local (which enforces the real 400 KB item
size) stores both records. What DynamoDB cannot store inside that size (numbers past its range,
empty keys, 32 levels) is tests/system/fuzz/test_found_crashes.py's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_scheduler.jobs import (
    DISPATCH_RESERVE,
    LAMBDA_ASYNC_PAYLOAD_LIMIT,
    STEP_FUNCTIONS_INPUT_LIMIT,
    parameters_limit,
)
from mini_scheduler.model import Firing, payload
from tests.system.fuzz.conftest import Judge
from tests.system.integration.conftest import Aws

Invoke = Callable[[Any], dict[str, Any]]
CARRIER = {"lambda": LAMBDA_ASYNC_PAYLOAD_LIMIT, "flow": STEP_FUNCTIONS_INPUT_LIMIT}
JOB_PARAMETERS: dict[str, dict[str, Any]] = {
    "morning-report": {"region": "east", "recipients": ["ops@example.com"]},  # a Lambda target
    "hourly-cleanup": {"olderThanDays": 30},  # a flow
}
KIND = {"morning-report": "lambda", "hourly-cleanup": "flow"}


def _size(value: Any) -> int:
    """Bytes as the dispatchers send it: compact JSON, UTF-8, not ASCII-escaped."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _filled(base: dict[str, Any], size: int, char: str = "x") -> dict[str, Any]:
    """``base`` with a "blob" parameter that brings its JSON to exactly ``size`` bytes."""
    room = size - _size({**base, "blob": ""})
    width = _size(char) - 2  # as JSON writes it: '"' and '\\' take two bytes
    filled = {**base, "blob": char * (room // width) + "x" * (room % width)}
    assert _size(filled) == size
    return filled


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(["lambda", "flow"]),
    char=st.sampled_from(["x", "\u00e9", "\u20ac", "\U0001f600", '"', "\\", "\n"]),
    manual=st.booleans(),
)
def test_parameters_at_their_limit_fit_the_carrier_with_the_largest_envelope(
    kind: str, char: str, manual: bool
) -> None:
    at = datetime(2999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)
    job = "j" * 64
    operator = "o" * 128 if manual else None
    origin = "ap-southeast-7/" + "E" * 64
    parameters = _filled({}, parameters_limit(kind), char)  # type: ignore[arg-type]
    firing = Firing(job, at, manual, "0123abcd" if manual else "", operator, parameters)
    body = payload(firing, parameters, origin)
    envelope = _size(body) - _size(parameters)
    assert envelope < DISPATCH_RESERVE, f"the envelope takes {envelope} bytes"
    assert _size(body) <= CARRIER[kind]


@pytest.mark.dynamodb_local
@pytest.mark.parametrize("job", JOB_PARAMETERS)
def test_a_manual_run_one_byte_over_the_limit_is_rejected_and_writes_nothing(
    aws: Aws, invoke_ticker: Invoke, job: str
) -> None:
    limit = parameters_limit(KIND[job])  # type: ignore[arg-type]
    over = _filled(JOB_PARAMETERS[job], limit + 1)
    overrides = {"blob": over["blob"]}  # merged over the job's own parameters
    answer = Judge(aws)(
        invoke_ticker, {"job": job, "operator": "jane.doe", "parameters": overrides}
    )
    assert answer["status"] == "rejected"
    assert answer["error"].startswith(f"parameters for {job}: parameters take {limit + 1} bytes")
    assert str(limit) in answer["error"]


@pytest.mark.dynamodb_local
@pytest.mark.parametrize("job", JOB_PARAMETERS)
@pytest.mark.parametrize("char", ["x", "\U0001f600"])
def test_a_manual_run_at_the_limit_is_dispatched_and_recorded(
    aws: Aws, invoke_ticker: Invoke, job: str, char: str
) -> None:
    """DynamoDB Local stores the run (with the parameters) and the job's state at 400 KB; the
    execution input Step Functions received fits its 256 KiB."""
    limit = parameters_limit(KIND[job])  # type: ignore[arg-type]
    overrides = {"blob": _filled(JOB_PARAMETERS[job], limit, char)["blob"]}
    answer = Judge(aws)(invoke_ticker, {"job": job, "operator": "o" * 128, "parameters": overrides})
    assert answer["status"] == "DISPATCHED", answer.get("error")
    run = aws.store().run(answer["firingId"])
    assert run is not None and _size(run.parameters) == limit
    state = aws.store().job_state(job)
    assert state is not None and state.parameters["blob"] == overrides["blob"]
    if KIND[job] == "flow":
        (execution,) = aws.sfn.list_executions(stateMachineArn=aws.flow_arn)["executions"]
        sent = aws.sfn.describe_execution(executionArn=execution["executionArn"])["input"]
        assert len(sent.encode()) <= STEP_FUNCTIONS_INPUT_LIMIT
        assert json.loads(sent)["parameters"] == {**JOB_PARAMETERS[job], **overrides}
