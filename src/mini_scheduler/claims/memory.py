"""The claim store in memory, behind one lock: for unit tests, never for production (it is not
shared between processes)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from mini_scheduler.claims.base import (
    ClaimResult,
    Control,
    JobStart,
    JobState,
    Pause,
    Redrive,
    RunRecord,
    after_end,
    after_redrive,
    after_time_out,
    log_slot_held,
)
from mini_scheduler.model import Firing, RunStatus, firing_from_id, iso_seconds


class MemoryClaimStore:
    def __init__(self) -> None:
        self.name = "memory"
        self._lock = threading.Lock()
        self._runs: dict[tuple[str, str], RunRecord] = {}
        self._jobs: dict[str, JobState] = {}
        self._watermarks: dict[str, datetime] = {}
        self._paused: dict[str, Pause] = {}
        self.calls = 0

    @staticmethod
    def _key(firing: Firing) -> tuple[str, str]:
        return firing.job, firing.sort_key

    def _new(self, firing: Firing, status: RunStatus, origin: str, **fields: Any) -> RunRecord:
        return RunRecord(
            firing_id=firing.id,
            job=firing.job,
            scheduled_time=firing.scheduled_time,
            status=status,
            origin=origin,
            manual=firing.manual,
            operator=firing.operator,
            parameters=dict(firing.parameters) if firing.manual else None,
            **fields,
        )

    def claim(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
        exclusive: bool = False,
    ) -> ClaimResult:
        with self._lock:
            self.calls += 1
            key = self._key(firing)
            if key in self._runs:
                return ClaimResult.LOST
            if exclusive:
                state = self._jobs.get(firing.job)
                if state is not None and state.open_firing not in (None, firing.id):
                    return ClaimResult.OVERLAP
                self._jobs[firing.job] = replace(
                    state or JobState(firing.job), open_firing=firing.id
                )
            self._runs[key] = self._new(
                firing,
                RunStatus.CLAIMED,
                origin,
                claimed_at=now,
                deadline=lease_until,
                exclusive=exclusive,
            )
            return ClaimResult.WON

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        with self._lock:
            self.calls += 1
            key = self._key(firing_from_id(run.firing_id))
            current = self._runs.get(key)
            if (
                current is None
                or current.status != RunStatus.CLAIMED
                or current.claimed_at != run.claimed_at
            ):
                return False
            self._runs[key] = replace(current, claimed_at=now, deadline=lease_until, origin=origin)
            return True

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        with self._lock:
            self.calls += 1
            key = self._key(firing)
            current = self._runs.get(key)
            if current is not None and current.status == RunStatus.CLAIMED:
                self._runs[key] = replace(
                    current, status=RunStatus.DISPATCHED, started_at=now, deadline=deadline
                )
            state = self._jobs.get(firing.job) or JobState(firing.job)
            ended = current is not None and not current.status.open
            self._jobs[firing.job] = replace(
                state,
                service=start.service,
                schedule=start.schedule,
                parameters=copy.deepcopy(dict(start.parameters)),
                start=now,
                end=current.ended_at if ended and current else None,
                last_firing_id=firing.id,
                last_status=current.status if ended and current else RunStatus.DISPATCHED,
            )

    def _change(
        self, firing_id: str, decide: Callable[[RunRecord], RunRecord | None]
    ) -> RunRecord | None:
        """Apply ``decide``'s answer to the run and follow it in the job's state and slot:
        the run as it was before, or None (unknown, or nothing to change)."""
        firing = firing_from_id(firing_id)
        key = self._key(firing)
        current = self._runs.get(key)
        after = decide(current) if current is not None else None
        if current is None or after is None:
            return None
        self._runs[key] = after
        state = self._jobs.get(firing.job)
        if state is None:
            return current
        if state.last_firing_id == firing.id:
            state = replace(state, end=after.ended_at, last_status=after.status)
        if current.exclusive and not after.status.open and state.open_firing == firing.id:
            state = replace(state, open_firing=None)
        if current.exclusive and after.status.open and not current.status.open:
            if state.open_firing in (None, firing.id):
                state = replace(state, open_firing=firing.id)
            else:
                log_slot_held(firing.job, firing.id)
        self._jobs[firing.job] = state
        return current

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        def failed(run: RunRecord) -> RunRecord | None:
            if not run.status.open:
                return None
            return replace(run, status=RunStatus.FAILED, ended_at=now, error=error)

        with self._lock:
            self.calls += 1
            self._change(firing.id, failed)

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
            self.calls += 1
            return self._change(
                firing_id,
                lambda run: after_end(run, status, now=now, error=error, redrive=redrive),
            )

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        with self._lock:
            self.calls += 1
            return self._change(firing_id, lambda run: after_redrive(run, redrive))

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        with self._lock:
            self.calls += 1
            return self._change(run.firing_id, lambda r: after_time_out(r, now=now)) is not None

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        with self._lock:
            self.calls += 1
            key = self._key(firing)
            if key in self._runs:
                return False
            self._runs[key] = self._new(
                firing, RunStatus.SKIPPED, origin, ended_at=now, reason=reason
            )
            return True

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
        with self._lock:
            self.calls += 1
            firing = Firing(job, first)
            key = self._key(firing)
            if key in self._runs:
                return False
            self._runs[key] = self._new(
                firing,
                RunStatus.SKIPPED,
                origin,
                ended_at=now,
                reason=reason,
                skipped_until=iso_seconds(last),
                skipped_count=count,
            )
            return True

    def due_runs(self, now: datetime, limit: int = 1000) -> Sequence[RunRecord]:
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

    def history(self, job: str, limit: int = 20) -> Sequence[RunRecord]:
        with self._lock:
            self.calls += 1
            keys = sorted((k for k in self._runs if k[0] == job), reverse=True)[:limit]
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
