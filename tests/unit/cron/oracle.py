"""A brute-force reading of Quartz statements, independent of the engine, for the property tests.

A ``Schedule`` is what a statement means, built by the test's own generator next to the text it
renders (the engine never sees this model, and the model never calls the engine): the sets of
seconds, minutes, hours, months and years, and one day rule. The oracle asks it about concrete
``datetime`` objects: does this wall time match, does this instant fire in this zone? Time zone
arithmetic is ``zoneinfo``'s own (``astimezone`` and ``fold``), never the engine's timeline.

The DST rules of docs/cron-yaml.md ("Time zones and daylight saving"), as the oracle states them:
an instant fires when its wall time matches the statement and either the hour field selects every
hour, or the instant is the first occurrence of that wall time (``fold=0``). A wall time the
clocks skip belongs to no instant, so it never fires.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

SECOND = timedelta(seconds=1)
MINUTE = timedelta(minutes=1)
DAY = timedelta(days=1)
FIRST_YEAR, LAST_YEAR = 1970, 2999  # the years Quartz's '*' covers


def stepped(low: int, high: int, start: int, stop: int, step: int) -> frozenset[int]:
    """``start-stop/step`` on the circle ``low..high``: a range whose end is below its start
    wraps around (``22-2`` hours, ``NOV-FEB``)."""
    size = high - low + 1
    span = (stop - start) % size
    return frozenset(low + (start - low + k) % size for k in range(0, span + 1, step))


def quartz_weekday(day: date) -> int:
    """1 = Sunday ... 7 = Saturday."""
    return day.isoweekday() % 7 + 1


def last_day(day: date) -> int:
    return calendar.monthrange(day.year, day.month)[1]


def nearest_weekday(target: date) -> date:
    """Quartz's ``W``: the Monday-to-Friday day nearest ``target`` without leaving its month."""
    if target.weekday() == 5:  # Saturday: the Friday before, or the Monday after the 1st
        return target + 2 * DAY if target.day == 1 else target - DAY
    if target.weekday() == 6:  # Sunday: the Monday after, or the Friday before the last day
        return target - 2 * DAY if target.day == last_day(target) else target + DAY
    return target


@dataclass(frozen=True)
class DayRule:
    """Which days of a month fire. ``kind``: ``days`` (a set of days of the month), ``last``
    (``L``, ``L-n``, with ``nearest`` for ``LW`` / ``L-nW``), ``nearest`` (``nW``), ``weekdays``
    (a set of Quartz weekdays), ``last-weekday`` (``nL``), ``nth-weekday`` (``n#k``)."""

    kind: str
    values: frozenset[int] = frozenset()
    number: int = 0
    nth: int = 0
    nearest: bool = False

    def selects(self, day: date) -> bool:
        if self.kind == "days":
            return day.day in self.values
        if self.kind == "last":
            target = last_day(day) - self.number
            if target < 1:
                return False
            chosen = day.replace(day=target)
            return day == (nearest_weekday(chosen) if self.nearest else chosen)
        if self.kind == "nearest":
            if self.number > last_day(day):
                return False
            return day == nearest_weekday(day.replace(day=self.number))
        weekday = quartz_weekday(day)
        if self.kind == "weekdays":
            return weekday in self.values
        if self.kind == "last-weekday":
            return weekday == self.number and day.day + 7 > last_day(day)
        if self.kind == "nth-weekday":
            return weekday == self.number and (day.day - 1) // 7 + 1 == self.nth
        raise AssertionError(self.kind)


@dataclass(frozen=True)
class Schedule:
    """What a statement means."""

    text: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    day: DayRule
    months: frozenset[int]
    years: frozenset[int] | None  # None: every year Quartz covers
    every_hour: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "every_hour", self.hours == frozenset(range(24)))

    def per_day(self) -> int:
        """How many wall times a selected day holds."""
        return len(self.seconds) * len(self.minutes) * len(self.hours)

    def selects_date(self, day: date) -> bool:
        if self.years is None:
            if not FIRST_YEAR <= day.year <= LAST_YEAR:
                return False
        elif day.year not in self.years:
            return False
        return day.month in self.months and self.day.selects(day)

    def selects_minute(self, wall: datetime) -> bool:
        return (
            wall.minute in self.minutes
            and wall.hour in self.hours
            and self.selects_date(wall.date())
        )

    def matches(self, wall: datetime) -> bool:
        return wall.second in self.seconds and self.selects_minute(wall)


def fires_at(schedule: Schedule, zone: ZoneInfo, instant: datetime) -> bool:
    """Whether ``instant`` (aware) is a firing of ``schedule`` in ``zone``."""
    wall = instant.astimezone(zone)
    if not schedule.matches(wall):
        return False
    if schedule.every_hour:
        return True
    return wall.replace(fold=0).astimezone(UTC) == instant.astimezone(UTC)


def expected_firings(
    schedule: Schedule, zone: ZoneInfo, start: datetime, end: datetime
) -> list[datetime]:
    """Every firing in ``[start, end)``, found by looking at every UTC minute of the window, and
    at every second of a minute whose wall clock could match."""
    found = []
    minute = start.astimezone(UTC).replace(second=0, microsecond=0)
    while minute < end:
        first, last = minute.astimezone(zone), (minute + 59 * SECOND).astimezone(zone)
        steady = last.replace(tzinfo=None) - first.replace(tzinfo=None) == 59 * SECOND
        if not steady or schedule.selects_minute(first) or schedule.selects_minute(last):
            for k in range(60):
                instant = minute + k * SECOND
                if start <= instant < end and fires_at(schedule, zone, instant):
                    found.append(instant)
        minute += MINUTE
    return found


def _wall_times(schedule: Schedule, day: date) -> Iterator[datetime]:
    for hour in sorted(schedule.hours):
        for minute in sorted(schedule.minutes):
            for second in sorted(schedule.seconds):
                yield datetime(day.year, day.month, day.day, hour, minute, second)


def some_firing_between(
    schedule: Schedule, zone: ZoneInfo, after: datetime, before: datetime
) -> datetime | None:
    """A firing strictly between ``after`` and ``before``, or None when there is none.

    Local dates two days or more inside the interval are asked whether they are selected and,
    if so, whether any of their wall times exists (a selected date whose wall times the clocks
    all skipped holds no firing). The rest, at both ends, is scanned minute by minute."""
    after, before = after.astimezone(UTC), before.astimezone(UTC)
    first_day = after.astimezone(zone).date() + 2 * DAY
    last_day_ = before.astimezone(zone).date() - 2 * DAY
    if first_day > last_day_:
        found = expected_firings(schedule, zone, after + SECOND, before)
        return found[0] if found else None
    # An instant whose wall date is before first_day is before first_day 00:00Z + 14 h (no
    # offset is below -12 h); one whose wall date is after last_day_ is after its end - 14 h.
    reach = timedelta(hours=26)
    low_end = datetime(first_day.year, first_day.month, first_day.day, tzinfo=UTC) + reach
    high_start = datetime(last_day_.year, last_day_.month, last_day_.day, tzinfo=UTC) + DAY - reach
    for low, high in ((after + SECOND, min(low_end, before)), (max(high_start, after), before)):
        found = expected_firings(schedule, zone, low, high)
        found = [f for f in found if after < f < before]
        if found:
            return found[0]
    day = first_day
    while day <= last_day_:
        if schedule.selects_date(day):
            for wall in _wall_times(schedule, day):
                instant = wall.replace(tzinfo=zone).astimezone(UTC)
                if instant.astimezone(zone).replace(tzinfo=None) == wall:  # not skipped
                    return instant
        day += DAY
    return None
