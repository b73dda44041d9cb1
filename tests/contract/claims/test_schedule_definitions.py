"""Runtime schedules' definitions, the same on every backend: a name is unique by the store's
condition, a delete leaves a tombstone that no tick's step undoes, and a schedule made again
under the same name is never moved on by the old one's firings."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from mini_scheduler.claims.base import ClaimStore, Deferred
from mini_scheduler.claims.records import Definition, new_generation
from mini_scheduler.model import Firing

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
ORIGIN = "us-east-1/prod"
ENTRY = {"name": "every", "cron": "0 * * * * ?", "timezone": "UTC", "service": "fn"}


def _definition(name: str = "every", *, at: datetime = T0) -> Definition:
    return Definition(
        name=name,
        generation=new_generation(at),
        entry={**ENTRY, "name": name},
        operator="jane",
        created_at=at,
        next_firing=at + timedelta(minutes=1),
    )


def _firing(definition: Definition, minutes: int) -> Deferred:
    at = T0 + timedelta(minutes=minutes)
    return Deferred(Firing(definition.name, at), at, "schedule", ORIGIN, T0, definition.detail())


def test_a_name_is_made_once_until_it_is_deleted(claim_store: ClaimStore) -> None:
    first = _definition()
    assert claim_store.create_schedule(first) is True
    assert claim_store.create_schedule(_definition()) is False  # a live one has the name
    assert claim_store.schedule("every") == first
    assert [d.name for d in claim_store.schedules()] == ["every"]

    before = claim_store.delete_schedule(
        "every", first.generation, operator="joe", now=T0 + timedelta(minutes=5)
    )
    assert before == first
    tombstone = claim_store.schedule("every")
    assert tombstone is not None and not tombstone.live and tombstone.deleted_by == "joe"
    assert claim_store.schedules() == []

    again = _definition(at=T0 + timedelta(minutes=6))
    assert claim_store.create_schedule(again) is True  # over the tombstone
    assert claim_store.schedule("every") == again


def test_a_delete_holds_only_for_the_generation_read(claim_store: ClaimStore) -> None:
    made = _definition()
    claim_store.create_schedule(made)
    assert claim_store.delete_schedule("every", "another", operator="joe", now=T0) is None
    assert claim_store.delete_schedule("absent", made.generation, operator="joe", now=T0) is None
    assert claim_store.delete_schedule("every", made.generation, operator="joe", now=T0) == made
    assert claim_store.delete_schedule("every", made.generation, operator="joe", now=T0) is None


def test_schedules_lists_the_live_ones_by_name(claim_store: ClaimStore) -> None:
    for name in ("zeta", "alpha", "mid"):
        claim_store.create_schedule(_definition(name))
    gone = claim_store.schedule("mid")
    assert gone is not None
    claim_store.delete_schedule("mid", gone.generation, operator="joe", now=T0)
    assert [d.name for d in claim_store.schedules()] == ["alpha", "zeta"]


def test_a_tick_moves_a_live_schedule_on_and_its_definition_follows(
    claim_store: ClaimStore,
) -> None:
    made = _definition()
    claim_store.create_schedule(made)
    first, second = _firing(made, 1), _firing(made, 2)
    claim_store.defer([first])
    assert claim_store.advance_schedule(first, second) is True
    assert claim_store.pending_deferred("schedule") == [second]
    moved = claim_store.schedule("every")
    assert moved is not None and moved.live and moved.next_firing == second.firing.scheduled
    assert moved.generation == made.generation and moved.entry == made.entry


def test_a_delete_is_never_undone_by_a_tick_that_read_the_schedule_before(
    claim_store: ClaimStore,
) -> None:
    made = _definition()
    claim_store.create_schedule(made)
    first, second = _firing(made, 1), _firing(made, 2)
    claim_store.defer([first])
    claim_store.delete_schedule("every", made.generation, operator="joe", now=T0)
    assert claim_store.advance_schedule(first, second) is False
    assert claim_store.pending_deferred("schedule") == []  # the answered one forgotten too
    tombstone = claim_store.schedule("every")
    assert tombstone is not None and not tombstone.live


def test_a_schedule_made_again_is_not_moved_by_the_old_ones_firing(
    claim_store: ClaimStore,
) -> None:
    old = _definition()
    claim_store.create_schedule(old)
    stale = _firing(old, 1)
    claim_store.defer([stale])
    claim_store.delete_schedule("every", old.generation, operator="joe", now=T0)
    new = _definition(at=T0 + timedelta(seconds=30))
    claim_store.create_schedule(new)
    assert claim_store.advance_schedule(stale, _firing(old, 2)) is False
    assert claim_store.schedule("every") == new
    assert claim_store.pending_deferred("schedule") == []


def test_a_schedule_with_no_firing_left_ends(claim_store: ClaimStore) -> None:
    made = _definition()
    claim_store.create_schedule(made)
    last = _firing(made, 1)
    claim_store.defer([last])
    assert claim_store.advance_schedule(last, None) is True
    assert claim_store.pending_deferred("schedule") == []
    assert claim_store.schedules() == []
    ended = claim_store.schedule("every")
    assert ended is not None and not ended.live and ended.deleted_by is None
    assert claim_store.advance_schedule(last, None) is False  # a second tick's late step
    assert claim_store.create_schedule(_definition()) is True  # the name is free again


def test_a_firing_stored_before_definitions_writes_its_definition(
    claim_store: ClaimStore,
) -> None:
    """A schedule stored as its firing only (before definitions) gets one at its next step,
    from the entry its firing carries; its generation is its ``createdAt``."""
    detail = {"entry": ENTRY, "operator": "jane", "createdAt": "2026-11-01T00:00:00.000Z"}
    first = Deferred(Firing("every", T0), T0, "schedule", ORIGIN, T0, detail)
    second = Deferred(
        Firing("every", T0 + timedelta(minutes=1)),
        T0 + timedelta(minutes=1),
        "schedule",
        ORIGIN,
        T0,
        detail,
    )
    claim_store.defer([first])
    assert claim_store.advance_schedule(first, second) is True
    found = claim_store.schedule("every")
    assert found is not None and found.live
    assert found.generation == "2026-11-01T00:00:00.000Z" and found.operator == "jane"
    assert found.next_firing == second.firing.scheduled and dict(found.entry) == ENTRY


def test_racing_creators_of_one_name_have_exactly_one_winner(
    racing_claim_store: ClaimStore,
) -> None:
    for round_ in range(10):
        name = f"race-{round_}"
        barrier = threading.Barrier(8)

        def one(_: int, name: str = name, barrier: threading.Barrier = barrier) -> bool:
            definition = _definition(name)
            barrier.wait()
            return racing_claim_store.create_schedule(definition)

        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(one, range(8)))
        assert results.count(True) == 1, results


def test_definitions_lists_the_tombstones_too(claim_store: ClaimStore) -> None:
    kept, gone = _definition("kept"), _definition("gone")
    claim_store.create_schedule(kept)
    claim_store.create_schedule(gone)
    claim_store.delete_schedule("gone", gone.generation, operator="joe", now=T0)
    listed = claim_store.definitions()
    assert [(d.name, d.live) for d in listed] == [("gone", False), ("kept", True)]


def test_a_carried_definition_is_written_only_over_the_one_read(claim_store: ClaimStore) -> None:
    """Another region's definition is carried in on the condition that the stored one is
    still the one read (none, or the same generation, next firing and deletion)."""
    theirs = _definition()
    assert claim_store.carry_schedule(theirs, None) is True
    assert claim_store.schedule("every") == theirs
    assert claim_store.carry_schedule(theirs, None) is False  # one is stored now

    moved = replace(theirs, next_firing=T0 + timedelta(minutes=2))
    assert claim_store.carry_schedule(moved, theirs) is True
    assert claim_store.schedule("every") == moved
    stale = replace(theirs, next_firing=T0 + timedelta(minutes=9))
    assert claim_store.carry_schedule(stale, theirs) is False  # read before the move
    assert claim_store.schedule("every") == moved

    gone = moved.retired(operator="joe", now=T0 + timedelta(minutes=3))
    assert claim_store.carry_schedule(gone, moved) is True
    assert claim_store.schedules() == []
    assert claim_store.carry_schedule(moved, moved) is False  # a tombstone is not `moved`
    other = _definition(at=T0 + timedelta(minutes=4))
    assert claim_store.carry_schedule(other, theirs) is False  # another generation read
    assert claim_store.carry_schedule(other, gone) is True  # made again, over the tombstone
    assert [d.generation for d in claim_store.schedules()] == [other.generation]


def test_racing_ticks_moving_one_schedule_on_keep_exactly_its_next_firing(
    racing_claim_store: ClaimStore,
) -> None:
    """Eight ticks that answered the same firing make the same step at once: one makes it,
    and the schedule keeps exactly its next firing (never none, never two)."""
    made = _definition()
    racing_claim_store.create_schedule(made)
    done, following = _firing(made, 1), _firing(made, 2)
    racing_claim_store.defer([done])
    for _round in range(5):
        barrier = threading.Barrier(8)

        def one(
            _: int,
            barrier: threading.Barrier = barrier,
            done: Deferred = done,
            following: Deferred = following,
        ) -> bool:
            barrier.wait()
            return racing_claim_store.advance_schedule(done, following)

        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(one, range(8)))
        assert results.count(True) <= 1, results
        pending = racing_claim_store.pending_deferred("schedule")
        assert [d.key for d in pending] == [following.key]
        definition = racing_claim_store.schedule("every")
        assert definition is not None and definition.next_firing == following.firing.scheduled
        done, following = following, _firing(made, 3 + _round)
        if _round == 0:
            assert results.count(True) == 1


def test_many_definitions_are_made_in_one_call_each_answered_in_order(
    claim_store: ClaimStore,
) -> None:
    """``create_schedules``: a new name is made, a live one's is refused, a tombstone gives way
    to a name made again; past a request's 25 as well."""
    live, gone = _definition("live"), _definition("gone")
    claim_store.create_schedule(live)
    claim_store.create_schedule(gone)
    claim_store.delete_schedule("gone", gone.generation, operator="joe", now=T0)
    fresh = [_definition(f"fresh-{i:02d}") for i in range(30)]
    again, taken = _definition("gone"), _definition("live")
    asked = [fresh[0], taken, *fresh[1:27], again, *fresh[27:]]

    answers = claim_store.create_schedules(asked)

    assert answers == [True, False, *[True] * 26, True, *[True] * 3]
    assert claim_store.schedule("live") == live  # the refused one wrote nothing
    assert claim_store.schedule("gone") == again
    assert sorted(d.name for d in claim_store.schedules()) == sorted(
        ["live", "gone", *(d.name for d in fresh)]
    )


def test_racing_batches_of_one_name_have_exactly_one_winner(
    racing_claim_store: ClaimStore,
) -> None:
    names = [f"batch-race-{i:02d}" for i in range(30)]
    barrier = threading.Barrier(4)

    def one(_: int) -> list[object]:
        definitions = [_definition(name) for name in names]
        barrier.wait()
        return list(racing_claim_store.create_schedules(definitions))

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(one, range(4)))
    for index, name in enumerate(names):
        assert [a[index] for a in answers].count(True) == 1, name
    assert len(racing_claim_store.schedules()) == len(names)
