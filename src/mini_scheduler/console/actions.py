"""What the console does to a job, as plain data: run it now or a past firing again (sent to a
region's ticker, the active region unless one is named), pause or resume it (every region; a
runtime schedule where it lives), each through the region's operator path, as the CLI's."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mini_scheduler.audit.base import check_reason
from mini_scheduler.console.regions import Regions
from mini_scheduler.operator import check_operator, run_parameters

log = logging.getLogger("mini_scheduler.console")


def run_now(
    regions: Regions,
    name: str,
    operator: str,
    parameters: Mapping[str, Any] | None = None,
    region: str | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """Run a job now, by its region's ticker; its parameters are checked against the job's
    target first (PayloadError), as the ticker will, so that nothing too large is sent."""
    operator = check_operator(operator)
    run_parameters(regions.find(name)[0], parameters)
    site = regions.site(region)
    log.info("Console: %s runs %s now in %s", operator, name, site.region)
    event = {"job": name, "operator": operator, "parameters": dict(parameters or {})}
    answer = site.send(event | site.operator.asking.event(reason))
    return _sent(regions, site.region, answer)


def rerun(
    regions: Regions,
    firing_id: str,
    operator: str,
    region: str | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """Run a past firing again, by the ticker of the region named (else the active one)."""
    operator = check_operator(operator)
    site = regions.site(region)
    log.info("Console: %s reruns %s in %s", operator, firing_id[:160], site.region)
    event = {"rerun": firing_id, "operator": operator}
    answer = site.send(event | site.operator.asking.event(reason))
    return _sent(regions, site.region, answer)


def _sent(regions: Regions, region: str, answer: Any) -> dict[str, Any]:
    """The ticker's answer to a manual run, its run named in the list's next reads there (a
    store read by key cannot find a manual run it is not named: :mod:`.lastruns`)."""
    answered = dict(answer) if isinstance(answer, Mapping) else {}
    regions.last_runs.sent(region, answered)
    return {"region": region, **answered}


def set_paused(
    regions: Regions, name: str, paused: bool, operator: str, reason: str | None = None
) -> dict[str, Any]:
    """Pause or resume a job in every region (each region's ticker reads its own table); a
    runtime schedule in the regions that hold it (:meth:`Regions.holding`)."""
    operator = check_operator(operator)
    reason = check_reason(reason)  # refused before any region is written
    kind = regions.find(name)[1]
    sites = regions.sites if kind == "cron.yaml" else regions.holding(name)
    verb = "pauses" if paused else "resumes"
    where = ", ".join(site.region for site in sites)
    log.info("Console: %s %s %s in %s", operator, verb, name, where)
    outcomes = regions.one_by_one(
        sites, lambda site: site.operator.because(reason).set_paused(name, paused, operator)
    )
    return {
        "job": name,
        "paused": paused,
        "operator": operator,
        "regions": [o.to_json() for o in outcomes],
        "failedRegions": [o.region for o in outcomes if not o.ok],
    }
