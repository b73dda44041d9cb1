"""A tick's plan: everything one tick does, decided before it does any of it, as data.

:func:`~mini_scheduler.tick.planning.plan_tick` makes it from what the tick read
(:class:`TickInputs`); the executor (:mod:`mini_scheduler.tick.execute`) carries it out, and the
dry run shows what the executor did with it. A plan holds the firings to dispatch and when
(:class:`Dispatch`), those to record SKIPPED and why (:class:`Skip`, :class:`SkipRange`), the
misfires (:class:`Missed`), the jobs left alone (:class:`LeftAlone`), the sweep, the shards to fan
out to, and how far the watermark may move.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mini_scheduler.claims.base import Control, Deferred, Pause
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.environment.active import Reading
from mini_scheduler.jobs import CronFile, Job
from mini_scheduler.model import Firing
from mini_scheduler.tick.sweep import Sweep


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
    """Claim ``firing`` and dispatch it at ``due`` (its second, or the instant its ``jitter`` or
    ``window`` plans, plus any ``deferred.start``)."""

    job: Job
    firing: Firing
    due: datetime
    delay: int = 0  # deferred.start's seconds
    deferred: Deferred | None = None  # a deferred firing's: forgotten once claimed
    then: Deferred | None = None  # a runtime schedule's next firing: written as it is forgotten
    planned: datetime | None = None  # its jitter or window's instant (None: the firing's own)
    over_skipped: bool = False  # a waiting firing taken back: claimed over its takeover's skip

    @property
    def held_at(self) -> datetime:
        """Where a firing not claimed holds the watermark: the instant it was planned at, so
        that the next tick finds it among the missed (:func:`~.due.plan_misfires`)."""
        return self.planned or self.firing.scheduled


@dataclass(frozen=True, slots=True)
class Skip:
    """Record ``firing`` SKIPPED for ``reason``."""

    job: Job
    firing: Firing
    reason: str
    deferred: Deferred | None = None  # a deferred firing too late to run: forgotten once recorded
    then: Deferred | None = None  # a runtime schedule's next firing
    detail: str | None = None  # what the record says, when more than the reason


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
    # Deferred firings that another region ran or may have run (key -> why), not run here
    # (mini_scheduler.carry.takeover).
    elsewhere: Mapping[str, str] = field(default_factory=dict)
    # This region's waiting firings taken back from a region that took them over (their keys):
    # claimed over the takeover's SKIPPED record here (mini_scheduler.carry.takeover).
    taken_back: frozenset[str] = frozenset()


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
    waits: tuple[Dispatch, ...] = ()  # queued behind a job's waiting firing (overlap: buffer_*)

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
