"""What spreading costs in AWS requests (issue 30, item 3), counted with botocore's event hooks:
``jitter`` and ``window`` are worked out, never read or written, so a tick of spread jobs makes
the same target requests and the same per-tick requests as without them, and a tick of jobs
without them the requests it always made. Only the batching changes: firings that no longer
start together are claimed, and marked, a second at a time (at most a request of each per
distinct second, instead of 25 firings a request, or a claim batch's marks in one item)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from mini_scheduler.claims.dynamodb import create_state_table
from mini_scheduler.jobs import load
from mini_scheduler.jobs.spread import planned_in
from tests.system.integration import test_call_budget as budget
from tests.system.integration.conftest import Aws

pytestmark = pytest.mark.dynamodb_local
PLAIN = budget._cron  # the budget's cron file: every */15, 40 jobs
MINUTE = timedelta(minutes=1)


def _tick(aws: Aws, monkeypatch: pytest.MonkeyPatch, spread: str) -> tuple[Counter[str], int]:
    def cron(path: object, jobs: int) -> None:
        PLAIN(path, jobs)  # type: ignore[arg-type]
        text = aws.cron_path.read_text()
        if spread:
            aws.cron_path.write_text(text.replace('service: "', f'{spread}\n    service: "'))

    monkeypatch.setattr(budget, "_cron", cron)
    aws.dynamodb.delete_table(TableName=aws.table)
    create_state_table(aws.dynamodb, aws.table)
    return budget._calls_for_a_tick(aws, 40)


def test_a_tick_of_spread_jobs_makes_the_requests_of_the_same_tick_without_but_its_batches(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # */15 with jitter 10: each firing starts 0-9 s late, still in its minute
    spread, spread_firings = _tick(aws, monkeypatch, "jitter: 10")
    jobs = load(aws.cron_path.read_text()).jobs
    seconds = {s for job in jobs for _, s in planned_in(job, budget.T0, budget.T0 + MINUTE)}
    plain, plain_firings = _tick(aws, monkeypatch, "")
    assert spread_firings == plain_firings == 160
    claims, marks = "dynamodb.BatchExecuteStatement", "dynamodb.BatchWriteItem"
    batched = (claims, marks)
    assert {k: v for k, v in spread.items() if k not in batched} == {
        k: v for k, v in plain.items() if k not in batched
    }
    # as test_call_budget: 25 claims a request, a claim batch's marks in one item
    assert plain[claims] <= 2 * 8 and plain[marks] <= 8
    assert plain[claims] < spread[claims] <= len(seconds) + 8
    assert plain[marks] < spread[marks] <= len(seconds)
