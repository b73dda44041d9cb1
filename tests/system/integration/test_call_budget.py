"""AWS requests per firing and per tick, counted with botocore's event hooks."""

from __future__ import annotations

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


def test_a_firing_costs_at_most_three_requests_and_a_tick_a_constant_few(
    aws: Aws, capsys: pytest.CaptureFixture[str]
) -> None:
    small, small_firings = _calls_for_a_tick(aws, 10)
    aws.dynamodb.delete_table(TableName=aws.table)
    from mini_scheduler.claims.dynamodb import create_state_table

    create_state_table(aws.dynamodb, aws.table)
    large, large_firings = _calls_for_a_tick(aws, 40)
    assert small_firings == 40 and large_firings == 160
    per_firing = (sum(large.values()) - sum(small.values())) / (large_firings - small_firings)
    per_tick = sum(small.values()) - 3 * small_firings
    with capsys.disabled():
        print(
            f"\nAWS requests: {per_firing:.2f} per firing, {per_tick} per tick beyond them; "
            f"a tick of {large_firings} firings: {dict(sorted(large.items()))}"
        )
    assert per_firing <= 3
    assert per_tick == sum(large.values()) - 3 * large_firings  # O(1): the same for both
    assert per_tick <= 4  # control query, environment, sweep query, watermark
    hot = {"dynamodb.PutItem", "lambda.Invoke", "sfn.StartExecution", "dynamodb.TransactWriteItems"}
    assert sum(large[k] for k in hot) == 3 * large_firings
