"""The claim store: claims, run records, each job's latest state, pauses and watermarks.

The contract is written once, here; every backend (DynamoDB, MongoDB, memory) honours it and the
contract test suite holds each to it.

* ``claim`` is the decision: one conditional write keyed by the firing id. Exactly one caller
  wins a firing however many race for it; nothing is read back.
* A run record moves CLAIMED -> DISPATCHED -> SUCCEEDED | FAILED | TIMED_OUT, or is written
  SKIPPED once; a record that exists is never overwritten by a claim or a skip.
* A run carries a deadline: the claim's lease, then the job's timeout (kept when the run ends).
  ``due_runs`` lists the open runs (CLAIMED or DISPATCHED) past their deadline (the sweep).
* An exclusive claim (``overlap: skip``) also takes the job's open slot; the slot is released
  when the run closes, fails or times out, so a lost completion event cannot block the job. A
  release is conditional on the slot being this run's: an end never frees another run's slot.
* What an end event does to a run that has ended already (a completion after the sweep's
  TIMED_OUT, a Step Functions redrive) is decided by :func:`.transitions.after_end` and
  :func:`.transitions.after_redrive`, the same for every backend; a backend only writes the
  answer, conditionally on the run being as it read it.
* Watermarks only move forward.

The run record's fields and the names they are stored under are :mod:`.records`; what each
operation writes, and on which condition, is :mod:`.transitions`: a backend translates those
writes into its requests and restates neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from mini_scheduler.claims.records import JobStart, JobState, Redrive, RunRecord
from mini_scheduler.model import Firing, RunStatus


class ClaimResult(StrEnum):
    WON = "won"
    LOST = "lost"  # a peer holds the claim (or the firing was already recorded)
    OVERLAP = "overlap"  # exclusive claim refused: the job's previous run is still open


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
        self,
        firing_id: str,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None = None,
        redrive: Redrive | None = None,
    ) -> RunRecord | None:
        """Record a completion event (of the redriven attempt ``redrive``, None for the first)
        as :func:`.transitions.after_end` decides, update the job's latest state and release
        the job's slot if this run holds it; answer the run as it was before, or None when the
        firing is unknown or the event changes nothing (a duplicate, an attempt's end heard
        after a later redrive). An open run's end is one conditional write."""
        ...

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        """Record that Step Functions redrove the run's execution, as
        :func:`.transitions.after_redrive` decides; a reopened exclusive run takes the job's
        slot back only when it is free. Answer the run as it was before, or None (unknown
        firing, nothing changed)."""
        ...

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        """Mark a DISPATCHED run past its deadline TIMED_OUT (conditional; True if done), noting
        ``timed_out_at`` so that its late completion can still be recorded."""
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
