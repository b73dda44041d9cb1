"""AWS requests per firing and per tick, counted with botocore's event hooks."""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest

from mini_scheduler.aws import Clients
from mini_scheduler.clock import FixedClock
from mini_scheduler.config import Settings
from mini_scheduler.wiring import build_ticker
from tests.system.integration.conftest import Aws

pytestmark = pytest.mark.dynamodb_local
T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


def _cron(path: Path, jobs: int) -> None:
    lines = ["jobs:"]
    for i in range(jobs):
        service = (
            "flow://mini-scheduler-sample-cleanup"
            if i % 3 == 0
            else "mini-scheduler-sample-heartbeat"
        )
        lines += [f'  - name: "job-{i}"', '    cron: "*/15 * * * * ?"', f'    service: "{service}"']
    path.write_text("\n".join(lines) + "\n")


def _calls_for_a_tick(aws: Aws, jobs: int) -> tuple[Counter[str], int]:
    _cron(aws.cron_path, jobs)
    session = boto3.session.Session()
    calls: Counter[str] = Counter()

    def count(event_name: str, **_: object) -> None:
        # before-call.<service>.<Operation>
        calls[event_name.removeprefix("before-call.")] += 1

    session.events.register("before-call", count)
    settings = Settings(
        state_table=aws.table, cron_file=f"file:{aws.cron_path}", region="us-east-1"
    )
    ticker = build_ticker(
        settings,
        clients=Clients("us-east-1", session=session),
        clock=FixedClock(T0 - timedelta(minutes=1)),
        account="123456789012",
    )
    ticker.tick(T0 - timedelta(minutes=1))  # the region's first tick
    ticker.clock.set(T0)  # type: ignore[attr-defined]
    calls.clear()
    answer = ticker.tick(T0).to_json()
    return calls, answer["counts"]["dispatched"]


def test_a_firing_costs_its_target_request_and_a_share_of_batches(
    aws: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each firing costs its Invoke (or StartExecution) and a share of the batched claims (25
    statements a request) and marks (a claim batch's in one item); a tick a constant few beyond
    them."""
    small, small_firings = _calls_for_a_tick(aws, 10)
    aws.dynamodb.delete_table(TableName=aws.table)
    from mini_scheduler.claims.dynamodb import create_state_table

    create_state_table(aws.dynamodb, aws.table)
    large, large_firings = _calls_for_a_tick(aws, 40)
    assert small_firings == 40 and large_firings == 160
    per_firing = (sum(large.values()) - sum(small.values())) / (large_firings - small_firings)
    targets = ("lambda.Invoke", "sfn.StartExecution")
    hot = (*targets, "dynamodb.BatchExecuteStatement", "dynamodb.BatchWriteItem")
    with capsys.disabled():
        print(
            f"\nAWS requests: {per_firing:.3f} per firing; a tick of {large_firings} firings: "
            f"{dict(sorted(large.items()))}"
        )
    for calls, firings, jobs in ((small, small_firings, 10), (large, large_firings, 40)):
        assert sum(calls[k] for k in targets) == firings  # one target request a firing
        # the jobs fire together at :00, :15, :30 and :45: their claims go 25 to a request,
        # and each claim batch's marks are one item, written as soon as its firings are
        # dispatched (one BatchWriteItem a claim batch at most, none for a run alone)
        claims = 4 * math.ceil(jobs / 25)
        assert claims <= calls["dynamodb.BatchExecuteStatement"] <= 2 * claims
        assert 1 <= calls["dynamodb.BatchWriteItem"] <= claims
        assert calls["dynamodb.PutItem"] == 1  # the watch item, before the claims
        assert "dynamodb.TransactWriteItems" not in calls and "dynamodb.UpdateItem" in calls
    assert per_firing <= 1.1
    per_tick = {k: v for k, v in large.items() if k not in hot}
    assert per_tick == {k: v for k, v in small.items() if k not in hot}  # O(1): the same
    # the control query, the environment, the sweep's watch query, the deferred firings'
    # query (one, however many wait for later: issue 14), the watch, the watermark
    assert sum(per_tick.values()) <= 6, per_tick
