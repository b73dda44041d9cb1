"""The console over ``make run``'s in-process state: one region (moto's), whose operator path is
the local ticker's and whose manual runs go through the same event routing as the deployed
ticker's (:func:`mini_scheduler.handlers.routing.route`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mini_scheduler.console.service import ConsoleService
from mini_scheduler.console.sites import Site

if TYPE_CHECKING:
    from mini_scheduler.local.scheduler import LocalScheduler


def local_console(scheduler: LocalScheduler) -> ConsoleService:
    """The console's service over a started local scheduler."""
    from mini_scheduler.handlers.routing import route

    ticker = scheduler.ticker
    settings = scheduler.settings

    def send(event: Mapping[str, Any]) -> Any:
        return route(ticker, dict(event))

    site = Site(
        region=settings.region,
        environment_name=settings.environment_name,
        operator=ticker.operator,
        send=send,
        where=f"table {settings.state_table} (DynamoDB on moto, in this process)",
    )
    return ConsoleService([site], scheduler.clock, whole=True)
