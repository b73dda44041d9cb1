"""The dry run of a tick (``mini-scheduler tick``): the tick itself, nothing written.

The dry run is the ticker's own plan and executor, run on a predicting claim store
(:class:`~mini_scheduler.claims.predicting.PredictingClaimStore`: every conditional write is
answered from a read of the real store, as the real store would answer it, and none is made),
with a dispatcher that notes what it is given and a clock that moves instead of waiting. Its
report is what the executor did: the firings dispatched (and when), those recorded SKIPPED (and
why), the skipped ranges, the runs timed out, taken over or failed, the claims a record already
had, and where the watermark moved; and the firings the plan leaves alone (standby, paused).
There is no second account of the tick's decisions to drift from the first.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from mini_scheduler.alerts import RecordingAlerts
from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.claims.predicting import PredictingClaimStore
from mini_scheduler.clock import Clock, FixedClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.environment.base import EnvironmentStore
from mini_scheduler.jobs import CronFile, Target
from mini_scheduler.jobs.model import TARGET_KINDS
from mini_scheduler.logs import Capture, package_logs
from mini_scheduler.model import floor_minute
from mini_scheduler.tick.dryrun_report import DryRun, paused_jobs, report
from mini_scheduler.tick.plan import Shard, TickPlan
from mini_scheduler.tick.report import Tally, TickSummary
from mini_scheduler.tick.ticker import Ticker


def dry_run(
    minute: datetime,
    *,
    settings: Settings,
    cron: Callable[[], CronFile],
    claims: ClaimStore,
    environment: EnvironmentStore,
    now: datetime,
    rng: random.Random | None = None,
) -> DryRun:
    """What a tick of ``minute`` would do if it ran at ``now``: the tick itself, run on a
    :class:`~mini_scheduler.claims.predicting.PredictingClaimStore` over ``claims`` (nothing
    is written) with a dispatcher that only notes what it is given, on a clock that moves
    instead of waiting. A tick that fans out runs its shards' ticks the same way."""
    minute = floor_minute(minute)
    store = PredictingClaimStore(claims)
    clock = FixedClock(now)
    sent = _Noted(clock)
    shards: list[dict[str, Any]] = []
    ticker = Ticker(
        settings=settings,
        cron=cron,
        claims=store,
        environment=ActiveEnvironment(
            environment, settings.environment_name, settings.known_environments
        ),
        dispatchers=Dispatchers(dict.fromkeys(TARGET_KINDS, sent)),
        clock=clock,
        rng=rng,
        fanout=shards.append,
        retry_sleep=lambda _: None,
        alerts=RecordingAlerts(),
        wake=lambda _: None,
    )
    capture = Capture()
    with package_logs(capture):  # the lines the tick logs, kept for --verbose
        cron_file = ticker.cron_file()
        runs = [_run(ticker, minute, None)]
        runs += [_run(ticker, minute, Shard(e["shard"], e["shards"])) for e in shards]
    plans = [plan for plan, _ in runs]
    first = plans[0]
    return DryRun(
        minute=minute,
        window=first.window,
        region=settings.region,
        summary=_summary(first, [tally for _, tally in runs]),
        watermark=first.handled,
        watermark_after=_moved(first, store),
        actions=report(cron_file, plans, store, sent.calls, now),
        paused=paused_jobs(first, claims.control(first.scope), cron_file),
        disabled=tuple(job.name for job in cron_file.jobs if not job.enabled),
        log=tuple(capture.lines),
        plan=first,
    )


def _run(ticker: Ticker, minute: datetime, shard: Shard | None) -> tuple[TickPlan, Tally]:
    """Plan the tick (or a shard's) as the ticker does, and execute it."""
    plan, errors = ticker.plan(minute, shard)
    tally = ticker.executor.execute(plan)
    tally.errors += errors
    return plan, tally


class _Noted:
    """A dispatcher that notes each firing it is given, and when, and accepts it."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.calls: list[tuple[str, datetime]] = []

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        with self._lock:
            self.calls.append((firing_id, self._clock.now()))
        return f"dry-run:{firing_id}"

    def stop(self, target: Target, firing_id: str, reason: str) -> str:
        """A run ``overlap: cancel_other`` would stop: nothing is stopped (the report says it
        from the close the tick writes)."""
        return f"dry-run:stop:{firing_id}"


def _summary(first: TickPlan, tallies: Sequence[Tally]) -> TickSummary:
    """The summary the tick would answer, with the counts of its shards' ticks added in."""
    return TickSummary(
        first.minute,
        first.environment,
        first.active_environment,
        first.mode,
        _counts(tallies),
        first.window,
        first.note,
        first.error,
    )


def _counts(tallies: Sequence[Tally]) -> dict[str, Any]:
    """The counts of the tick and its shards' ticks, added up."""
    total = Tally()
    for t in tallies:
        for name in (
            "claimed",
            "dispatched",
            "misfired",
            "errors",
            "taken_over",
            "timed_out",
            "waiting",
            "cancelled",
        ):
            total.add(name, getattr(t, name))
        total.skipped.update(t.skipped)
        total.held_at.extend(t.held_at)
    return total.to_json()


def _moved(plan: TickPlan, store: PredictingClaimStore) -> datetime | None:
    """Where the tick moved its watermark (None: it did not)."""
    moves = [
        w.answer for w in store.writes if w.kind == "advance_watermark" and w.about == plan.scope
    ]
    return max(moves, default=None)
