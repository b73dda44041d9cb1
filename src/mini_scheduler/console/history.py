"""The console's history of a job, as plain data: its runs over every region, merged newest
first a page at a time (:func:`fleet.newest_first`, :func:`fleet.page`), and its failed runs'
next attempts waiting in each region's store. A region that cannot be read is named in
``unread``, and the others shown."""

from __future__ import annotations

from typing import Any, Final

from mini_scheduler import fleet
from mini_scheduler.claims.base import RETRY
from mini_scheduler.console.regions import Regions
from mini_scheduler.console.sites import Site
from mini_scheduler.console.views import retry_view, run_view
from mini_scheduler.errors import EventError

MAX_PAGE: Final = 200  # runs in one page of history


def history(
    regions: Regions, name: str, limit: int = 20, cursor: str | None = None
) -> dict[str, Any]:
    """A page of ``name``'s runs over every region, newest first; ``next`` is the cursor of
    the page after it (None: this is the last). A name with runs has a history whether or not
    it is still defined (a one-time schedule that fired, a deleted one, a job gone from
    cron.yaml); a name with no run in any region and no definition is a :class:`NotFound`."""
    if not 1 <= limit <= MAX_PAGE:
        raise EventError(f"limit must be 1 to {MAX_PAGE}")

    def read(site: Site) -> dict[str, Any]:
        claims = site.operator.claims
        return {"runs": list(claims.history(name, limit + 1, before=cursor) if claims else [])}

    outcomes = regions.each(read)
    unread = [{"region": o.region, "error": o.error or ""} for o in outcomes if not o.ok]
    merged = fleet.newest_first(
        fleet.Placed(o.region, run) for o in outcomes if o.ok for run in o.fields["runs"]
    )
    if not merged and not unread and cursor is None:
        regions.find(name, besides=f", and no run of it in {regions.names}")
    shown, after = fleet.page(merged, limit)
    return {
        "job": name,
        "runs": [run_view(p.run, p.region) for p in shown],
        "next": after,
        "unread": unread,
    }


def pending_retries(regions: Regions, name: str) -> dict[str, Any]:
    """``name``'s next attempts waiting in each region's store (its deferred firings for
    "retry"), soonest first."""
    regions.find(name)

    def read(site: Site) -> dict[str, Any]:
        claims = site.operator.claims
        waiting = claims.pending_deferred(RETRY) if claims else []
        return {"retries": [d for d in waiting if d.firing.job == name]}

    retries: list[dict[str, Any]] = []
    unread: list[dict[str, str]] = []
    for outcome in regions.each(read):
        if not outcome.ok:
            unread.append({"region": outcome.region, "error": outcome.error or ""})
            continue
        retries += [retry_view(d, outcome.region) for d in outcome.fields["retries"]]
    retries.sort(key=lambda r: (r["due"], r["runId"], r["region"]))
    return {"job": name, "retries": retries, "unread": unread}
