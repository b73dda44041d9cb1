"""Fan-out past one ticker: shards of the jobs, each with its own watermark, none lost."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Job
from mini_scheduler.model import parse_instant
from mini_scheduler.ticker import Shard
from tests.ticker.harness import FakeDispatcher, Rig, at, rig


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


def _coordinator(cron: str, shard_rig: Rig, events: list[dict[str, Any]], fail: set[int]) -> Rig:
    coordinator = rig(
        cron, claims=shard_rig.claims, store=shard_rig.store, dispatcher=shard_rig.dispatcher
    )

    def fanout(event: dict[str, Any]) -> None:
        if event["shard"] in fail:
            fail.discard(event["shard"])
            raise DispatchError("Lambda Invoke mini-scheduler-ticker failed - ServiceException")
        events.append(event)

    coordinator.ticker._fanout = fanout
    return coordinator


def test_ten_thousand_firings_over_eight_shards_are_each_dispatched_once() -> None:
    cron = _cron(2500)  # 2,500 jobs x 4 firings a minute
    crashing = CrashingOnce(after=10**9)
    shards = rig(cron, dispatcher=crashing)
    events: list[dict[str, Any]] = []
    fail: set[int] = set()
    coordinator = _coordinator(cron, shards, events, fail)
    coordinator.tick("2026-11-30T13:59:00Z")  # the first tick fans out too: nothing to replay
    for event in events:
        shards.ticker.tick(parse_instant(event["tick"]), Shard(event["shard"], event["shards"]))
    events.clear()
    before = Counter(shards.dispatcher.firing_ids)
    fail.add(5)  # shard 5's invocation fails this minute
    crashing.after = len(crashing.calls) + 600  # and one shard worker dies mid-minute

    answer = coordinator.tick("2026-11-30T14:00:00Z")
    assert answer["note"] == "10000 firings due: fanned out to 8 shards"
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
    assert len(this_minute) == 10_000
    assert max(dispatched.values()) == 1


def test_shards_partition_the_jobs_by_a_stable_hash() -> None:
    names = [f"job-{i}" for i in range(1000)]
    owners = [[s for s in range(8) if Shard(s, 8).holds(n)] for n in names]
    assert all(len(o) == 1 for o in owners)
    sizes = Counter(o[0] for o in owners)
    assert min(sizes.values()) > 80  # roughly even
    assert Shard(3, 8).holds("job-7") == Shard(3, 8).holds("job-7")


def test_a_shard_invocation_that_never_arrives_is_recovered_by_the_next_minute() -> None:
    cron = _cron(700)  # 2,800 firings a minute: above the default threshold of 2,000
    shards = rig(cron)
    events: list[dict[str, Any]] = []
    coordinator = _coordinator(cron, shards, events, fail=set())
    coordinator.tick("2026-11-30T13:59:00Z")
    for event in events:
        shards.ticker.tick(parse_instant(event["tick"]), Shard(event["shard"], 8))
    events.clear()
    coordinator.tick("2026-11-30T14:00:00Z")
    lost = [e for e in events if e["shard"] == 2]
    for event in events:
        if event not in lost:  # shard 2's invocation is dropped for good
            shards.ticker.tick(parse_instant(event["tick"]), Shard(event["shard"], 8))
    events.clear()
    shards.clock.set(at("2026-11-30T14:01:00Z"))
    coordinator.tick("2026-11-30T14:01:00Z")
    for event in events:
        shards.ticker.tick(parse_instant(event["tick"]), Shard(event["shard"], 8))
    shard_two: list[Job] = [j for j in shards.ticker.cron_file().jobs if Shard(2, 8).holds(j.name)]
    # shard 2 took 14:00 as misfires next minute: fire_now runs each job's latest missed firing
    for job in shard_two[:20]:
        assert f"{job.name}@2026-11-30T14:00:45Z" in shards.dispatcher.firing_ids
        assert f"{job.name}@2026-11-30T14:01:00Z" in shards.dispatcher.firing_ids
    assert max(Counter(shards.dispatcher.firing_ids).values()) == 1


def test_leaving_fan_out_replays_nothing_the_shards_handled() -> None:
    cron = _cron(700)
    shards = rig(cron)
    events: list[dict[str, Any]] = []
    coordinator = _coordinator(cron, shards, events, fail=set())
    for minute in ("2026-11-30T13:59:00Z", "2026-11-30T14:00:00Z"):
        coordinator.tick(minute)
        for event in events:
            shards.ticker.tick(parse_instant(event["tick"]), Shard(event["shard"], 8))
        events.clear()
    shards.cron_text[0] = coordinator.cron_text[0] = _cron(100)  # load drops under the threshold
    coordinator.ticker._cron = shards.ticker._cron
    answer = coordinator.tick("2026-11-30T14:01:00Z")
    assert "note" not in answer  # a plain tick now
    assert answer["counts"]["misfired"] == 0
    assert answer["counts"]["dispatched"] == 400
    assert coordinator.clock.now() - at("2026-11-30T14:01:00Z") <= timedelta(seconds=60)
