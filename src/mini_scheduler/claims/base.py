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
  TIMED_OUT, a Step Functions redrive) is decided by :func:`after_end` and :func:`after_redrive`
  below, the same for every backend; a backend only writes the answer, conditionally on the run
  being as it read it.
* Watermarks only move forward.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from mini_scheduler.jobs import DEFAULT_FLOW_TIMEOUT
from mini_scheduler.model import Firing, RunStatus

log = logging.getLogger("mini_scheduler.claims")

TIMED_OUT_ERROR = "no completion event before the job's timeout"
EARLIER_ENDS_KEPT = 10
"""How many earlier ends a redriven run keeps: the first, and the latest after it."""


class ClaimResult(StrEnum):
    WON = "won"
    LOST = "lost"  # a peer holds the claim (or the firing was already recorded)
    OVERLAP = "overlap"  # exclusive claim refused: the job's previous run is still open


@dataclass(frozen=True, slots=True)
class Redrive:
    """Step Functions ran the execution again (``redriveCount`` of its status event, 1 or more;
    ``redriveDate``, when the latest redrive began)."""

    count: int
    at: datetime


@dataclass(frozen=True, slots=True)
class EarlierEnd:
    """How a run ended before Step Functions redrove it (kept on the record)."""

    status: RunStatus
    ended_at: datetime | None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": str(self.status)}
        if self.ended_at is not None:
            out["endedAt"] = _iso(self.ended_at)
        if self.error is not None:
            out["error"] = self.error
        return out


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


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
    redrives: int | None = None  # how many times Step Functions redrove its execution
    redriven_at: datetime | None = None  # when the latest redrive began
    timed_out_at: datetime | None = None  # when the sweep marked it TIMED_OUT
    earlier_ends: tuple[EarlierEnd, ...] = ()  # its ends before a redrive, oldest first

    @property
    def swept(self) -> bool:
        """TIMED_OUT by the sweep, and no completion has come since."""
        return (
            self.status is RunStatus.TIMED_OUT
            and self.timed_out_at is not None
            and self.ended_at == self.timed_out_at
        )

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
            ("redrives", self.redrives),
            ("redrivenAt", self.redriven_at),
            ("timedOutAt", self.timed_out_at),
        ):
            if value is not None:
                out[key] = _iso(value) if isinstance(value, datetime) else value
        if self.earlier_ends:
            out["earlierEnds"] = [end.to_json() for end in self.earlier_ends]
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
        redrives=fields.get("redrives"),
        redriven_at=instant(fields.get("redrivenAt")),
        timed_out_at=instant(fields.get("timedOutAt")),
        earlier_ends=tuple(
            EarlierEnd(RunStatus(end["status"]), instant(end.get("endedAt")), end.get("error"))
            for end in fields.get("earlierEnds") or ()
            if isinstance(end, Mapping) and end.get("status") in RunStatus.__members__
        ),
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


# -- ends, late ends and redrives: the rules every backend follows ------------------------------


def after_end(
    run: RunRecord,
    status: RunStatus,
    *,
    now: datetime,
    error: str | None = None,
    redrive: Redrive | None = None,
) -> RunRecord | None:
    """The run after a completion event (``redrive``: the redriven attempt it ends, None for
    the first), or None when the event changes nothing:

    * an open run ends with the event's status;
    * a run the sweep marked TIMED_OUT ends with the event's status and keeps ``timed_out_at``
      (a late completion: the real end, and that it had timed out);
    * a run that ended FAILED or TIMED_OUT ends again when the event comes from a later redrive
      (its RUNNING event was not heard): the earlier end is kept in ``earlier_ends``;
    * anything else is a duplicate, or the end of an attempt before the latest redrive."""
    count, seen = (redrive.count if redrive else 0), (run.redrives or 0)
    if count < seen:
        return None
    ended = replace(run, status=status, ended_at=now, error=error)
    if run.status.open:
        return _redriven(ended, run, redrive) if count > seen and redrive else ended
    if count > seen and redrive and run.status in (RunStatus.FAILED, RunStatus.TIMED_OUT):
        return _redriven(
            replace(ended, earlier_ends=_earlier_ends(run), timed_out_at=None), run, redrive
        )
    if run.swept and count == seen:
        return ended
    return None


def after_redrive(run: RunRecord, redrive: Redrive) -> RunRecord | None:
    """The run after the RUNNING event of a redrive, or None when it changes nothing: a run that
    ended FAILED or TIMED_OUT is DISPATCHED again (its end kept in ``earlier_ends``), with the
    job's timeout counted again from the redrive; an open run only notes the redrive (its
    earlier end was not heard). A redrive already heard, or of a run that succeeded or was
    skipped (Step Functions redrives neither), changes nothing."""
    if redrive.count <= (run.redrives or 0):
        return None
    if run.status.open:
        return _redriven(run, run, redrive)
    if run.status not in (RunStatus.FAILED, RunStatus.TIMED_OUT):
        return None
    reopened = replace(
        run,
        status=RunStatus.DISPATCHED,
        ended_at=None,
        error=None,
        timed_out_at=None,
        earlier_ends=_earlier_ends(run),
    )
    return _redriven(reopened, run, redrive)


def after_time_out(run: RunRecord, *, now: datetime) -> RunRecord | None:
    """The sweep's end of a DISPATCHED run past its deadline (None for any other run)."""
    if run.status is not RunStatus.DISPATCHED or run.deadline is None or run.deadline > now:
        return None
    return replace(
        run, status=RunStatus.TIMED_OUT, ended_at=now, timed_out_at=now, error=TIMED_OUT_ERROR
    )


def _earlier_ends(run: RunRecord) -> tuple[EarlierEnd, ...]:
    ends = (*run.earlier_ends, EarlierEnd(run.status, run.ended_at, run.error))
    return ends if len(ends) <= EARLIER_ENDS_KEPT else (ends[0], *ends[1 - EARLIER_ENDS_KEPT :])


def _redriven(after: RunRecord, before: RunRecord, redrive: Redrive) -> RunRecord:
    """``after`` noting ``redrive``; its deadline is the job's timeout (as the run's deadline
    was set from its start, or from its last redrive) counted from the redrive."""
    base = before.redriven_at or before.started_at
    timeout = timedelta(seconds=DEFAULT_FLOW_TIMEOUT)
    if before.deadline is not None and base is not None and before.deadline > base:
        timeout = before.deadline - base
    try:
        deadline = redrive.at + timeout
    except OverflowError:
        deadline = datetime.max.replace(tzinfo=UTC)
    return replace(after, redrives=redrive.count, redriven_at=redrive.at, deadline=deadline)


def log_slot_held(job: str, firing_id: str) -> None:
    """A redriven exclusive run found the job's slot held by another run."""
    log.warning(
        "Job %s - firing %s redriven while another run holds the job's slot (overlap: skip): "
        "it runs beside that run, and its end leaves that run's slot alone",
        job,
        firing_id,
    )


CHANGEABLE = (
    ("status", "status"),
    ("endedAt", "ended_at"),
    ("error", "error"),
    ("deadline", "deadline"),
    ("redrives", "redrives"),
    ("redrivenAt", "redriven_at"),
    ("timedOutAt", "timed_out_at"),
    ("earlierEnds", "earlier_ends"),
)
"""The stored fields (and RunRecord attributes) an end or a redrive may change."""


def changed_fields(before: RunRecord, after: RunRecord) -> dict[str, Any]:
    """The stored fields ``after`` changes, by their stored names; None: the field goes. Times
    stay datetimes and ``earlierEnds`` a list of ``{status, endedAt, error}`` (each backend
    writes them its way)."""
    changes: dict[str, Any] = {}
    for name, attribute in CHANGEABLE:
        value = getattr(after, attribute)
        if value == getattr(before, attribute):
            continue
        if attribute == "status":
            value = str(value)
        elif attribute == "earlier_ends":
            value = [
                {
                    k: v
                    for k, v in (
                        ("status", str(e.status)),
                        ("endedAt", e.ended_at),
                        ("error", e.error),
                    )
                    if v is not None
                }
                for e in value
            ] or None
        changes[name] = value
    return changes


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
        as :func:`after_end` decides, update the job's latest state and release the job's slot
        if this run holds it; answer the run as it was before, or None when the firing is
        unknown or the event changes nothing (a duplicate, an attempt's end heard after a
        later redrive). An open run's end is one conditional write."""
        ...

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        """Record that Step Functions redrove the run's execution, as :func:`after_redrive`
        decides; a reopened exclusive run takes the job's slot back only when it is free.
        Answer the run as it was before, or None (unknown firing, nothing changed)."""
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
