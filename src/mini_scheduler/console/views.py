"""How a firing, a run, a pending retry and a job's parameters look in the console's answers
(plain data)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any

from mini_scheduler.jobs import Job
from mini_scheduler.jobs.spread import planned_after
from mini_scheduler.model import iso_seconds
from mini_scheduler.notes import run_note


def next_second(now: datetime) -> datetime:
    """Where "next" firings begin: the second after ``now`` (a firing at ``now`` is due, not
    next)."""
    return now.astimezone(UTC).replace(microsecond=0) + timedelta(seconds=1)


def firing_times(job: Job, moment: datetime, scheduled: datetime | None = None) -> dict[str, Any]:
    """A firing in UTC and in its job's zone; for a job with ``jitter`` or ``window``,
    ``moment`` is when it starts and ``scheduled`` its own instant (both said)."""
    local = moment.astimezone(job.tz)
    shown: dict[str, Any] = {
        "utc": iso_seconds(moment),
        "local": local.isoformat(),
        "abbreviation": local.tzname(),
        "zone": job.zone,
    }
    if scheduled is not None and job.spread_seconds:
        late = int((moment - scheduled).total_seconds())
        shown |= {"scheduled": iso_seconds(scheduled), "spreadSeconds": late}
    return shown


def upcoming(job: Job, now: datetime, count: int, years: int) -> list[dict[str, Any]]:
    """The job's next ``count`` firings after ``now`` (within ``years``), each when it starts:
    a spread one at its planned instant (:mod:`mini_scheduler.jobs.spread`)."""
    after = next_second(now)
    if job.spread_seconds:
        pairs = planned_after(job, after - timedelta(seconds=1), count)
        return [firing_times(job, start, nominal) for nominal, start in pairs]
    found = islice(job.firings(after, after + timedelta(days=366 * years)), count)
    return [firing_times(job, at) for at in found]


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
