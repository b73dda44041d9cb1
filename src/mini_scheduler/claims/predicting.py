"""A claim store that answers every write as the real store would, and writes nothing to it.

The dry run of a tick (``mini-scheduler tick``) is the tick itself run on this store. What a
write touches (a firing's run record, a job's state and slot, the watermarks and pauses, the due
runs and deferred firings) is read from the real store the first time, into a
:class:`~.memory.MemoryClaimStore`; from then on the memory store holds it, applies every write
to it, and answers: a conditional write is decided on the state as read, then as this dry run
changed it, by the memory store's rules, which the contract suite holds every backend to. So a
later read in the same dry run sees the earlier writes, as it would on the real store, and the
real store is only ever read (its sweep read without ``settle``).

Every write asked is noted in :attr:`PredictingClaimStore.writes` with its answer: the dry run's
report is made of them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from mini_scheduler.claims.base import (
    BUFFER,
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    ClaimStore,
    Control,
    Deferred,
    MarkRequest,
)
from mini_scheduler.claims.definitions import created_each
from mini_scheduler.claims.ends import Skip, Skips
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.oneby import FromJobStates, OneByOne
from mini_scheduler.claims.records import Definition, JobState, Redrive, RunRecord
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus, job_of


@dataclass(frozen=True, slots=True)
class Written:
    """One write the store was asked for: its kind (the protocol method's name), the firing
    or job it is about, what it was asked (``detail``) and how it was answered."""

    kind: str
    about: str
    answer: Any = None
    detail: dict[str, Any] = field(default_factory=dict)


class _Waiting:
    """The buffered firings' writes (:meth:`.base.ClaimStore.buffer`), decided by the memory
    store on the job's state as read."""

    _lock: threading.RLock
    _memory: MemoryClaimStore
    _gone: set[str]

    def _job(self, job: str) -> None:
        raise NotImplementedError

    def _note(self, kind: str, about: str, answer: Any = None, **detail: Any) -> None:
        raise NotImplementedError

    def drop_deferred(self, deferred: Sequence[Deferred]) -> None:
        with self._lock:
            for item in deferred:
                if item.reason == BUFFER:  # its place among the job's waiting firings goes
                    self._job(item.firing.job)
                self._gone.add(item.key)
                self._note("drop_deferred", item.firing.id, item)
            self._memory.drop_deferred(deferred)

    def buffer(self, deferred: Deferred, limit: int) -> bool:
        with self._lock:
            self._job(deferred.firing.job)
            self._gone.discard(deferred.key)
            waits = self._memory.buffer(deferred, limit)
            self._note("buffer", deferred.firing.id, waits, item=deferred, limit=limit)
            return waits


class _Schedules:
    """The runtime schedules' definitions, read once from the real store and written to the
    memory store's copy."""

    _lock: threading.RLock
    _memory: MemoryClaimStore
    _real: ClaimStore
    _names: set[str]

    def _note(self, kind: str, about: str, answer: Any = None, **detail: Any) -> None:
        raise NotImplementedError

    def _schedule(self, name: str) -> None:
        if name not in self._names:
            self._names.add(name)
            found = self._real.schedule(name)
            if found is not None:
                self._memory.restore(schedules=[found])

    def schedule(self, name: str) -> Definition | None:
        with self._lock:
            self._schedule(name)
            return self._memory.schedule(name)

    def schedules(self) -> Sequence[Definition]:
        with self._lock:
            for definition in self._real.schedules():
                if definition.name not in self._names:
                    self._names.add(definition.name)
                    self._memory.restore(schedules=[definition])
            return self._memory.schedules()

    def definitions(self) -> Sequence[Definition]:
        with self._lock:
            for definition in self._real.definitions():
                if definition.name not in self._names:
                    self._names.add(definition.name)
                    self._memory.restore(schedules=[definition])
            return self._memory.definitions()

    def create_schedule(self, definition: Definition) -> bool:
        with self._lock:
            self._schedule(definition.name)
            made = self._memory.create_schedule(definition)
            self._note("create_schedule", definition.name, made, definition=definition)
            return made

    def create_schedules(self, definitions: Sequence[Definition]) -> list[bool | StoreError]:
        return created_each(self.create_schedule, definitions)

    def carry_schedule(self, definition: Definition, over: Definition | None) -> bool:
        with self._lock:
            self._schedule(definition.name)
            carried = self._memory.carry_schedule(definition, over)
            self._note("carry_schedule", definition.name, carried, definition=definition)
            return carried

    def delete_schedule(
        self, name: str, generation: str, *, operator: str, now: datetime
    ) -> Definition | None:
        with self._lock:
            self._schedule(name)
            found = self._memory.delete_schedule(name, generation, operator=operator, now=now)
            self._note("delete_schedule", name, found is not None, operator=operator)
            return found


class _Caps:
    """The places under caps (:mod:`.places`): a cap's holders, and the runs that hold them,
    read once from the real store; taken and given back by the memory store's rules."""

    _lock: threading.RLock
    _memory: MemoryClaimStore
    _real: ClaimStore
    _caps: set[str]

    def _run(self, firing_id: str) -> None:
        raise NotImplementedError

    def _cap(self, key: str) -> None:
        if key in self._caps:
            return
        self._caps.add(key)
        holders = self._real.holders(key)
        self._memory.restore(places={key: holders})
        for firing_id in holders:  # a claim the cap refuses reads them (a stale place)
            self._run(firing_id)

    def holders(self, key: str) -> Mapping[str, datetime]:
        with self._lock:
            self._cap(key)
            return self._memory.holders(key)


class PredictingClaimStore(_Waiting, _Schedules, _Caps, OneByOne, FromJobStates, Skips):
    """``real`` as it would be after the writes asked of this store, none of them made."""

    def __init__(self, real: ClaimStore) -> None:
        self.name = real.name
        self._real = real
        self._memory = MemoryClaimStore()
        self._lock = threading.RLock()
        self._runs: set[str] = set()  # firing ids read from the real store
        self._jobs: set[str] = set()
        self._scopes: set[str] = set()  # watermarks read
        self._paused_read = False
        self._claimed: set[str] = set()  # firing ids whose run this store created
        self._gone: set[str] = set()  # deferred firings dropped here
        self._names: set[str] = set()  # runtime schedules' definitions read
        self._caps: set[str] = set()  # caps whose holders were read
        self.writes: list[Written] = []

    # -- what a write touches, read once from the real store ---------------------------------

    def _run(self, firing_id: str) -> None:
        if firing_id not in self._runs:
            self._runs.add(firing_id)
            found = self._real.run(firing_id)
            if found is not None:
                self._restore(found)

    def _restore(self, run: RunRecord) -> None:
        """Hold ``run`` as read, and the caps it holds a place under (its end gives it back)."""
        self._runs.add(run.firing_id)
        self._memory.restore(runs=[run])
        for key in run.places or ():
            self._cap(key)

    def _job(self, job: str) -> None:
        if job not in self._jobs:
            self._jobs.add(job)
            state = self._real.job_state(job)
            if state is not None:
                self._memory.restore(jobs=[state])

    def _control(self, scope: str) -> None:
        if scope in self._scopes:
            return
        self._scopes.add(scope)
        control = self._real.control(scope)
        marks = dict(control.watermarks)
        if control.watermark is not None:
            marks[scope] = control.watermark
        for other, mark in marks.items():  # the real ones trail those moved here, if any
            self._memory.advance_watermark(other, mark)
        if not self._paused_read:
            self._paused_read = True
            for pause in control.paused.values():
                self._memory.set_paused(pause.job, True, operator=pause.operator, now=pause.at)

    def _deferred(self, items: Sequence[Deferred]) -> None:
        self._memory.restore(deferred=[item for item in items if item.key not in self._gone])

    def _note(self, kind: str, about: str, answer: Any = None, **detail: Any) -> None:
        self.writes.append(Written(kind, about, answer, detail))

    # -- reads -------------------------------------------------------------------------------

    def run(self, firing_id: str) -> RunRecord | None:
        with self._lock:
            self._run(firing_id)
            return self._memory.run(firing_id)

    def job_state(self, job: str) -> JobState | None:
        with self._lock:
            self._job(job)
            return self._memory.job_state(job)

    def control(self, scope: str) -> Control:
        with self._lock:
            self._control(scope)
            return self._memory.control(scope)

    def due_runs(
        self, now: datetime, limit: int = 1000, *, settle: bool = False
    ) -> Sequence[RunRecord]:
        """The real store's answer (never settled: that is a write), each run as this store
        holds it now, and the runs claimed here that are due."""
        with self._lock:
            found = self._real.due_runs(now, limit)
            for run in found:
                if run.firing_id not in self._runs:
                    self._restore(run)
            ids = {run.firing_id for run in found} | self._claimed
            return [r for r in self._memory.due_runs(now, limit) if r.firing_id in ids]

    def history(self, job: str, limit: int = 20, before: str | None = None) -> Sequence[RunRecord]:
        with self._lock:
            for run in self._real.history(job, limit, before):
                if run.firing_id not in self._runs:
                    self._restore(run)
            return self._memory.history(job, limit, before)

    def due_deferred(self, until: datetime, limit: int = 1000) -> Sequence[Deferred]:
        with self._lock:
            self._deferred(self._real.due_deferred(until, limit))
            return self._memory.due_deferred(until, limit)

    def pending_deferred(self, reason: str) -> Sequence[Deferred]:
        with self._lock:
            self._deferred(self._real.pending_deferred(reason))
            return self._memory.pending_deferred(reason)

    # -- writes: decided by the memory store on what was read --------------------------------

    def claim_many(
        self,
        claims: Sequence[ClaimRequest],
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
    ) -> list[ClaimOutcome]:
        with self._lock:
            for c in claims:
                self._run(c.firing.id)
                if c.exclusive:
                    self._job(c.firing.job)
                for place in c.places:
                    self._cap(place.key)
            outcomes = self._memory.claim_many(
                claims, now=now, lease_until=lease_until, origin=origin
            )
            for c, outcome in zip(claims, outcomes, strict=True):
                if outcome is ClaimResult.WON:
                    self._claimed.add(c.firing.id)
                self._note("claim", c.firing.id, outcome)
            return outcomes

    def watch(self, firing_ids: Sequence[str], at: datetime) -> None:
        with self._lock:
            for firing_id in firing_ids:
                self._note("watch", firing_id, at=at)

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        with self._lock:
            self._run(run.firing_id)
            done = self._memory.take_over(run, now=now, lease_until=lease_until, origin=origin)
            self._note("take_over", run.firing_id, done)
            return done

    def mark_many(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        with self._lock:
            for mark in marks:
                self._run(mark.firing.id)
                self._job(mark.firing.job)
                self._note("mark", mark.firing.id)
            return self._memory.mark_many(marks, now=now)

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        with self._lock:
            self._run(firing.id)
            self._job(firing.job)
            self._memory.fail(firing, now=now, error=error)
            self._note("fail", firing.id, error=error)

    def _skip(self, skip: Skip) -> bool:
        """``record_skipped`` and ``record_skipped_range`` (:class:`.ends.Skips`)."""
        firing, now, reason, origin = skip.firing, skip.now, skip.reason, skip.origin
        with self._lock:
            self._run(firing.id)
            if skip.until is None or skip.count is None:
                written = self._memory.record_skipped(firing, now=now, reason=reason, origin=origin)
                self._note("record_skipped", firing.id, written, reason=reason)
                return written
            first, last, count = firing.scheduled, skip.until, skip.count
            written = self._memory.record_skipped_range(
                firing.job, first, last, count, now=now, reason=reason, origin=origin
            )
            self._note(
                "record_skipped_range",
                firing.id,
                written,
                job=firing.job,
                first=first,
                last=last,
                count=count,
                reason=reason,
            )
            return written

    def close(
        self,
        firing_id: str,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None = None,
        redrive: Redrive | None = None,
    ) -> RunRecord | None:
        with self._lock:
            self._run(firing_id)
            self._job(job_of(firing_id))
            before = self._memory.close(firing_id, status, now=now, error=error, redrive=redrive)
            self._note("close", firing_id, before, status=status)
            return before

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        with self._lock:
            self._run(firing_id)
            self._job(job_of(firing_id))
            before = self._memory.redrive(firing_id, redrive)
            self._note("redrive", firing_id, before)
            return before

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        with self._lock:
            self._run(run.firing_id)
            self._job(run.job)
            done = self._memory.time_out(run, now=now)
            self._note("time_out", run.firing_id, done)
            return done

    def advance_watermark(self, scope: str, to: datetime) -> None:
        with self._lock:
            self._control(scope)
            self._memory.advance_watermark(scope, to)
            self._note("advance_watermark", scope, to)

    def set_paused(self, job: str, paused: bool, *, operator: str, now: datetime) -> None:
        with self._lock:
            self._control(next(iter(self._scopes), ""))
            self._memory.set_paused(job, paused, operator=operator, now=now)
            self._note("set_paused", job, paused, operator=operator)

    def defer(self, deferred: Sequence[Deferred]) -> None:
        with self._lock:
            for item in deferred:
                self._gone.discard(item.key)
                self._note("defer", item.firing.id, item)
            self._memory.defer(deferred)

    def advance_schedule(self, done: Deferred, following: Deferred | None) -> bool:
        with self._lock:
            if done.key not in self._gone:  # is it stored? the real store's read says
                self._deferred(self._real.due_deferred(done.due + timedelta(milliseconds=1)))
            self._schedule(done.firing.job)
            moved = self._memory.advance_schedule(done, following)
            self._gone.add(done.key)  # moved on, or forgotten: gone either way
            self._note("advance_schedule", done.firing.id, moved, following=following)
            return moved
