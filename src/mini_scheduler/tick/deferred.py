"""What a tick does with the deferred firings it read (retries, runtime schedules, backfills):
dispatch each at its due instant, record it SKIPPED when it is later than ``misfire.grace``, or
forget it when no job can run it; one claim per firing id in a tick. A catch-up reads only
those its minute's tick may not have read (:func:`unread_by_tick`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from mini_scheduler.claims.base import BACKFILL, BUFFER, SCHEDULE, Deferred, Pause
from mini_scheduler.config import Settings
from mini_scheduler.errors import EventError
from mini_scheduler.jobs import CronFile, Job
from mini_scheduler.jobs.spread import planned_in
from mini_scheduler.model import Firing, SkipReason
from mini_scheduler.tick.due import DuePlan
from mini_scheduler.tick.plan import Dispatch, LeftAlone, Skip, TickInputs
from mini_scheduler.tick.window import window

_SECOND = timedelta(seconds=1)


@dataclass(slots=True)
class DeferredPlan:
    """What a tick does with the deferred firings it read (:func:`plan_deferred`)."""

    dispatches: list[Dispatch] = field(default_factory=list)
    late: list[Skip] = field(default_factory=list)  # past misfire.grace: recorded SKIPPED
    dropped: list[tuple[Deferred, str]] = field(default_factory=list)  # no job runs them
    paused: list[LeftAlone] = field(default_factory=list)  # a paused schedule's firings
    moved: list[tuple[Deferred, Deferred]] = field(default_factory=list)  # ... and its next


def plan_deferred(inputs: TickInputs, settings: Settings) -> DeferredPlan:
    """The deferred firings the tick dispatches (each at its due instant, or at once when that
    has passed), those it records SKIPPED because they are later than ``misfire.grace`` (a
    backfill's never: its due instants only pace it), and those it forgets because no job can
    run them. A runtime schedule's firing brings the schedule's other firings of the window (a
    schedule may fire more than once a minute) and its next one after the window (``then``).
    A paused job's retries and backfills wait, read again after its resume; a paused runtime
    schedule moves on as a paused cron.yaml job does (:func:`_paused_schedule`). A firing kept
    waiting for its job's open run (``buffer``) is tried the oldest of each job first, one a
    tick, whatever its age: it waits as long as the run it waits for lasts."""
    cron_file = inputs.cron_file
    start, end = window(inputs.minute.replace(second=0, microsecond=0), settings)
    stale_before = start - timedelta(seconds=cron_file.misfire_grace)
    held = DeferredPlan()
    first_waiting: set[str] = set()
    for item in inputs.deferred:
        job, why = deferred_job(item, cron_file)
        if job is None:
            held.dropped.append((item, why))
            continue
        elsewhere = inputs.elsewhere.get(item.key)  # skipped here: the next one goes first
        if (
            item.reason == BUFFER
            and elsewhere is None
            and not _first_waiting(first_waiting, job.name)
        ):
            continue  # it waits behind an older one: read again next tick
        pause = inputs.control.paused.get(job.name)
        if pause is not None:
            if item.reason == SCHEDULE:
                _paused_schedule(held, item, job, pause, inputs, settings)
            continue
        then = None
        if item.reason == SCHEDULE:
            then = _successor(item, job, end - _SECOND, origin=settings.origin, now=inputs.now)
            held.dispatches.extend(  # forgotten with the item: it held them all
                Dispatch(job, Firing(job.name, at), max(start, inputs.now), 0, item, planned=start)
                for at, start in _others(item, job, start, end)
            )
        if elsewhere is not None:  # another region ran it, or may have
            held.late.append(Skip(job, item.firing, SkipReason.ELSEWHERE, item, then, elsewhere))
        elif item.reason not in (BACKFILL, BUFFER) and item.due < stale_before:
            held.late.append(Skip(job, item.firing, SkipReason.MISFIRE_GRACE, item, then))
        else:
            due, back = max(item.due, inputs.now), item.key in inputs.taken_back
            dispatch = Dispatch(job, item.firing, due, 0, item, then, over_skipped=back)
            held.dispatches.append(dispatch)
    return held


def unread_by_tick(items: Sequence[Deferred], minute: datetime) -> list[Deferred]:
    """Of the deferred firings a catch-up of ``minute`` read, those its minute's tick may not
    have read: written since the minute began (the tick is sent then and reads at its start),
    and every firing kept waiting (``buffer``), whose wake is the end of the run it waits for,
    whenever it was written. The others the tick read, and holds until its end (it forgets
    them, moves a runtime schedule on, only then): read again, each would be claimed a second
    time, for nothing (the tick's claim decides), an exclusive job's slot taken a moment for a
    firing that has its run, and a schedule's firing kept waiting met again as its own."""
    return [item for item in items if item.reason == BUFFER or item.written_at >= minute]


def _first_waiting(seen: set[str], job: str) -> bool:
    """Whether a waiting firing of ``job`` is the first of the tick (the oldest: they are read
    oldest first), noting it."""
    if job in seen:
        return False
    seen.add(job)
    return True


def queue_behind(
    dispatches: Sequence[Dispatch], groups: Sequence[tuple[Dispatch, ...]] = ()
) -> tuple[list[Dispatch], list[tuple[Dispatch, ...]], list[Dispatch]]:
    """The tick's claims (``dispatches``, and the misfire runs' ``groups``), less the firings
    that queue behind a waiting one (``overlap: buffer_*``): a job's own firings, when one of
    its firings waits, and a buffering job's, when a firing of its pool waits (a place the pool
    gives back goes to the firing that waited, not to a newer one). Those do not claim ahead
    of it but are kept waiting behind it, oldest first, once the claims have answers (its
    claim gives its place back when it starts). The claims and groups kept, and the firings
    queued."""
    waits = [d.job for d in dispatches if _waits(d) and d.job.buffer_limit]
    jobs = {job.name for job in waits}
    pools = {job.pool for job in waits if job.pool is not None}
    if not jobs:
        return list(dispatches), list(groups), []

    def behind(d: Dispatch) -> bool:
        return d.job.name in jobs or bool(d.job.buffer_limit and d.job.pool in pools)

    kept = [d for d in dispatches if _waits(d) or not behind(d)]
    queued = [d for d in dispatches if not _waits(d) and behind(d)]
    queued += [d for group in groups if behind(group[0]) for d in group]
    kept_groups = [group for group in groups if not behind(group[0])]
    return kept, kept_groups, sorted(queued, key=lambda d: d.firing.scheduled)


def not_waiting(due: DuePlan, deferred: Sequence[Dispatch]) -> DuePlan:
    """``due`` (the jobs' own firings) less those the tick claims as waiting firings already (a
    tick that died once it had kept them waiting, before its watermark moved, left them to be
    read again): each is claimed once, as the firing that waits, never dropped as a
    duplicate of its own."""
    ids = {d.firing.id for d in deferred if _waits(d)}
    if ids:
        due.dispatches = [d for d in due.dispatches if d.firing.id not in ids]
        groups = (tuple(d for d in group if d.firing.id not in ids) for group in due.misfire_runs)
        due.misfire_runs = [group for group in groups if group]
    return due


def _waits(d: Dispatch) -> bool:
    return d.deferred is not None and d.deferred.reason == BUFFER


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
    count = 1 + len(_others(item, job, start, end))
    held.paused.append(LeftAlone(job, count, pause))
    then = _successor(item, job, end - _SECOND, origin=settings.origin, now=inputs.now)
    if then is None:
        held.late.append(Skip(job, item.firing, SkipReason.PAUSED, item))
    else:
        held.moved.append((item, then))


def _others(
    item: Deferred, job: Job, start: datetime, end: datetime
) -> list[tuple[datetime, datetime]]:
    """A runtime schedule's firings after ``item``'s planned in ``[start, end)`` (a schedule
    may fire more than once a minute): ``(firing, planned instant)``."""
    return [
        (at, planned) for at, planned in planned_in(job, start, end) if at > item.firing.scheduled
    ]


def _successor(
    item: Deferred, job: Job, after: datetime, *, origin: str, now: datetime
) -> Deferred | None:
    """:func:`mini_scheduler.schedules.successor`, imported at a runtime schedule's first firing:
    a tick of cron.yaml's jobs never loads the runtime schedules."""
    from mini_scheduler.schedules import successor

    return successor(item, job, after, origin=origin, now=now)


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
            from mini_scheduler.schedule_entry import schedule_job

            return schedule_job(entry, pools=cron_file.pools), ""
        except (EventError, ValueError) as exc:
            return None, f"its schedule is refused today: {exc}"
    if job is None:
        return None, f"no job {name} in {cron_file.source}"
    if not job.enabled:
        return None, f"job {job.name} is disabled"
    return job, ""
