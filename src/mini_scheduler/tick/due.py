"""The active jobs' own firings in a tick: those of the window, each due at its second (plus its
``deferred.start`` jitter), and those missed since the watermark, split by each job's
``misfire`` policy into runs, skips and skipped ranges. A paused job's are left alone.

A job with ``jitter`` or ``window`` (:mod:`mini_scheduler.jobs.spread`) has its firings found
by the instant each is planned at, not by their own: the tick whose window holds that instant
runs it (a firing of 12:00:50 planned at 12:01:20 is the tick of 12:01's), and a tick that was
late misses it when that instant has passed. Its id and record keep the firing's own instant."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from mini_scheduler.jobs import CronFile, Job
from mini_scheduler.jobs.spread import planned_in
from mini_scheduler.model import Firing, SkipReason
from mini_scheduler.tick.plan import Dispatch, LeftAlone, Missed, Skip, SkipRange, TickInputs

RANGE_CAP = 100_000  # firings counted in one skipped range (a bound on the work, not a limit)


@dataclass(slots=True)
class DuePlan:
    """What a tick does with its jobs' own firings (:func:`plan_due`)."""

    dispatches: list[Dispatch] = field(default_factory=list)  # the window's
    misfire_runs: list[tuple[Dispatch, ...]] = field(default_factory=list)  # per job, in order
    skips: list[Skip] = field(default_factory=list)
    ranges: list[SkipRange] = field(default_factory=list)
    missed: list[Missed] = field(default_factory=list)
    left_alone: list[LeftAlone] = field(default_factory=list)  # paused jobs


def plan_due(
    inputs: TickInputs,
    jobs: Sequence[Job],
    watermark: datetime,
    begin: datetime,
    window: tuple[datetime, datetime],
    rng: random.Random,
) -> DuePlan:
    """The firings of ``jobs`` from ``watermark`` to the window's end: the misfires before the
    window (``start``), and the window's own from ``begin`` on. ``rng`` draws the jitter."""
    cron_file = inputs.cron_file
    start, end = window
    paused = inputs.control.paused
    due = DuePlan()
    for job in jobs:
        if job.name in paused:
            count = count_firings(job, watermark, end)
            if count:
                due.left_alone.append(LeftAlone(job, count, paused[job.name]))
            continue
        if watermark < start:
            outcome = plan_misfires(job, cron_file, watermark, start)
            if outcome is not None:
                runs, job_skips, job_ranges, note = outcome
                if runs:
                    due.misfire_runs.append(
                        tuple(
                            Dispatch(job, Firing(job.name, at), inputs.now, planned=planned)
                            for at, planned in runs
                        )
                    )
                due.skips.extend(job_skips)
                due.ranges.extend(job_ranges)
                due.missed.append(note)
        if job.spread_seconds:
            due.dispatches.extend(_spread(job, begin, end, cron_file, rng))
            continue
        for at in job.firings(begin, end):
            delay = rng.randint(0, 9) if cron_file.deferred_start else 0
            due.dispatches.append(
                Dispatch(job, Firing(job.name, at), at + timedelta(seconds=delay), delay)
            )
    return due


def _spread(
    job: Job, begin: datetime, end: datetime, cron_file: CronFile, rng: random.Random
) -> list[Dispatch]:
    """The window's firings of a job with ``jitter`` or ``window``, each due at its planned
    instant (plus ``deferred.start``'s delay)."""
    found = []
    for at, planned in planned_in(job, begin, end):
        delay = rng.randint(0, 9) if cron_file.deferred_start else 0
        due = planned + timedelta(seconds=delay)
        found.append(Dispatch(job, Firing(job.name, at), due, delay, planned=planned))
    return found


def plan_misfires(
    job: Job, cron_file: CronFile, watermark: datetime, start: datetime
) -> tuple[list[tuple[datetime, datetime]], list[Skip], list[SkipRange], Missed] | None:
    """The firings ``job`` missed in ``[watermark, start)`` (by the instant each was planned
    at: :mod:`mini_scheduler.jobs.spread`), split by its policy into runs (each with its
    planned instant), single skips and skipped ranges; None when it missed none."""
    grace_start = max(watermark, start - timedelta(seconds=cron_file.misfire_grace))
    older: list[datetime] = []
    if watermark < grace_start:
        for at, _ in planned_in(job, watermark, grace_start):
            older.append(at)
            if len(older) >= RANGE_CAP:
                break
    missed = list(planned_in(job, grace_start, start))
    recent = [at for at, _ in missed]
    if not older and not recent:
        return None
    limit = cron_file.misfire_max
    if job.misfire == "fire_now":
        runs, skipped, reason = missed[-1:], recent[:-1], SkipReason.MISFIRE
    elif job.misfire == "fire_all":
        runs, skipped, reason = missed[:limit], recent[limit:], SkipReason.MISFIRE_MAX
    else:
        runs, skipped, reason = [], recent, SkipReason.MISFIRE
    ranges: list[SkipRange] = []
    if older:
        ranges.append(SkipRange(job, tuple(older), str(SkipReason.MISFIRE_GRACE)))
    singles: list[Skip] = []
    if len(skipped) > limit:
        ranges.append(SkipRange(job, tuple(skipped), str(reason)))
    else:
        singles = [Skip(job, Firing(job.name, at), str(reason)) for at in skipped]
    count, first = len(older) + len(recent), (older or recent)[0]
    note = Missed(job, count, first, len(runs), len(older) + len(skipped))
    return runs, singles, ranges, note


def count_firings(job: Job, start: datetime, end: datetime) -> int:
    """The job's firings planned in ``[start, end)``."""
    if start >= end:
        return 0
    if job.spread_seconds:
        return sum(1 for _ in planned_in(job, start, end))
    return sum(1 for _ in job.firings(start, end))
