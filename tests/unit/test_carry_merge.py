"""What bringing two regions' stores in step writes in each (mini_scheduler.carry.merge): the
newer definition wins, a job's latest pause or resume wins, and the waiting firings follow the
active region."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from mini_scheduler.carry.merge import Mark, Snapshot, fenced_by, in_step, newer, taken_back
from mini_scheduler.claims.base import Deferred, Pause
from mini_scheduler.claims.records import Definition, RunRecord
from mini_scheduler.model import Firing, RunStatus

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
EAST, WEST = "us-east-1", "us-west-2"


def _definition(generation: str = "2026-11-30T14:00:00.000Z#aaaa", **more: object) -> Definition:
    fields: dict[str, object] = {
        "name": "every",
        "generation": generation,
        "entry": {"name": "every", "cron": "0 * * * * ?", "service": "fn"},
        "operator": "jane",
        "created_at": T0,
        "next_firing": T0 + timedelta(minutes=1),
        **more,
    }
    return Definition(**fields)  # type: ignore[arg-type]


def _waiting(job: str, minutes: int, origin: str) -> Deferred:
    at = T0 + timedelta(minutes=minutes)
    return Deferred(Firing(job, at), at, "retry", f"{origin}/prod", T0)


def _snapshot(
    region: str,
    definitions: tuple[Definition, ...] = (),
    marks: dict[str, Mark] | None = None,
    waiting: tuple[Deferred, ...] = (),
) -> Snapshot:
    return Snapshot(
        region, {d.name: d for d in definitions}, marks or {}, {w.key: w for w in waiting}
    )


def test_the_later_generation_wins_whatever_its_state() -> None:
    old = _definition()
    made_again = _definition("2026-11-30T15:00:00.000Z#bbbb")
    assert newer(old, made_again) == made_again
    assert newer(old.retired(operator="joe", now=T0), made_again) == made_again
    assert newer(None, old) == old and newer(old, None) == old and newer(None, None) is None


def test_in_one_generation_a_delete_and_then_the_furthest_move_win() -> None:
    live = _definition()
    moved = replace(live, next_firing=T0 + timedelta(minutes=5))
    ended = replace(live, next_firing=None)  # a one-time schedule that fired
    deleted = live.retired(operator="joe", now=T0)
    assert newer(live, deleted) == deleted and newer(deleted, moved) == deleted
    assert newer(live, moved) == moved and newer(moved, live) == moved
    assert newer(moved, ended) == ended


def test_each_store_gets_the_winner_over_what_it_holds() -> None:
    mine = _definition(next_firing=T0 + timedelta(minutes=3))
    theirs = _definition()
    only_there = replace(_definition(), name="theirs")
    to_home, to_peer = in_step(_snapshot(EAST, (mine,)), _snapshot(WEST, (theirs, only_there)))
    assert to_peer.definitions == [(mine, theirs)]
    assert to_home.definitions == [(only_there, None)]


def test_a_job_s_latest_mark_wins_a_resume_too() -> None:
    paused = Mark(True, Pause("report", "jane", T0))
    resumed_later = Mark(False, Pause("report", "joe", T0 + timedelta(minutes=1)))
    to_home, to_peer = in_step(
        _snapshot(EAST, marks={"report": paused}), _snapshot(WEST, marks={"report": resumed_later})
    )
    assert to_home.marks == [resumed_later] and not to_peer
    to_home, to_peer = in_step(_snapshot(EAST, marks={"report": paused}), _snapshot(WEST))
    assert to_peer.marks == [paused] and not to_home


def test_the_active_region_hands_on_its_waiting_firings_and_takes_the_peer_s_own() -> None:
    own = _waiting("a", 5, EAST)
    held_for_west = _waiting("b", 6, WEST)  # west's, carried here, not run yet
    answered = _waiting("c", 1, EAST)  # carried to west once; answered here since
    west_own = _waiting("d", 7, WEST)
    to_home, to_peer = in_step(
        _snapshot(EAST, waiting=(own, held_for_west)),
        _snapshot(WEST, waiting=(answered, west_own, held_for_west)),
    )
    assert to_peer.defer == [own] and to_peer.drop == [answered]
    assert to_home.defer == [west_own] and not to_home.drop


def test_a_standby_region_hands_on_its_own_waiting_firings_only() -> None:
    own = _waiting("a", 5, WEST)
    stale_copy = _waiting("c", 1, EAST)  # may have been answered in east since it came
    east_own = _waiting("d", 7, EAST)
    to_home, to_peer = in_step(
        _snapshot(WEST, waiting=(own, stale_copy)),
        _snapshot(EAST, waiting=(east_own,)),
        active=False,
    )
    assert to_peer.defer == [own] and not to_peer.drop and not to_home


def _skip(reason: str, minute: int) -> RunRecord:
    at = datetime(2026, 11, 30, 14, minute, tzinfo=UTC)
    return RunRecord("a@x", "a", "x", RunStatus.SKIPPED, ended_at=at, reason=reason)


def test_a_takeover_record_names_its_region_and_the_later_of_two_fences_wins() -> None:
    east = _skip("taken over by us-east-1: it runs there", 4)
    west = _skip("taken over by us-west-2: it runs there", 1)
    assert fenced_by(east) == "us-east-1"
    assert fenced_by(_skip("taken over by us-east-1", 4)) is None
    assert fenced_by(_skip("ran in us-east-1 (SUCCEEDED there, by x)", 4)) is None
    assert fenced_by(None) is None
    # us-west-2 took it over (its fence in us-east-1's store), us-east-1 took it back later
    assert taken_back(east, west, "us-west-2", "us-east-1")
    assert not taken_back(west, east, "us-east-1", "us-west-2")  # never both
    assert not taken_back(replace(east, ended_at=west.ended_at), west, "us-west-2", "us-east-1")
