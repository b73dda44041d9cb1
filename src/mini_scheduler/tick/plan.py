"""The plan of one tick: a pure function of what the tick read.

Given the minute, the cron file, the control state (watermarks, pauses), the active-environment
reading, the open runs past their deadline, the settings and the instant, :func:`plan_tick`
decides everything a tick does: the firings to dispatch and when, those to record SKIPPED and
why, the skipped ranges, the runs to time out, take over or fail, the shards to fan out to, and
how far the watermark may move. It reads no clock and writes nothing; the executor
(:mod:`mini_scheduler.tick.execute`) carries a plan out, and the dry run prints it.

A tick of minute M owns the firings in ``[M + lead, M + lead + 60 s)``. The region's watermark
records the end of the last window handled; firings between it and the window are misfires and
follow each job's ``misfire`` policy. The watermark only moves forward, and never past a firing
of an active minute that was neither claimed nor recorded as skipped.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from mini_scheduler.claims.base import BACKFILL, SCHEDULE, Control, Deferred, Pause
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.config import Settings
from mini_scheduler.environment.active import Reading, same_environment
from mini_scheduler.errors import EventError
from mini_scheduler.jobs import CronFile, Job
from mini_scheduler.model import Firing, SkipReason, iso_seconds
from mini_scheduler.schedule_entry import schedule_job
from mini_scheduler.schedules import successor
from mini_scheduler.tick.sweep import Sweep, plan_sweep

_SECOND = timedelta(seconds=1)
RANGE_CAP = 100_000  # firings counted in one skipped range (a bound on the work, not a limit)


@dataclass(frozen=True, slots=True)
class Shard:
    """A part of the jobs, picked by a stable hash of the name (fan-out past one ticker)."""

    index: int
    count: int

    def holds(self, job: str) -> bool:
        return zlib.crc32(job.encode()) % self.count == self.index

    @property
    def suffix(self) -> str:
        return f"#shard-{self.index}-of-{self.count}"


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Claim ``firing`` and dispatch it at ``due`` (its second, plus any ``deferred.start``)."""

    job: Job
    firing: Firing
    due: datetime
    delay: int = 0  # deferred.start's seconds
    deferred: Deferred | None = None  # a deferred firing's: forgotten once claimed
    then: Deferred | None = None  # a runtime schedule's next firing: written as it is forgotten


@dataclass(frozen=True, slots=True)
class Skip:
    """Record ``firing`` SKIPPED for ``reason``."""

    job: Job
    firing: Firing
    reason: str
    deferred: Deferred | None = None  # a deferred firing too late to run: forgotten once recorded
    then: Deferred | None = None  # a runtime schedule's next firing


@dataclass(frozen=True, slots=True)
class SkipRange:
    """Record ``firings`` (oldest first) SKIPPED as one range keyed by the first."""

    job: Job
    firings: tuple[datetime, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class Missed:
    """A job's misfires and what its policy made of them (for the log line)."""

    job: Job
    count: int
    first: datetime
    runs: int
    skipped: int


@dataclass(frozen=True, slots=True)
class LeftAlone:
    """A job's due firings that the tick writes nothing for: on standby, or paused."""

    job: Job
    firings: int
    pause: Pause | None = None  # None: standby


@dataclass(frozen=True, slots=True)
class TickInputs:
    """What a tick reads before it decides anything."""

    minute: datetime
    cron_file: CronFile
    control: Control
    reading: Reading
    now: datetime
    due_runs: Sequence[RunRecord] = ()  # the sweep's query; a shard reads none
    shard: Shard | None = None
    can_fan_out: bool = False
    deferred: Sequence[Deferred] = ()  # due before the window's end; a shard reads none


@dataclass(slots=True)
class DeferredPlan:
    """What a tick does with the deferred firings it read (:func:`plan_deferred`)."""

    dispatches: list[Dispatch] = field(default_factory=list)
    late: list[Skip] = field(default_factory=list)  # past misfire.grace: recorded SKIPPED
    dropped: list[tuple[Deferred, str]] = field(default_factory=list)  # no job runs them
    paused: list[LeftAlone] = field(default_factory=list)  # a paused schedule's firings
    moved: list[tuple[Deferred, Deferred]] = field(default_factory=list)  # ... and its next


@dataclass(frozen=True, slots=True)
class TickPlan:
    """Everything one tick does, decided before it does any of it."""

    minute: datetime
    window: tuple[datetime, datetime]
    scope: str  # whose watermark: the region's origin, plus the shard's suffix
    environment: str
    active_environment: str | None
    mode: str  # "active" or "standby"
    handled: datetime | None  # the watermark as read (None: the region's first tick)
    note: str | None = None
    error: str | None = None
    dispatches: tuple[Dispatch, ...] = ()  # the window's firings, by due time
    misfire_runs: tuple[tuple[Dispatch, ...], ...] = ()  # per job, run in order, oldest first
    skips: tuple[Skip, ...] = ()
    ranges: tuple[SkipRange, ...] = ()
    missed: tuple[Missed, ...] = ()
    left_alone: tuple[LeftAlone, ...] = ()
    sweep: Sweep = field(default_factory=Sweep)
    fan_out: int = 0  # shards to invoke (0: none)
    due_count: int = 0  # firings due in the window when the tick fans out
    advance_to: datetime | None = None  # how far the watermark moves when nothing is held
    dropped: tuple[tuple[Deferred, str], ...] = ()  # deferred firings no job can run, and why
    moved: tuple[tuple[Deferred, Deferred], ...] = ()  # a paused schedule's firing -> its next

    @property
    def misfired(self) -> int:
        return sum(m.count for m in self.missed)

    @property
    def failed_closed(self) -> bool:
        return self.active_environment is None

    @property
    def already_handled(self) -> bool:
        return self.handled is not None and self.handled >= self.window[1]

    def claims(self) -> list[Dispatch]:
        """Every firing the tick would claim, misfire runs first."""
        return [d for group in self.misfire_runs for d in group] + list(self.dispatches)


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
            if job.name not in paused and (n := _count(job, begin, end))
        )
        return replace(base, left_alone=standby, sweep=sweep, advance_to=end)
    if shard is None and inputs.can_fan_out:
        due = sum(_count(job, begin, end) for job in jobs if job.name not in paused)
        if due > settings.fanout_threshold:
            held = plan_deferred(inputs, settings)
            deferred, twice = claimed_once(held.dispatches, set())
            return replace(
                base,
                mode="active",
                note=f"{due} firings due: fanned out to {settings.fanout_shards} shards",
                sweep=sweep,
                fan_out=settings.fanout_shards,
                due_count=due,
                dispatches=tuple(deferred),  # the parent runs the deferred firings itself
                skips=tuple(held.late),
                dropped=(*held.dropped, *twice),
                left_alone=tuple(held.paused),
                moved=tuple(held.moved),
            )
    jitter = rng or random.Random()  # nosec B311 # deferred.start jitter, not security
    return _active(base, inputs, settings, jobs, watermark, begin, sweep, jitter)


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
    return replace(
        base,
        mode="active",
        dispatches=tuple(sorted(deferred, key=lambda d: d.due)),
        skips=tuple(held.late),
        dropped=(*held.dropped, *twice),
        left_alone=tuple(held.paused),
        moved=tuple(held.moved),
    )


def plan_deferred(inputs: TickInputs, settings: Settings) -> DeferredPlan:
    """The deferred firings the tick dispatches (each at its due instant, or at once when that
    has passed), those it records SKIPPED because they are later than ``misfire.grace`` (a
    backfill's never: its due instants only pace it), and those it forgets because no job can
    run them. A runtime schedule's firing brings the schedule's other firings of the window (a
    schedule may fire more than once a minute) and its next one after the window (``then``).
    A paused job's retries and backfills wait, read again after its resume; a paused runtime
    schedule moves on as a paused cron.yaml job does (:func:`_paused_schedule`)."""
    cron_file = inputs.cron_file
    start, end = window(inputs.minute.replace(second=0, microsecond=0), settings)
    stale_before = start - timedelta(seconds=cron_file.misfire_grace)
    held = DeferredPlan()
    for item in inputs.deferred:
        job, why = deferred_job(item, cron_file)
        if job is None:
            held.dropped.append((item, why))
            continue
        pause = inputs.control.paused.get(job.name)
        if pause is not None:
            if item.reason == SCHEDULE:
                _paused_schedule(held, item, job, pause, inputs, settings)
            continue
        then = None
        if item.reason == SCHEDULE:
            then = successor(item, job, end - _SECOND, origin=settings.origin, now=inputs.now)
            after = max(item.firing.scheduled + _SECOND, start)
            held.dispatches.extend(  # forgotten with the item: it held them all
                Dispatch(job, Firing(job.name, at), max(at, inputs.now), 0, item)
                for at in job.firings(after, end)
            )
        if item.reason != BACKFILL and item.due < stale_before:
            held.late.append(Skip(job, item.firing, SkipReason.MISFIRE_GRACE, item, then))
        else:
            held.dispatches.append(
                Dispatch(job, item.firing, max(item.due, inputs.now), 0, item, then)
            )
    return held


def _paused_schedule(
    held: DeferredPlan,
    item: Deferred,
    job: Job,
    pause: Pause,
    inputs: TickInputs,
    settings: Settings,
) -> None:
    """A paused runtime schedule's firings of the window are not run and nothing is written
    for them, as for a paused cron.yaml job; the schedule moves on to its first firing after
    the window, so that after its resume it fires at its next firing. A one-time schedule (or
    one past its end) has none: its firing is recorded SKIPPED (``paused``), so that its
    history says why it never ran."""
    start, end = window(inputs.minute.replace(second=0, microsecond=0), settings)
    after = max(item.firing.scheduled + _SECOND, start)
    count = 1 + sum(1 for _ in job.firings(after, end))
    held.paused.append(LeftAlone(job, count, pause))
    then = successor(item, job, end - _SECOND, origin=settings.origin, now=inputs.now)
    if then is None:
        held.late.append(Skip(job, item.firing, SkipReason.PAUSED, item))
    else:
        held.moved.append((item, then))


def claimed_once(
    deferred: Sequence[Dispatch], taken: set[str]
) -> tuple[list[Dispatch], list[tuple[Deferred, str]]]:
    """One claim per firing id in a tick: the deferred firings' dispatches less those of a
    firing ``taken`` already (the window's own, a misfire run) or met before (the same window
    backfilled twice), and the deferred firings that only held such a firing, to forget: its
    one claim answers for them all. A claim batch never holds the same key twice."""
    kept: list[Dispatch] = []
    twice: list[Dispatch] = []
    for d in deferred:
        (twice if d.firing.id in taken else kept).append(d)
        taken.add(d.firing.id)
    still_held = {d.deferred.key for d in kept if d.deferred is not None}
    dropped = {
        d.deferred.key: (
            d.deferred,
            f"firing {d.firing.id} is due twice in this tick (a backfill sent twice?): "
            "it is claimed once",
        )
        for d in twice
        if d.deferred is not None and d.deferred.key not in still_held
    }
    return kept, list(dropped.values())


def deferred_job(item: Deferred, cron_file: CronFile) -> tuple[Job | None, str]:
    """The job that runs a deferred firing: cron.yaml's job of its name, or the runtime
    schedule its detail keeps (a retry of a schedule's run keeps it too); None and why not."""
    name = item.firing.job
    job = cron_file.job(name)
    entry = item.detail.get("entry")
    if isinstance(entry, Mapping):
        if job is not None:
            return None, f"runtime schedule {name} has the name of a job of {cron_file.source}"
        try:
            return schedule_job(entry), ""
        except (EventError, ValueError) as exc:
            return None, f"its schedule is refused today: {exc}"
    if job is None:
        return None, f"no job {name} in {cron_file.source}"
    if not job.enabled:
        return None, f"job {job.name} is disabled"
    return job, ""


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
    cron_file = inputs.cron_file
    start, end = base.window
    paused = inputs.control.paused
    dispatches: list[Dispatch] = []
    misfire_runs: list[tuple[Dispatch, ...]] = []
    skips: list[Skip] = []
    ranges: list[SkipRange] = []
    missed: list[Missed] = []
    left_alone: list[LeftAlone] = []
    for job in jobs:
        if job.name in paused:
            due = _count(job, watermark, end)
            if due:
                left_alone.append(LeftAlone(job, due, paused[job.name]))
            continue
        if watermark < start:
            outcome = plan_misfires(job, cron_file, watermark, start)
            if outcome is not None:
                runs, job_skips, job_ranges, note = outcome
                if runs:
                    misfire_runs.append(
                        tuple(Dispatch(job, Firing(job.name, at), inputs.now) for at in runs)
                    )
                skips.extend(job_skips)
                ranges.extend(job_ranges)
                missed.append(note)
        for at in job.firings(begin, end):
            delay = rng.randint(0, 9) if cron_file.deferred_start else 0
            dispatches.append(
                Dispatch(job, Firing(job.name, at), at + timedelta(seconds=delay), delay)
            )
    held = plan_deferred(inputs, settings)
    taken = {d.firing.id for group in misfire_runs for d in group}
    taken.update(d.firing.id for d in dispatches)
    deferred, twice = claimed_once(held.dispatches, taken)
    dispatches.extend(deferred)
    skips.extend(held.late)
    left_alone.extend(held.paused)
    dispatches.sort(key=lambda d: d.due)
    return replace(
        base,
        mode="active",
        dropped=(*held.dropped, *twice),
        moved=tuple(held.moved),
        dispatches=tuple(dispatches),
        misfire_runs=tuple(misfire_runs),
        skips=tuple(skips),
        ranges=tuple(ranges),
        missed=tuple(missed),
        left_alone=tuple(left_alone),
        sweep=sweep,
        advance_to=end,
    )


def plan_misfires(
    job: Job, cron_file: CronFile, watermark: datetime, start: datetime
) -> tuple[list[datetime], list[Skip], list[SkipRange], Missed] | None:
    """The firings ``job`` missed in ``[watermark, start)``, split by its policy into runs,
    single skips and skipped ranges; None when it missed none."""
    grace_start = max(watermark, start - timedelta(seconds=cron_file.misfire_grace))
    older: list[datetime] = []
    if watermark < grace_start:
        for at in job.firings(watermark, grace_start):
            older.append(at)
            if len(older) >= RANGE_CAP:
                break
    recent = list(job.firings(grace_start, start))
    if not older and not recent:
        return None
    limit = cron_file.misfire_max
    if job.misfire == "fire_now":
        runs, skipped, reason = recent[-1:], recent[:-1], SkipReason.MISFIRE
    elif job.misfire == "fire_all":
        runs, skipped, reason = recent[:limit], recent[limit:], SkipReason.MISFIRE_MAX
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


def window(minute: datetime, settings: Settings) -> tuple[datetime, datetime]:
    """The firings a tick of ``minute`` owns: ``[minute + lead, minute + lead + 60 s)``."""
    start = minute + timedelta(seconds=settings.tick_lead_seconds)
    return start, start + timedelta(seconds=60)


def sweeps(
    minute: datetime, control: Control, reading: Reading, shard: Shard | None, settings: Settings
) -> bool:
    """Whether the tick of ``minute`` sweeps, so must read the open runs past their deadline:
    not a shard's tick, not failing closed, and not a minute handled already."""
    if shard is not None or reading.active is None:
        return False
    handled = handled_until(control, shard, settings)
    return handled is None or handled < window(minute, settings)[1]


def reads_deferred(sweeping: bool, reading: Reading, settings: Settings) -> bool:
    """Whether a tick that ``sweeping`` (:func:`sweeps`) reads the deferred firings due: only
    when its region is active (a standby region leaves them for when it is)."""
    return (
        sweeping
        and reading.active is not None
        and same_environment(reading.active, settings.environment_name)
    )


def handled_until(control: Control, shard: Shard | None, settings: Settings) -> datetime | None:
    """Where a tick's window starts being new. The region's own watermark, and each shard's: a
    shard also counts what unsharded ticks handled, and an unsharded tick what every shard
    handled, so crossing FANOUT_THRESHOLD either way replays nothing."""
    base = settings.origin  # ``control`` was read for the tick's own scope
    if shard is not None:
        return _latest(control.watermark, control.watermarks.get(base))
    count = settings.fanout_shards
    marks = [control.watermarks.get(base + Shard(i, count).suffix) for i in range(count)]
    if all(mark is not None for mark in marks):
        return _latest(control.watermark, min(mark for mark in marks if mark is not None))
    return control.watermark


def _latest(*moments: datetime | None) -> datetime | None:
    return max((m for m in moments if m is not None), default=None)


def _count(job: Job, start: datetime, end: datetime) -> int:
    return sum(1 for _ in job.firings(start, end)) if start < end else 0
