"""Caps on the tick (memory stores): ``max_running`` lets N runs of a job be open, a pool lets N
runs of its jobs be open, and the job's ``overlap`` says what a firing past the cap does."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mini_scheduler.claims.base import BUFFER
from mini_scheduler.errors import EventError
from mini_scheduler.handlers.routing import route
from mini_scheduler.model import RunStatus
from mini_scheduler.recorder import Completion, Recorder
from mini_scheduler.wake import waker
from tests.unit.tick.harness import Rig, at, rig
from tests.unit.tick.test_target_kinds import Batched

MAX_RUNNING = """
jobs:
  - name: "report"
    cron: "0 * * * * ?"
    service: "report-fn"
    overlap: "skip"
    max_running: 2
"""

POOL = """
pools: {exports: 1}
jobs:
  - {name: "orders", cron: "0 * * * * ?", service: "orders-fn", overlap: "skip", pool: "exports"}
  - {name: "users", cron: "30 * * * * ?", service: "users-fn", overlap: "OVERLAP",
     pool: "exports"}
"""


def _end(r: Rig, firing_id: str) -> None:
    assert r.claims.close(firing_id, RunStatus.SUCCEEDED, now=r.clock.now()) is not None


def test_max_running_lets_that_many_runs_open_and_skips_the_next_saying_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    r = rig(MAX_RUNNING)
    r.tick("2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:01:00Z")
    with caplog.at_level(logging.INFO):
        answer = r.tick("2026-11-30T14:02:00Z")
    assert r.dispatcher.firing_ids == ["report@2026-11-30T14:00:00Z", "report@2026-11-30T14:01:00Z"]
    assert answer["counts"]["skipped"] == {"overlap": 1}
    skipped = r.claims.run("report@2026-11-30T14:02:00Z")
    assert skipped is not None and skipped.status is RunStatus.SKIPPED
    detail = "as many runs are open as its caps allow: max_running 2; overlap skip"
    assert skipped.reason == detail
    assert f"Job report skipped - firing report@2026-11-30T14:02:00Z ({detail})" in caplog.text
    _end(r, "report@2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:03:00Z")
    assert r.dispatcher.firing_ids[-1] == "report@2026-11-30T14:03:00Z"
    assert set(r.claims.holders("job:report")) == {
        "report@2026-11-30T14:01:00Z",
        "report@2026-11-30T14:03:00Z",
    }


def test_a_pool_holds_the_runs_of_every_job_that_names_it() -> None:
    r = rig(POOL.replace("OVERLAP", "skip"))
    r.tick("2026-11-30T14:00:00Z")
    assert r.dispatcher.firing_ids == ["orders@2026-11-30T14:00:00Z"]
    users = r.claims.run("users@2026-11-30T14:00:30Z")
    assert users is not None and users.status is RunStatus.SKIPPED
    assert users.reason is not None and "pool exports of 1" in users.reason
    _end(r, "orders@2026-11-30T14:00:00Z")
    r.clock.set(at("2026-11-30T14:01:05Z"))
    r.tick("2026-11-30T14:01:00Z")
    assert r.dispatcher.firing_ids[-1] == "orders@2026-11-30T14:01:00Z"


def test_a_firing_that_waits_for_its_pool_starts_when_another_job_s_run_ends() -> None:
    """``users`` buffers: its firing waits while ``orders`` holds the pool; the end of
    ``orders``' run wakes the ticker (a pooled job's run wakes it: another job may wait), and
    the waiting firing starts at once, once."""
    events: list[dict[str, Any]] = []
    holder: list[Rig] = []
    r = rig(
        POOL.replace("OVERLAP", "buffer_one"),
        wake=lambda dues: waker(events.append, holder[0].clock, 0)(dues),
    )
    holder.append(r)
    r.tick("2026-11-30T14:00:00Z")
    assert [d.firing.id for d in r.claims.pending_deferred(BUFFER)] == [
        "users@2026-11-30T14:00:30Z"
    ]
    r.clock.set(at("2026-11-30T14:00:40Z"))
    recorder = Recorder(r.claims, r.clock, r.metrics, origin="us-east-1/prod", wake=r.ticker.wake)
    recorder.record(
        Completion("orders@2026-11-30T14:00:00Z", RunStatus.SUCCEEDED, r.clock.now(), None, "x")
    )
    assert len(events) == 1
    route(r.ticker, events[0])
    assert r.dispatcher.firing_ids == ["orders@2026-11-30T14:00:00Z", "users@2026-11-30T14:00:30Z"]
    assert r.claims.pending_deferred(BUFFER) == []
    r.tick("2026-11-30T14:01:00Z")  # users' run holds the pool: orders is skipped
    assert r.dispatcher.counts()["users@2026-11-30T14:00:30Z"] == 1
    orders = r.claims.run("orders@2026-11-30T14:01:00Z")
    assert orders is not None and orders.status is RunStatus.SKIPPED


def test_a_capped_run_that_ends_at_its_dispatch_gives_its_place_back() -> None:
    """A queue's run ends when SQS takes the message: a capped one is closed through the
    store (its end in the mark would keep its places), so the next firing finds the cap free."""
    queue = MAX_RUNNING.replace('"report-fn"', '"sqs://reports"') + "    pool: q\n"
    r = rig("pools: {q: 1}\n" + queue, dispatcher=Batched())
    r.tick("2026-11-30T14:00:00Z")
    assert r.claims.holders("pool:q") == {}  # given back at once, not released as stale later
    r.tick("2026-11-30T14:01:00Z")
    assert r.dispatcher.firing_ids == ["report@2026-11-30T14:00:00Z", "report@2026-11-30T14:01:00Z"]


def test_a_runtime_schedule_counts_against_a_pool_of_cron_yaml_and_an_unknown_pool_is_refused() -> (
    None
):
    r = rig(POOL.replace("OVERLAP", "skip"))
    with pytest.raises(EventError, match=r"pool 'imports' is not defined under pools \(the file"):
        r.ticker.operator.create_schedules(
            {
                "name": "imp",
                "cron": "15 * * * * ?",
                "service": "x",
                "overlap": "skip",
                "pool": "imports",
            },
            "jane.doe",
        )
    assert r.ticker.operator.list_schedules() == {"schedules": []}  # nothing created
    r.ticker.operator.create_schedules(
        {
            "name": "adhoc",
            "cron": "15 * * * * ?",
            "service": "adhoc-fn",
            "overlap": "skip",
            "pool": "exports",
        },
        "jane.doe",
    )
    r.tick("2026-11-30T14:00:00Z")
    assert r.dispatcher.firing_ids == ["orders@2026-11-30T14:00:00Z"]
    adhoc = r.claims.run("adhoc@2026-11-30T14:00:15Z")
    assert adhoc is not None and adhoc.status is RunStatus.SKIPPED
    assert adhoc.reason is not None and "pool exports of 1" in adhoc.reason
