"""The next hours at a glance: each job's firings in a window, and the moments its zone's clocks
change (DST), so the page can draw one row per job with a mark per firing. Pure: the window is
given."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any, Final
from zoneinfo import ZoneInfo

from mini_scheduler.jobs import Job
from mini_scheduler.jobs.spread import planned_in
from mini_scheduler.model import iso_seconds

MAX_MARKS: Final = 1440
"""Firings drawn per job in a window: one a minute over a day. A job that fires more often is
drawn as its first ones and flagged ``dense`` (a row of marks cannot show more)."""
_STEP: Final = timedelta(minutes=15)  # every zone's offset changes at a quarter hour


@dataclass(frozen=True, slots=True)
class ClockChange:
    """A zone's clocks changing: ``at`` (UTC), the offsets before and after, in seconds."""

    at: datetime
    before: int
    after: int

    def to_json(self, zone: str) -> dict[str, Any]:
        gained = self.after - self.before
        direction = "forward" if gained > 0 else "back"
        minutes = abs(gained) // 60
        amount = f"{minutes // 60} h" if minutes % 60 == 0 else f"{minutes} min"
        return {
            "at": iso_seconds(self.at),
            "zone": zone,
            "offsetBefore": self.before,
            "offsetAfter": self.after,
            "text": f"{zone}: clocks go {direction} {amount}",
        }


@dataclass(frozen=True, slots=True)
class Row:
    """One job's row: its firings in the window (at most :data:`MAX_MARKS`)."""

    job: Job
    firings: list[datetime]
    dense: bool
    changes: list[ClockChange] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job.name,
            "zone": self.job.zone,
            "firings": [iso_seconds(f) for f in self.firings],
            "dense": self.dense,
            "clockChanges": [c.to_json(self.job.zone) for c in self.changes],
        }


def _offset(zone: ZoneInfo, moment: datetime) -> int:
    delta = moment.astimezone(zone).utcoffset()
    return int(delta.total_seconds()) if delta is not None else 0


def clock_changes(zone: ZoneInfo, begin: datetime, end: datetime) -> list[ClockChange]:
    """The instants in ``[begin, end)`` at which ``zone``'s UTC offset changes, to the second."""
    changes: list[ClockChange] = []
    moment = begin
    before = _offset(zone, moment)
    while moment < end:
        following = min(moment + _STEP, end)
        after = _offset(zone, following)
        if after != before:
            low, high = moment, following  # the offset is `before` at low, `after` at high
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                if _offset(zone, middle) == before:
                    low = middle
                else:
                    high = middle
            at = high.replace(microsecond=0)
            if _offset(zone, at) == before:
                at += timedelta(seconds=1)
            if at < end:
                changes.append(ClockChange(at.astimezone(UTC), before, after))
            before = after
        moment = following
    return changes


def row(job: Job, begin: datetime, end: datetime) -> Row:
    """``job``'s firings in ``[begin, end)`` (each when it starts: a spread one at its
    planned instant) and its zone's clock changes there."""
    if not job.enabled:
        return Row(job, [], False, clock_changes(job.tz, begin, end))
    found = [start for _, start in islice(planned_in(job, begin, end), MAX_MARKS + 1)]
    return Row(job, found[:MAX_MARKS], len(found) > MAX_MARKS, clock_changes(job.tz, begin, end))
