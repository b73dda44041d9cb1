"""What the console reads and does, across the regions, as plain data (the API's answers): one
method per route, each done by the module of its page.

* :mod:`.regions`: the regions served, a read in all of them at once, a job found by its name.
* :mod:`.jobs`: the jobs with their next firings, last run and pauses; the next hours' firings.
* :mod:`.history`: a job's runs merged across the regions, newest first, a page at a time; its
  retries waiting in each region.
* :mod:`.environment`: each region's active environment, and a failover (every region, a known
  name only unless forced).
* :mod:`.actions`: run now and rerun (sent to the region's ticker), pause and resume (every
  region).
* :mod:`.deferred`: runtime schedules and backfills (the active region's store).

Actions go through each region's :class:`~mini_scheduler.operator.Operator`, as the CLI's do. An
operator's refusal is an :class:`~mini_scheduler.errors.EventError`, a name that is nowhere a
:class:`~mini_scheduler.console.regions.NotFound`; a region that cannot be read is reported
beside the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from mini_scheduler.clock import Clock
from mini_scheduler.console import actions, audit, deferred, environment, history, jobs
from mini_scheduler.console.regions import Regions
from mini_scheduler.console.sites import Site
from mini_scheduler.fleet import Outcome, each_region

_T = TypeVar("_T")


class ConsoleService:
    """The console over ``sites`` (the first is the home region: its cron file lists the jobs,
    and its status answers seed 000's environment route); ``whole``: they are every region
    there is (``make run``'s one region)."""

    def __init__(
        self, sites: Sequence[Site], clock: Clock, *, workers: int = 8, whole: bool = False
    ) -> None:
        self.regions = Regions(sites, clock, workers=workers, whole=whole)
        self.sites = self.regions.sites
        self.clock = clock

    def _map(self, work: Callable[[Any], _T], items: Sequence[Any]) -> list[_T]:
        return self.regions.map(work, items)

    # -- jobs ---------------------------------------------------------------------------------

    def jobs(self) -> dict[str, Any]:
        """Every job (``GET /api/schedule``)."""
        return jobs.jobs(self.regions)

    def job(self, name: str) -> dict[str, Any]:
        return jobs.job(self.regions, name)

    def next_firings(self, name: str, count: int = 10) -> dict[str, Any]:
        return jobs.next_firings(self.regions, name, count)

    def timeline(self, hours: int = 24) -> dict[str, Any]:
        return jobs.timeline(self.regions, hours)

    # -- history ------------------------------------------------------------------------------

    def history(self, name: str, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        return history.history(self.regions, name, limit, cursor)

    def pending_retries(self, name: str) -> dict[str, Any]:
        return history.pending_retries(self.regions, name)

    # -- regions and the active environment ---------------------------------------------------

    def known(self) -> tuple[str, ...]:
        """The environment names the regions know, each region's own first."""
        return self.regions.known()

    def environment(self) -> dict[str, Any]:
        return environment.environment(self.regions)

    def set_environment(
        self, active: str, operator: str, force: bool = False, reason: str | None = None
    ) -> dict[str, Any]:
        return environment.set_environment(self.regions, active, operator, force, reason)

    # -- actions on a job ---------------------------------------------------------------------

    def run_now(
        self,
        name: str,
        operator: str,
        parameters: Mapping[str, Any] | None = None,
        region: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        return actions.run_now(self.regions, name, operator, parameters, region, reason)

    def rerun(
        self,
        firing_id: str,
        operator: str,
        region: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        return actions.rerun(self.regions, firing_id, operator, region, reason)

    def set_paused(
        self, name: str, paused: bool, operator: str, reason: str | None = None
    ) -> dict[str, Any]:
        return actions.set_paused(self.regions, name, paused, operator, reason)

    # -- runtime schedules and backfills --------------------------------------------------------

    def schedules(self) -> dict[str, Any]:
        """Every region's runtime schedules."""

        def read(site: Site) -> Outcome:
            return each_region([site.region], lambda _: site.operator.list_schedules())[0]

        return {"regions": [o.to_json() for o in self._map(read, self.sites)]}

    def create_schedules(
        self, entries: Any, operator: str, region: str | None = None, reason: Any = None
    ) -> dict[str, Any]:
        return deferred.create_schedules(self.regions, entries, operator, region, reason)

    def delete_schedule(
        self, name: str, operator: str, region: str | None = None, reason: Any = None
    ) -> dict[str, Any]:
        return deferred.delete_schedule(self.regions, name, operator, region, reason)

    def backfill(
        self,
        name: str,
        window: tuple[str, str],
        rate: int | None,
        operator: str,
        region: str | None = None,
        reason: Any = None,
    ) -> dict[str, Any]:
        return deferred.backfill(self.regions, name, window, rate, operator, region, reason)

    def backfills(self) -> dict[str, Any]:
        return deferred.backfills(self.regions)

    # -- the audit trail ------------------------------------------------------------------------

    def audit(
        self, hours: int = 168, job: str | None = None, actor: str | None = None, limit: int = 200
    ) -> dict[str, Any]:
        return audit.audit(self.regions, hours, job, actor, limit)
