"""The run record and the job's state: their fields and the names every store keeps them under.

* The types: :class:`RunRecord` (one firing's record), :class:`JobState` (a job's latest run and
  its open slot), and what a dispatch and a redrive bring (:class:`JobStart`, :class:`Redrive`).
* The stored names: :data:`RUN_FIELDS`, :data:`JOB_FIELDS` and :data:`END_FIELDS` map each
  logical field (a type's attribute, or a field only the store keeps) to the name every store
  writes. A backend maps the few it keeps elsewhere: DynamoDB's open marker is ``openPk`` (its
  sweep index's key), MongoDB's firing id is the document's ``_id``.
* :func:`run_record_from` and :func:`job_state_from` read them back.

What each claim store operation writes, and which status may follow which, is
:mod:`mini_scheduler.claims.transitions`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from mini_scheduler.jobs.model import FailurePolicy
from mini_scheduler.model import RunStatus, firing_from_id, iso_millis

# -- the types ----------------------------------------------------------------------------------


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
    service: str | None = None  # where it was dispatched (the job's service), from its mark
    schedule: str | None = None  # "<statement> @<zone>" when it was dispatched
    policy: FailurePolicy | None = None  # the job's failure policy when it was dispatched
    backfill: bool = False  # a past firing an operator's backfill ran (:attr:`.Firing.backfill`)
    replaced_skip: Mapping[str, Any] | None = None  # the skip a backfill's claim replaced
    reruns: str | None = None  # a rerun's: the firing id it repeats (:attr:`.Firing.reruns`)
    buffered: bool = False  # its job keeps firings waiting for its end (overlap: buffer_*)
    operator_reason: str | None = None  # a manual run's: why its operator ran it (--reason)
    places: Mapping[str, int] | None = None  # the caps it holds a place under: key -> limit

    @property
    def pause_after(self) -> int | None:
        """``pause_after_failures`` as the run was dispatched with it (None: no pause)."""
        return self.policy.pause_after if self.policy is not None else None

    @property
    def attempt(self) -> int:
        """Which attempt of its firing the run is: 1, or the ``#<n>`` its id ends with."""
        _, marked, number = self.firing_id.rpartition("@")[2].partition("#")
        return int(number) if marked and number.isdigit() else 1

    @property
    def sort_key(self) -> str:
        """Where the job's history sorts the run (its firing's :attr:`.Firing.sort_key`, time
        first): the cursor that pages past it (``ClaimStore.history``'s ``before``)."""
        return firing_from_id(self.firing_id).sort_key

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
            ("service", self.service),
            ("schedule", self.schedule),
            ("reruns", self.reruns),
            ("operatorReason", self.operator_reason),
        ):
            if value is not None:
                out[key] = _iso(value) if isinstance(value, datetime) else value
        if self.earlier_ends:
            out["earlierEnds"] = [end.to_json() for end in self.earlier_ends]
        if self.manual:
            out["manual"] = True
        if self.backfill:
            out["backfill"] = True
        if self.replaced_skip is not None:
            out["replacedSkip"] = dict(self.replaced_skip)
        if self.attempt > 1:
            out["attempt"] = self.attempt
        if self.policy is not None:
            out["retry"] = self.policy.as_record()
        if self.parameters is not None:
            out["parameters"] = dict(self.parameters)
        return out


@dataclass(frozen=True, slots=True)
class JobStart:
    """What a dispatch writes to the job's latest state (seed 000's ``start``)."""

    service: str
    schedule: str  # "<statement> @<zone>"
    parameters: Mapping[str, Any]  # the job's parameters plus "_origin"
    policy: FailurePolicy | None = None  # the job's failure policy, if it has one
    buffered: bool = False  # its job keeps firings waiting for a run's end (overlap: buffer_*)


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
    waiting: tuple[str, ...] = ()  # the buffered firings waiting for the slot (ClaimStore.buffer)


# -- the stored names ---------------------------------------------------------------------------

RUN_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "firing_id": "firingId",
        "job": "job",
        "scheduled_time": "scheduledTime",
        "status": "status",
        "origin": "origin",
        "claimed_at": "claimedAt",
        "started_at": "startedAt",
        "ended_at": "endedAt",
        "deadline": "deadline",
        "error": "error",
        "reason": "reason",
        "operator": "operator",
        "manual": "manual",
        "parameters": "parameters",
        "exclusive": "exclusive",
        "skipped_until": "skippedUntil",
        "skipped_count": "skippedCount",
        "redrives": "redrives",
        "redriven_at": "redrivenAt",
        "timed_out_at": "timedOutAt",
        "earlier_ends": "earlierEnds",  # a list of END_FIELDS maps
        "service": "service",
        "schedule": "schedule",
        "policy": "retry",  # FailurePolicy.as_record
        "backfill": "backfill",
        "replaced_skip": "replacedSkip",  # {reason, until, count}: :func:`.transitions.replaced`
        "reruns": "reruns",
        "buffered": "buffered",  # its end wakes the ticker: a firing may wait for it
        "operator_reason": "operatorReason",
        "places": "places",  # {cap key: limit}: :mod:`.places`
        # kept by the store only
        "claim_token": "claimToken",  # nosec B105 # a field's name, not a password
        "takeovers": "takeovers",  # how many times the claim was taken over
        "expires_at": "expiresAt",  # when the store drops the run (its TTL)
        "open": "open",  # present while the run is open: what the sweep's index holds
    }
)
"""A run record's logical fields and the names they are stored under."""

JOB_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "job": "job",
        "service": "service",
        "schedule": "schedule",
        "parameters": "parameters",
        "start": "start",
        "end": "end",
        "last_firing_id": "lastFiringId",
        "last_status": "lastStatus",
        "open_firing": "openFiring",  # the open slot of ``overlap: skip``: the run holding it
        "open_until": "openUntil",  # the slot's claim's lease, for a slot with no run yet
        "open_over_skip": "openOverSkip",  # taken by a backfill's claim over a SKIPPED record
        "waiting": "waiting",  # the firings ``overlap: buffer_*`` keeps waiting (a set of ids)
    }
)
"""A job state's logical fields and the names they are stored under."""

END_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {"status": "status", "ended_at": "endedAt", "error": "error"}
)
"""An earlier end's fields and their stored names."""

Instant = Callable[[Any], datetime | None]
"""How a store reads back a time it wrote (None for a missing or unreadable one)."""


def run_record_from(
    stored: Mapping[str, Any], instant: Instant, names: Mapping[str, str] = RUN_FIELDS
) -> RunRecord:
    """A run record from a store's item or document, its fields under ``names``."""

    def get(name: str, default: Any = None) -> Any:
        return stored.get(names[name], default)

    return RunRecord(
        firing_id=str(get("firing_id")),
        job=str(get("job")),
        scheduled_time=str(get("scheduled_time")),
        status=RunStatus(get("status")),
        origin=get("origin"),
        claimed_at=instant(get("claimed_at")),
        started_at=instant(get("started_at")),
        ended_at=instant(get("ended_at")),
        deadline=instant(get("deadline")),
        error=get("error"),
        reason=get("reason"),
        operator=get("operator"),
        manual=bool(get("manual", False)),
        parameters=get("parameters"),
        exclusive=bool(get("exclusive", False)),
        skipped_until=get("skipped_until"),
        skipped_count=get("skipped_count"),
        redrives=get("redrives"),
        redriven_at=instant(get("redriven_at")),
        timed_out_at=instant(get("timed_out_at")),
        service=get("service"),
        schedule=get("schedule"),
        policy=FailurePolicy.from_record(get("policy")),
        backfill=bool(get("backfill", False)),
        replaced_skip=get("replaced_skip"),
        reruns=get("reruns"),
        buffered=bool(get("buffered", False)),
        operator_reason=get("operator_reason"),
        places=_places(get("places")),
        earlier_ends=tuple(
            EarlierEnd(
                RunStatus(end[END_FIELDS["status"]]),
                instant(end.get(END_FIELDS["ended_at"])),
                end.get(END_FIELDS["error"]),
            )
            for end in get("earlier_ends") or ()
            if isinstance(end, Mapping) and end.get(END_FIELDS["status"]) in RunStatus.__members__
        ),
    )


def _places(stored: Any) -> dict[str, int] | None:
    """A run's places as stored (a store may give its numbers back as decimals)."""
    if not isinstance(stored, Mapping) or not stored:
        return None
    return {str(key): int(limit) for key, limit in stored.items()}


def job_state_from(
    job: str, stored: Mapping[str, Any], instant: Instant, names: Mapping[str, str] = JOB_FIELDS
) -> JobState:
    """A job's latest state from a store's item or document, its fields under ``names``."""
    status = stored.get(names["last_status"])
    return JobState(
        job=job,
        service=stored.get(names["service"]),
        schedule=stored.get(names["schedule"]),
        parameters=stored.get(names["parameters"]) or {},
        start=instant(stored.get(names["start"])),
        end=instant(stored.get(names["end"])),
        last_firing_id=stored.get(names["last_firing_id"]),
        last_status=RunStatus(status) if status else None,
        open_firing=stored.get(names["open_firing"]),
        waiting=tuple(sorted(stored.get(names["waiting"]) or ())),
    )


def stored_ends(ends: tuple[EarlierEnd, ...], time: Callable[[datetime], Any]) -> list[Any]:
    """Earlier ends as a store keeps them: maps of END_FIELDS, times as ``time`` writes them."""
    return [
        {
            END_FIELDS[name]: value
            for name, value in (
                ("status", str(end.status)),
                ("ended_at", time(end.ended_at) if end.ended_at else None),
                ("error", end.error),
            )
            if value is not None
        }
        for end in ends
    ]


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
