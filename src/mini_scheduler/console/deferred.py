"""What the console does with deferred firings, as plain data: runtime schedules created in one
region (the active one unless named) and deleted where they live, and backfills started in one
region and followed in every region, each with the operator's reason checked before anything
is done and written in its audit record by the region's operator path, as the CLI's. (The
runtime schedules of every region are listed by
:meth:`~mini_scheduler.console.service.ConsoleService.schedules`.)"""

from __future__ import annotations

import logging
from typing import Any

from mini_scheduler.audit.base import check_reason
from mini_scheduler.console.regions import Regions
from mini_scheduler.operator import check_operator

log = logging.getLogger("mini_scheduler.console")


def create_schedules(
    regions: Regions, entries: Any, operator: str, region: str | None = None, reason: Any = None
) -> dict[str, Any]:
    """Create runtime schedules in one region (the active one unless named): all or none."""
    operator, reason = check_operator(operator), check_reason(reason)
    site = regions.site(region)
    log.info("Console: %s creates runtime schedules in %s", operator, site.region)
    made = site.operator.because(reason).create_schedules(entries, operator)
    return {"region": site.region, **made}


def delete_schedule(
    regions: Regions, name: str, operator: str, region: str | None = None, reason: Any = None
) -> dict[str, Any]:
    """Delete a runtime schedule from ``region``, else from the region that holds it: a name
    no region holds is :class:`NotFound`; one held in several needs its region."""
    operator, reason = check_operator(operator), check_reason(reason)
    site = regions.site(region) if region is not None else regions.holder(name)
    log.info("Console: %s deletes schedule %s in %s", operator, name, site.region)
    return {"region": site.region, **site.operator.because(reason).delete_schedule(name, operator)}


def backfill(
    regions: Regions,
    name: str,
    window: tuple[str, str],
    rate: int | None,
    operator: str,
    region: str | None = None,
    reason: Any = None,
) -> dict[str, Any]:
    """Backfill a job's ``window`` (start, end) in one region (the active one unless named); a
    name no region has is :class:`NotFound`, as for the other actions on a job."""
    operator, reason = check_operator(operator), check_reason(reason)
    regions.find(name)
    site = regions.site(region)
    log.info("Console: %s backfills %s in %s", operator, name, site.region)
    answer = site.operator.because(reason).backfill(name, *window, rate, operator)
    return {"region": site.region, **answer}


def backfills(regions: Regions) -> dict[str, Any]:
    """Every region's backfills with firings left to dispatch."""
    return {"regions": [o.to_json() for o in regions.each(lambda s: s.operator.backfill_status())]}
