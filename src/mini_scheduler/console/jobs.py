"""The console's jobs page, as plain data: every job (cron.yaml's of the home region, and each
region's runtime schedules) with its next firings, its last run over every region and its
pauses; one job with its settings; its next firings; the next hours' firings of every job."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.console.regions import Found, Regions
from mini_scheduler.console.sites import Site
from mini_scheduler.console.timeline import row
from mini_scheduler.console.views import firing_times, next_second, visible
from mini_scheduler.console.words import in_words
from mini_scheduler.errors import EventError, SchedulerError, describe_aws_error
from mini_scheduler.jobs import Job
from mini_scheduler.model import iso_seconds

log = logging.getLogger("mini_scheduler.console")

MAX_NEXT: Final = 100  # next firings in one answer
MAX_HOURS: Final = 24 * 7  # the longest timeline window


def jobs(regions: Regions) -> dict[str, Any]:
    """Every job (``GET /api/schedule``)."""
    now = regions.clock.now().astimezone(UTC)
    pauses = _pauses(regions)
    listed = regions.map(lambda f: _summary(regions, f, pauses, now), regions.jobs())
    return {"now": iso_seconds(now), "jobs": listed}


def job(regions: Regions, name: str) -> dict[str, Any]:
    """One job with its settings; its parameters without ``_`` keys."""
    now = regions.clock.now().astimezone(UTC)
    found = regions.find(name)
    job = found[0]
    summary = _summary(regions, found, _pauses(regions), now)
    return summary | {
        "parameters": visible(job.parameters),
        "target": job.target.name,
        "misfire": job.misfire,
        "overlap": job.overlap,
        "timeout": job.timeout,
        "retry": job.failure_policy.as_record() if job.failure_policy else None,
        "start": iso_seconds(job.start) if job.start else None,
        "end": iso_seconds(job.end) if job.end else None,
    }


def next_firings(regions: Regions, name: str, count: int = 10) -> dict[str, Any]:
    """The job's next ``count`` firings, in its zone and in UTC."""
    if not 1 <= count <= MAX_NEXT:
        raise EventError(f"count must be 1 to {MAX_NEXT}")
    job = regions.find(name)[0]
    after = next_second(regions.clock.now())
    upcoming = list(islice(job.firings(after, after + timedelta(days=366 * 10)), count))
    return {"job": job.name, "firings": [firing_times(job, f) for f in upcoming]}


def timeline(regions: Regions, hours: int = 24) -> dict[str, Any]:
    """Each job's firings in the next ``hours`` and its zone's clock changes there."""
    if not 1 <= hours <= MAX_HOURS:
        raise EventError(f"hours must be 1 to {MAX_HOURS}")
    begin = regions.clock.now().astimezone(UTC).replace(microsecond=0)
    end = begin + timedelta(hours=hours)
    rows = [row(job, begin, end).to_json() for job, _, _ in regions.jobs()]
    return {"from": iso_seconds(begin), "to": iso_seconds(end), "rows": rows}


def _pauses(regions: Regions) -> dict[str, dict[str, Any]]:
    """Each region's pauses: region -> job -> Pause (a region that cannot be read: none)."""

    def read(site: Site) -> tuple[str, dict[str, Any]]:
        claims = site.operator.claims
        if claims is None:
            return site.region, {}
        try:
            return site.region, dict(claims.control(site.scope).paused)
        except (SchedulerError, BotoCoreError, ClientError) as exc:
            log.warning("Pauses of %s unreadable: %s", site.region, _describe(exc))
            return site.region, {}

    return dict(regions.map(read, regions.sites))


def _last_run(regions: Regions, job: Job) -> dict[str, Any] | None:
    """The job's latest dispatched run over every region."""

    def read(site: Site) -> tuple[Site, Any]:
        claims = site.operator.claims
        if claims is None:
            return site, None
        try:
            return site, claims.job_state(job.name)
        except (SchedulerError, BotoCoreError, ClientError) as exc:
            log.warning("Job %s unreadable in %s: %s", job.name, site.region, _describe(exc))
            return site, None

    latest: tuple[datetime, dict[str, Any]] | None = None
    for site, state in regions.map(read, regions.sites):
        if state is None or state.start is None:
            continue
        took = None
        if state.end is not None and state.end >= state.start:
            took = int((state.end - state.start).total_seconds() * 1000)
        view = {
            "firingId": state.last_firing_id,
            "status": str(state.last_status) if state.last_status else None,
            "started": iso_seconds(state.start),
            "ended": iso_seconds(state.end) if state.end else None,
            "durationMs": took,
            "region": site.region,
        }
        if latest is None or state.start > latest[0]:
            latest = (state.start, view)
    return latest[1] if latest else None


def _summary(
    regions: Regions, found: Found, pauses: dict[str, dict[str, Any]], now: datetime
) -> dict[str, Any]:
    job, kind, region = found
    paused = {r: p[job.name] for r, p in pauses.items() if job.name in p}
    after = next_second(now)
    upcoming = list(islice(job.firings(after, after + timedelta(days=366 * 4)), 3))
    return {
        "name": job.name,
        "kind": kind,
        "region": region,
        "statement": job.statement,
        "words": in_words(job.statement),
        "zone": job.zone,
        "service": job.service,
        "description": job.description,
        "enabled": job.enabled,
        "next": [firing_times(job, f) for f in upcoming] if job.enabled else [],
        "lastRun": _last_run(regions, job),
        "paused": bool(paused),
        "pausedIn": sorted(paused),
        "pausedBy": sorted({p.operator for p in paused.values()}),
    }


def _describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, SchedulerError) else describe_aws_error(exc)
