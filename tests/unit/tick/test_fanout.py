"""Fan-out past one ticker: shards of the jobs, each with its own watermark, none lost.

Every test runs on each claim store the ticker meets in production or in the contract suite's
fast stand-ins: memory, DynamoDB Local and mongomock. The hand-over between unsharded and sharded
ticks reads other scopes' watermarks (``Control.watermarks``), which each backend must answer.
The emulators are slower than memory (mongomock's writes slow down as a collection grows), so
they run the same scenarios with a tenth of the jobs and of the fan-out threshold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Job
from mini_scheduler.model import RunStatus, parse_instant
from mini_scheduler.tick import Shard
from tests.contract.claims.conftest import open_claim_store
from tests.unit.tick.harness import FakeDispatcher, Rig, at, rig

BACKENDS = [
    "memory",
    pytest.param("dynamodb-local", marks=pytest.mark.dynamodb_local),
    "mongodb-mock",
]
THRESHOLD = 2000  # FANOUT_THRESHOLD as these tests set it (with FANOUT_SHARDS=8)
SHARDS = 8


@dataclass(frozen=True)
class Backend:
    name: str
    claims: ClaimStore
    scale: int  # job counts and the fan-out threshold are divided by it

    def jobs(self, count: int) -> int:
        return count // self.scale

    @property
    def threshold(self) -> int:
        return THRESHOLD // self.scale


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with open_claim_store(request.param, request) as claims:
        yield Backend(request.param, claims, 1 if request.param == "memory" else 10)


def _cron(jobs: int) -> str:
    return "jobs:\n" + "".join(
        f'  - name: "job-{i:05d}"\n    cron: "*/15 * * * * ?"\n    service: "fn-{i % 9}"\n'
        for i in range(jobs)
    )


class Crash(Exception):
    pass


class CrashingOnce(FakeDispatcher):
    """Dies after ``after`` dispatches, once (a shard worker killed mid-minute)."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after
        self.crashed = False

    def dispatch(self, target: Any, firing_id: str, payload: Any) -> str:
        if not self.crashed and len(self.calls) >= self.after:
            self.crashed = True
            raise Crash
        return super().dispatch(target, firing_id, payload)


def _shards(cron: str, backend: Backend, dispatcher: FakeDispatcher | None = None) -> Rig:
    """The shard workers' ticker on the backend's store."""
    return rig(
        cron,
        claims=backend.claims,
        dispatcher=dispatcher,
        fanout_threshold=backend.threshold,
        fanout_shards=SHARDS,
    )


def _coordinator(cron: str, shard_rig: Rig, events: list[dict[str, Any]], fail: set[int]) -> Rig:
    coordinator = rig(
        cron,
        claims=shard_rig.claims,
        store=shard_rig.store,
        dispatcher=shard_rig.dispatcher,
        fanout_threshold=shard_rig.settings.fanout_threshold,
        fanout_shards=SHARDS,
    )

    def fanout(event: dict[str, Any]) -> None:
        if event["shard"] in fail:
            fail.discard(event["shard"])
            raise DispatchError("Lambda Invoke mini-scheduler-ticker failed - ServiceException")
        events.append(event)

    coordinator.ticker.executor.fanout = fanout
    return coordinator


def _run_shards(shards: Rig, events: list[dict[str, Any]]) -> None:
    """Each invoked shard worker ticks (as Lambda would run them), and the events are gone."""
    for event in events:
        shards.ticker.tick(parse_instant(event["tick"]), Shard(event["shard"], event["shards"]))
    events.clear()


def _load(rigs: tuple[Rig, ...], cron: str) -> None:
    """The cron file changes under every ticker (the load crosses the threshold)."""
    for each in rigs:
        each.cron_text[0] = cron


def test_ten_thousand_firings_over_eight_shards_are_each_dispatched_once(
    backend: Backend,
) -> None:
    jobs = backend.jobs(2500)  # 2,500 jobs x 4 firings a minute on memory
    cron = _cron(jobs)
    crashing = CrashingOnce(after=10**9)
    shards = _shards(cron, backend, crashing)
    events: list[dict[str, Any]] = []
    fail: set[int] = set()
    coordinator = _coordinator(cron, shards, events, fail)
    coordinator.tick("2026-11-30T13:59:00Z")  # the first tick fans out too: nothing to replay
    _run_shards(shards, events)
    before = Counter(shards.dispatcher.firing_ids)
    fail.add(5)  # shard 5's invocation fails this minute
    crashing.after = len(crashing.calls) + backend.jobs(600)  # and a shard worker dies mid-minute

    answer = coordinator.tick("2026-11-30T14:00:00Z")
    assert answer["note"] == f"{4 * jobs} firings due: fanned out to 8 shards"
    assert answer["counts"]["errors"] == 1  # shard 5's invocation failed: Lambda retries it
    assert sorted(e["shard"] for e in events) == [0, 1, 2, 3, 4, 6, 7]
    retried: list[dict[str, Any]] = []
    for event in events:
        try:
            shards.ticker.tick(parse_instant(event["tick"]), Shard(event["shard"], 8))
        except Crash:
            retried.append(event)  # the shard worker died mid-minute: Lambda retries it
    assert len(retried) == 1
    for event in [*retried, {"tick": "2026-11-30T14:00:00Z", "shard": 5, "shards": 8}]:
        shards.ticker.tick(parse_instant(event["tick"]), Shard(event["shard"], 8))
    # the firing the dead worker had claimed is taken over after its lease by the next
    # coordinator tick's sweep
    coordinator.clock.set(at("2026-11-30T14:03:00Z"))
    swept = coordinator.ticker.tick(at("2026-11-30T14:03:00Z"))
    assert swept.counts["takenOver"] == 1

    dispatched = Counter(shards.dispatcher.firing_ids) - before
    this_minute = {f: n for f, n in dispatched.items() if "T14:00:" in f}
    assert len(this_minute) == 4 * jobs
    assert max(dispatched.values()) == 1


def test_shards_partition_the_jobs_by_a_stable_hash() -> None:
    names = [f"job-{i}" for i in range(1000)]
    owners = [[s for s in range(8) if Shard(s, 8).holds(n)] for n in names]
    assert all(len(o) == 1 for o in owners)
    sizes = Counter(o[0] for o in owners)
    assert min(sizes.values()) > 80  # roughly even
    assert Shard(3, 8).holds("job-7") == Shard(3, 8).holds("job-7")


def test_a_shard_invocation_that_never_arrives_is_recovered_by_the_next_minute(
    backend: Backend,
) -> None:
    cron = _cron(backend.jobs(700))  # 2,800 firings a minute: above the threshold of 2,000
    shards = _shards(cron, backend)
    events: list[dict[str, Any]] = []
    coordinator = _coordinator(cron, shards, events, fail=set())
    coordinator.tick("2026-11-30T13:59:00Z")
    _run_shards(shards, events)
    coordinator.tick("2026-11-30T14:00:00Z")
    lost = [e for e in events if e["shard"] == 2]
    _run_shards(shards, [e for e in events if e not in lost])  # shard 2's is dropped for good
    events.clear()
    shards.clock.set(at("2026-11-30T14:01:00Z"))
    coordinator.tick("2026-11-30T14:01:00Z")
    _run_shards(shards, events)
    shard_two: list[Job] = [j for j in shards.ticker.cron_file().jobs if Shard(2, 8).holds(j.name)]
    assert shard_two
    # shard 2 took 14:00 as misfires next minute: fire_now runs each job's latest missed firing
    for job in shard_two[:20]:
        assert f"{job.name}@2026-11-30T14:00:45Z" in shards.dispatcher.firing_ids
        assert f"{job.name}@2026-11-30T14:01:00Z" in shards.dispatcher.firing_ids
    assert max(Counter(shards.dispatcher.firing_ids).values()) == 1


def test_a_shard_s_first_tick_runs_what_the_unsharded_tick_held(backend: Backend) -> None:
    """A shard's own watermark starts empty: its first tick continues from the region's (the
    unsharded ticks'), so the firings an unsharded tick held for the next tick are handled
    under their misfire policy, not lost as if the shard were the region's first tick."""
    low, high = _cron(backend.jobs(100)), _cron(backend.jobs(700))
    shards = _shards(low, backend)
    events: list[dict[str, Any]] = []
    coordinator = _coordinator(low, shards, events, fail=set())
    coordinator.tick("2026-11-30T13:59:00Z")
    held = coordinator.tick("2026-11-30T14:00:00Z", deadline=at("2026-11-30T14:00:20Z"))
    assert "note" not in held  # a plain tick, out of time at 14:00:20
    assert held["counts"]["held"] == 2 * backend.jobs(100)  # 14:00:30 and 14:00:45 of each
    _load((shards, coordinator), high)
    shards.clock.set(at("2026-11-30T14:01:00Z"))
    fanned = coordinator.tick("2026-11-30T14:01:00Z")
    assert fanned["note"] == f"{4 * backend.jobs(700)} firings due: fanned out to 8 shards"
    _run_shards(shards, events)
    for job in (f"job-{i:05d}" for i in range(backend.jobs(100))):
        latest = shards.claims.run(f"{job}@2026-11-30T14:00:45Z")  # fire_now: the latest runs
        assert latest is not None and latest.status is RunStatus.DISPATCHED, job
        older = shards.claims.run(f"{job}@2026-11-30T14:00:30Z")  # and the one before is skipped
        assert older is not None and older.status is RunStatus.SKIPPED, job
    assert max(shards.dispatcher.counts().values()) == 1


def test_leaving_fan_out_replays_nothing_the_shards_handled(backend: Backend) -> None:
    """The region's watermark stays where the last unsharded tick left it while the shards
    tick: the unsharded tick after them continues from the shards' watermarks."""
    low, high = _cron(backend.jobs(100)), _cron(backend.jobs(700))
    shards = _shards(low, backend)
    events: list[dict[str, Any]] = []
    coordinator = _coordinator(low, shards, events, fail=set())
    assert "note" not in coordinator.tick("2026-11-30T13:59:00Z")  # unsharded: a watermark
    _load((shards, coordinator), high)
    for minute in ("2026-11-30T14:00:00Z", "2026-11-30T14:01:00Z"):
        assert "fanned out" in coordinator.tick(minute)["note"]
        _run_shards(shards, events)
    _load((shards, coordinator), low)  # load drops under the threshold
    answer = coordinator.tick("2026-11-30T14:02:00Z")
    assert "note" not in answer  # a plain tick now
    assert answer["counts"]["misfired"] == 0
    assert answer["counts"]["skipped"] == {}
    assert answer["counts"]["dispatched"] == 4 * backend.jobs(100)
    assert coordinator.clock.now() - at("2026-11-30T14:02:00Z") <= timedelta(seconds=60)
