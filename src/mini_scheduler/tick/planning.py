"""The plan of one tick: a pure function of what the tick read.

Given the minute, the cron file, the control state (watermarks, pauses), the active-environment
reading, the open runs past their deadline, the settings and the instant, :func:`plan_tick`
decides everything a tick does: the firings to dispatch and when, those to record SKIPPED and
why, the skipped ranges, the runs to time out, take over or fail, the shards to fan out to, and
how far the watermark may move. It reads no clock and writes nothing; the executor
(:mod:`mini_scheduler.tick.execute`) carries a plan out, and the dry run prints it.

Here is what the region's state makes of the tick (failing closed, standby, a minute handled
already, a fan-out); the active jobs' own firings are :mod:`.due`'s, the deferred firings
:mod:`.deferred`'s.

A tick of minute M owns the firings in ``[M + lead, M + lead + 60 s)``. The region's watermark
records the end of the last window handled; firings between it and the window are misfires and
follow each job's ``misfire`` policy. The watermark only moves forward, and never past a firing
of an active minute that was neither claimed nor recorded as skipped.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from mini_scheduler.claims.base import Pause
from mini_scheduler.config import Settings
from mini_scheduler.environment.active import same_environment
from mini_scheduler.jobs import Job
from mini_scheduler.model import iso_seconds
from mini_scheduler.tick.deferred import claimed_once, not_waiting, plan_deferred, queue_behind
from mini_scheduler.tick.due import count_firings, plan_due
from mini_scheduler.tick.plan import LeftAlone, TickInputs, TickPlan
from mini_scheduler.tick.sweep import Sweep, plan_sweep
from mini_scheduler.tick.window import handled_until, window


def plan_tick(inputs: TickInputs, settings: Settings, rng: random.Random | None = None) -> TickPlan:
    """The plan of the tick ``inputs`` describe. ``rng`` draws ``deferred.start`` delays."""
    minute = inputs.minute.replace(second=0, microsecond=0)
    start, end = window(minute, settings)
    shard = inputs.shard
    handled = handled_until(inputs.control, shard, settings)
    watermark = handled if handled is not None else start
    base = TickPlan(
        minute=minute,
        window=(start, end),
        scope=settings.origin + (shard.suffix if shard else ""),
        environment=settings.environment_name,
        active_environment=inputs.reading.active,
        mode="standby",
        handled=handled,
    )
    if inputs.reading.active is None:
        return replace(
            base,
            note="the active environment is unknown: failing closed, "
            "the watermark stays for the next tick",
            error=inputs.reading.error,
        )
    active = same_environment(inputs.reading.active, settings.environment_name)
    mode = "active" if active else "standby"
    if watermark >= end:
        return replace(
            base, mode=mode, note=f"minute already handled (watermark {iso_seconds(watermark)})"
        )
    cron_file = inputs.cron_file
    jobs = [j for j in cron_file.jobs if j.enabled and (shard is None or shard.holds(j.name))]
    paused = inputs.control.paused
    begin = max(watermark, start)
    sweep = (
        plan_sweep(inputs.due_runs, cron_file, inputs.now, active=active)
        if shard is None
        else Sweep()
    )
    if not active:
        standby = tuple(
            LeftAlone(job, n)
            for job in jobs
            if job.name not in paused and (n := count_firings(job, begin, end))
        )
        return replace(base, left_alone=standby, sweep=sweep, advance_to=end)
    if shard is None and inputs.can_fan_out:
        due = _due_count(jobs, paused, begin, end)
        if due > settings.fanout_threshold:
            return _fanned_out(base, inputs, settings, due, sweep)
    jitter = rng or random.Random()  # nosec B311 # deferred.start jitter, not security
    return _active(base, inputs, settings, jobs, watermark, begin, sweep, jitter)


def _due_count(jobs: list[Job], paused: Mapping[str, Pause], begin: datetime, end: datetime) -> int:
    return sum(count_firings(job, begin, end) for job in jobs if job.name not in paused)


def _fanned_out(
    base: TickPlan, inputs: TickInputs, settings: Settings, due: int, sweep: Sweep
) -> TickPlan:
    """The shards run the jobs' own firings; the parent runs the deferred firings itself."""
    held = plan_deferred(inputs, settings)
    deferred, twice = claimed_once(held.dispatches, set())
    deferred, _, waits = queue_behind(deferred)
    return replace(
        base,
        mode="active",
        note=f"{due} firings due: fanned out to {settings.fanout_shards} shards",
        waits=tuple(waits),
        sweep=sweep,
        fan_out=settings.fanout_shards,
        due_count=due,
        dispatches=tuple(deferred),  # the parent runs the deferred firings itself
        skips=tuple(held.late),
        dropped=(*held.dropped, *twice),
        left_alone=tuple(held.paused),
        moved=tuple(held.moved),
    )


def plan_catch_up(inputs: TickInputs, settings: Settings) -> TickPlan:
    """The plan of a catch-up (:mod:`mini_scheduler.wake`): the deferred firings due in the
    window of ``inputs.minute`` that its tick may have read before they were written, each
    dispatched at its second, as the tick would have (:func:`plan_deferred`). Nothing else: no
    job's own firing, no sweep, no watermark (those are the tick's). On standby, or failing
    closed, nothing: a standby region leaves deferred firings for when it is active."""
    minute = inputs.minute.replace(second=0, microsecond=0)
    start, end = window(minute, settings)
    base = TickPlan(
        minute=minute,
        window=(start, end),
        scope=settings.origin,
        environment=settings.environment_name,
        active_environment=inputs.reading.active,
        mode="standby",
        handled=None,
        note="a catch-up: the deferred firings due in the minute",
    )
    if inputs.reading.active is None:
        return replace(base, note="the active environment is unknown", error=inputs.reading.error)
    if not same_environment(inputs.reading.active, settings.environment_name):
        return base
    held = plan_deferred(inputs, settings)
    deferred, twice = claimed_once(held.dispatches, set())
    deferred, _, waits = queue_behind(deferred)
    return replace(
        base,
        mode="active",
        waits=tuple(waits),
        dispatches=tuple(sorted(deferred, key=lambda d: d.due)),
        skips=tuple(held.late),
        dropped=(*held.dropped, *twice),
        left_alone=tuple(held.paused),
        moved=tuple(held.moved),
    )


def _active(
    base: TickPlan,
    inputs: TickInputs,
    settings: Settings,
    jobs: list[Job],
    watermark: datetime,
    begin: datetime,
    sweep: Sweep,
    rng: random.Random,
) -> TickPlan:
    """An active tick's plan: its jobs' own firings, and the deferred firings, one claim each."""
    due = plan_due(inputs, jobs, watermark, begin, base.window, rng)
    held = plan_deferred(inputs, settings)
    due = not_waiting(due, held.dispatches)
    taken = {d.firing.id for group in due.misfire_runs for d in group}
    taken.update(d.firing.id for d in due.dispatches)
    deferred, twice = claimed_once(held.dispatches, taken)
    dispatches = sorted([*due.dispatches, *deferred], key=lambda d: d.due)
    dispatches, misfire_runs, waits = queue_behind(dispatches, due.misfire_runs)
    return replace(
        base,
        mode="active",
        dropped=(*held.dropped, *twice),
        moved=tuple(held.moved),
        dispatches=tuple(dispatches),
        waits=tuple(waits),
        misfire_runs=tuple(misfire_runs),
        skips=(*due.skips, *held.late),
        ranges=tuple(due.ranges),
        missed=tuple(due.missed),
        left_alone=(*due.left_alone, *held.paused),
        sweep=sweep,
        advance_to=base.window[1],
    )
