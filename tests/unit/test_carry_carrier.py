"""The peers brought in step (mini_scheduler.carry.carrier): a failure is a peer's report,
never the tick's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.carry.carrier import Carrier, Peers
from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import Definition
from mini_scheduler.errors import StoreError
from tests.contract.claims.conftest import open_claim_store

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


EAST, WEST = "us-east-1/prod", "us-west-2/DR"
STORES = [
    "memory",
    pytest.param("dynamodb-local", marks=pytest.mark.dynamodb_local),
    "mongodb-mock",
]


def _kept_waiting(minutes: int, origin: str = EAST) -> Any:
    from mini_scheduler.claims.base import BUFFER, Deferred
    from mini_scheduler.model import Firing

    firing = Firing("solo", T0 + timedelta(minutes=minutes))
    return Deferred(firing, firing.scheduled, BUFFER, origin, T0)


@pytest.fixture(params=STORES)
def two(request: pytest.FixtureRequest) -> Iterator[tuple[ClaimStore, ClaimStore]]:
    """This region's store and us-west-2's, of one backend."""
    with (
        open_claim_store(request.param, request) as home,
        open_claim_store(request.param, request) as west,
    ):
        yield home, west


def _places(store: ClaimStore) -> tuple[str, ...]:
    state = store.job_state("solo")
    return state.waiting if state is not None else ()


def test_a_carried_waiting_firing_holds_its_place_in_the_peer_and_gives_it_back(
    two: tuple[ClaimStore, ClaimStore],
) -> None:
    """The peer keeps the job's limit: a waiting firing carried there takes its place (a second
    one is refused there as here), and its drop there gives the place back. Without a known
    job the carry keeps the strictest limit, 1."""
    home, west = two
    first = _kept_waiting(1)
    assert home.buffer(first, 1)
    carrier = Carrier(home, Peers("us-east-1", {"us-west-2": lambda: west}))
    carrier.carry(T0)
    assert _places(west) == (first.firing.id,)
    assert not west.buffer(_kept_waiting(2, WEST), 1)  # the peer's limit is held
    home.drop_deferred([first])  # it started here; the next firing waits behind its run
    second = _kept_waiting(2)
    assert home.buffer(second, 1)
    carrier.carry(T0 + timedelta(minutes=2))  # the first's place given back before the second
    assert [d.firing.id for d in west.pending_deferred("buffer")] == [second.firing.id]
    assert _places(west) == (second.firing.id,)


def test_a_carried_waiting_firing_takes_the_job_s_own_limit(
    two: tuple[ClaimStore, ClaimStore],
) -> None:
    home, west = two
    waiting = [_kept_waiting(1), _kept_waiting(2)]
    assert all(home.buffer(item, 2) for item in waiting)
    peers = Peers("us-east-1", {"us-west-2": lambda: west})
    Carrier(home, peers, limit=lambda item: (2, "2 firings are already waiting")).carry(T0)
    assert _places(west) == tuple(item.firing.id for item in waiting)
    assert not west.buffer(_kept_waiting(3, WEST), 2)


def test_a_waiting_firing_the_other_store_refuses_stays_where_it_waits_and_is_said(
    two: tuple[ClaimStore, ClaimStore], caplog: pytest.LogCaptureFixture
) -> None:
    """Each region keeps its own waiting firing of a buffer_one job: neither store takes the
    other's past its limit (nor records it SKIPPED: the firing waits, and runs, where it is);
    the refusal is logged, and the carry after a place frees brings it."""
    import logging

    home, west = two
    mine, theirs = _kept_waiting(1), _kept_waiting(2, WEST)
    assert home.buffer(mine, 1)
    assert west.buffer(theirs, 1)
    carrier = Carrier(home, Peers("us-east-1", {"us-west-2": lambda: west}))
    with caplog.at_level(logging.WARNING, logger="mini_scheduler.carry"):
        carrier.carry(T0)
    assert west.pending_deferred("buffer") == [theirs]
    assert home.pending_deferred("buffer") == [mine]
    assert west.run(mine.firing.id) is None and home.run(theirs.firing.id) is None
    assert f"Waiting firing {mine.firing.id} not carried to us-west-2" in caplog.text
    assert f"Waiting firing {theirs.firing.id} not carried to us-east-1" in caplog.text
    home.drop_deferred([mine])  # it started here
    carrier.carry(T0 + timedelta(minutes=3))
    assert home.pending_deferred("buffer") == [theirs]  # taken over here, its place held
    assert _places(home) == (theirs.firing.id,)


def test_a_peer_s_own_waiting_firing_it_can_never_run_is_dropped_there_not_refused_here(
    two: tuple[ClaimStore, ClaimStore], caplog: pytest.LogCaptureFixture
) -> None:
    """us-east-1 took over us-west-2's 14:02 (a SKIPPED record there says so), kept it waiting,
    handed it back as a copy, then ran it. That copy, us-west-2's own, is no firing to take over
    when this region's places are full: it has a record there, so its claim there would lose.
    It is dropped there, its place given back, instead of being refused every minute."""
    import logging

    home, west = two
    theirs = _kept_waiting(2, WEST)
    assert west.buffer(theirs, 1)
    taken = "taken over by us-east-1: it runs there"
    assert west.record_skipped(theirs.firing, now=T0, reason=taken, origin=EAST)
    assert home.buffer(_kept_waiting(3), 1)  # this region's places are full
    with caplog.at_level(logging.WARNING, logger="mini_scheduler.carry"):
        Carrier(home, Peers("us-east-1", {"us-west-2": lambda: west})).carry(T0)
    mine = _kept_waiting(3).firing.id  # carried there, in the place given back
    assert [d.firing.id for d in west.pending_deferred("buffer")] == [mine]
    assert _places(west) == (mine,)
    assert [d.firing.id for d in home.pending_deferred("buffer")] == [mine]
    assert "not carried" not in caplog.text
