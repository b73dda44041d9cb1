"""The claim store in memory, behind one lock: for unit tests, never for production (it is not
shared between processes). It carries out the writes of :mod:`.transitions` on its records: a
write whose expectation holds is applied, as a conditional write would be."""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields, replace
from datetime import datetime
from typing import Any

from mini_scheduler.claims.base import (
    BUFFER,
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    Control,
    Deferred,
    Latest,
    MarkRequest,
    Pause,
    history_cursor,
    named_firings,
)
from mini_scheduler.claims.definitions import advanced, created_each
from mini_scheduler.claims.ends import RunEnds
from mini_scheduler.claims.places import held, log_released, may_take, past_lease, stale
from mini_scheduler.claims.records import Definition, JobStart, JobState, RunRecord
from mini_scheduler.claims.transitions import (
    Write,
    applied,
    claimed,
    job_follows,
    job_marked,
    joined,
    left,
    marked,
    may_wait,
    replaces,
    take_slot,
    taken_over,
)
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs.model import Place
from mini_scheduler.model import Firing, firing_from_id

_ATTRIBUTES = frozenset(attribute.name for attribute in fields(RunRecord))


class _Waiting:
    """The buffered firings' places (:meth:`.base.ClaimStore.buffer`), on the memory store's
    job states and deferred firings."""

    _jobs: dict[str, JobState]
    _deferred: dict[str, Deferred]

    def _operation(self) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def drop_deferred(self, deferred: Sequence[Deferred]) -> None:
        with self._operation():
            for item in deferred:
                state = self._jobs.get(item.firing.job)
                if item.reason == BUFFER and state is not None:
                    waiting = left(state.waiting, item.firing.id)
                    self._jobs[state.job] = replace(state, waiting=waiting)
                self._deferred.pop(item.key, None)

    def buffer(self, deferred: Deferred, limit: int) -> bool:
        with self._operation():
            job, firing_id = deferred.firing.job, deferred.firing.id
            state = self._jobs.get(job) or JobState(job)
            if not may_wait(state.waiting, firing_id, limit):
                return False
            self._jobs[job] = replace(state, waiting=joined(state.waiting, firing_id))
            self._deferred.setdefault(deferred.key, deferred)
            return True


class _Schedules:
    """The runtime schedules' definitions (and the deferred firing a tick moves on), on the
    memory store's dicts."""

    _schedules: dict[str, Definition]
    _deferred: dict[str, Deferred]

    def _operation(self) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def advance_schedule(self, done: Deferred, following: Deferred | None) -> bool:
        with self._operation():
            written = advanced(self._schedules.get(done.firing.job), done, following)
            if self._deferred.pop(done.key, None) is None or written is None:
                return False
            self._schedules[written.name] = written
            if following is not None:
                self._deferred.setdefault(following.key, following)
            return True

    def create_schedule(self, definition: Definition) -> bool:
        with self._operation():
            found = self._schedules.get(definition.name)
            if found is not None and found.live:
                return False
            self._schedules[definition.name] = definition
            return True

    def create_schedules(self, definitions: Sequence[Definition]) -> list[bool | StoreError]:
        return created_each(self.create_schedule, definitions)

    def schedule(self, name: str) -> Definition | None:
        with self._operation():
            return self._schedules.get(name)

    def schedules(self) -> Sequence[Definition]:
        with self._operation():
            return [found for _, found in sorted(self._schedules.items()) if found.live]

    def definitions(self) -> Sequence[Definition]:
        with self._operation():
            return [found for _, found in sorted(self._schedules.items())]

    def carry_schedule(self, definition: Definition, over: Definition | None) -> bool:
        with self._operation():
            if self._schedules.get(definition.name) != over:
                return False
            self._schedules[definition.name] = definition
            return True

    def delete_schedule(
        self, name: str, generation: str, *, operator: str, now: datetime
    ) -> Definition | None:
        with self._operation():
            found = self._schedules.get(name)
            if found is None or not found.live or found.generation != generation:
                return None
            self._schedules[name] = found.retired(operator=operator, now=now)
            return found


class _Places:
    """The places under caps (:mod:`.places`): each cap's holders and their leases, taken and
    given back under the store's lock; a place held by no open run past its lease is released
    by the claim the cap refuses, as every store does."""

    _places: dict[str, dict[str, datetime]]

    def _operation(self) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def _read_run(self, firing: Firing) -> RunRecord | None:
        raise NotImplementedError

    def holders(self, key: str) -> Mapping[str, datetime]:
        with self._operation():
            return dict(self._places.get(key, {}))

    def _may_take_all(self, firing_id: str, places: Sequence[Place], now: datetime) -> bool:
        """Whether each cap has a place for ``firing_id`` (its stale places released first)."""
        for place in places:
            holders = self._places.setdefault(place.key, {})
            if may_take(holders, firing_id, place.limit):
                continue
            runs = {fid: self._read_run(firing_from_id(fid)) for fid in past_lease(holders, now)}
            for held_by, _, why in stale(holders, runs, now):
                holders.pop(held_by, None)
                log_released(place.key, held_by, why)
            if not may_take(holders, firing_id, place.limit):
                return False
        return True

    def _take_all(self, firing_id: str, places: Sequence[Place], lease: datetime) -> None:
        for place in places:
            self._places.setdefault(place.key, {}).setdefault(firing_id, lease)

    def _take_place(self, key: str, firing_id: str, limit: int, now: datetime) -> bool:
        if not self._may_take_all(firing_id, [Place(key, limit)], now):
            return False
        self._take_all(firing_id, [Place(key, limit)], now)
        return True

    def _release_place(self, key: str, firing_id: str) -> None:
        self._places.get(key, {}).pop(firing_id, None)


class MemoryClaimStore(_Waiting, _Schedules, _Places, RunEnds):
    """Every operation under one lock, counted in :attr:`calls`; the ends are :class:`.RunEnds`',
    over this store's records (a change decided on a run as read is tried once: under the lock,
    nothing changes it meanwhile)."""

    def __init__(self) -> None:
        self.name = "memory"
        self._lock = threading.Lock()
        self._runs: dict[tuple[str, str], RunRecord] = {}
        self._jobs: dict[str, JobState] = {}
        self._watermarks: dict[str, datetime] = {}
        self._paused: dict[str, Pause] = {}
        self._resumed: dict[str, Pause] = {}
        self._deferred: dict[str, Deferred] = {}
        self._schedules: dict[str, Definition] = {}
        self._places: dict[str, dict[str, datetime]] = {}
        self.calls = 0

    def restore(
        self,
        *,
        runs: Iterable[RunRecord] = (),
        jobs: Iterable[JobState] = (),
        deferred: Iterable[Deferred] = (),
        schedules: Iterable[Definition] = (),
        places: Mapping[str, Mapping[str, datetime]] | None = None,
    ) -> None:
        """Hold these records as another store holds them, unless one is held already under the
        same key (what the store has since written stays): the predicting store's copy of what
        it read from the real one."""
        with self._lock:
            for run in runs:
                self._runs.setdefault(self._key(firing_from_id(run.firing_id)), run)
            for state in jobs:
                self._jobs.setdefault(state.job, state)
            for item in deferred:
                self._deferred.setdefault(item.key, item)
            for definition in schedules:
                self._schedules.setdefault(definition.name, definition)
            for cap, holders in (places or {}).items():
                self._places.setdefault(cap, dict(holders))

    @staticmethod
    def _key(firing: Firing) -> tuple[str, str]:
        return firing.job, firing.sort_key

    def _put_new(self, firing: Firing, run: Mapping[str, Any]) -> bool:
        """Store a new run unless its firing has a record (the fields a record does not hold,
        the claim token and the open marker, are the other stores')."""
        key = self._key(firing)
        if key in self._runs:
            return False
        self._runs[key] = RunRecord(**{k: v for k, v in run.items() if k in _ATTRIBUTES})
        return True

    def _write(self, firing: Firing, write: Write) -> tuple[RunRecord, RunRecord] | None:
        """Apply ``write`` to the run if it meets the write's expectation: (before, after)."""
        key = self._key(firing)
        before = self._runs.get(key)
        if before is None or not write.expect.holds(before):
            return None
        self._runs[key] = after = applied(before, write)
        return before, after

    def _write_job(self, job: str, write: Write) -> bool:
        state = self._jobs.get(job) or JobState(job)
        if not write.expect.holds(state):
            return False
        self._jobs[job] = applied(state, copy.deepcopy(write))
        return True

    # -- the primitives of the ends (:mod:`.ends`) -------------------------------------------

    @contextlib.contextmanager
    def _operation(self) -> Iterator[None]:
        """Each operation holds the lock, and counts as one call."""
        with self._lock:
            self.calls += 1
            yield

    def _read_run(self, firing: Firing) -> RunRecord | None:
        return self._runs.get(self._key(firing))

    def _end_run(self, firing: Firing, write: Write) -> RunRecord | None:
        done = self._write(firing, write)
        return done[0] if done is not None else None

    def _rewrite_run(self, firing: Firing, write: Write) -> bool:
        return self._write(firing, write) is not None

    def _insert_run(self, firing: Firing, run: Mapping[str, Any], operation: str) -> bool:
        return self._put_new(firing, run)

    def _follow_run(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        self._write_job(firing.job, job_follows(firing.id, after))

    def _release_slot(self, firing: Firing, release: Write) -> None:
        self._write_job(firing.job, release)

    def _take_back_slot(self, firing: Firing, take: Write, after: RunRecord) -> bool:
        return self._write_job(firing.job, take)

    # -- claims and marks --------------------------------------------------------------------

    def claim(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
        exclusive: bool = False,
        over_skipped: bool = False,
        places: Sequence[Place] = (),
        start: JobStart | None = None,
    ) -> ClaimResult:
        with self._operation():
            key = self._key(firing)
            found = self._runs.get(key)
            over = found if found is not None and replaces(over_skipped, found) else None
            if found is not None and over is None:
                return ClaimResult.LOST
            if places and not self._may_take_all(firing.id, places, now):
                return ClaimResult.OVERLAP
            if exclusive and not self._write_job(firing.job, take_slot(firing.id)):
                return ClaimResult.OVERLAP
            self._take_all(firing.id, places, lease_until)
            run = claimed(
                firing,
                now=now,
                lease_until=lease_until,
                origin=origin,
                exclusive=exclusive,
                over=over,
                places=held(places),
                start=start,
            )
            self._runs.pop(key, None)  # the skip a backfill's claim replaces (under the lock)
            self._put_new(firing, run)
            return ClaimResult.WON

    def claim_many(
        self,
        claims: Sequence[ClaimRequest],
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
    ) -> list[ClaimOutcome]:
        return [
            self.claim(
                c.firing,
                now=now,
                lease_until=lease_until,
                origin=origin,
                exclusive=c.exclusive,
                over_skipped=c.over_skipped,
                places=c.places,
                start=c.start,
            )
            for c in claims
        ]

    def watch(self, firing_ids: Sequence[str], at: datetime) -> None:
        """Nothing to do: ``due_runs`` looks at every run."""

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        with self._operation():
            write = taken_over(run, now=now, lease_until=lease_until, origin=origin)
            return (
                write is not None and self._write(firing_from_id(run.firing_id), write) is not None
            )

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        self.mark_many([MarkRequest(firing, deadline, start)], now=now)

    def mark_many(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        for m in marks:
            with self._operation():
                done = self._write(m.firing, marked(m, now=now))
                run = None if done else self._runs.get(self._key(m.firing))
                if done or (run is not None and not run.status.open):
                    # a closed run's end (not CLAIMED any more) goes to the job's latest state
                    self._write_job(m.firing.job, job_marked(m, now=now, ended=run))
        return [None] * len(marks)

    def due_runs(
        self, now: datetime, limit: int = 1000, *, settle: bool = False
    ) -> Sequence[RunRecord]:
        with self._operation():
            due = [
                r
                for r in self._runs.values()
                if r.status.open and r.deadline is not None and r.deadline <= now
            ]
        due.sort(key=lambda r: r.deadline or now)
        return due[:limit]

    def run(self, firing_id: str) -> RunRecord | None:
        with self._operation():
            return self._runs.get(self._key(firing_from_id(firing_id)))

    def history(self, job: str, limit: int = 20, before: str | None = None) -> Sequence[RunRecord]:
        cursor = history_cursor(before)
        with self._operation():
            keys = sorted(
                (k for k in self._runs if k[0] == job and (cursor is None or k[1] < cursor)),
                reverse=True,
            )[:limit]
            return [self._runs[k] for k in keys]

    def job_state(self, job: str) -> JobState | None:
        with self._operation():
            return self._jobs.get(job)

    def latest_runs(self, named: Mapping[str, Sequence[str]]) -> dict[str, Latest]:
        named_firings(named)
        with self._operation():
            return {job: Latest(self._jobs.get(job), exact=True) for job in named}

    def control(self, scope: str) -> Control:
        with self._operation():
            return Control(
                self._watermarks.get(scope),
                dict(self._paused),
                dict(self._watermarks),
                dict(self._resumed),
            )

    def advance_watermark(self, scope: str, to: datetime) -> None:
        with self._operation():
            current = self._watermarks.get(scope)
            if current is None or current < to:
                self._watermarks[scope] = to

    def set_paused(self, job: str, paused: bool, *, operator: str, now: datetime) -> None:
        with self._operation():
            (self._paused if paused else self._resumed)[job] = Pause(job, operator, now)
            (self._resumed if paused else self._paused).pop(job, None)

    def defer(self, deferred: Sequence[Deferred]) -> None:
        with self._operation():
            for item in deferred:
                self._deferred.setdefault(item.key, item)

    def due_deferred(self, until: datetime, limit: int = 1000) -> Sequence[Deferred]:
        with self._operation():
            due = sorted((k, d) for k, d in self._deferred.items() if d.due < until)
            return [item for _, item in due[:limit]]

    def pending_deferred(self, reason: str) -> Sequence[Deferred]:
        with self._operation():
            found = sorted((k, d) for k, d in self._deferred.items() if d.reason == reason)
            return [item for _, item in found]
