"""Caps (``max_running``, pools) on AWS's own DynamoDB Local: tickers racing for the same minutes
never open more runs than a cap allows, each firing runs at most once, and a firing that waits
for its pool starts once when another job's run ends."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mini_scheduler.claims.base import BUFFER
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.model import RunStatus
from tests.emulators.dynamodb_local import make_client
from tests.system.integration.test_buffered_firings import _together
from tests.unit.tick.harness import FakeDispatcher, Rig, rig

pytestmark = pytest.mark.dynamodb_local

EXPORTS = [f"export-{i}" for i in range(6)]
CAPPED = (
    "pools: {exports: 2}\njobs:\n"
    + "".join(
        f'  - {{name: "{name}", cron: "0 * * * * ?", service: "{name}-fn", overlap: "{{overlap}}", '
        'pool: "exports"}\n'
        for name in EXPORTS
    )
    + '  - {name: "report", cron: "0 * * * * ?", service: "report-fn", overlap: "skip", '
    "max_running: 3}\n"
)


@pytest.fixture
def table(dynamodb_local_endpoint: str) -> Iterator[tuple[Any, str]]:
    client = make_client(dynamodb_local_endpoint)
    name = f"mini-scheduler-{uuid.uuid4().hex[:12]}"
    create_state_table(client, name)
    yield client, name
    client.delete_table(TableName=name)


def _rig(table: tuple[Any, str], dispatcher: FakeDispatcher, overlap: str) -> Rig:
    client, name = table
    store = DynamoDBClaimStore(name, client, sleep=lambda _: None)
    return rig(CAPPED.replace("{overlap}", overlap), claims=store, dispatcher=dispatcher)


def test_racing_tickers_never_open_more_runs_than_a_cap(table: tuple[Any, str]) -> None:
    dispatcher = FakeDispatcher()
    tickers = [_rig(table, dispatcher, "skip") for _ in range(4)]
    for minute in range(4):
        _together(tickers, f"2026-11-30T14:{minute:02d}:00Z")
    counts = dispatcher.counts()
    assert all(count == 1 for count in counts.values()), counts
    exports = [firing_id for firing_id in counts if firing_id.startswith("export-")]
    assert len(exports) == 2  # the pool's size, over every job that names it, every minute
    reports = sorted(firing_id for firing_id in counts if firing_id.startswith("report@"))
    assert reports == [f"report@2026-11-30T14:0{m}:00Z" for m in range(3)]  # max_running 3
    store = tickers[0].claims
    assert set(store.holders("pool:exports")) == set(exports)
    assert set(store.holders("job:report")) == set(reports)
    skipped = store.run("report@2026-11-30T14:03:00Z")
    assert skipped is not None and skipped.status is RunStatus.SKIPPED
    assert skipped.reason is not None and "max_running 3" in skipped.reason


def test_firings_that_wait_for_their_pool_start_once_as_runs_end(table: tuple[Any, str]) -> None:
    dispatcher = FakeDispatcher()
    tickers = [_rig(table, dispatcher, "buffer_one") for _ in range(3)]
    _together(tickers, "2026-11-30T14:00:00Z")
    store = tickers[0].claims
    running = sorted(store.holders("pool:exports"))
    waiting = sorted(d.firing.id for d in store.pending_deferred(BUFFER))
    assert len(running) == 2 and len(waiting) == len(EXPORTS) - 2  # one waits a job
    for firing_id in running:
        assert store.close(firing_id, RunStatus.SUCCEEDED, now=tickers[0].clock.now())
    _together(tickers, "2026-11-30T14:01:00Z")
    counts = dispatcher.counts()
    assert all(count == 1 for count in counts.values()), counts
    started = [firing_id for firing_id in waiting if firing_id in counts]
    assert len(started) == 2  # the oldest waiting firings took the two places given back
    assert len(store.holders("pool:exports")) == 2
