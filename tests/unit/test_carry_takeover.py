"""A waiting firing another region wrote is taken over there before it runs here
(mini_scheduler.carry.takeover): the decisions, on memory stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mini_scheduler.carry.carrier import Peers
from mini_scheduler.carry.takeover import Takeover, standby_scope
from mini_scheduler.claims.base import Control, Deferred
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.errors import ConfigurationError, StoreError
from mini_scheduler.model import Firing

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
HERE = "us-west-2/DR"


def _waiting(minute: int, origin: str = "us-east-1/prod") -> Deferred:
    at = T0 + timedelta(minutes=minute)
    return Deferred(Firing("report", at).retry(), at, "retry", origin, T0)


def _control(standby_until: datetime | None = T0) -> Control:
    marks = {standby_scope(HERE): standby_until} if standby_until else {}
    return Control(None, {}, marks)


def test_a_firing_taken_over_runs_here_and_is_recorded_there() -> None:
    there = MemoryClaimStore()
    item = _waiting(3)
    there.defer([item])
    takeover = Takeover(Peers("us-west-2", {"us-east-1": lambda: there}), HERE)
    assert takeover.fence([item], _control(), T0) == {}
    run = there.run(item.firing.id)
    assert run is not None and run.reason == "taken over by us-west-2: it runs there"
    assert there.pending_deferred("retry") == []  # its copy there is dropped
    assert takeover.fence([item], _control(), T0) == {}  # our own record: still ours


def test_a_firing_that_ran_there_does_not_run_here() -> None:
    there = MemoryClaimStore()
    item = _waiting(3)
    there.record_skipped(item.firing, now=T0, reason="misfire", origin="us-east-1/prod")
    takeover = Takeover(Peers("us-west-2", {"us-east-1": lambda: there}), HERE)
    why = takeover.fence([item], _control(), T0)[item.key]
    assert why.startswith("ran in us-east-1 (SKIPPED there")


def test_an_unreachable_region_is_asked_once_a_tick_and_decides_by_the_takeover_minute() -> None:
    asked: list[str] = []

    class Gone:
        def __getattr__(self, name: str) -> object:
            asked.append(name)
            raise StoreError("could not connect to the endpoint URL")

    before, after = _waiting(-3), _waiting(3)  # due before and after this region became active
    mine = _waiting(-5, origin=HERE)  # this region's own: never asked about
    takeover = Takeover(Peers("us-west-2", {"us-east-1": Gone}), HERE)  # type: ignore[dict-item]
    control = _control(T0 - timedelta(minutes=1))  # standing by until 13:59: active since 14:00
    elsewhere = takeover.fence([before, after, mine, _waiting(-2)], control, T0)
    assert set(elsewhere) == {before.key, _waiting(-2).key}
    assert elsewhere[before.key].startswith("us-east-1 cannot be reached (could not connect")
    assert "this region active since 2026-11-30T14:00:00Z" in elsewhere[before.key]
    assert asked == ["record_skipped"]


def test_a_peer_whose_store_cannot_be_made_is_unreachable_not_a_crash() -> None:
    def cannot() -> MemoryClaimStore:
        raise ConfigurationError("stack mini-scheduler in us-east-1 has no output StateTableName")

    takeover = Takeover(Peers("us-west-2", {"us-east-1": cannot}), HERE)
    elsewhere = takeover.fence([_waiting(-3)], _control(), T0)
    assert "has no output StateTableName" in elsewhere[_waiting(-3).key]


def test_without_a_standby_minute_every_firing_due_is_skipped_when_unreachable() -> None:
    def cannot() -> MemoryClaimStore:
        raise StoreError("timed out")

    takeover = Takeover(Peers("us-west-2", {"us-east-1": cannot}), HERE)
    elsewhere = takeover.fence([_waiting(3)], _control(None), T0)
    assert "no standby known" in elsewhere[_waiting(3).key]


def _buffered(minute: int, origin: str) -> Deferred:
    at = T0 + timedelta(minutes=minute)
    return Deferred(Firing("report", at), at, "buffer", origin, T0)


def _fenced(store: MemoryClaimStore, item: Deferred, by: str, at: datetime) -> None:
    reason = f"taken over by {by}: it runs there"
    assert store.record_skipped(item.firing, now=at, reason=reason, origin=f"{by}/x")


def test_a_waiting_firing_taken_over_is_taken_back_by_its_region_with_a_later_fence() -> None:
    """us-east-1 (here) is active again; us-west-2 took its waiting firing over at 14:01: here
    it is fenced there (us-west-2's claim loses from now on) and claimed over its fence."""
    home, there = MemoryClaimStore(), MemoryClaimStore()
    item = _buffered(0, "us-east-1/prod")
    _fenced(home, item, "us-west-2", T0 + timedelta(minutes=1))
    takeover = Takeover(Peers("us-east-1", {"us-west-2": lambda: there}), "us-east-1/prod", home)
    later = T0 + timedelta(minutes=4)
    assert takeover.taken_back([item, _buffered(1, "us-east-1/prod")], later) == {item.key}
    fence = there.run(item.firing.id)
    assert fence is not None and fence.reason == "taken over by us-east-1: it runs there"
    assert takeover.taken_back([item], later) == {item.key}  # found there: ours still


def test_a_waiting_firing_is_not_taken_back_when_it_ran_there_or_its_fence_there_is_earlier(
    caplog: pytest.LogCaptureFixture,
) -> None:
    home, there = MemoryClaimStore(), MemoryClaimStore()
    ran, earlier = _buffered(0, "us-east-1/prod"), _buffered(1, "us-east-1/prod")
    for item in (ran, earlier):
        _fenced(home, item, "us-west-2", T0 + timedelta(minutes=2))
    there.record_skipped(ran.firing, now=T0, reason="misfire", origin="us-west-2/DR")
    _fenced(there, earlier, "us-east-1", T0 + timedelta(minutes=1))
    takeover = Takeover(Peers("us-east-1", {"us-west-2": lambda: there}), "us-east-1/prod", home)
    assert takeover.taken_back([ran, earlier], T0 + timedelta(minutes=4)) == frozenset()
    assert "its takeover there is later than this region's" in caplog.text


def test_a_region_that_took_a_firing_over_and_was_then_fenced_later_never_runs_it() -> None:
    """us-west-2 (here) took us-east-1's firing over at 14:01; us-east-1 took it back at 14:04
    and waits yet: a second failover here fences nothing new and skips it here (it runs in
    us-east-1), leaving us-east-1's waiting copy."""
    home, there = MemoryClaimStore(), MemoryClaimStore()
    item = _buffered(0, "us-east-1/prod")
    there.buffer(item, 2)
    _fenced(there, item, "us-west-2", T0 + timedelta(minutes=1))
    _fenced(home, item, "us-east-1", T0 + timedelta(minutes=4))
    takeover = Takeover(Peers("us-west-2", {"us-east-1": lambda: there}), HERE, home)
    why = takeover.fence([item], _control(), T0 + timedelta(minutes=6))[item.key]
    assert why.startswith("taken back by us-east-1")
    assert there.pending_deferred("buffer") == [item]
