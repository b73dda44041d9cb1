"""A waiting firing another region wrote is taken over there before it runs here
(mini_scheduler.carry.takeover): the decisions, on memory stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
