"""A tick's writes are its plan's: plan on a state, execute that plan on the same state, and
every write the executor makes is one the plan named (plus what only a write can tell: a job's
slot still held, for ``overlap: skip``). On every claim store the ticker meets: memory,
DynamoDB Local and mongomock; scenarios: the minute, seconds, misfires under each policy and
past the grace, standby, pauses, overlap, the sweep (time-out, take-over, fail) and fan-out."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.claims.base import ClaimRequest, ClaimResult, ClaimStore, MarkRequest
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.model import Firing, RunStatus, SkipReason
from mini_scheduler.tick.plan import TickPlan
from tests.contract.claims.conftest import open_claim_store
from tests.unit.tick.harness import Rig, at, rig

BACKENDS = [
    "memory",
    pytest.param("dynamodb-local", marks=pytest.mark.dynamodb_local),
    "mongodb-mock",
]


class Recording:
    """A claim store that notes each write it passes on (reads go straight through)."""

    def __init__(self, inner: ClaimStore) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.writes: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _note(self, *write: Any) -> None:
        with self._lock:
            self.writes.append(write)

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [w[1:] for w in self.writes if w[0] == kind]

    def claim_many(self, claims: Sequence[ClaimRequest], **kwargs: Any) -> list[Any]:
        with self._lock:
            watched = {w[1] for w in self.writes if w[0] == "watch"}
        assert all(c.firing.id in watched for c in claims), "claimed before it was watched"
        outcomes = self._inner.claim_many(claims, **kwargs)
        for c, outcome in zip(claims, outcomes, strict=True):
            self._note("claim", c.firing.id, c.exclusive, outcome)
        return outcomes

    def watch(self, firing_ids: Sequence[str], at: datetime) -> None:
        for firing_id in firing_ids:
            self._note("watch", firing_id)
        self._inner.watch(firing_ids, at)

    def mark_many(self, marks: Sequence[MarkRequest], **kwargs: Any) -> list[Any]:
        for mark in marks:
            self._note("mark", mark.firing.id)
        return self._inner.mark_many(marks, **kwargs)

    def record_skipped(self, firing: Firing, **kwargs: Any) -> bool:
        self._note("skip", firing.id, kwargs["reason"])
        return self._inner.record_skipped(firing, **kwargs)

    def record_skipped_range(self, job: str, first: datetime, *args: Any, **kwargs: Any) -> Any:
        self._note("range", job, first, args[1], kwargs["reason"])
        return self._inner.record_skipped_range(job, first, *args, **kwargs)

    def time_out(self, run: RunRecord, **kwargs: Any) -> bool:
        self._note("time_out", run.firing_id)
        return self._inner.time_out(run, **kwargs)

    def take_over(self, run: RunRecord, **kwargs: Any) -> bool:
        self._note("take_over", run.firing_id)
        return self._inner.take_over(run, **kwargs)

    def fail(self, firing: Firing, **kwargs: Any) -> None:
        self._note("fail", firing.id)
        self._inner.fail(firing, **kwargs)

    def advance_watermark(self, scope: str, to: datetime) -> None:
        self._note("watermark", scope, to)
        self._inner.advance_watermark(scope, to)

    def set_paused(self, job: str, paused: bool, **kwargs: Any) -> None:
        self._inner.set_paused(job, paused, **kwargs)


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
    assert_writes_are_the_plan_s(plan, recording)
    return plan


def assert_writes_are_the_plan_s(plan: TickPlan, recording: Recording) -> None:
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
    assert {m[0] for m in recording.of("mark")} == won | taken
    assert sorted(recording.of("fail")) == sorted((run.firing_id,) for run, _ in plan.sweep.fails)
    moved = plan.advance_to is not None and (plan.handled is None or plan.advance_to > plan.handled)
    assert recording.of("watermark") == ([(plan.scope, plan.advance_to)] if moved else [])


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
