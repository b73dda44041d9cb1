"""When a parsed Quartz statement fires, in a zone: ``firings`` over a window, ``next_after``.

Firings follow the wall clock of the zone, with the DST rules of docs/cron-yaml.md ("Time zones
and daylight saving"):

* a wall time the clocks skip does not fire;
* a wall time the clocks repeat fires once, at its first occurrence, unless the hour field selects
  every hour: such a statement is a rhythm and fires in both passes of the repeated hour.

Firings fall in the local years 1970 to 2999, the years Quartz's ``*`` covers and searches (so a
year written before 1970, which Quartz would also try, never fires here). A question about an
instant outside them answers from the nearest end: the first firing after 1900 is in 1970, and
nothing fires after 2999.

A window of up to an hour, the ticker's question, is answered from the precompiled fields and the
wall clock the zone's timeline keeps for the window: a job that cannot fire in it is ruled out by
a few bit tests. Longer windows and ``next_after`` search, one segment of constant UTC offset at a
time, leaping over segments that cannot hold the next selected wall time.

The evaluator never reads the clock: every question names the instant it starts from. It takes
its statement as :class:`Fields`, which :func:`mini_scheduler.cron.parser.parse` reads.
"""

from __future__ import annotations

import bisect
import calendar
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Final

from mini_scheduler.cron.zones import EPOCH, ZoneTimeline, resolve_zone, timeline

__all__ = ["CronExpression", "Fields"]

QUARTZ_MIN_YEAR: Final = 1970  # Quartz's '*' in the year field starts here; so do firings
QUARTZ_MAX_YEAR: Final = 2999  # Quartz stops looking past this year; so do we
_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()
_DAY: Final = 86400
_FIRST_INSTANT: Final = -3 * 86400  # 1969-12-29T00:00Z: before any wall time of 1970
_LAST_INSTANT: Final = (date(QUARTZ_MAX_YEAR + 1, 1, 1).toordinal() - _EPOCH_ORDINAL + 2) * 86400
_JUMP_GUARD: Final = 3 * 86400  # more than any two UTC offsets differ (26 hours) plus a margin


@dataclass(frozen=True, slots=True)
class Fields:
    """A statement as the parser read it: the values each field selects ('*' spelt out), and
    the day rule. Exactly one of the day fields selects: day-of-month when ``dom_rule``."""

    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    months: frozenset[int]
    years: tuple[int, ...] | None  # sorted; None for every year Quartz searches (1970-2999)
    dom_rule: bool
    days_of_month: tuple[int, ...]  # sorted
    days_of_week: tuple[int, ...]  # sorted, 1 = SUN ... 7 = SAT (0 in '0#k', 0L: see below)
    last_day_of_week: bool  # 'nL' in day-of-week
    nth_day_of_week: int  # k of 'n#k' in day-of-week, else 0
    nearest_weekday: bool  # 'W' in day-of-month
    last_day_offset: int | None  # n of 'L-n' ('L' is 0) in day-of-month, else None


def _mask(values: frozenset[int]) -> int:
    bits = 0
    for v in values:
        bits |= 1 << v
    return bits


def _next_bit(mask: int, at: int) -> int:
    """The smallest set bit of ``mask`` at or above ``at``, or -1."""
    rest = mask >> at
    if not rest:
        return -1
    return (rest & -rest).bit_length() - 1 + at


def _quartz_weekday(ordinal: int) -> int:
    """Quartz's day of the week, 1 = Sunday ... 7 = Saturday, of a proleptic ordinal."""
    return (ordinal % 7) + 1  # ordinal 1 (0001-01-01) was a Monday: 1 % 7 + 1 == 2


def _counted_weekday(value: int) -> int:
    """The weekday ``nL`` or ``n#k`` counts, from the field's first value ``n``.

    Quartz checks no range before '#', and moves to the weekday wanted by adding
    ``n - today`` days, or ``n + 7 - today`` when today is past it: for 0, always past, that is
    Saturday's arithmetic, so ``0#k`` is the kth Saturday. Other values outside 1-7 name no day.
    """
    return 7 if value == 0 else value


def _nearest_weekday(day: int, first_weekday: int, last_day: int) -> int:
    """Quartz's 'W': the weekday nearest ``day`` without leaving the month."""
    weekday = (first_weekday - 1 + day - 1) % 7 + 1
    if weekday == 7:  # Saturday
        return day + 2 if day == 1 else day - 1
    if weekday == 1:  # Sunday
        return day - 2 if day == last_day else day + 1
    return day


class CronExpression:
    """A parsed Quartz cron statement. Build it with :func:`mini_scheduler.cron.parse`."""

    __slots__ = (
        "_day_cache",
        "_dom_rule",
        "_dom_values",
        "_dow_values",
        "_feasible",
        "_hour_mask",
        "_last_day_of_week",
        "_last_day_offset",
        "_minute_mask",
        "_month_mask",
        "_nearest_weekday",
        "_nth_day_of_week",
        "_second_mask",
        "_year_set",
        "_years",
        "every_hour",
        "statement",
    )

    def __init__(self, statement: str, fields: Fields) -> None:
        self.statement = statement
        self._second_mask = _mask(fields.seconds)
        self._minute_mask = _mask(fields.minutes)
        self._hour_mask = _mask(fields.hours)
        self._month_mask = _mask(fields.months)
        self.every_hour = self._hour_mask == (1 << 24) - 1
        self._years = fields.years
        self._year_set = None if self._years is None else frozenset(self._years)
        self._dom_rule = fields.dom_rule
        self._dom_values = fields.days_of_month
        self._dow_values = fields.days_of_week
        self._last_day_of_week = fields.last_day_of_week
        self._nth_day_of_week = fields.nth_day_of_week
        self._nearest_weekday = fields.nearest_weekday
        self._last_day_offset = fields.last_day_offset
        self._day_cache: dict[int, int] = {}
        self._feasible = self._can_ever_fire()

    def __repr__(self) -> str:
        return f"parse({self.statement!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CronExpression) and other.statement == self.statement

    def __hash__(self) -> int:
        return hash(self.statement)

    # -- days -----------------------------------------------------------------------------

    def _days_of(self, year: int, month: int) -> int:
        """A bit mask of the days of ``month`` the statement's day fields select."""
        key = year * 16 + month
        found = self._day_cache.get(key)
        if found is not None:
            return found
        first_ordinal = date(year, month, 1).toordinal()
        first_weekday = _quartz_weekday(first_ordinal)
        last_day = calendar.monthrange(year, month)[1]
        mask = 0
        if self._dom_rule:
            if self._last_day_offset is not None:
                day = last_day - self._last_day_offset
                if day >= 1:
                    if self._nearest_weekday:
                        day = _nearest_weekday(day, first_weekday, last_day)
                    mask = 1 << day
            elif self._nearest_weekday:
                day = self._dom_values[0]
                if 1 <= day <= last_day:
                    mask = 1 << _nearest_weekday(day, first_weekday, last_day)
            else:
                for day in self._dom_values:
                    if day <= last_day:
                        mask |= 1 << day
        else:
            weekday = _counted_weekday(self._dow_values[0])
            if self._last_day_of_week or self._nth_day_of_week:
                if 1 <= weekday <= 7:
                    first = 1 + (weekday - first_weekday) % 7
                    if self._last_day_of_week:
                        mask = 1 << (first + (last_day - first) // 7 * 7)
                    else:
                        day = first + 7 * (self._nth_day_of_week - 1)
                        if day <= last_day:
                            mask = 1 << day
            else:
                for weekday in self._dow_values:
                    day = 1 + (weekday - first_weekday) % 7
                    while day <= last_day:
                        mask |= 1 << day
                        day += 7
        if len(self._day_cache) > 512:
            self._day_cache.clear()
        self._day_cache[key] = mask
        return mask

    def _can_ever_fire(self) -> bool:
        """Whether some month of some year can hold a firing (else every search is cut short)."""
        months = [m for m in range(1, 13) if self._month_mask >> m & 1]
        longest = max(29 if m == 2 else calendar.monthrange(2001, m)[1] for m in months)
        if self._dom_rule:
            if self._last_day_offset is not None:
                return longest - self._last_day_offset >= 1
            first = self._dom_values[0]
            return 1 <= first <= longest
        if self._last_day_of_week or self._nth_day_of_week:
            return 1 <= _counted_weekday(self._dow_values[0]) <= 7
        return True

    # -- searching ------------------------------------------------------------------------

    def _next_time(self, hour: int, minute: int, second: int) -> int:
        """Seconds into the day of the first selected time at or after the given one, or -1."""
        if self._hour_mask >> hour & 1:
            if self._minute_mask >> minute & 1:
                s = _next_bit(self._second_mask, second)
                if s >= 0:
                    return hour * 3600 + minute * 60 + s
            m = _next_bit(self._minute_mask, minute + 1)
            if m >= 0:
                return hour * 3600 + m * 60 + _next_bit(self._second_mask, 0)
        h = _next_bit(self._hour_mask, hour + 1)
        if h < 0:
            return -1
        return h * 3600 + _next_bit(self._minute_mask, 0) * 60 + _next_bit(self._second_mask, 0)

    def _next_wall(self, wall: int, limit_year: int) -> int | None:
        """The first selected wall time (local seconds since 1970) at or after ``wall``."""
        days, time_of_day = divmod(max(wall, 0), _DAY)  # no firing before 1970, as in Quartz
        day_date = date.fromordinal(_EPOCH_ORDINAL + days)
        year, month, day = day_date.year, day_date.month, day_date.day
        while True:
            if year > limit_year:
                return None
            if self._years is not None and year not in self._years:
                index = bisect.bisect_right(self._years, year)
                if index >= len(self._years):
                    return None
                year, month, day, time_of_day = self._years[index], 1, 1, 0
                continue
            if not self._month_mask >> month & 1:
                nxt = _next_bit(self._month_mask, month + 1)
                if nxt < 0:
                    year, month = year + 1, _next_bit(self._month_mask, 1)
                else:
                    month = nxt
                day, time_of_day = 1, 0
                continue
            found = _next_bit(self._days_of(year, month), day)
            if found < 0:
                month += 1
                if month > 12:
                    year, month = year + 1, 1
                day, time_of_day = 1, 0
                continue
            if found != day:
                day, time_of_day = found, 0
            hour, rest = divmod(time_of_day, 3600)
            seconds = self._next_time(hour, *divmod(rest, 60))
            if seconds < 0:
                day, time_of_day = day + 1, 0
                continue
            return (date(year, month, day).toordinal() - _EPOCH_ORDINAL) * _DAY + seconds

    def _first_from(self, instant: int, zone: tzinfo, before: int | None = None) -> int | None:
        """The first firing at or after ``instant`` (UTC epoch seconds), or None.

        With ``before``, the search stops at that instant (exclusive) and answers None."""
        if not self._feasible or instant >= _LAST_INSTANT:
            return None
        instant = max(instant, _FIRST_INSTANT)
        line = timeline(zone)
        start_year = (EPOCH + timedelta(seconds=instant)).year
        limit_year = QUARTZ_MAX_YEAR if self._years is not None else start_year + 401
        limit_year = min(limit_year, QUARTZ_MAX_YEAR)
        while True:
            segment = line.segment(instant)
            wall = instant + segment.offset
            if not self.every_hour and wall < segment.repeat_until:
                wall = segment.repeat_until  # the second pass of a repeated hour does not fire
            found = self._next_wall(wall, limit_year)
            if found is None:
                return None
            utc = found - segment.offset
            if utc < segment.end:
                return None if before is not None and utc >= before else utc
            following = segment.end
            if following - instant >= _JUMP_GUARD:
                # Nothing fires in [instant, segment.end). Past instant + _JUMP_GUARD every wall
                # time is at or after ``wall`` whatever the offsets, and before
                # found - _JUMP_GUARD every wall time is before ``found``: no wall time in
                # between is selected, so the segments in between need not be visited.
                following = max(following, found - _JUMP_GUARD)
            instant = following
            if before is not None and instant >= before:
                return None

    def _in_window(self, first: int, stop: int, line: ZoneTimeline) -> list[datetime]:
        """The firings in ``[first, stop)``, a window of at most an hour, read straight from the
        precompiled fields, one local hour of one segment at a time."""
        found: list[datetime] = []
        while first < stop:
            piece = line.hour_piece(first, stop)
            if self._hour_mask >> piece.hour & 1:
                low, high = piece.wall, piece.wall + (piece.stop - first) - 1
                if not self.every_hour and low < piece.repeat_until:
                    low = piece.repeat_until  # the second pass of a repeated hour
                if low <= high:
                    low_minute, high_minute = low // 60 % 60, high // 60 % 60
                    minutes = (self._minute_mask >> low_minute) & (
                        (1 << (high_minute - low_minute + 1)) - 1
                    )
                    if (
                        minutes
                        and self._month_mask >> piece.month & 1
                        and (
                            QUARTZ_MIN_YEAR <= piece.year <= QUARTZ_MAX_YEAR
                            if self._year_set is None
                            else piece.year in self._year_set
                        )
                        and self._days_of(piece.year, piece.month) >> piece.day & 1
                    ):
                        self._collect(low, high, low_minute, minutes, piece.offset, found)
            first = piece.stop
        return found

    def _collect(
        self, low: int, high: int, low_minute: int, minutes: int, offset: int, found: list[datetime]
    ) -> None:
        """Append the firings at the wall times ``[low, high]`` (one local hour, one offset)
        whose minute is a bit of ``minutes`` (shifted by ``low_minute``)."""
        hour_start = low - low % 3600
        while minutes:
            bit = minutes & -minutes
            minutes ^= bit
            minute_start = hour_start + (low_minute + bit.bit_length() - 1) * 60
            first_second = low - minute_start if low > minute_start else 0
            last_second = min(high - minute_start, 59)
            seconds = (self._second_mask >> first_second) & (
                (1 << (last_second - first_second + 1)) - 1
            )
            base = minute_start + first_second - offset
            while seconds:
                bit = seconds & -seconds
                seconds ^= bit
                found.append(_to_datetime(base + bit.bit_length() - 1))

    # -- public API -------------------------------------------------------------------------

    def next_after(self, after: datetime, tz: tzinfo | str) -> datetime | None:
        """The first firing strictly after ``after`` (an aware datetime), as an aware UTC
        datetime, or None when the statement never fires again."""
        zone = resolve_zone(tz)
        found = self._first_from(_whole_seconds(after, "after")[0] + 1, zone)
        return None if found is None else _to_datetime(found)

    def firings(self, start: datetime, end: datetime, tz: tzinfo | str) -> Iterator[datetime]:
        """The firings in ``[start, end)``, in order, as aware UTC datetimes."""
        global _WINDOW
        zone = tz if isinstance(tz, tzinfo) else resolve_zone(tz)
        window = _WINDOW
        if window[0] is start and window[1] is end:
            first, stop = window[2], window[3]
        else:
            first = max(_ceil_seconds(start, "start"), _FIRST_INSTANT)
            stop = min(_ceil_seconds(end, "end"), _LAST_INSTANT)
            _WINDOW = (start, end, first, stop)
        if first >= stop or not self._feasible:
            return iter(())
        if stop - first > 3600:
            return self._firings(first, stop, zone)
        # The tick's question, for every job, every minute: answered from the fields. Ruling a
        # job out is a bit test against the wall clock the zone's timeline keeps for the window.
        line = timeline(zone)
        piece = line.hour_piece(first, stop)
        if piece.stop >= stop:
            if not self._hour_mask >> piece.hour & 1:
                return iter(())
            minute = piece.wall // 60
            if minute == (piece.wall + stop - first - 1) // 60 and not (
                self._minute_mask >> minute % 60 & 1
            ):
                return iter(())
        return iter(self._in_window(first, stop, line))

    def _firings(self, first: int, stop: int, zone: tzinfo) -> Iterator[datetime]:
        while True:
            found = self._first_from(first, zone, before=stop)
            if found is None:
                return
            yield _to_datetime(found)
            first = found + 1


# A tick asks every job about the same window, with the same two datetime objects: the last
# window's whole seconds are kept (a tuple, replaced at once, so threads may share it).
_WINDOW: tuple[object, object, int, int] = (None, None, 0, 0)


def _whole_seconds(moment: datetime, name: str) -> tuple[int, bool]:
    """``moment`` as whole seconds since 1970 (rounded down), and whether it had a fraction."""
    if not isinstance(moment, datetime):
        raise TypeError(f"{name} must be a datetime, not {type(moment).__name__}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime (with a tzinfo), got {moment!r}")
    delta = moment - EPOCH
    return delta.days * _DAY + delta.seconds, delta.microseconds != 0


def _ceil_seconds(moment: datetime, name: str) -> int:
    whole, fraction = _whole_seconds(moment, name)
    return whole + 1 if fraction else whole


def _to_datetime(instant: int) -> datetime:
    return _FROM_TIMESTAMP(instant, UTC)  # exact for an int, and twice as fast as EPOCH + delta


_FROM_TIMESTAMP: Final = datetime.fromtimestamp
