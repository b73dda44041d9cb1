"""The console over ``make run``'s in-process state: a site per region of the run (the home
region first), whose operator path is the region's local ticker and whose manual runs go through
the same event routing as the deployed ticker's (:func:`mini_scheduler.handlers.routing.route`)."""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING

from mini_scheduler.console.service import ConsoleService
from mini_scheduler.console.sites import Site

if TYPE_CHECKING:
    from mini_scheduler.local.scheduler import LocalScheduler


def local_console(scheduler: LocalScheduler) -> ConsoleService:
    """The console's service over a started local scheduler."""
    identity = f"local:{getpass.getuser()}"  # make run's own operator
    sites = [
        Site(
            region=region.region,
            environment_name=region.settings.environment_name,
            operator=region.ticker.operator.asked(None, identity, "console"),
            send=region.send,
            where=region.where,
        )
        for region in scheduler.regions
    ]
    return ConsoleService(sites, scheduler.clock, whole=True)
