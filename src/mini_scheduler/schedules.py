"""Runtime schedules: jobs an operator makes while the scheduler runs, beside cron.yaml's.

* **What one is.** A cron.yaml entry, or a *one-time* schedule: ``at`` (an instant, to the
  second) in place of ``cron`` (:mod:`.schedule_entry` reads one). Both take ``start`` and
  ``end``; a one-time schedule needs neither.
* **Where it lives.** Under its own name, as its definition (:mod:`.claims.definitions`: the
  entry, who made it and when, its generation, its next firing), and as its next firing: one
  deferred firing (reason ``schedule``) whose detail holds the entry and the generation, so a
  tick runs it without reading the definition, and a tick that finds none due pays what it
  pays without schedules: its one read of the deferred firings due. The name is unique by the
  store's condition, not by a read; list is one query, show one get.
* **How it fires.** The tick that reads a schedule's firing due claims it like any firing (by
  ``<name>@<instant>``) and writes the schedule's next firing in the same step that forgets the
  one it dispatched (:attr:`Dispatch.then <mini_scheduler.tick.plan.Dispatch>`); a one-time
  schedule has none and ends. A firing more than ``misfire.grace`` late (a region that was on
  standby, a ticker stopped for hours) is recorded SKIPPED, and its next firing follows.
* **Names.** A runtime schedule cannot take a cron.yaml job's name (cron.yaml stays the source
  of the deployed jobs: a tick that finds one drops the schedule), nor another live schedule's.
* **Delete.** The definition becomes a tombstone, on the condition that it is the one read; a
  tick moves a schedule on only while its definition is live with the generation its firing
  names, in the same conditional step, so a delete is never undone.
* **Where.** A schedule lives in the region (the store) that wrote it: a failover does not
  carry it to another region's table, a shared store does.

:class:`Schedules` is what the operator path calls: create (all or nothing), list, show, delete.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from mini_scheduler.claims.base import RETRY, SCHEDULE, ClaimStore, Deferred
from mini_scheduler.claims.definitions import definition_of
from mini_scheduler.claims.records import Definition, new_generation
from mini_scheduler.clock import Clock
from mini_scheduler.errors import EventError, StoreError
from mini_scheduler.jobs import CronFile, Job, name_problem
from mini_scheduler.jobs.spread import planned, planned_after
from mini_scheduler.model import (
    Firing,
    floor_minute,
    iso_millis,
    iso_seconds,
    log_keys,
)
from mini_scheduler.schedule_entry import read_schedule, schedule_job

log = logging.getLogger("mini_scheduler.ticker")

_IN_HAND: Final = timedelta(minutes=3)
"""How long before a delete a tick that still holds a schedule's firings may have begun."""
_CLOCKS_APART: Final = timedelta(seconds=5)
"""How far the ticker's clock may be ahead of the deleter's (both NTP-synchronised)."""
MAX_LEAD: Final = 60
"""TICK_LEAD_SECONDS at most: a deleter that does not know the tickers' lead assumes it."""
_IN_HAND_MAX: Final = 600
DELETED: Final = "schedule_deleted"
"""The reason of a firing a delete records SKIPPED (an operator's write: no tick metric)."""
_DELETE_ROUNDS: Final = 5
MAX_CREATE: Final = 10_000
"""Schedules one request may create (a bound on the work and on the answer's size)."""
_SECOND: Final = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class RuntimeSchedule:
    """A runtime schedule as stored: its job, the entry it was made from, who made it and when,
    and its next firing (None: a one-time schedule that fired)."""

    job: Job
    entry: Mapping[str, Any]
    operator: str
    created_at: datetime
    next_firing: datetime | None

    @property
    def name(self) -> str:
        return self.job.name

    @property
    def one_time(self) -> bool:
        return "at" in self.entry

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "one-time" if self.one_time else "cron",
            "entry": dict(self.entry),
            "operator": self.operator,
            "createdAt": iso_millis(self.created_at),
            "nextFiring": iso_seconds(self.next_firing) if self.next_firing else None,
        }


def deferred_of(
    job: Job, firing_at: datetime, *, detail: Mapping[str, Any], origin: str, now: datetime
) -> Deferred:
    """The deferred firing that keeps a runtime schedule: its firing at ``firing_at``, due at
    the instant the schedule's ``jitter`` or ``window`` plans it (:mod:`.jobs.spread`)."""
    due = planned(job, firing_at)
    return Deferred(Firing(job.name, firing_at), due, SCHEDULE, origin, now, detail)


def successor(
    item: Deferred, job: Job, after: datetime, *, origin: str, now: datetime
) -> Deferred | None:
    """The schedule's firing after ``item``'s (and planned after ``after``: a schedule late by
    several firings runs the latest once), or None: a one-time schedule, or past its end."""
    if "at" in (job.runtime or {}):
        return None
    if job.spread_seconds:  # the first firing after item's planned after ``after``
        upcoming = planned_after(job, max(planned(job, item.firing.scheduled), after), 1)
        following = upcoming[0][0] if upcoming else None
    else:
        following = job.next_after(max(item.firing.scheduled, after))
    if following is None:
        return None
    return deferred_of(job, following, detail=item.detail, origin=origin, now=now)


def stored(item: Deferred) -> RuntimeSchedule:
    """The runtime schedule a deferred firing keeps (EventError when its entry is refused)."""
    if not isinstance(item.detail.get("entry"), Mapping):
        raise EventError(f"deferred firing {item.firing.id} keeps no schedule entry")
    return defined(definition_of(item, item.firing.scheduled))


def defined(definition: Definition) -> RuntimeSchedule:
    """The runtime schedule a definition keeps (EventError when its entry is refused)."""
    return RuntimeSchedule(
        job=schedule_job(definition.entry),
        entry=definition.entry,
        operator=definition.operator,
        created_at=definition.created_at,
        next_firing=definition.next_firing,
    )


class Schedules:
    """The runtime schedules of one store. ``cron`` gives cron.yaml (whose names a schedule
    cannot take); without one (the CLI when it cannot read the deployed file) names are checked
    against the other schedules only."""

    def __init__(
        self,
        claims: ClaimStore,
        *,
        cron: CronFile | None,
        origin: str,
        default_zone: str = "UTC",
    ) -> None:
        self._claims = claims
        self._cron = cron
        self._origin = origin
        self._default_zone = default_zone

    def all(self) -> list[RuntimeSchedule]:
        """Every runtime schedule, by name (one query)."""
        found: list[RuntimeSchedule] = []
        for definition in self._claims.schedules():
            try:
                found.append(defined(definition))
            except EventError as exc:
                log.warning("Runtime schedule %s unreadable: %s", definition.name, exc)
        return found

    def show(self, name: str) -> RuntimeSchedule:
        definition = self._claims.schedule(name)
        if definition is not None and definition.live:
            return defined(definition)
        if definition is None:  # one stored before definitions: its firing keeps it
            found = self._readable([i for i in self._of(name) if i.reason == SCHEDULE])
            if found:
                return found[0]
        raise EventError(f"no runtime schedule {name[:100]!r}: `schedule list` shows them")

    def _read(self, raw: object, now: datetime) -> tuple[Job, dict[str, Any], datetime]:
        """An entry read as a schedule (:func:`.read_schedule`), its ``pool`` checked against
        the deployed cron.yaml's pools when the file is at hand."""
        pools = self._cron.pools if self._cron is not None else None
        return read_schedule(raw, default_zone=self._default_zone, now=now, pools=pools)

    def create(
        self, entries: Sequence[object], *, operator: str, now: datetime
    ) -> list[RuntimeSchedule]:
        """Create every schedule of ``entries``, or none: EventError listing every entry that
        cannot be one (a bad key, a name taken by cron.yaml or by a schedule, an ``at`` past)."""
        if not entries:
            raise EventError("no schedule to create: give at least one entry")
        if len(entries) > MAX_CREATE:
            raise EventError(
                f"{len(entries)} schedules in one request: at most {MAX_CREATE}, split them"
            )
        taken = {definition.name for definition in self._claims.schedules()}
        reasons: list[str] = []
        made: list[tuple[Job, dict[str, Any], datetime]] = []
        seen: set[str] = set()
        for number, raw in enumerate(entries, 1):
            try:
                job, entry, first = self._read(raw, now)
            except EventError as exc:
                reasons.append(f"entry {number}: {exc}")
                continue
            problem = self._name_problem(job.name, taken, seen)
            if problem:
                reasons.append(f"entry {number}: {problem}")
                continue
            seen.add(job.name)
            made.append((job, entry, first))
        if reasons:
            shown = reasons[:20] + (
                [f"... and {len(reasons) - 20} more"] if len(reasons) > 20 else []
            )
            raise EventError("nothing created - " + "; ".join(shown))
        definitions = [
            Definition(job.name, new_generation(now), entry, operator, now, first)
            for job, entry, first in made
        ]
        self._define(definitions, operator=operator, now=now)
        items = [
            deferred_of(job, first, detail=d.detail(), origin=self._origin, now=now)
            for d, (job, _, first) in zip(definitions, made, strict=True)
        ]
        try:
            self._claims.defer(items)
        except StoreError:
            self._undefine(definitions, operator=operator, now=now)
            raise
        schedules = [
            RuntimeSchedule(job, entry, operator, now, first) for job, entry, first in made
        ]
        for schedule in schedules:
            log.info(
                "Operator %s created runtime schedule %s (%s), first firing %s",
                operator,
                schedule.name,
                schedule.job.schedule,
                iso_seconds(schedule.next_firing) if schedule.next_firing else "-",
                extra=log_keys(schedule.name),
            )
        return schedules

    def _define(self, definitions: Sequence[Definition], *, operator: str, now: datetime) -> None:
        """Store every definition, or none: each is a conditional write (the store batches
        them), and when one is refused (its name made meanwhile by another operator) or fails,
        those written go again and the refusal is the answer."""
        answers = self._claims.create_schedules(definitions)
        made = [d for d, answer in zip(definitions, answers, strict=True) if answer is True]
        if len(made) == len(definitions):
            return
        self._undefine(made, operator=operator, now=now)
        errors = [answer for answer in answers if isinstance(answer, StoreError)]
        if errors:
            raise errors[0]
        taken = [d.name for d, answer in zip(definitions, answers, strict=True) if not answer]
        raise EventError(
            "nothing created - "
            + "; ".join(
                f"a runtime schedule {name} exists: delete it first, or choose another name"
                for name in taken[:20]
            )
        )

    def _undefine(self, definitions: Sequence[Definition], *, operator: str, now: datetime) -> None:
        for definition in definitions:
            try:
                self._claims.delete_schedule(
                    definition.name, definition.generation, operator=operator, now=now
                )
            except StoreError as exc:  # its firing was never written: it never fires
                log.error("Runtime schedule %s not undone: %s", definition.name, exc)

    def _name_problem(self, name: str, taken: set[str], seen: set[str]) -> str | None:
        problem = name_problem(name)
        if problem:
            return problem
        if self._cron is not None and self._cron.job(name) is not None:
            return f"name {name} is a job of {self._cron.source}: cron.yaml's jobs keep their names"
        if name in taken:
            return f"a runtime schedule {name} exists: delete it first, or choose another name"
        if name in seen:
            return f"name {name} is given twice"
        return None

    def delete(
        self, name: str, *, operator: str, clock: Clock, lead_seconds: int = MAX_LEAD
    ) -> RuntimeSchedule | None:
        """Delete the runtime schedule ``name``: after the answer, none of its firings starts,
        whatever its rhythm. Its runs stay in the history. EventError when there is none; None
        when its entry is one that today's rules refuse (it is deleted all the same).

        Its definition becomes a tombstone first, on the condition that it is the one read (the
        answer says its next firing as the last tick left it); from then on no tick moves it
        on (:meth:`~mini_scheduler.claims.base.ClaimStore.advance_schedule` is conditional on a
        live definition), and its stored firings go: its next one, and its runs' retries. A
        tick that read the schedule before that may still hold its firings of its window in
        hand (a ``0/20`` schedule's tick waits for :20 and :40): each
        firing such a tick could still claim is then recorded SKIPPED (``schedule_deleted``),
        so that its claim is LOST. ``lead_seconds`` is the tickers' TICK_LEAD_SECONDS."""
        definition = self._claims.schedule(name)
        if definition is None or not definition.live:
            schedule, items = self._drop_stored(name)
        else:
            schedule, items = self._retire(definition, operator=operator, now=clock.now())
        if schedule is not None:
            self._skip_in_hand(schedule.job, items, clock.now(), lead_seconds)
        log.info("Operator %s deleted runtime schedule %s", operator, name, extra=log_keys(name))
        return schedule

    def _retire(
        self, definition: Definition, *, operator: str, now: datetime
    ) -> tuple[RuntimeSchedule | None, list[Deferred]]:
        """Tombstone ``definition`` as read, then drop its next firing (as the tombstone's
        answer names it) and its runs' retries: the schedule (None when its entry is refused
        today) and the firings dropped."""
        name = definition.name
        before = self._claims.delete_schedule(
            name, definition.generation, operator=operator, now=now
        )
        if before is None:
            raise EventError(
                f"runtime schedule {name[:100]!r} was deleted or made again meanwhile: "
                "`schedule show` says what it is now"
            )
        items = [item for item in self._claims.pending_deferred(RETRY) if _of(item, name)]
        try:
            schedule: RuntimeSchedule | None = defined(before)
        except EventError:
            schedule = None
        if schedule is not None and before.next_firing is not None:
            following = deferred_of(
                schedule.job,
                before.next_firing,
                detail=before.detail(),
                origin=self._origin,
                now=before.created_at,
            )
            items = [following, *items]
        self._claims.drop_deferred(items)
        return schedule, items

    def _drop_stored(self, name: str) -> tuple[RuntimeSchedule | None, list[Deferred]]:
        """Drop a schedule stored before definitions existed (its firings only) until none is
        left, a tick moving it on meanwhile doing so only from a firing still stored: the
        schedule (None when its entry is refused today) and every firing seen."""
        items = self._of(name)
        if not items:
            raise EventError(f"no runtime schedule {name[:100]!r}: `schedule list` shows them")
        seen = {item.key: item for item in items}
        for _ in range(_DELETE_ROUNDS):
            self._claims.drop_deferred(items)
            items = self._of(name)
            seen.update((item.key, item) for item in items)
            if not items:
                break
        else:
            raise StoreError(
                f"runtime schedule {name}: {len(items)} firings still stored after "
                f"{_DELETE_ROUNDS} deletes - delete it again"
            )
        dropped = list(seen.values())
        return next(iter(self._readable(dropped)), None), dropped

    def _of(self, name: str) -> list[Deferred]:
        """The stored firings of schedule ``name``: its next one, and its runs' retries."""
        return [
            item
            for reason in (SCHEDULE, RETRY)
            for item in self._claims.pending_deferred(reason)
            if _of(item, name)
        ]

    def _readable(self, items: Sequence[Deferred]) -> list[RuntimeSchedule]:
        found: list[RuntimeSchedule] = []
        for item in items:
            with contextlib.suppress(EventError, ValueError):
                found.append(stored(item))
        return found

    def _skip_in_hand(
        self, job: Job, items: Sequence[Deferred], now: datetime, lead_seconds: int
    ) -> None:
        """Record SKIPPED each firing of ``job`` that a tick that read ``items`` (so began by
        ``now``, when none is stored any more) may still claim: up to the end of the window of
        ``now``'s minute (a few seconds later by another machine's clock), the stored ones, and
        the schedule's other firings from the oldest of them (a tick claims those too)."""
        horizon = floor_minute(now + _CLOCKS_APART) + timedelta(seconds=lead_seconds + 60)
        since = floor_minute(now) - _IN_HAND
        firings = {item.firing.id: item.firing for item in items if item.firing.scheduled < horizon}
        for item in items:
            if item.reason == SCHEDULE and item.firing.scheduled < horizon:
                begin = max(item.firing.scheduled, since)
                for at in itertools.islice(job.firings(begin, horizon), _IN_HAND_MAX):
                    firings.setdefault(Firing(job.name, at).id, Firing(job.name, at))
        for firing in firings.values():
            self._claims.record_skipped(firing, now=now, reason=DELETED, origin=self._origin)


def _of(item: Deferred, name: str) -> bool:
    """Whether ``item`` is a firing of runtime schedule ``name`` (its detail keeps the entry)."""
    return item.firing.job == name and isinstance(item.detail.get("entry"), Mapping)
