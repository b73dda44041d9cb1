"""How a firing, a run, a pending retry and a job's parameters look in the console's answers
(plain data)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from mini_scheduler.jobs import Job
from mini_scheduler.model import iso_seconds
from mini_scheduler.notes import run_note


def next_second(now: datetime) -> datetime:
    """Where "next" firings begin: the second after ``now`` (a firing at ``now`` is due, not
    next)."""
    return now.astimezone(UTC).replace(microsecond=0) + timedelta(seconds=1)


def firing_times(job: Job, moment: datetime) -> dict[str, Any]:
    """A firing in UTC and in its job's zone."""
    local = moment.astimezone(job.tz)
    return {
        "utc": iso_seconds(moment),
        "local": local.isoformat(),
        "abbreviation": local.tzname(),
        "zone": job.zone,
    }


def _millis(run: Any) -> int | None:
    started = run.started_at or run.claimed_at
    if started is None or run.ended_at is None:
        return None
    return max(0, int((run.ended_at - started).total_seconds() * 1000))


def run_view(run: Any, region: str) -> dict[str, Any]:
    """One run as the page shows it."""
    return {
        "firingId": run.firing_id,
        "job": run.job,
        "region": region,
        "status": str(run.status),
        "scheduled": run.scheduled_time,
        "started": iso_seconds(run.started_at) if run.started_at else None,
        "ended": iso_seconds(run.ended_at) if run.ended_at else None,
        "durationMs": _millis(run),
        "attempt": run.attempt,
        "manual": run.manual,
        "operator": run.operator,
        "backfill": run.backfill,
        "note": run_note(run),
    }


def retry_view(deferred: Any, region: str) -> dict[str, Any]:
    """A run's next attempt waiting in ``region``'s store (a deferred firing for "retry")."""
    firing = deferred.firing
    return {
        "firingId": firing.firing_id,
        "runId": firing.id,
        "attempt": firing.attempt,
        "due": iso_seconds(deferred.due),
        "region": region,
        "writtenAt": iso_seconds(deferred.written_at),
    }


def visible(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters without the keys that start with ``_`` (seed 000's filter)."""
    return {k: v for k, v in parameters.items() if not str(k).startswith("_")}
