"""The peers brought in step (mini_scheduler.carry.carrier): a failure is a peer's report,
never the tick's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from mini_scheduler.carry.carrier import Carrier, Peers
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import Definition
from mini_scheduler.errors import StoreError

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


class ReadOnce:
    """This region's store, whose control items can be read once only."""

    def __init__(self, store: MemoryClaimStore) -> None:
        self._store, self.reads = store, 0

    def control(self, scope: str) -> Any:
        self.reads += 1
        if self.reads > 1:
            raise StoreError("Query (control) failed - timed out")
        return self._store.control(scope)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_store_unread_between_two_peers_fails_the_second_not_the_carry() -> None:
    home = MemoryClaimStore()
    entry = {"name": "every", "cron": "0 * * * * ?", "service": "fn"}
    home.create_schedule(Definition("every", "g1", entry, "jane", T0, T0 + timedelta(minutes=1)))
    west, south = MemoryClaimStore(), MemoryClaimStore()
    peers = Peers("us-east-1", {"us-west-2": lambda: west, "eu-west-1": lambda: south})
    report = Carrier(ReadOnce(home), peers).carry(T0)  # type: ignore[arg-type]
    assert [d.name for d in west.schedules()] == ["every"]
    assert report.to_json() == {
        "inStep": ["us-west-2"],
        "notInStep": {"eu-west-1": "Query (control) failed - timed out"},
    }


def test_a_firing_kept_waiting_is_carried_and_forgotten_with_its_peer() -> None:
    """A buffered firing (``overlap: buffer_*``) is a deferred firing: a failover's region has
    it, and runs it; once this region forgets it (it started), the peer forgets it too."""
    from mini_scheduler.claims.base import BUFFER, Deferred
    from mini_scheduler.model import Firing

    home, west = MemoryClaimStore(), MemoryClaimStore()
    firing = Firing("solo", T0 + timedelta(minutes=1))
    waiting = Deferred(firing, firing.scheduled, BUFFER, "us-east-1/prod", T0)
    assert home.buffer(waiting, 1)
    peers = Peers("us-east-1", {"us-west-2": lambda: west})
    Carrier(home, peers).carry(T0)
    assert west.pending_deferred(BUFFER) == [waiting]
    home.drop_deferred([waiting])
    Carrier(home, peers).carry(T0 + timedelta(minutes=2))
    assert west.pending_deferred(BUFFER) == []
