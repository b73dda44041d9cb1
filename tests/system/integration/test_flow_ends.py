"""Flow runs end to end (the handlers on moto's Step Functions and DynamoDB Local): a long job
name's run closes from a status event without its input; a completion after the sweep's
TIMED_OUT and a redrive are recorded (issue 11, items 3 to 5)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.model import RunStatus
from tests.conftest import load_event
from tests.system.integration.conftest import Aws

pytestmark = pytest.mark.dynamodb_local

Invoke = Callable[[Any], dict[str, Any]]
LONG_JOB = "nightly-warehouse-reconciliation-for-every-region-and-business-u"  # 64 characters


def _with_long_flow(aws: Aws, invoke_ticker: Invoke, *, timeout: int = 3600) -> None:
    """The sample cron file plus a flow job whose name is too long for its execution's name,
    started at 14:15 (the region's first tick at 14:14)."""
    entry = (
        f'  - name: "{LONG_JOB}"\n'
        '    cron: "0 15 * * * ?"\n'
        '    service: "flow://mini-scheduler-sample-cleanup"\n'
        f"    timeout: {timeout}\n\n"
    )
    text = aws.cron_path.read_text()
    aws.cron_path.write_text(
        text.replace('  - name: "heartbeat"', entry + '  - name: "heartbeat"', 1)
    )
    aws.clock.set(datetime(2026, 11, 30, 14, 14, tzinfo=UTC))
    invoke_ticker({"tick": "2026-11-30T14:14:00Z"})
    aws.clock.set(datetime(2026, 11, 30, 14, 15, tzinfo=UTC))
    answer = invoke_ticker({"tick": "2026-11-30T14:15:00Z"})
    assert answer["counts"]["dispatched"] >= 2, answer


def _status_without_input(aws: Aws, status: str = "SUCCEEDED") -> dict[str, Any]:
    """The status event of the long job's execution, its input left out."""
    (execution,) = [
        e
        for e in aws.sfn.list_executions(stateMachineArn=aws.flow_arn)["executions"]
        if e["name"].startswith(LONG_JOB[:20])
    ]
    assert len(execution["name"]) == 80 and "..@2026-11-30T14-15-00Z-" in execution["name"]
    event = load_event("sfn-status-succeeded.json")
    event["resources"] = [execution["executionArn"]]
    event["detail"].update(
        executionArn=execution["executionArn"],
        name=execution["name"],
        status=status,
        input=None,
        inputDetails={"included": False},
    )
    return event


def test_a_long_job_s_flow_closes_from_a_status_event_without_its_input(
    aws: Aws, invoke_ticker: Invoke, invoke_recorder: Invoke
) -> None:
    _with_long_flow(aws, invoke_ticker)
    answer = invoke_recorder(_status_without_input(aws))
    firing_id = f"{LONG_JOB}@2026-11-30T14:15:00Z"
    assert answer["recorded"] is True and answer["firingId"] == firing_id, answer
    run = aws.store().run(firing_id)
    assert run is not None and run.status is RunStatus.SUCCEEDED


def test_a_completion_after_the_sweep_keeps_the_real_end(
    aws: Aws, invoke_ticker: Invoke, invoke_recorder: Invoke
) -> None:
    _with_long_flow(aws, invoke_ticker, timeout=60)
    aws.clock.set(datetime(2026, 11, 30, 14, 17, tzinfo=UTC))
    swept = invoke_ticker({"tick": "2026-11-30T14:17:00Z"})
    assert swept["counts"]["timedOut"] >= 1, swept
    firing_id = f"{LONG_JOB}@2026-11-30T14:15:00Z"
    timed_out = aws.store().run(firing_id)
    assert timed_out is not None and timed_out.status is RunStatus.TIMED_OUT
    answer = invoke_recorder(_status_without_input(aws))
    assert answer["status"] == "SUCCEEDED" and answer["timedOutAt"] == "2026-11-30T14:17:00Z"
    run = aws.store().run(firing_id)
    assert run is not None and run.status is RunStatus.SUCCEEDED
    assert run.timed_out_at == datetime(2026, 11, 30, 14, 17, tzinfo=UTC)
    assert run.ended_at is not None and run.ended_at - run.timed_out_at < timedelta(minutes=1)


def test_a_redriven_flow_reopens_then_ends_succeeded(
    aws: Aws, invoke_ticker: Invoke, invoke_recorder: Invoke
) -> None:
    aws.clock.set(datetime(2026, 11, 30, 14, 14, tzinfo=UTC))
    invoke_ticker({"tick": "2026-11-30T14:14:00Z"})
    aws.clock.set(datetime(2026, 11, 30, 14, 15, tzinfo=UTC))
    invoke_ticker({"tick": "2026-11-30T14:15:00Z"})
    assert invoke_recorder(load_event("sfn-status-failed.json"))["status"] == "FAILED"
    assert invoke_recorder(load_event("sfn-status-redriven.json"))["status"] == "DISPATCHED"
    end = load_event("sfn-status-succeeded.json")
    end["detail"].update(redriveCount=1, redriveDate=1796049000205, stopDate=1796049180205)
    answer = invoke_recorder(end)
    assert answer["status"] == "SUCCEEDED" and answer["redrive"] == 1, answer
    run = aws.store().run("hourly-cleanup@2026-11-30T14:15:00Z")
    assert run is not None and run.status is RunStatus.SUCCEEDED and run.redrives == 1
    assert [(e.status, e.error) for e in run.earlier_ends] == [
        (
            RunStatus.FAILED,
            "States.TaskFailed: cleanup task: bucket mini-scheduler-scratch not found",
        )
    ]
    state = aws.store().job_state("hourly-cleanup")
    assert state is not None and state.last_status is RunStatus.SUCCEEDED
