"""The claim store: claims, run records, each job's latest state, pauses and watermarks.

The contract is written once, here; every backend (DynamoDB, MongoDB, memory) honours it and the
contract test suite holds each to it.

* ``claim`` is the decision: one conditional write keyed by the firing id. Exactly one caller
  wins a firing however many race for it; nothing is read back.
* A run record moves CLAIMED -> DISPATCHED -> SUCCEEDED | FAILED | TIMED_OUT, or is written
  SKIPPED once; a record that exists is never overwritten by a claim or a skip.
* While a run is open (CLAIMED or DISPATCHED) it carries a deadline: the claim's lease, then
  the job's timeout. ``due_runs`` lists the open runs past their deadline (the sweep).
* An exclusive claim (``overlap: skip``) also takes the job's open slot; the slot is released
  when the run closes, fails or times out, so a lost completion event cannot block the job.
* Watermarks only move forward.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from mini_scheduler.model import Firing, RunStatus


class ClaimResult(StrEnum):
    WON = "won"
    LOST = "lost"  # a peer holds the claim (or the firing was already recorded)
    OVERLAP = "overlap"  # exclusive claim refused: the job's previous run is still open


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One firing's record, as the history shows it."""

    firing_id: str
    job: str
    scheduled_time: str
    status: RunStatus
    origin: str | None = None
    claimed_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    deadline: datetime | None = None
    error: str | None = None
    reason: str | None = None
    operator: str | None = None
    manual: bool = False
    parameters: Mapping[str, Any] | None = None
    exclusive: bool = False
    skipped_until: str | None = None  # a skipped range: the last firing it covers
    skipped_count: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "firingId": self.firing_id,
            "job": self.job,
            "scheduledTime": self.scheduled_time,
            "status": str(self.status),
        }
        for key, value in (
            ("origin", self.origin),
            ("claimedAt", self.claimed_at),
            ("startedAt", self.started_at),
            ("endedAt", self.ended_at),
            ("deadline", self.deadline),
            ("error", self.error),
            ("reason", self.reason),
            ("operator", self.operator),
            ("skippedUntil", self.skipped_until),
            ("skippedCount", self.skipped_count),
        ):
            if value is not None:
                out[key] = (
                    value.isoformat().replace("+00:00", "Z")
                    if isinstance(value, datetime)
                    else value
                )
        if self.manual:
            out["manual"] = True
        if self.parameters is not None:
            out["parameters"] = dict(self.parameters)
        return out


@dataclass(frozen=True, slots=True)
class JobStart:
    """What a dispatch writes to the job's latest state (seed 000's ``start``)."""

    service: str
    schedule: str  # "<statement> @<zone>"
    parameters: Mapping[str, Any]  # the job's parameters plus "_origin"


@dataclass(frozen=True, slots=True)
class JobState:
    """One record per job: its latest run (seed 000's job state) and whether it is paused."""

    job: str
    service: str | None = None
    schedule: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    start: datetime | None = None
    end: datetime | None = None
    last_firing_id: str | None = None
    last_status: RunStatus | None = None
    open_firing: str | None = None


Instant = Callable[[Any], datetime | None]
"""How a store reads back a time it wrote (None for a missing or unreadable one)."""


def run_record_from(firing_id: str, fields: Mapping[str, Any], instant: Instant) -> RunRecord:
    """A run record from a store's fields: every store writes the same (camelCase) names."""
    return RunRecord(
        firing_id=firing_id,
        job=str(fields["job"]),
        scheduled_time=str(fields["scheduledTime"]),
        status=RunStatus(fields["status"]),
        origin=fields.get("origin"),
        claimed_at=instant(fields.get("claimedAt")),
        started_at=instant(fields.get("startedAt")),
        ended_at=instant(fields.get("endedAt")),
        deadline=instant(fields.get("deadline")),
        error=fields.get("error"),
        reason=fields.get("reason"),
        operator=fields.get("operator"),
        manual=bool(fields.get("manual", False)),
        parameters=fields.get("parameters"),
        exclusive=bool(fields.get("exclusive", False)),
        skipped_until=fields.get("skippedUntil"),
        skipped_count=fields.get("skippedCount"),
    )


def job_state_from(job: str, fields: Mapping[str, Any], instant: Instant) -> JobState:
    """A job's latest state from a store's fields (the same names in every store)."""
    status = fields.get("lastStatus")
    return JobState(
        job=job,
        service=fields.get("service"),
        schedule=fields.get("schedule"),
        parameters=fields.get("parameters") or {},
        start=instant(fields.get("start")),
        end=instant(fields.get("end")),
        last_firing_id=fields.get("lastFiringId"),
        last_status=RunStatus(status) if status else None,
        open_firing=fields.get("openFiring"),
    )


@dataclass(frozen=True, slots=True)
class Pause:
    job: str
    operator: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Control:
    """What a tick reads once: its watermark, every watermark of the table (scope -> end of
    the last window handled; shards and regions), and the paused jobs."""

    watermark: datetime | None
    paused: Mapping[str, Pause]
    watermarks: Mapping[str, datetime] = field(default_factory=dict)


class ClaimStore(Protocol):
    """Where claims and run records live (DynamoDB by default; MongoDB; memory for tests)."""

    name: str

    def claim(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
        exclusive: bool = False,
    ) -> ClaimResult:
        """Claim ``firing`` in one conditional write: WON for exactly one caller. With
        ``exclusive`` the job's open slot must be free as well (else OVERLAP, nothing written).
        Raises StoreError when the store cannot answer (after retries)."""
        ...

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        """Take over a CLAIMED run whose lease has passed (the claimer died before dispatching):
        one conditional update on the claim as ``run`` saw it; True for exactly one caller."""
        ...

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        """The target accepted the firing: the run becomes DISPATCHED with the job's timeout as
        its deadline, and the job's latest state records the start."""
        ...

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        """The dispatch failed for good: the run becomes FAILED with the error."""
        ...

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        """Record a SKIPPED firing unless it already has a record (False then)."""
        ...

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
    ) -> bool | None:
        """One SKIPPED record for ``count`` firings of ``job`` from ``first`` to ``last``, keyed
        by the first. False when the first firing already has a record (nothing written: the
        caller starts the range at the next firing); None from a store that cannot tell."""
        ...

    def close(
        self, firing_id: str, status: RunStatus, *, now: datetime, error: str | None = None
    ) -> RunRecord | None:
        """Close an open (or timed-out) run with its final status and update the job's latest
        state; answer the run as it was before, or None when the firing is unknown or the run
        has already ended (a duplicate completion event)."""
        ...

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        """Mark a DISPATCHED run past its deadline TIMED_OUT (conditional; True if done)."""
        ...

    def due_runs(self, now: datetime, limit: int = 1000) -> Sequence[RunRecord]:
        """Open runs whose deadline has passed, oldest deadline first (the sweep)."""
        ...

    def run(self, firing_id: str) -> RunRecord | None:
        """One run record."""
        ...

    def history(self, job: str, limit: int = 20) -> Sequence[RunRecord]:
        """The job's runs, newest first, without a scan."""
        ...

    def job_state(self, job: str) -> JobState | None: ...

    def control(self, scope: str) -> Control:
        """The watermark of ``scope`` (region/environment[/shard]) and the paused jobs, read
        consistently in one request."""
        ...

    def advance_watermark(self, scope: str, to: datetime) -> None:
        """Move the watermark of ``scope`` to ``to``, never backwards."""
        ...

    def set_paused(self, job: str, paused: bool, *, operator: str, now: datetime) -> None: ...
