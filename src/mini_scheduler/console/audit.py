"""The console's audit page, as plain data: every region's audit trail over the last hours,
merged newest first (:func:`fleet.merged`, as ``mini-scheduler audit`` merges them). A region
without a trail, or whose trail cannot be read, is named in ``unread``; the others are shown."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from mini_scheduler import fleet
from mini_scheduler.audit.base import READ_LIMIT
from mini_scheduler.console.regions import Regions
from mini_scheduler.console.sites import Site
from mini_scheduler.errors import EventError

MAX_HOURS: Final = 24 * 400  # the default retention: nothing older is kept
CLOCK_SKEW: Final = timedelta(minutes=1)  # a record just written by a ticker a little ahead


def audit(
    regions: Regions,
    hours: int = 168,
    job: str | None = None,
    actor: str | None = None,
    limit: int = 200,
) -> dict[str, Any]:
    """The records of the last ``hours`` in every region, of ``job`` and ``actor`` when given,
    newest first, at most ``limit``."""
    if not 1 <= hours <= MAX_HOURS or not 1 <= limit <= READ_LIMIT:
        raise EventError(f"hours must be 1 to {MAX_HOURS}, limit 1 to {READ_LIMIT}")
    now = regions.clock.now()
    since, until = now - timedelta(hours=hours), now + CLOCK_SKEW

    def read(site: Site) -> dict[str, Any]:
        trail = site.operator.audit
        if trail is None:
            raise EventError("no audit trail (a stack deployed before it had one)")
        return {"records": trail.log.read(since, until, job=job, actor=actor, limit=limit)}

    outcomes = regions.each(read)
    unread = [{"region": o.region, "error": o.error or ""} for o in outcomes if not o.ok]
    merged = fleet.merged(
        [o.fields["records"] for o in outcomes if o.ok], lambda r: (r.at, r.region, r.action)
    )
    return {"records": [r.to_json() for r in merged[:limit]], "unread": unread}
