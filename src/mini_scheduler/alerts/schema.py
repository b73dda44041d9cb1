"""The published events' details, typed and versioned: what a consumer of ``Job Run Failed`` and
``Job Paused`` gets, and nothing of the scheduler's own bookkeeping.

Each kind is a frozen dataclass whose :meth:`to_detail` is the ``detail`` of its EventBridge
event, with the kind's ``schemaVersion``. Its JSON Schema, and an example event, are
``events/published/`` (``job-run-failed.schema.json``, ``job-paused.schema.json``); the tests
hold the two to each other.

A version is a promise about names and meanings: a field added (optional, or always present)
keeps the version; a field removed or renamed, or one whose meaning or type changes, bumps it.

:meth:`JobRunFailed.from_run` is the one place a run record becomes a detail: the record's
``retry`` (the failure policy, ``pause_after_failures`` and a runtime schedule's entry among it),
its claim's fields and its parameters stay in the store; ``retries`` says what the policy
allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Final

from mini_scheduler.claims.records import RunRecord
from mini_scheduler.instants import iso_seconds
from mini_scheduler.model import RunStatus

PAUSED_BY: Final = "mini-scheduler"
"""The operator a pause after failures is recorded with (``status`` and the history show it)."""

FAILED_STATUSES: Final = (RunStatus.FAILED, RunStatus.TIMED_OUT)


@dataclass(frozen=True, slots=True)
class JobRunFailed:
    """A run failed for good (``Job Run Failed``): no attempt follows it."""

    SCHEMA_VERSION: ClassVar[int] = 1

    job: str
    firing_id: str  # the run's id: ``#<attempt>`` from the second attempt on
    scheduled_time: str
    attempt: int
    retries: int  # the retries its policy allowed: 0 without ``retry``, or for a manual run
    status: RunStatus  # FAILED or TIMED_OUT
    origin: str  # ``<region>/<environment>`` that recorded the failure
    manual: bool = False
    backfill: bool = False
    error: str | None = None
    started_at: datetime | None = None  # None: its dispatch failed, it never started
    ended_at: datetime | None = None
    service: str | None = None  # where it was dispatched
    operator: str | None = None  # a manual run's
    reruns: str | None = None  # a rerun's: the firing id it repeats

    @classmethod
    def from_run(cls, run: RunRecord, origin: str) -> JobRunFailed:
        """The detail of ``run``'s final failure; ``origin`` stands in for a record that kept
        none. Raises ValueError for a run that did not fail."""
        if run.status not in FAILED_STATUSES:
            raise ValueError(f"run {run.firing_id} ended {run.status}: not a failure")
        retry = run.policy.retry if run.policy is not None and not run.manual else None
        return cls(
            job=run.job,
            firing_id=run.firing_id,
            scheduled_time=run.scheduled_time,
            attempt=run.attempt,
            retries=retry.retries if retry is not None else 0,
            status=run.status,
            origin=run.origin or origin,
            manual=run.manual,
            backfill=run.backfill,
            error=run.error,
            started_at=run.started_at,
            ended_at=run.ended_at,
            service=run.service,
            operator=run.operator if run.manual else None,
            reruns=run.reruns,
        )

    def to_detail(self) -> dict[str, Any]:
        """The event's ``detail``: the fields a consumer reads, an absent one unknown."""
        detail: dict[str, Any] = {
            "schemaVersion": self.SCHEMA_VERSION,
            "job": self.job,
            "firingId": self.firing_id,
            "scheduledTime": self.scheduled_time,
            "attempt": self.attempt,
            "retries": self.retries,
            "status": str(self.status),
            "origin": self.origin,
            "manual": self.manual,
            "backfill": self.backfill,
        }
        for key, value in (
            ("error", self.error),
            ("startedAt", self.started_at),
            ("endedAt", self.ended_at),
            ("service", self.service),
            ("operator", self.operator),
            ("reruns", self.reruns),
        ):
            if value is not None:
                detail[key] = iso_seconds(value) if isinstance(value, datetime) else value
        return detail


@dataclass(frozen=True, slots=True)
class JobPaused:
    """The scheduler paused ``job`` at ``at`` (``Job Paused``): ``failures`` final failures in
    a row, the last one of firing ``firing_id``; ``origin`` is the region and environment that
    paused it."""

    SCHEMA_VERSION: ClassVar[int] = 1

    job: str
    failures: int
    firing_id: str
    origin: str
    at: datetime

    def to_detail(self) -> dict[str, Any]:
        return {
            "schemaVersion": self.SCHEMA_VERSION,
            "job": self.job,
            "failures": self.failures,
            "firingId": self.firing_id,
            "origin": self.origin,
            "operator": PAUSED_BY,
            "pausedAt": iso_seconds(self.at),
        }
