"""What a tick does to a runtime schedule's definition (:class:`.records.Definition`, kept by
the claim store under the schedule's own name), decided once for every store.

A runtime schedule (:mod:`mini_scheduler.schedules`) is two things in the store: its
*definition* (this record: the entry it was made from, who made it and when, its generation and
its next firing), one item per name, and its next firing, a deferred firing (reason
``schedule``) whose detail names the definition's generation. The store keeps the name unique
by its own condition (``create_schedule`` writes only where no live definition has the name),
lists the schedules with one query and shows one with one get.

A delete leaves a *tombstone*: the definition with ``deleted_at`` set, kept for the store's
run TTL. A tick moves a schedule on (``advance_schedule``) only while its definition is live
with the generation its firing names, in the same conditional step: a tick that read the
schedule before the delete can never write it back, and a schedule made again under the same
name (a new generation) is never moved on by the old one's firings.

A firing stored before definitions existed names no generation: its generation is its
``createdAt`` (:func:`generation_of`), and the tick's first move of it writes its definition
(:func:`definition_of`), so such a schedule has a definition from its next firing on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from mini_scheduler.claims.base import Deferred
from mini_scheduler.claims.records import Definition
from mini_scheduler.errors import StoreError
from mini_scheduler.model import parse_instant


def generation_of(item: Deferred) -> str:
    """The generation a schedule's firing names (``createdAt`` for one stored before
    generations existed)."""
    detail = item.detail
    return str(detail.get("generation") or detail.get("createdAt") or "")


def definition_of(item: Deferred, next_firing: datetime | None) -> Definition:
    """The definition a schedule's firing carries in its detail, firing next at
    ``next_firing``: what the tick writes for a firing stored before definitions existed."""
    detail = item.detail
    created = detail.get("createdAt")
    entry = detail.get("entry")
    return Definition(
        name=item.firing.job,
        generation=generation_of(item),
        entry=dict(entry) if isinstance(entry, Mapping) else {},
        operator=str(detail.get("operator", "")),
        created_at=parse_instant(created) if isinstance(created, str) else item.written_at,
        next_firing=next_firing,
    )


def moves(definition: Definition | None, item: Deferred) -> bool:
    """Whether a tick may move the schedule of ``item`` on: its definition is live with the
    generation the firing names, or it has none yet (a firing stored before definitions)."""
    if definition is None:
        return True
    return definition.live and definition.generation == generation_of(item)


def advanced(
    definition: Definition | None, done: Deferred, following: Deferred | None
) -> Definition | None:
    """The definition a tick writes when it moves ``done``'s schedule on from the definition
    it read (:func:`carried`); None when it may not (:func:`moves`)."""
    if not moves(definition, done):
        return None
    return carried(done, following, definition)


def carried(
    done: Deferred, following: Deferred | None, definition: Definition | None = None
) -> Definition:
    """The definition moved on to ``following`` (None: the schedule has no firing left, a
    one-time schedule that fired or a schedule past its end, and the definition becomes a
    tombstone dated ``done``'s instant). Built from ``done``'s detail where the tick has not
    read it: a store that writes it without a read (DynamoDB, MongoDB) writes it on the
    condition :func:`moves` states."""
    base = definition or definition_of(done, None)
    if following is None:
        return replace(base, next_firing=None, deleted_at=done.firing.scheduled)
    return replace(base, next_firing=following.firing.scheduled)


def created_each(
    create: Callable[[Definition], bool], definitions: Sequence[Definition]
) -> list[bool | StoreError]:
    """Each of ``definitions`` made by ``create``, one after another: its answer, or the
    StoreError it raised (the others are still made)."""
    answers: list[bool | StoreError] = []
    for definition in definitions:
        try:
            answers.append(create(definition))
        except StoreError as exc:
            answers.append(exc)
    return answers


class Book(Protocol):
    """Where a backend keeps the definitions (:mod:`.dynamodb_schedules`,
    :mod:`.mongodb_schedules`)."""

    def create(self, definition: Definition) -> bool: ...

    def create_many(self, definitions: Sequence[Definition]) -> list[bool | StoreError]: ...

    def get(self, name: str) -> Definition | None: ...

    def live(self) -> Sequence[Definition]: ...

    def every(self) -> Sequence[Definition]: ...

    def put(self, definition: Definition, over: Definition | None) -> bool: ...

    def retire(
        self, name: str, generation: str, *, operator: str, now: datetime
    ) -> Definition | None: ...

    def advance(self, done: Deferred, following: Deferred | None) -> bool: ...


class KeptInABook:
    """The claim store's runtime-schedule methods, each passed on to the store's book."""

    _schedules: Book

    def _ready(self) -> None:
        """Before a write (a store that creates its indexes on first use does it here)."""

    def advance_schedule(self, done: Deferred, following: Deferred | None) -> bool:
        self._ready()
        return self._schedules.advance(done, following)

    def create_schedule(self, definition: Definition) -> bool:
        self._ready()
        return self._schedules.create(definition)

    def create_schedules(self, definitions: Sequence[Definition]) -> list[bool | StoreError]:
        self._ready()
        return self._schedules.create_many(definitions)

    def schedule(self, name: str) -> Definition | None:
        return self._schedules.get(name)

    def schedules(self) -> Sequence[Definition]:
        return self._schedules.live()

    def definitions(self) -> Sequence[Definition]:
        return self._schedules.every()

    def carry_schedule(self, definition: Definition, over: Definition | None) -> bool:
        self._ready()
        return self._schedules.put(definition, over)

    def delete_schedule(
        self, name: str, generation: str, *, operator: str, now: datetime
    ) -> Definition | None:
        return self._schedules.retire(name, generation, operator=operator, now=now)
