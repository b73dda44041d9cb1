"""The console's jobs page, as plain data: every job (cron.yaml's of the home region, and each
region's runtime schedules) with its next firings, its last run over every region and its
pauses; one job with its settings (its overlap policy in full: ``buffer_all``'s
``max_buffered``, and its firings waiting now); its next firings; the next hours' firings of
every job."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims.base import Control, Pause
from mini_scheduler.console.lastruns import handled
from mini_scheduler.console.regions import Found, Regions
from mini_scheduler.console.sites import Site
from mini_scheduler.console.timeline import row
from mini_scheduler.console.views import upcoming, visible
from mini_scheduler.console.words import in_words
from mini_scheduler.errors import EventError, SchedulerError, describe_aws_error
from mini_scheduler.jobs import Job
from mini_scheduler.model import iso_seconds

log = logging.getLogger("mini_scheduler.console")

MAX_NEXT: Final = 100  # next firings in one answer
MAX_HOURS: Final = 24 * 7  # the longest timeline window


def jobs(regions: Regions) -> dict[str, Any]:
    """Every job (``GET /api/schedule``): each region's control items and its jobs' last runs,
    read in each region at once, a request or two a region whatever the number of jobs
    (:mod:`.lastruns`)."""
    now = regions.clock.now().astimezone(UTC)
    listed = regions.jobs()
    pauses, last = _read(regions, [job for job, _, _ in listed])
    return {
        "now": iso_seconds(now),
        "jobs": [_summary(found, pauses, last.get(found[0].name), now) for found in listed],
    }


def job(regions: Regions, name: str) -> dict[str, Any]:
    """One job with its settings; its parameters without ``_`` keys."""
    now = regions.clock.now().astimezone(UTC)
    found = regions.find(name)
    job = found[0]
    pauses, last = _read(regions, [job])
    summary = _summary(found, pauses, last.get(job.name), now)
    return summary | {
        "parameters": visible(job.parameters),
        "target": job.target.name,
        "misfire": job.misfire,
        "overlap": job.overlap,
        "maxBuffered": job.buffer_limit if job.overlap == "buffer_all" else None,
        "maxRunning": job.max_running,
        "pool": {"name": job.pool, "size": job.pool_limit} if job.pool is not None else None,
        **_waiting(regions, job),
        "timeout": job.timeout,
        "retry": job.failure_policy.as_record() if job.failure_policy else None,
        "start": iso_seconds(job.start) if job.start else None,
        "end": iso_seconds(job.end) if job.end else None,
        "jitter": job.jitter,
        "window": job.window,
    }


def _waiting(regions: Regions, job: Job) -> dict[str, Any]:
    """How many of the job's firings wait for its open run's end now (``overlap: buffer_*``):
    its state's waiting set in each region, one read a region, and for a capped job how many
    places each cap has taken (``running``: a read a cap and region), for one job's view only
    (the list's refresh never reads it). ``waiting`` is None when no region could be read."""

    def read(site: Site) -> dict[str, Any]:
        claims = site.operator.claims
        if claims is None:
            return {"count": 0, "running": {}}
        state = claims.job_state(job.name)
        running = {place.key: len(claims.holders(place.key)) for place in job.places}
        return {"count": len(state.waiting) if state is not None else 0, "running": running}

    outcomes = regions.each(read)
    counts = [o.fields["count"] for o in outcomes if o.ok]
    return {
        "waiting": sum(counts) if counts else None,
        "waitingIn": [
            {"region": o.region, "count": o.fields["count"], "running": o.fields["running"]}
            if o.ok
            else {"region": o.region, "error": o.error or ""}
            for o in outcomes
        ],
    }


def next_firings(regions: Regions, name: str, count: int = 10) -> dict[str, Any]:
    """The job's next ``count`` firings, in its zone and in UTC."""
    if not 1 <= count <= MAX_NEXT:
        raise EventError(f"count must be 1 to {MAX_NEXT}")
    job = regions.find(name)[0]
    return {"job": job.name, "firings": upcoming(job, regions.clock.now(), count, years=10)}


def timeline(regions: Regions, hours: int = 24) -> dict[str, Any]:
    """Each job's firings in the next ``hours`` and its zone's clock changes there."""
    if not 1 <= hours <= MAX_HOURS:
        raise EventError(f"hours must be 1 to {MAX_HOURS}")
    begin = regions.clock.now().astimezone(UTC).replace(microsecond=0)
    end = begin + timedelta(hours=hours)
    rows = [row(job, begin, end).to_json() for job, _, _ in regions.jobs()]
    return {"from": iso_seconds(begin), "to": iso_seconds(end), "rows": rows}


Pauses = dict[str, dict[str, Pause]]
"""Each region's pauses: region -> job -> Pause (a region that cannot be read: none)."""


def _read(regions: Regions, listed: list[Job]) -> tuple[Pauses, dict[str, Any]]:
    """Each region's pauses, and the jobs' last runs over the regions."""

    def read(site: Site) -> Control | None:
        claims = site.operator.claims
        if claims is None:
            return None
        try:
            return claims.control(site.scope)
        except (SchedulerError, BotoCoreError, ClientError) as exc:
            log.warning("Pauses of %s unreadable: %s", site.region, _describe(exc))
            return None

    controls = list(zip(regions.sites, regions.map(read, regions.sites), strict=True))
    pauses = {s.region: dict(c.paused) if c else {} for s, c in controls}
    marks = {s.region: handled(c, s.scope) for s, c in controls if c is not None}
    last = regions.last_runs.read(listed, marks, regions.sites, regions.map)
    return pauses, last


def _summary(
    found: Found, pauses: Pauses, last_run: dict[str, Any] | None, now: datetime
) -> dict[str, Any]:
    job, kind, region = found
    paused = {r: p[job.name] for r, p in pauses.items() if job.name in p}
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
        "next": upcoming(job, now, 3, years=4) if job.enabled else [],
        "lastRun": last_run,
        "paused": bool(paused),
        "pausedIn": sorted(paused),
        "pausedBy": sorted({p.operator for p in paused.values()}),
    }


def _describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, SchedulerError) else describe_aws_error(exc)
