"""A runtime schedule's definition, as a claim store keeps it under the schedule's own name.

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

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from mini_scheduler.claims.base import Deferred
from mini_scheduler.model import iso_millis, parse_instant


@dataclass(frozen=True, slots=True)
class Definition:
    """A runtime schedule as its store keeps it. ``generation`` tells one making of the name
    from another (a schedule deleted and made again); ``next_firing`` is None once a schedule
    has no firing left; ``deleted_at`` makes it a tombstone."""

    name: str
    generation: str
    entry: Mapping[str, Any]
    operator: str
    created_at: datetime
    next_firing: datetime | None
    deleted_at: datetime | None = None
    deleted_by: str | None = None

    @property
    def live(self) -> bool:
        return self.deleted_at is None

    def retired(self, *, operator: str, now: datetime) -> Definition:
        return replace(self, deleted_at=now, deleted_by=operator)

    def detail(self) -> dict[str, Any]:
        """The detail of its firings (:class:`.Deferred`): what the tick needs to run one
        without reading the definition, and the generation that ties it to this one."""
        return {
            "entry": dict(self.entry),
            "operator": self.operator,
            "createdAt": iso_millis(self.created_at),
            "generation": self.generation,
        }


def new_generation(now: datetime) -> str:
    """A generation no other making of a schedule has: its instant, and 32 random bits."""
    return f"{iso_millis(now)}#{secrets.token_hex(4)}"


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
    """The definition a tick writes when it moves ``done``'s schedule on to ``following``
    (None: the schedule has no firing left, a one-time schedule that fired or a schedule past
    its end, and its definition becomes a tombstone dated ``done``'s instant); None when it may
    not (:func:`moves`). Built from ``done``'s detail where the tick has not read the
    definition (DynamoDB writes it on the condition :func:`moves` states)."""
    if not moves(definition, done):
        return None
    base = definition or definition_of(done, None)
    if following is None:
        return replace(base, next_firing=None, deleted_at=done.firing.scheduled)
    return replace(base, next_firing=following.firing.scheduled)
