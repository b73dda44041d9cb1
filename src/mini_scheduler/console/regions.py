"""The regions a console serves, and the names it knows there: its sites (the first is the home
region: its cron file lists the jobs), a read done in every region at once (a thread a region,
never one a job), the jobs' last runs (:mod:`.lastruns`), an action done region by region, the
region an action goes to, the environment names known; a job by its name (cron.yaml's, else a
runtime schedule's) and the regions that hold a runtime schedule.

A name that is nowhere is a :class:`NotFound`, in the CLI's words (:func:`fleet.no_such_job`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from mini_scheduler import fleet
from mini_scheduler.clock import Clock
from mini_scheduler.console.lastruns import LastRuns
from mini_scheduler.console.sites import Site
from mini_scheduler.errors import EventError, SchedulerError
from mini_scheduler.fleet import Outcome, each_region
from mini_scheduler.jobs import Job

log = logging.getLogger("mini_scheduler.console")

_T = TypeVar("_T")
Found = tuple[Job, str, str | None]
"""A job as the console finds it: the job, its kind (``cron.yaml``, ``runtime``, ``one-time``)
and the region that holds it (None for cron.yaml's)."""


class NotFound(EventError):
    """A job or schedule the console knows in no region."""


class Regions:
    """The console's ``sites``, read ``workers`` at a time; ``whole``: they are every region
    there is (no stack's region elsewhere)."""

    def __init__(
        self, sites: Sequence[Site], clock: Clock, *, workers: int = 8, whole: bool = False
    ) -> None:
        if not sites:
            raise ValueError("the console needs at least one region")
        self.sites = list(sites)
        self.clock = clock
        self.whole = whole
        self._workers = workers
        self.last_runs = LastRuns()  # the jobs' last runs, and what the console remembers

    @property
    def home(self) -> Site:
        return self.sites[0]

    @property
    def names(self) -> str:
        """The regions served, as a message names them."""
        return ", ".join(site.region for site in self.sites)

    def map(self, work: Callable[[Any], _T], items: Sequence[Any]) -> list[_T]:
        """``work`` on every item at once (a few threads), its answers in the items' order."""
        if len(items) <= 1:
            return [work(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self._workers, len(items))) as pool:
            return list(pool.map(work, items))

    def each(self, act: Callable[[Site], dict[str, Any]]) -> list[Outcome]:
        """``act`` in every region at once; a region that fails is reported beside the others."""

        def one(site: Site) -> Outcome:
            return each_region([site.region], _at(site, act))[0]

        return self.map(one, self.sites)

    @staticmethod
    def one_by_one(sites: Sequence[Site], act: Callable[[Site], dict[str, Any]]) -> list[Outcome]:
        """``act`` in each of ``sites`` in turn (a write): a failure is reported, and the next
        region done."""
        return [each_region([site.region], _at(site, act))[0] for site in sites]

    def site(self, region: str | None) -> Site:
        """The region an action goes to: the one named, else the active one."""
        if region is None:
            return self._acting_site()
        for site in self.sites:
            if site.region == region:
                return site
        raise EventError(f"region {region[:40]!r} is not one of this console's: {self.names}")

    def _acting_site(self) -> Site:
        """Where an action goes when the request names no region: the active region, else
        the home region."""
        for site in self.sites:
            environment = site.operator.environment
            if environment is None:
                continue
            try:
                if environment.is_active(environment.read().active):
                    return site
            except SchedulerError:
                continue
        return self.home

    def known(self) -> tuple[str, ...]:
        """The environment names the regions know, each region's own first."""
        return fleet.known_names(
            *(s.operator.environment.known for s in self.sites if s.operator.environment)
        )

    def environments(self) -> dict[str, str | None]:
        """Each region's own environment name (None: not known)."""
        return {site.region: site.environment_name for site in self.sites}

    # -- jobs and runtime schedules by name ---------------------------------------------------

    def jobs(self) -> list[Found]:
        """cron.yaml's jobs (home region), then each region's runtime schedules."""
        found: list[Found] = [
            (job, "cron.yaml", None) for job in self.home.operator.cron_file().jobs
        ]
        names = {job.name for job, _, _ in found}
        for site in self.sites:
            try:
                schedules = site.operator.runtime_schedules()
            except SchedulerError as exc:
                log.warning("Runtime schedules of %s unreadable: %s", site.region, exc)
                continue
            for schedule in schedules:
                if schedule.name not in names:
                    names.add(schedule.name)
                    kind = "one-time" if schedule.one_time else "runtime"
                    found.append((schedule.job, kind, site.region))
        return found

    def find(self, name: str, besides: str = "") -> Found:
        """cron.yaml's job ``name``, else a runtime schedule's (the regions' deferred firings
        are read only for a name cron.yaml does not have); ``besides``: what else the refusal
        says was looked at."""
        cron_file = self.home.operator.cron_file()
        job = cron_file.job(name)
        if job is not None:
            return job, "cron.yaml", None
        for found in self.jobs():
            if found[0].name == name:
                return found
        regions = [site.region for site in self.sites]
        raise NotFound(fleet.no_such_job(name[:100], cron_file.source, regions, besides))

    def holding(self, name: str) -> list[Site]:
        """The regions whose store holds the runtime schedule ``name``, and those that cannot
        be read (acted on, and their failure reported): :func:`fleet.holders`."""
        outcomes = self.each(lambda site: {"holds": site.operator.holds_schedule(name)})
        regions = fleet.holders(outcomes) or []
        return [site for site in self.sites if site.region in regions]

    def holder(self, name: str) -> Site:
        """The one region that holds the runtime schedule ``name``."""
        sites = self.holding(name)
        if not sites:
            raise NotFound(f"no runtime schedule {name[:100]!r} in {self.names}")
        if len(sites) > 1:
            held = ", ".join(site.region for site in sites)
            raise EventError(
                f"runtime schedule {name[:100]!r} is in {held} (or a region could not be "
                "read): name the region to delete it from"
            )
        return sites[0]


def _at(site: Site, act: Callable[[Site], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    """``act`` on ``site`` as :func:`fleet.each_region` calls it (with the region's name)."""
    return lambda _region: act(site)
