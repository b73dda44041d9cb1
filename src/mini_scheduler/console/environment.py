"""The console's regions page, as plain data: seed 000's status of the active environment (the
home region's) with every region's beside it and what is wrong with who is active
(:func:`fleet.judge`); and a failover, written in every region one by one and read back."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mini_scheduler import fleet
from mini_scheduler.audit.base import check_reason
from mini_scheduler.console.regions import Regions
from mini_scheduler.console.sites import Site
from mini_scheduler.environment.regions import is_known
from mini_scheduler.errors import EventError
from mini_scheduler.fleet import Outcome
from mini_scheduler.operator import check_operator

log = logging.getLogger("mini_scheduler.console")


def environment(regions: Regions) -> dict[str, Any]:
    """Seed 000's status of the home region (environment, active, mode, persistent, store),
    and every region's beside it, with what is wrong with who is active."""
    return _answer(regions, _status(regions))


def set_environment(
    regions: Regions, active: str, operator: str, force: bool = False, reason: Any = None
) -> dict[str, Any]:
    """Failover: write ``active`` into every region's store, one by one (a failure is reported
    and the next region written), and read each back. A name no region knows is refused before
    anything is written, unless ``force`` with a ``reason``; so is a failover that leaves a
    stack's region out (:func:`fleet.left_out`: the console serves fewer regions than the
    names known), unless the console serves every region there is (``whole``: ``make run``'s
    one region)."""
    operator, reason = check_operator(operator), check_reason(reason)
    if force and reason is None:
        raise EventError("a forced change needs a reason (why the name is not a known one)")
    known = regions.known()
    active = fleet.spelled(active, regions.environments().values())
    if not force and not is_known(active, known):
        raise EventError(
            f"{active[:64]} is not a known environment (known: {', '.join(known)}): "
            "no region would be active, and nothing was written"
        )
    names = [site.region for site in regions.sites]
    gap = None if regions.whole else fleet.left_out(names, regions.environments(), known, active)
    if gap is not None:
        raise EventError(_left_out(gap))
    log.info("Console: %s moves the active environment to %s in every region", operator, active)
    written = regions.one_by_one(
        regions.sites, lambda site: _write(site, active, operator, force, reason)
    )
    failed = [o.region for o in written if not o.ok]
    extra = {"operator": operator, "set": active, "failedRegions": failed}
    return _answer(regions, _status(regions), extra) | {
        "written": [o.to_json() | {"otherRegions": None} for o in written]
    }


def _status(regions: Regions) -> list[Outcome]:
    return regions.each(lambda site: site.operator.environment_status())


def _answer(
    regions: Regions, outcomes: list[Outcome], extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    known = regions.known()
    by_region = {site.region: site for site in regions.sites}
    shown = []
    for outcome in outcomes:
        view = {
            "region": outcome.region,
            "ok": outcome.ok,
            "where": by_region[outcome.region].where,
        }
        view |= {k: v for k, v in outcome.fields.items() if k != "otherRegions"}
        if outcome.error is not None:
            view["error"] = outcome.error
        shown.append(view)
    judged = fleet.judge(outcomes, regions.environments(), known)
    home = next((r for r in shown if r["region"] == regions.home.region), shown[0])
    answer: dict[str, Any] = {
        key: home.get(key) for key in ("environment", "active", "mode", "persistent", "store")
    }
    answer |= dict(extra or {})
    answer |= {
        "regions": shown,
        "known": list(known),
        "activeRegions": judged.active_regions,
        "problem": judged.problem,
    }
    return answer


def _write(
    site: Site, active: str, operator: str, force: bool, reason: str | None
) -> dict[str, Any]:
    """Write ``active`` in ``site``'s store and read it back (:func:`fleet.check_written`);
    ``reason`` goes in the audit record, and with a forced name (as the CLI's failover)."""
    forced_why = reason if force else None
    status = site.operator.because(reason).set_environment(active, operator, force, forced_why)
    environment = site.operator.environment
    if environment is not None:
        fleet.check_written(environment.store.name, environment.store.get(), active)
    return status


def _left_out(gap: fleet.Gap) -> str:
    """The refusal of a failover that leaves a stack's region out, in the console's words."""
    served = ", ".join(gap.regions)
    if gap.missing:
        whose = " or ".join(gap.missing)
        active = ", ".join(gap.active)
        why = f"{gap.target} would be active in {active}, and no region served is {whose}'s"
    else:
        why = f"this console serves {served}, and not every region's environment name is known"
    return (
        f"{why} (known: {', '.join(gap.known)}): a region left out keeps its value, and may "
        "stay active too, so nothing was written. Start the console with every stack's region "
        "(mini-scheduler console --regions), or fail over with mini-scheduler failover"
    )
