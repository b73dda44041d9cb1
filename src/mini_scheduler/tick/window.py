"""The window a tick owns, and how far the watermarks say it was handled: whether a tick sweeps,
and whether it reads the deferred firings due."""

from __future__ import annotations

from datetime import datetime, timedelta

from mini_scheduler.claims.base import Control
from mini_scheduler.config import Settings
from mini_scheduler.environment.active import Reading, same_environment
from mini_scheduler.tick.plan import Shard


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
