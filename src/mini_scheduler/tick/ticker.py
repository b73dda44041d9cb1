"""The ticker: read what a tick needs, plan it, execute the plan, answer a summary.

No event dicts here: the handler parses events and calls :class:`Ticker`. Every dependency
(the cron file, the stores, the dispatchers, the clock, the metrics) is injected. The decisions
are :func:`~mini_scheduler.tick.planning.plan_tick`'s; the writes are the
:class:`~mini_scheduler.tick.execute.Executor`'s; operator actions are
:class:`~mini_scheduler.operator.Operator`'s.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from mini_scheduler import metrics as m
from mini_scheduler.claims.base import ClaimStore, Control, Deferred
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.clock import Clock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.environment.active import ActiveEnvironment, Reading, same_environment
from mini_scheduler.errors import CronFileUnreadableError, EventError, StoreError
from mini_scheduler.jobs import CronFile
from mini_scheduler.metrics import Metrics, RecordingMetrics
from mini_scheduler.model import floor_minute, iso_seconds
from mini_scheduler.tick.deferred import unread_by_tick
from mini_scheduler.tick.execute import Executor
from mini_scheduler.tick.plan import Shard, TickInputs, TickPlan
from mini_scheduler.tick.planning import plan_catch_up, plan_tick
from mini_scheduler.tick.report import Tally, TickSummary
from mini_scheduler.tick.waits import carried_limit
from mini_scheduler.tick.window import reads_deferred, sweeps, window
from mini_scheduler.wake import Wake, waker

if TYPE_CHECKING:  # imported where used: a tick of cron.yaml's jobs needs none of them
    from mini_scheduler.alerts import Alerts
    from mini_scheduler.audit.base import AuditLog
    from mini_scheduler.carry.carrier import Carrier, Peers
    from mini_scheduler.carry.takeover import Takeover
    from mini_scheduler.failures import FinalFailures
    from mini_scheduler.operator import Operator

log = logging.getLogger("mini_scheduler.ticker")

MAX_TICK_AHEAD = timedelta(minutes=5)
"""How far a tick's minute may be ahead of the clock. A schedule's tick arrives at its minute,
give or take the clock skew between machines; a tick from further ahead would move the watermark
past minutes that have not come, and nothing would fire until they had."""


def check_not_ahead(minute: datetime, now: datetime, allowed: timedelta = MAX_TICK_AHEAD) -> None:
    """EventError when ``minute`` is more than ``allowed`` ahead of ``now``."""
    if minute - now > allowed:
        gap = int((minute - now).total_seconds() // 60)
        ahead = f"{gap} minutes" if gap < 1440 else f"{gap // 1440} days"
        raise EventError(
            f"tick {iso_seconds(minute)} is {ahead} ahead of this Lambda's clock "
            f"({iso_seconds(now)}): a tick runs the minute that is starting, so one from "
            "the future would mark minutes handled before they come"
        )


class Ticker:
    """The scheduler's core. One instance per container; ``tick`` is safe to call repeatedly."""

    def __init__(
        self,
        *,
        settings: Settings,
        cron: Callable[[], CronFile],
        claims: ClaimStore,
        environment: ActiveEnvironment,
        dispatchers: Dispatchers,
        clock: Clock,
        metrics: Metrics | None = None,
        rng: random.Random | None = None,
        fanout: Callable[[dict[str, Any]], None] | None = None,
        retry_sleep: Callable[[float], None] = time.sleep,
        alerts: Alerts | None = None,
        wake: Wake | None = None,
        peers: Peers | None = None,
        audit: AuditLog | None = None,
    ) -> None:
        self.settings = settings
        self.audit = audit  # where the operator path records its actions (none: not recorded)
        if wake is None and fanout is not None:  # in Lambda: this function, invoked anew
            wake = waker(fanout, clock, settings.tick_lead_seconds)
        self.wake = wake
        self._cron = cron
        self.claims = claims
        self.environment = environment
        self.clock = clock
        self.metrics: Metrics = metrics if metrics is not None else RecordingMetrics()
        self._rng = rng or random.Random()  # nosec B311 # deferred.start jitter, not security
        self._reported_version: str | None = None
        self._last_good: CronFile | None = None
        self.executor = Executor(
            settings=settings,
            claims=claims,
            dispatchers=dispatchers,
            clock=clock,
            metrics=self.metrics,
            fanout=fanout,
            retry_sleep=retry_sleep,
            wake=wake,
            failures=self._failures(alerts, peers),
        )
        self.peers = peers
        self.carrier, self.takeover = _carrying(claims, peers, settings.origin, self._limit)

    def _limit(self, item: Deferred) -> tuple[int, str]:
        """A waiting firing's job's limit, as a failover's carry writes it in another region's
        store (:func:`.waits.carried_limit`), by the cron file this ticker read last; the
        strictest for a job it does not know."""
        from mini_scheduler.carry.carrier import strictest

        return carried_limit(item, self._last_good) or strictest(item)

    def _failures(self, alerts: Alerts | None, peers: Peers | None) -> FinalFailures:
        """What follows a final failure, imported here: the module and its alerts are the
        ticker's build's, not its handler's import (the cold start's)."""
        from mini_scheduler.alerts import RecordingAlerts
        from mini_scheduler.failures import FinalFailures

        kept = alerts if alerts is not None else RecordingAlerts()
        origin, metrics = self.settings.origin, self.metrics
        return FinalFailures(self.claims, kept, self.clock, metrics, origin=origin, peers=peers)

    @cached_property
    def operator(self) -> Operator:
        """The operator path, over this ticker's stores and executor: built at the first
        operator event, so that a container that only ticks never imports it (nor the
        backfills, runtime schedules and fleet views it brings)."""
        from mini_scheduler.audit.trail import Trail
        from mini_scheduler.operator import Operator

        settings, wake = self.settings, self.wake
        via = settings.function_name or "ticker"
        trail = None
        if self.audit is not None:
            trail = Trail(self.audit, region=settings.region, stack=settings.stack_name, via=via)
        return Operator(
            cron=self.cron_file,
            claims=self.claims,
            environment=self.environment,
            clock=self.clock,
            run=self.executor.run_now,
            origin=settings.origin,
            default_zone=settings.default_timezone,
            wake=wake,
            lead_seconds=settings.tick_lead_seconds,
            in_step=self._operator_carry if self.carrier is not None else None,
            audit=trail,
        )

    def cron_file(self) -> CronFile:
        """The current cron file (the last good one while it is unreadable); its load report
        is logged once per version."""
        try:
            cron_file = self._cron()
        except CronFileUnreadableError as exc:
            if self._last_good is None:
                raise
            log.warning(
                "Cron file unreadable - keeping the last good file read (%s, version %s): %s",
                self._last_good.source,
                self._last_good.version[:12],
                exc,
            )
            return self._last_good
        self._last_good = cron_file
        if self._reported_version is None:
            log.info(
                "Scheduler instance %s - the job state receives it as _origin",
                self.settings.origin,
            )
        if cron_file.version != self._reported_version:
            cron_file.log(log)
            self._reported_version = cron_file.version
        return cron_file

    def plan(self, scheduled: datetime, shard: Shard | None = None) -> tuple[TickPlan, int]:
        """Read what the tick of ``scheduled`` needs and plan it; with the count of reads that
        failed (the sweep's query), which the tick reports as errors."""
        minute = floor_minute(scheduled)
        cron_file = self.cron_file()
        # A gauge, once a tick (0 too): the alarm reads its Maximum, so it rings while the file
        # in use has a skipped entry, not once at the load report.
        self.metrics.add(m.CRON_ENTRIES_SKIPPED, cron_file.skipped)
        now = self.clock.now()
        scope = self.settings.origin + (shard.suffix if shard else "")
        control = self.claims.control(scope)
        reading = self.environment.read()
        if reading.active is not None:  # 1: a name no stack has, so no region is active
            known = self.environment.knows(reading.active)
            self.metrics.add(m.ACTIVE_ENVIRONMENT_UNKNOWN, 0 if known else 1)
        if shard is None and self._taking_over(minute, control, reading):
            control = self.claims.control(scope)  # with what the carry brought in
        sweeping = sweeps(minute, control, reading, shard, self.settings)
        due, errors = self._due_runs(now) if sweeping else ((), 0)
        deferred: Sequence[Deferred] = ()
        if reads_deferred(sweeping, reading, self.settings):
            deferred, failed = self._due_deferred(window(minute, self.settings)[1])
            errors += failed
        inputs = TickInputs(
            minute=minute,
            cron_file=cron_file,
            control=control,
            reading=reading,
            now=now,
            due_runs=due,
            shard=shard,
            can_fan_out=self.executor.fanout is not None,
            deferred=deferred,
            elsewhere=self._elsewhere(deferred, control, now),
            taken_back=self._taken_back(deferred, now),
        )
        return plan_tick(inputs, self.settings, self._rng), errors

    def _due_deferred(self, until: datetime) -> tuple[Sequence[Deferred], int]:
        """The deferred firings due before the window's end (retries); on a failed read, none
        this tick: they stay, and the next tick reads them."""
        try:
            return self.claims.due_deferred(until), 0
        except StoreError as exc:
            log.error("Deferred firings unread this tick: %s", exc)
            return (), 1

    def _elsewhere(
        self, deferred: Sequence[Deferred], control: Control, now: datetime
    ) -> dict[str, str]:
        """Of the deferred firings, those another region wrote that must not run here, each
        with why (:mod:`mini_scheduler.carry.takeover`)."""
        if self.takeover is None or not deferred:
            return {}
        return self.takeover.fence(deferred, control, now)

    def _taken_back(self, deferred: Sequence[Deferred], now: datetime) -> frozenset[str]:
        """Of this region's own waiting firings, those taken back from a region that took them
        over (:meth:`mini_scheduler.carry.takeover.Takeover.taken_back`)."""
        if self.takeover is None or not deferred:
            return frozenset()
        return self.takeover.taken_back(deferred, now)

    def _taking_over(self, minute: datetime, control: Control, reading: Reading) -> bool:
        """At a region's first active tick after standing by, its peers and it are brought in
        step before it plans (what the region giving up wrote in its last minute is here
        then, instead of a tick later); True when that was done."""
        if self.carrier is None or reading.active is None:
            return False
        if not same_environment(reading.active, self.settings.environment_name):
            return False
        from mini_scheduler.carry.takeover import active_since

        if active_since(control, self.settings.origin) != minute:
            return False
        self.metrics.add(m.REGIONS_NOT_IN_STEP, len(self.carrier.carry(self.clock.now()).failed))
        return True

    def _in_step(self, plan: TickPlan, shard: Shard | None) -> None:
        """After an unsharded tick with peers: an active region brings them in step with its
        store; a standby one keeps its minute, which tells when it became active."""
        if self.carrier is None or shard is not None:
            return
        if plan.mode == "standby":
            from mini_scheduler.carry.takeover import standby_scope

            try:
                self.claims.advance_watermark(standby_scope(self.settings.origin), plan.minute)
            except StoreError as exc:
                log.error("Standby minute not kept: %s", exc)
        elif plan.mode == "active":
            report = self.carrier.carry(self.clock.now())
            self.metrics.add(m.REGIONS_NOT_IN_STEP, len(report.failed))

    def _operator_carry(self) -> dict[str, Any]:
        """After an operator's write: every peer brought in step with it."""
        if self.carrier is None:  # pragma: no cover - only handed on with a carrier
            return {}
        return self.carrier.carry(self.clock.now(), active=False).to_json()

    def _due_runs(self, now: datetime) -> tuple[Sequence[RunRecord], int]:
        try:
            return self.claims.due_runs(now, settle=True), 0
        except StoreError as exc:
            log.error("Sweep of open runs failed: %s", exc)
            return (), 1

    def tick(
        self,
        scheduled: datetime,
        shard: Shard | None = None,
        *,
        deadline: datetime | None = None,
        max_ahead: timedelta = MAX_TICK_AHEAD,
    ) -> TickSummary:
        """Handle the minute ``scheduled`` names (``shard``'s jobs only, with a shard). A minute
        more than ``max_ahead`` ahead of the clock is refused (EventError). Past ``deadline``
        (the handler's: the function's timeout less a margin) no firing is claimed: each one
        left is held, so the watermark stops at the first and the next tick handles them under
        their misfire policies, instead of Lambda ending the tick mid-claim."""
        minute = floor_minute(scheduled)
        now = self.clock.now()
        check_not_ahead(scheduled, now, max_ahead)
        self.metrics.add(m.TICKS)
        self.metrics.add(m.TICK_LAG, max(0.0, (now - minute).total_seconds()), "Seconds")
        plan, errors = self.plan(minute, shard)
        tally = self.executor.execute(plan, deadline=deadline)
        tally.errors += errors
        self._in_step(plan, shard)
        return _summary(plan, tally)

    def catch_up(self, scheduled: datetime, *, deadline: datetime | None = None) -> TickSummary:
        """Dispatch, each at its second, the deferred firings due in the minute ``scheduled``
        names that its tick may have read before they were written (:mod:`mini_scheduler.wake`),
        and the firings kept waiting: only those (:func:`.deferred.unread_by_tick`). Refused
        like a tick when more than a few minutes ahead of the clock."""
        minute = floor_minute(scheduled)
        now = self.clock.now()
        check_not_ahead(scheduled, now)
        cron_file = self.cron_file()
        control = self.claims.control(self.settings.origin)
        reading = self.environment.read()
        active = reading.active is not None and same_environment(
            reading.active, self.settings.environment_name
        )
        deferred, errors = (
            self._due_deferred(window(minute, self.settings)[1]) if active else ((), 0)
        )
        deferred = unread_by_tick(deferred, minute)  # the rest are the minute's tick's
        inputs = TickInputs(
            minute,
            cron_file,
            control,
            reading,
            now,
            deferred=deferred,
            elsewhere=self._elsewhere(deferred, control, now),
            taken_back=self._taken_back(deferred, now),
        )
        plan = plan_catch_up(inputs, self.settings)
        tally = self.executor.execute(plan, deadline=deadline)
        tally.errors += errors
        return _summary(plan, tally)

    # -- operator events (one path: mini_scheduler.operator) --------------------------------

    def run_manual(self, job_name: Any, operator: Any, parameters: Any = None) -> dict[str, Any]:
        return self.operator.run_now(job_name, operator, parameters)

    def environment_status(self) -> dict[str, Any]:
        return self.operator.environment_status()

    def set_environment(
        self, active: Any, operator: Any, force: Any = False, reason: Any = None
    ) -> dict[str, Any]:
        return self.operator.set_environment(active, operator, force, reason)

    def set_paused(self, job_name: Any, paused: bool, operator: Any) -> dict[str, Any]:
        return self.operator.set_paused(job_name, paused, operator)


def _summary(plan: TickPlan, tally: Tally) -> TickSummary:
    """What a tick (or a catch-up) answers: its plan's minute and mode, and what was done."""
    return TickSummary(
        plan.minute,
        plan.environment,
        plan.active_environment,
        plan.mode,
        tally.to_json(),
        plan.window,
        plan.note,
        plan.error,
    )


def _carrying(
    claims: ClaimStore,
    peers: Peers | None,
    origin: str,
    limit: Callable[[Deferred], tuple[int, str]],
) -> tuple[Carrier | None, Takeover | None]:
    """With peers, what brings them in step and takes their waiting firings over (imported
    here: a ticker without peers never loads them)."""
    if peers is None:
        return None, None
    from mini_scheduler.carry.carrier import Carrier
    from mini_scheduler.carry.takeover import Takeover

    return Carrier(claims, peers, limit), Takeover(peers, origin, claims)
