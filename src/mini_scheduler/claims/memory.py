"""The claim store in memory, behind one lock: for unit tests, never for production (it is not
shared between processes). It carries out the writes of :mod:`.transitions` on its records: a
write whose expectation holds is applied, as a conditional write would be."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

from mini_scheduler.claims.base import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    Control,
    Deferred,
    MarkRequest,
    Pause,
    history_cursor,
)
from mini_scheduler.claims.definitions import Definition, advanced
from mini_scheduler.claims.records import JobStart, JobState, Redrive, RunRecord
from mini_scheduler.claims.transitions import (
    Write,
    after_end,
    after_redrive,
    applied,
    change_run,
    claimed,
    dispatched,
    ended,
    failed,
    job_follows,
    job_started,
    log_slot_held,
    replaces,
    skipped,
    slot_follows,
    take_slot,
    taken_over,
    timed_out,
)
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus, firing_from_id

_ATTRIBUTES = frozenset(attribute.name for attribute in fields(RunRecord))


class MemoryClaimStore:
    def __init__(self) -> None:
        self.name = "memory"
        self._lock = threading.Lock()
        self._runs: dict[tuple[str, str], RunRecord] = {}
        self._jobs: dict[str, JobState] = {}
        self._watermarks: dict[str, datetime] = {}
        self._paused: dict[str, Pause] = {}
        self._deferred: dict[str, Deferred] = {}
        self._schedules: dict[str, Definition] = {}
        self.calls = 0

    def restore(
        self,
        *,
        runs: Iterable[RunRecord] = (),
        jobs: Iterable[JobState] = (),
        deferred: Iterable[Deferred] = (),
        schedules: Iterable[Definition] = (),
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

    def _follow(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        self._write_job(firing.job, job_follows(firing.id, after))
        slot = slot_follows(firing.id, before, after)
        if slot is not None and not self._write_job(firing.job, slot) and after.status.open:
            log_slot_held(firing.job, firing.id)

    def _finish(self, firing: Firing, write: Write) -> RunRecord | None:
        done = self._write(firing, write)
        if done is None:
            return None
        self._follow(firing, *done)
        return done[0]

    def _change(
        self, firing: Firing, decide: Callable[[RunRecord], RunRecord | None]
    ) -> RunRecord | None:
        def write(change: Write) -> bool:
            return self._write(firing, change) is not None

        done = change_run(lambda: self._runs.get(self._key(firing)), write, decide, 1)
        if done is None:
            return None
        self._follow(firing, *done)
        return done[0]

    def claim(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
        exclusive: bool = False,
        over_skipped: bool = False,
    ) -> ClaimResult:
        with self._lock:
            self.calls += 1
            key = self._key(firing)
            found = self._runs.get(key)
            over = found if found is not None and replaces(over_skipped, found) else None
            if found is not None and over is None:
                return ClaimResult.LOST
            if exclusive and not self._write_job(firing.job, take_slot(firing.id)):
                return ClaimResult.OVERLAP
            run = claimed(
                firing,
                now=now,
                lease_until=lease_until,
                origin=origin,
                exclusive=exclusive,
                over=over,
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
            )
            for c in claims
        ]

    def watch(self, firing_ids: Sequence[str], at: datetime) -> None:
        """Nothing to do: ``due_runs`` looks at every run."""

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        with self._lock:
            self.calls += 1
            write = taken_over(run, now=now, lease_until=lease_until, origin=origin)
            return (
                write is not None and self._write(firing_from_id(run.firing_id), write) is not None
            )

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        with self._lock:
            self.calls += 1
            if self._write(firing, dispatched(now=now, deadline=deadline, start=start)) is not None:
                self._write_job(firing.job, job_started(firing, now=now, start=start, ended=None))
                return
            # Not CLAIMED any more: a closed run's end goes to the job's latest state.
            run = self._runs.get(self._key(firing))
            if run is not None and not run.status.open:
                self._write_job(firing.job, job_started(firing, now=now, start=start, ended=run))

    def mark_many(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        for mark in marks:
            self.mark_dispatched(mark.firing, now=now, deadline=mark.deadline, start=mark.start)
        return [None] * len(marks)

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        with self._lock:
            self.calls += 1
            self._finish(firing, failed(now=now, error=error))

    def close(
        self,
        firing_id: str,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None = None,
        redrive: Redrive | None = None,
    ) -> RunRecord | None:
        firing = firing_from_id(firing_id)
        with self._lock:
            self.calls += 1
            if redrive is None:
                before = self._finish(firing, ended(status, now=now, error=error))
                if before is not None:
                    return before
            return self._change(
                firing, lambda run: after_end(run, status, now=now, error=error, redrive=redrive)
            )

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        with self._lock:
            self.calls += 1
            return self._change(firing_from_id(firing_id), lambda run: after_redrive(run, redrive))

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        with self._lock:
            self.calls += 1
            return self._finish(firing_from_id(run.firing_id), timed_out(now=now)) is not None

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        with self._lock:
            self.calls += 1
            return self._put_new(firing, skipped(firing, now=now, reason=reason, origin=origin))

    def record_skipped_range(
        self,
        job: str,
        first: datetime,
        last: datetime,
        count: int,
        *,
        now: datetime,
        reason: str,
        origin: str,
    ) -> bool:
        firing = Firing(job, first)
        run = skipped(firing, now=now, reason=reason, origin=origin, until=last, count=count)
        with self._lock:
            self.calls += 1
            return self._put_new(firing, run)

    def due_runs(
        self, now: datetime, limit: int = 1000, *, settle: bool = False
    ) -> Sequence[RunRecord]:
        with self._lock:
            self.calls += 1
            due = [
                r
                for r in self._runs.values()
                if r.status.open and r.deadline is not None and r.deadline <= now
            ]
        due.sort(key=lambda r: r.deadline or now)
        return due[:limit]

    def run(self, firing_id: str) -> RunRecord | None:
        with self._lock:
            self.calls += 1
            return self._runs.get(self._key(firing_from_id(firing_id)))

    def history(self, job: str, limit: int = 20, before: str | None = None) -> Sequence[RunRecord]:
        cursor = history_cursor(before)
        with self._lock:
            self.calls += 1
            keys = sorted(
                (k for k in self._runs if k[0] == job and (cursor is None or k[1] < cursor)),
                reverse=True,
            )[:limit]
            return [self._runs[k] for k in keys]

    def job_state(self, job: str) -> JobState | None:
        with self._lock:
            self.calls += 1
            return self._jobs.get(job)

    def control(self, scope: str) -> Control:
        with self._lock:
            self.calls += 1
            return Control(self._watermarks.get(scope), dict(self._paused), dict(self._watermarks))

    def advance_watermark(self, scope: str, to: datetime) -> None:
        with self._lock:
            self.calls += 1
            current = self._watermarks.get(scope)
            if current is None or current < to:
                self._watermarks[scope] = to

    def set_paused(self, job: str, paused: bool, *, operator: str, now: datetime) -> None:
        with self._lock:
            self.calls += 1
            if paused:
                self._paused[job] = Pause(job, operator, now)
            else:
                self._paused.pop(job, None)

    def defer(self, deferred: Sequence[Deferred]) -> None:
        with self._lock:
            self.calls += 1
            for item in deferred:
                self._deferred.setdefault(item.key, item)

    def due_deferred(self, until: datetime, limit: int = 1000) -> Sequence[Deferred]:
        with self._lock:
            self.calls += 1
            due = sorted((k, d) for k, d in self._deferred.items() if d.due < until)
            return [item for _, item in due[:limit]]

    def drop_deferred(self, deferred: Sequence[Deferred]) -> None:
        with self._lock:
            self.calls += 1
            for item in deferred:
                self._deferred.pop(item.key, None)

    def advance_schedule(self, done: Deferred, following: Deferred | None) -> bool:
        with self._lock:
            self.calls += 1
            written = advanced(self._schedules.get(done.firing.job), done, following)
            if self._deferred.pop(done.key, None) is None or written is None:
                return False
            self._schedules[written.name] = written
            if following is not None:
                self._deferred.setdefault(following.key, following)
            return True

    def create_schedule(self, definition: Definition) -> bool:
        with self._lock:
            self.calls += 1
            found = self._schedules.get(definition.name)
            if found is not None and found.live:
                return False
            self._schedules[definition.name] = definition
            return True

    def schedule(self, name: str) -> Definition | None:
        with self._lock:
            self.calls += 1
            return self._schedules.get(name)

    def schedules(self) -> Sequence[Definition]:
        with self._lock:
            self.calls += 1
            return [found for _, found in sorted(self._schedules.items()) if found.live]

    def delete_schedule(
        self, name: str, generation: str, *, operator: str, now: datetime
    ) -> Definition | None:
        with self._lock:
            self.calls += 1
            found = self._schedules.get(name)
            if found is None or not found.live or found.generation != generation:
                return None
            self._schedules[name] = found.retired(operator=operator, now=now)
            return found

    def pending_deferred(self, reason: str) -> Sequence[Deferred]:
        with self._lock:
            self.calls += 1
            found = sorted((k, d) for k, d in self._deferred.items() if d.reason == reason)
            return [item for _, item in found]
