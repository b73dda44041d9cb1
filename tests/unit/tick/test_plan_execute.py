"""A tick's writes are its plan's: plan on a state, execute that plan on the same state, and
every write the executor makes is one the plan named (plus what only a write can tell: a job's
slot still held, for ``overlap: skip``). On every claim store the ticker meets: memory,
DynamoDB Local and mongomock; scenarios: the minute, seconds, misfires under each policy and
past the grace, standby, pauses, overlap, the sweep (time-out, take-over, fail), fan-out, and
deferred firings (a failed dispatch's retry, written; a due one, claimed and forgotten)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from mini_scheduler.claims.base import RETRY, ClaimResult
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus, SkipReason
from mini_scheduler.tick.plan import TickPlan
from tests.contract.claims.conftest import open_claim_store
from tests.contract.claims.recording import Recording
from tests.unit.tick.harness import Rig, at, rig

BACKENDS = [
    "memory",
    pytest.param("dynamodb-local", marks=pytest.mark.dynamodb_local),
    "mongodb-mock",
]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[Recording]:
    with open_claim_store(request.param, request) as claims:
        yield Recording(claims)


def plan_then_execute(r: Rig, minute: str, **settings: Any) -> TickPlan:
    """Plan the tick of ``minute``, then carry that plan out on the same state; checks that
    every write is the plan's and returns the plan."""
    moment = at(minute)
    if r.clock.now() < moment:
        r.clock.set(moment)
    recording = r.ticker.claims
    assert isinstance(recording, Recording)
    plan, _ = r.ticker.plan(moment)
    recording.writes.clear()
    r.ticker.executor.execute(plan)
    assert_writes_are_the_plan_s(plan, recording, refusing=r.dispatcher.failing)
    return plan


def assert_writes_are_the_plan_s(
    plan: TickPlan, recording: Recording, refusing: set[str] | frozenset[str] = frozenset()
) -> None:
    """``refusing``: the targets that refuse every dispatch (a firing claimed for them is
    failed, not marked: what only a dispatch can tell)."""
    claims = recording.of("claim")
    planned = [d.firing.id for d in plan.claims()]
    assert sorted(c[0] for c in claims) == sorted(planned)
    for firing_id, exclusive, _ in claims:
        job = firing_id.partition("@")[0]
        assert exclusive == (
            next(d.job for d in plan.claims() if d.job.name == job).overlap == "skip"
        )
    overlapped = {c[0] for c in claims if c[2] is ClaimResult.OVERLAP}
    expected_skips = {(s.firing.id, s.reason) for s in plan.skips}
    expected_skips |= {(fid, str(SkipReason.OVERLAP)) for fid in overlapped}
    assert set(recording.of("skip")) == expected_skips
    assert recording.of("range") == [
        (r.job.name, r.firings[0], len(r.firings), r.reason) for r in plan.ranges
    ]
    assert sorted(recording.of("time_out")) == sorted(
        (run.firing_id,) for run in plan.sweep.time_outs
    )
    assert sorted(recording.of("take_over")) == sorted(
        (run.firing_id,) for run, _ in plan.sweep.take_overs
    )
    taken = {run.firing_id for run, _ in plan.sweep.take_overs}
    won = {c[0] for c in claims if c[2] is ClaimResult.WON}
    refused = {d.firing.id for d in plan.claims() if d.job.target.name in refusing} & won
    assert {m[0] for m in recording.of("mark")} == (won - refused) | taken
    assert sorted(recording.of("fail")) == sorted(
        [(run.firing_id,) for run, _ in plan.sweep.fails] + [(fid,) for fid in refused]
    )
    moved = plan.advance_to is not None and (plan.handled is None or plan.advance_to > plan.handled)
    assert recording.of("watermark") == ([(plan.scope, plan.advance_to)] if moved else [])
    assert_deferred_writes_are_the_plan_s(plan, recording)


def assert_deferred_writes_are_the_plan_s(plan: TickPlan, recording: Recording) -> None:
    """Deferred firings forgotten are the plan's (each one claimed, and each one dropped, at
    least); those written are a runtime schedule's next firing the plan named, or the retry of
    a firing claimed that its target refused (what only a write can tell)."""
    steps = [*plan.dispatches, *plan.skips]
    planned = {s.deferred.key for s in steps if s.deferred is not None}
    planned |= {item.key for item, _ in plan.dropped}
    dropped = {key for (key,) in recording.of("drop")}
    assert dropped <= planned
    answered = {c[0] for c in recording.of("claim") if not isinstance(c[2], StoreError)}
    must = {
        d.deferred.key
        for d in plan.dispatches
        if d.deferred is not None and d.then is None and d.firing.id in answered
    }
    assert must | {item.key for item, _ in plan.dropped} <= dropped
    following = {s.then.key for s in steps if s.then is not None}
    won = {c[0].split("#")[0] for c in recording.of("claim") if c[2] is ClaimResult.WON}
    for key, reason in recording.of("defer"):
        run_id = key.split("#", 1)[1]
        assert key in following or (reason == RETRY and run_id.split("#")[0] in won), key


CRON = """
jobs:
  - name: "minutely"
    cron: "0 * * * * ?"
    service: "minutely-fn"
  - name: "quarter"
    cron: "*/15 * * * * ?"
    service: "quarter-fn"
    overlap: "skip"
  - name: "catch-up"
    cron: "30 * * * * ?"
    service: "catch-up-fn"
    misfire: "fire_all"
  - name: "skipper"
    cron: "0 */5 * * * ?"
    service: "skipper-fn"
    misfire: "skip"
    timeout: 120
"""


def test_the_minute_s_writes_are_its_plan_s(store: Recording) -> None:
    r = rig(CRON, claims=store)
    plan = plan_then_execute(r, "2026-11-30T14:00:00Z")
    assert len(plan.dispatches) == 7 and plan.handled is None
    assert plan.advance_to == at("2026-11-30T14:01:00Z")


def test_misfires_overlap_and_the_grace_range_are_the_plan_s(store: Recording) -> None:
    r = rig(CRON, claims=store)
    plan_then_execute(r, "2026-11-30T14:00:00Z")
    plan = plan_then_execute(r, "2026-11-30T16:00:00Z")  # two hours down: past the grace
    assert plan.misfire_runs and plan.skips and plan.ranges
    assert {m.job.name for m in plan.missed} == {"minutely", "quarter", "catch-up", "skipper"}


def test_standby_writes_nothing_per_firing(store: Recording) -> None:
    r = rig(CRON, claims=store, active="DR")
    plan = plan_then_execute(r, "2026-11-30T14:00:00Z")
    assert plan.mode == "standby" and not plan.claims() and plan.left_alone
    assert store.of("claim") == [] and store.of("skip") == []


def test_a_paused_job_gets_no_write(store: Recording) -> None:
    r = rig(CRON, claims=store)
    r.ticker.set_paused("quarter", True, "jane.doe")
    plan = plan_then_execute(r, "2026-11-30T14:00:00Z")
    assert [left.job.name for left in plan.left_alone] == ["quarter"]
    assert not any(fid.startswith("quarter@") for fid, *_ in store.of("claim"))


def test_the_sweep_times_out_takes_over_and_fails_as_planned(store: Recording) -> None:
    r = rig(CRON, claims=store)
    plan_then_execute(r, "2026-11-30T14:00:00Z")  # skipper dispatched, timeout 120 s
    now = at("2026-11-30T14:00:30Z")
    died = Firing("minutely", at("2026-11-30T14:01:00Z"))
    gone = Firing("removed-job", at("2026-11-30T14:01:00Z"))
    for firing in (died, gone):  # claimed, as a ticker does, by one that then died
        store._inner.watch([firing.id], now + timedelta(seconds=120))
        store._inner.claim(firing, now=now, lease_until=now + timedelta(seconds=120), origin="x")
    plan = plan_then_execute(r, "2026-11-30T14:03:00Z")
    assert [run.firing_id for run in plan.sweep.time_outs] == ["skipper@2026-11-30T14:00:00Z"]
    assert [run.firing_id for run, _ in plan.sweep.take_overs] == [died.id]
    assert [run.firing_id for run, _ in plan.sweep.fails] == [gone.id]
    assert r.claims.run(died.id).status is RunStatus.DISPATCHED  # type: ignore[union-attr]


def test_a_fanned_out_tick_writes_nothing_but_its_sweep(store: Recording) -> None:
    r = rig(CRON, claims=store, fanout_threshold=3, fanout_shards=4)
    events: list[dict[str, Any]] = []
    r.ticker.executor.fanout = events.append
    plan = plan_then_execute(r, "2026-11-30T14:00:00Z")
    assert plan.fan_out == 4 and len(events) == 4 and not plan.claims()
    for event in events:
        assert event["tick"] == "2026-11-30T14:00:00Z"


RETRIED = """
jobs:
  - name: "report"
    cron: "0 * * * * ?"
    service: "report-fn"
    retry: {retries: 2, backoff: 30}
"""


def test_a_refused_dispatch_s_retry_and_a_due_retry_are_the_plan_s(store: Recording) -> None:
    r = rig(RETRIED, claims=store)
    r.dispatcher.failing.add("report-fn")
    plan_then_execute(r, "2026-11-30T14:00:00Z")
    assert store.of("defer") == [("2026-11-30T14:00:30.000Z#report@2026-11-30T14:00:00Z#2", RETRY)]
    r.dispatcher.failing.clear()
    plan = plan_then_execute(r, "2026-11-30T14:01:00Z")
    assert [d.firing.id for d in plan.dispatches if d.deferred is not None] == [
        "report@2026-11-30T14:00:00Z#2"
    ]
    assert store.of("drop") == [("2026-11-30T14:00:30.000Z#report@2026-11-30T14:00:00Z#2",)]
