"""What the console reads and does, across the regions, as plain data (the API's answers).

Reads: the jobs (cron.yaml's of the first region, and each region's runtime schedules) with
their next firings, last run and pauses; a job's history merged across the regions, newest
first, a page at a time; its retries waiting in each region; the next hours' firings; each
region's active environment. Actions go
through each region's :class:`~mini_scheduler.operator.Operator`, as the CLI's do: run now and
rerun (sent to the region's ticker), pause and resume (every region), failover (every region,
a known name only unless forced), runtime schedules and backfills (the active region's store).

An operator's refusal is an :class:`~mini_scheduler.errors.EventError`, a name that is nowhere a
:class:`NotFound`; a region that cannot be read is reported beside the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from functools import partial
from itertools import islice
from typing import Any, Final, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler import fleet
from mini_scheduler.claims.base import RETRY
from mini_scheduler.clock import Clock
from mini_scheduler.console.sites import Site
from mini_scheduler.console.timeline import row
from mini_scheduler.console.views import firing_times, next_second, retry_view, run_view, visible
from mini_scheduler.console.words import in_words
from mini_scheduler.environment.regions import is_known
from mini_scheduler.errors import EventError, SchedulerError, describe_aws_error
from mini_scheduler.fleet import Outcome, each_region
from mini_scheduler.jobs import Job
from mini_scheduler.model import iso_seconds
from mini_scheduler.operator import check_operator, run_parameters

log = logging.getLogger("mini_scheduler.console")

MAX_PAGE: Final = 200  # runs in one page of history
MAX_NEXT: Final = 100  # next firings in one answer
MAX_HOURS: Final = 24 * 7  # the longest timeline window
_T = TypeVar("_T")


class NotFound(EventError):
    """A job or schedule the console knows in no region."""


class ConsoleService:
    """The console over ``sites`` (the first is the home region: its cron file lists the jobs,
    and its status answers seed 000's environment route)."""

    def __init__(
        self, sites: Sequence[Site], clock: Clock, *, workers: int = 8, whole: bool = False
    ) -> None:
        if not sites:
            raise ValueError("the console needs at least one region")
        self.sites = list(sites)
        self.clock = clock
        self._workers = workers
        self._whole = whole  # the sites are every region there is (no stack's region elsewhere)

    @property
    def home(self) -> Site:
        return self.sites[0]

    def _site(self, region: str | None) -> Site:
        if region is None:
            return self._acting_site()
        for site in self.sites:
            if site.region == region:
                return site
        raise EventError(
            f"region {region[:40]!r} is not one of this console's: "
            + ", ".join(s.region for s in self.sites)
        )

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

    def _map(self, work: Callable[[Any], _T], items: Sequence[Any]) -> list[_T]:
        if len(items) <= 1:
            return [work(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self._workers, len(items))) as pool:
            return list(pool.map(work, items))

    # -- jobs ---------------------------------------------------------------------------------

    def _jobs(self) -> list[tuple[Job, str, str | None]]:
        """cron.yaml's jobs (home region), then each region's runtime schedules: (job, kind,
        the region that holds it, None for cron.yaml's)."""
        found: list[tuple[Job, str, str | None]] = [
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

    def _find(self, name: str) -> tuple[Job, str, str | None]:
        """cron.yaml's job ``name``, else a runtime schedule's (the regions' deferred firings
        are read only for a name cron.yaml does not have)."""
        job = self.home.operator.cron_file().job(name)
        if job is not None:
            return job, "cron.yaml", None
        for found in self._jobs():
            if found[0].name == name:
                return found
        raise NotFound(
            f"no job {name[:100]!r}: not in cron.yaml, nor a runtime schedule of "
            + ", ".join(s.region for s in self.sites)
        )

    def _defined(self, name: str) -> None:
        """NotFound for a name without runs that is neither a job nor a schedule."""
        try:
            self._find(name)
        except NotFound as exc:
            regions = ", ".join(s.region for s in self.sites)
            raise NotFound(f"{exc}, and no run of it in {regions}") from None

    def _pauses(self) -> dict[str, dict[str, Any]]:
        """Each region's pauses: region -> job -> Pause (a region that cannot be read: none)."""

        def read(site: Site) -> tuple[str, dict[str, Any]]:
            claims = site.operator.claims
            if claims is None:
                return site.region, {}
            try:
                return site.region, dict(claims.control(site.scope).paused)
            except (SchedulerError, BotoCoreError, ClientError) as exc:
                log.warning("Pauses of %s unreadable: %s", site.region, _describe(exc))
                return site.region, {}

        return dict(self._map(read, self.sites))

    def _last_run(self, job: Job) -> dict[str, Any] | None:
        """The job's latest dispatched run over every region."""

        def read(site: Site) -> tuple[Site, Any]:
            claims = site.operator.claims
            if claims is None:
                return site, None
            try:
                return site, claims.job_state(job.name)
            except (SchedulerError, BotoCoreError, ClientError) as exc:
                log.warning("Job %s unreadable in %s: %s", job.name, site.region, _describe(exc))
                return site, None

        latest: tuple[datetime, dict[str, Any]] | None = None
        for site, state in self._map(read, self.sites):
            if state is None or state.start is None:
                continue
            took = None
            if state.end is not None and state.end >= state.start:
                took = int((state.end - state.start).total_seconds() * 1000)
            view = {
                "firingId": state.last_firing_id,
                "status": str(state.last_status) if state.last_status else None,
                "started": iso_seconds(state.start),
                "ended": iso_seconds(state.end) if state.end else None,
                "durationMs": took,
                "region": site.region,
            }
            if latest is None or state.start > latest[0]:
                latest = (state.start, view)
        return latest[1] if latest else None

    def _summary(
        self, found: tuple[Job, str, str | None], pauses: dict[str, dict[str, Any]], now: datetime
    ) -> dict[str, Any]:
        job, kind, region = found
        paused = {r: p[job.name] for r, p in pauses.items() if job.name in p}
        after = next_second(now)
        upcoming = list(islice(job.firings(after, after + timedelta(days=366 * 4)), 3))
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
            "next": [firing_times(job, f) for f in upcoming] if job.enabled else [],
            "lastRun": self._last_run(job),
            "paused": bool(paused),
            "pausedIn": sorted(paused),
            "pausedBy": sorted({p.operator for p in paused.values()}),
        }

    def jobs(self) -> dict[str, Any]:
        """Every job (``GET /api/schedule``)."""
        now = self.clock.now().astimezone(UTC)
        pauses = self._pauses()
        listed = self._map(lambda f: self._summary(f, pauses, now), self._jobs())
        return {"now": iso_seconds(now), "jobs": listed}

    def job(self, name: str) -> dict[str, Any]:
        """One job with its settings; its parameters without ``_`` keys."""
        now = self.clock.now().astimezone(UTC)
        found = self._find(name)
        job = found[0]
        summary = self._summary(found, self._pauses(), now)
        return summary | {
            "parameters": visible(job.parameters),
            "target": job.target.name,
            "misfire": job.misfire,
            "overlap": job.overlap,
            "timeout": job.timeout,
            "retry": job.policy_record,
            "start": iso_seconds(job.start) if job.start else None,
            "end": iso_seconds(job.end) if job.end else None,
        }

    def next_firings(self, name: str, count: int = 10) -> dict[str, Any]:
        if not 1 <= count <= MAX_NEXT:
            raise EventError(f"count must be 1 to {MAX_NEXT}")
        job = self._find(name)[0]
        after = next_second(self.clock.now())
        upcoming = list(islice(job.firings(after, after + timedelta(days=366 * 10)), count))
        return {"job": job.name, "firings": [firing_times(job, f) for f in upcoming]}

    def timeline(self, hours: int = 24) -> dict[str, Any]:
        """Each job's firings in the next ``hours`` and its zone's clock changes there."""
        if not 1 <= hours <= MAX_HOURS:
            raise EventError(f"hours must be 1 to {MAX_HOURS}")
        begin = self.clock.now().astimezone(UTC).replace(microsecond=0)
        end = begin + timedelta(hours=hours)
        rows = [row(job, begin, end).to_json() for job, _, _ in self._jobs()]
        return {"from": iso_seconds(begin), "to": iso_seconds(end), "rows": rows}

    # -- history ------------------------------------------------------------------------------

    def history(self, name: str, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        """A page of ``name``'s runs over every region, newest first; ``next`` is the cursor
        of the page after it (None: this is the last). A region that cannot be read is named
        in ``unread``, and the others shown. A name with runs has a history whether or not it
        is still defined (a one-time schedule that fired, a deleted one, a job gone from
        cron.yaml); a name with no run in any region and no definition is a :class:`NotFound`."""
        if not 1 <= limit <= MAX_PAGE:
            raise EventError(f"limit must be 1 to {MAX_PAGE}")

        def read(site: Site) -> Outcome:
            def act(_: str) -> dict[str, Any]:
                claims = site.operator.claims
                runs = claims.history(name, limit + 1, before=cursor) if claims else []
                return {"runs": list(runs)}

            return each_region([site.region], act)[0]

        outcomes = self._map(read, self.sites)
        unread = [{"region": o.region, "error": o.error or ""} for o in outcomes if not o.ok]
        merged = fleet.newest_first(
            fleet.Placed(o.region, run) for o in outcomes if o.ok for run in o.fields["runs"]
        )
        if not merged and not unread and cursor is None:
            self._defined(name)
        shown, after = fleet.page(merged, limit)
        return {
            "job": name,
            "runs": [run_view(p.run, p.region) for p in shown],
            "next": after,
            "unread": unread,
        }

    def pending_retries(self, name: str) -> dict[str, Any]:
        """``name``'s next attempts waiting in each region's store (its deferred firings for
        "retry"), soonest first; a region that cannot be read is named in ``unread``."""
        self._find(name)

        def read(site: Site) -> Outcome:
            def act(_: str) -> dict[str, Any]:
                claims = site.operator.claims
                waiting = claims.pending_deferred(RETRY) if claims else []
                return {"retries": [d for d in waiting if d.firing.job == name]}

            return each_region([site.region], act)[0]

        retries: list[dict[str, Any]] = []
        unread: list[dict[str, str]] = []
        for outcome in self._map(read, self.sites):
            if not outcome.ok:
                unread.append({"region": outcome.region, "error": outcome.error or ""})
                continue
            retries += [retry_view(d, outcome.region) for d in outcome.fields["retries"]]
        retries.sort(key=lambda r: (r["due"], r["runId"], r["region"]))
        return {"job": name, "retries": retries, "unread": unread}

    # -- regions and the active environment ---------------------------------------------------

    def known(self) -> tuple[str, ...]:
        """The environment names the regions know, each region's own first."""
        return fleet.known_names(
            *(s.operator.environment.known for s in self.sites if s.operator.environment)
        )

    def _environments(self) -> dict[str, str | None]:
        return {site.region: site.environment_name for site in self.sites}

    def environment(self) -> dict[str, Any]:
        """Seed 000's status of the home region (environment, active, mode, persistent,
        store), and every region's beside it, with what is wrong with who is active."""
        outcomes = self._regions_status()
        return self._environment_answer(outcomes)

    def _regions_status(self) -> list[Outcome]:
        def read(site: Site) -> Outcome:
            return each_region([site.region], lambda _: site.operator.environment_status())[0]

        return self._map(read, self.sites)

    def _environment_answer(
        self, outcomes: list[Outcome], extra: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        known = self.known()
        by_region = {site.region: site for site in self.sites}
        regions = []
        for outcome in outcomes:
            view = {
                "region": outcome.region,
                "ok": outcome.ok,
                "where": by_region[outcome.region].where,
            }
            view |= {k: v for k, v in outcome.fields.items() if k != "otherRegions"}
            if outcome.error is not None:
                view["error"] = outcome.error
            regions.append(view)
        judged = fleet.judge(outcomes, self._environments(), known)
        home = next((r for r in regions if r["region"] == self.home.region), regions[0])
        answer: dict[str, Any] = {
            key: home.get(key) for key in ("environment", "active", "mode", "persistent", "store")
        }
        answer |= dict(extra or {})
        answer |= {
            "regions": regions,
            "known": list(known),
            "activeRegions": judged.active_regions,
            "problem": judged.problem,
        }
        return answer

    def set_environment(
        self, active: str, operator: str, force: bool = False, reason: str | None = None
    ) -> dict[str, Any]:
        """Failover: write ``active`` into every region's store, one by one (a failure is
        reported and the next region written), and read each back. A name no region knows is
        refused before anything is written, unless ``force`` with a ``reason``; so is a
        failover that leaves a stack's region out (:func:`fleet.left_out`: the console serves
        fewer regions than the names known), unless the console serves every region there is
        (``whole``: ``make run``'s one region)."""
        operator = check_operator(operator)
        if force and not (reason or "").strip():
            raise EventError("a forced change needs a reason (why the name is not a known one)")
        known = self.known()
        active = fleet.spelled(active, self._environments().values())
        if not force and not is_known(active, known):
            raise EventError(
                f"{active[:64]} is not a known environment (known: {', '.join(known)}): "
                "no region would be active, and nothing was written"
            )
        regions = [site.region for site in self.sites]
        gap = None if self._whole else fleet.left_out(regions, self._environments(), known, active)
        if gap is not None:
            raise EventError(_left_out(gap))
        log.info("Console: %s moves the active environment to %s in every region", operator, active)
        outcomes: list[Outcome] = []
        for site in self.sites:
            write = partial(_failover, site, active, operator, force, reason if force else None)
            outcomes += each_region([site.region], _ignoring_region(write))
        failed = [o.region for o in outcomes if not o.ok]
        extra = {"operator": operator, "set": active, "failedRegions": failed}
        return self._environment_answer(self._regions_status(), extra) | {
            "written": [o.to_json() | {"otherRegions": None} for o in outcomes]
        }

    # -- actions on a job ---------------------------------------------------------------------

    def run_now(
        self,
        name: str,
        operator: str,
        parameters: Mapping[str, Any] | None = None,
        region: str | None = None,
    ) -> dict[str, Any]:
        """Run a job now, by its region's ticker (the active region unless one is named); its
        parameters are checked against the job's target first (PayloadError), as the ticker
        will, so that nothing too large is sent."""
        operator = check_operator(operator)
        run_parameters(self._find(name)[0], parameters)
        site = self._site(region)
        log.info("Console: %s runs %s now in %s", operator, name, site.region)
        answer = site.send(
            {"job": name, "operator": operator, "parameters": dict(parameters or {})}
        )
        return {"region": site.region, **(answer if isinstance(answer, Mapping) else {})}

    def rerun(self, firing_id: str, operator: str, region: str | None = None) -> dict[str, Any]:
        """Run a past firing again, by the ticker of the region named (else the active one)."""
        operator = check_operator(operator)
        site = self._site(region)
        log.info("Console: %s reruns %s in %s", operator, firing_id[:160], site.region)
        answer = site.send({"rerun": firing_id, "operator": operator})
        return {"region": site.region, **(answer if isinstance(answer, Mapping) else {})}

    def set_paused(self, name: str, paused: bool, operator: str) -> dict[str, Any]:
        """Pause or resume a job in every region (each region's ticker reads its own table); a
        runtime schedule in the regions that hold it, each through its operator path."""
        operator = check_operator(operator)
        kind = self._find(name)[1]
        sites = self.sites if kind == "cron.yaml" else self._holding(name)
        verb = "pauses" if paused else "resumes"
        where = ", ".join(site.region for site in sites)
        log.info("Console: %s %s %s in %s", operator, verb, name, where)
        outcomes: list[Outcome] = []
        for site in sites:
            write = partial(site.operator.set_paused, name, paused, operator)
            outcomes += each_region([site.region], _ignoring_region(write))
        return {
            "job": name,
            "paused": paused,
            "operator": operator,
            "regions": [o.to_json() for o in outcomes],
            "failedRegions": [o.region for o in outcomes if not o.ok],
        }

    def _holding(self, name: str) -> list[Site]:
        """The regions whose store holds the runtime schedule ``name``, and those that cannot
        be read (acted on, and their failure reported): :func:`fleet.holders`."""

        def holds(site: Site) -> Outcome:
            act = _ignoring_region(lambda: {"holds": site.operator.holds_schedule(name)})
            return each_region([site.region], act)[0]

        regions = fleet.holders(self._map(holds, self.sites)) or []
        return [site for site in self.sites if site.region in regions]

    def _holder(self, name: str) -> Site:
        """The one region that holds the runtime schedule ``name``."""
        sites = self._holding(name)
        regions = ", ".join(site.region for site in self.sites)
        if not sites:
            raise NotFound(f"no runtime schedule {name[:100]!r} in {regions}")
        if len(sites) > 1:
            held = ", ".join(site.region for site in sites)
            raise EventError(
                f"runtime schedule {name[:100]!r} is in {held} (or a region could not be "
                "read): name the region to delete it from"
            )
        return sites[0]

    # -- runtime schedules and backfills --------------------------------------------------------

    def schedules(self) -> dict[str, Any]:
        """Every region's runtime schedules."""

        def read(site: Site) -> Outcome:
            return each_region([site.region], lambda _: site.operator.list_schedules())[0]

        return {"regions": [o.to_json() for o in self._map(read, self.sites)]}

    def create_schedules(
        self, entries: Any, operator: str, region: str | None = None
    ) -> dict[str, Any]:
        """Create runtime schedules in one region (the active one unless named): all or none."""
        site = self._site(region)
        log.info(
            "Console: %s creates runtime schedules in %s", check_operator(operator), site.region
        )
        return {"region": site.region, **site.operator.create_schedules(entries, operator)}

    def delete_schedule(
        self, name: str, operator: str, region: str | None = None
    ) -> dict[str, Any]:
        """Delete a runtime schedule from ``region``, else from the region that holds it: a
        name no region holds is :class:`NotFound`; one held in several needs its region."""
        operator = check_operator(operator)
        site = self._site(region) if region is not None else self._holder(name)
        log.info("Console: %s deletes schedule %s in %s", operator, name, site.region)
        return {"region": site.region, **site.operator.delete_schedule(name, operator)}

    def backfill(
        self,
        name: str,
        start: str,
        end: str,
        rate: int | None,
        operator: str,
        region: str | None = None,
    ) -> dict[str, Any]:
        """Backfill a job's window in one region (the active one unless named); a name no
        region has is :class:`NotFound`, as for the other actions on a job."""
        self._find(name)
        site = self._site(region)
        log.info("Console: %s backfills %s in %s", check_operator(operator), name, site.region)
        answer = site.operator.backfill(name, start, end, rate, operator)
        return {"region": site.region, **answer}

    def backfills(self) -> dict[str, Any]:
        """Every region's backfills with firings left to dispatch."""

        def read(site: Site) -> Outcome:
            return each_region([site.region], lambda _: site.operator.backfill_status())[0]

        return {"regions": [o.to_json() for o in self._map(read, self.sites)]}


def _describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, SchedulerError) else describe_aws_error(exc)


def _ignoring_region(act: Callable[[], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    """``act`` as :func:`each_region` calls it (with the region, which ``act`` knows)."""
    return lambda _region: act()


def _failover(
    site: Site, active: str, operator: str, force: bool, reason: str | None
) -> dict[str, Any]:
    """Write ``active`` in ``site``'s store and read it back (:func:`fleet.check_written`)."""
    status = site.operator.set_environment(active, operator, force, reason)
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
