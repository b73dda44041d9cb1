"""Quartz cron statements: parse them as Quartz 2.3.2 does, and find their firings in a zone.

The parser follows Quartz's ``CronExpression`` character by character, so a statement Quartz
accepts is accepted here with the same meaning, and one it refuses raises ``CronSyntaxError``
naming the field. ``0#k`` in day-of-week, which Quartz lets through unchecked, is the kth
Saturday, as Quartz's arithmetic reads it. Three departures, all deliberate:

* more than seven fields (Quartz ignores the extra ones) are refused;
* a field that leaves no value at all is refused: ``L`` in the seconds field (Quartz accepts it
  and then fails at run time), ``99#k`` in day-of-week (99 is Quartz's marker for ``*``: Quartz
  accepts it and never fires);
* ``L-nW`` where ``L-n`` falls before the 1st does not fire that month (Quartz fires on the 1st,
  or searches for ever), as ``L-n`` alone does not.

Firings follow the wall clock of the zone, with the DST rules of README.md ("Time zones and
daylight saving"):

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

The evaluator never reads the clock: every question names the instant it starts from.
"""

from __future__ import annotations

import bisect
import calendar
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Final

from mini_scheduler.errors import CronSyntaxError
from mini_scheduler.zones import EPOCH, ZoneTimeline, resolve_zone, timeline

__all__ = ["CronExpression", "CronSyntaxError", "parse"]

SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK, YEAR = range(7)
FIELD_NAMES: Final = ("second", "minute", "hour", "day-of-month", "month", "day-of-week", "year")
_ALL_SPEC: Final = 99  # Quartz's marker for '*'
_NO_SPEC: Final = 98  # Quartz's marker for '?'
_QUARTZ_MIN_YEAR: Final = 1970  # Quartz's '*' in the year field starts here; so do firings
_QUARTZ_MAX_YEAR: Final = 2999  # Quartz stops looking past this year; so do we
_MAX_STATEMENT: Final = 1024
_MONTHS: Final = {
    name: i + 1
    for i, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
    )
}
_DAYS: Final = {
    name: i + 1 for i, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))
}
_LAST_DAY_TOKEN: Final = re.compile(r"L-[0-9]*W?")
_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()
_DAY: Final = 86400
_FIRST_INSTANT: Final = -3 * 86400  # 1969-12-29T00:00Z: before any wall time of 1970
_LAST_INSTANT: Final = (date(_QUARTZ_MAX_YEAR + 1, 1, 1).toordinal() - _EPOCH_ORDINAL + 2) * 86400
_JUMP_GUARD: Final = 3 * 86400  # more than any two UTC offsets differ (26 hours) plus a margin


class _Refused(Exception):
    """Quartz's ParseException, raised inside the parser and turned into CronSyntaxError."""


class _JavaError(Exception):
    """A Java runtime exception in Quartz's parser (index out of range, bad number): Quartz
    reports these as "Illegal cron expression format"."""


def _char(s: str, i: int) -> str:
    if not 0 <= i < len(s):
        raise _JavaError("string index out of range")
    return s[i]


def _substring(s: str, begin: int, end: int | None = None) -> str:
    end = len(s) if end is None else end
    if begin < 0 or end > len(s) or begin > end:
        raise _JavaError("string index out of range")
    return s[begin:end]


def _parse_int(text: str) -> int:
    """``Integer.parseInt``: an optional sign and decimal digits, within 32 bits."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(ch.isdecimal() for ch in digits):
        raise _JavaError(f"for input string: {text!r}")
    value = int(text[0] + digits if digits is not text else digits)
    if not -(2**31) <= value < 2**31:
        raise _JavaError(f"for input string: {text!r}")
    return value


def _java_trim(s: str) -> str:
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


class _QuartzParser:
    """A port of Quartz 2.3.2's ``buildExpression`` and ``storeExpressionVals``."""

    def __init__(self) -> None:
        self.sets: list[set[int]] = [set() for _ in range(7)]
        self.last_day_of_week = False
        self.nth_day_of_week = 0
        self.last_day_of_month = False
        self.nearest_weekday = False
        self.last_day_offset = 0
        self.every_year = False  # '*' (or '*/1') in the year field, kept as a flag, not a set
        self.field = 0
        self.token = ""  # nosec B105 # the parser's current token, not a password

    def build(self, expression: str) -> None:
        tokens = [t for t in re.split(r"[ \t]+", expression) if t]
        if len(tokens) > 7:
            self.field = -1
            raise _Refused(f"{len(tokens)} fields; a statement has 6 or 7")
        for expr_on, raw in enumerate(tokens):
            self.field = expr_on
            expr = _java_trim(raw)
            if expr_on == DAY_OF_MONTH and "L" in expr and len(expr) > 1 and "," in expr:
                raise _Refused("'L' and 'LW' cannot be listed with other days of the month")
            if expr_on == DAY_OF_WEEK and "L" in expr and len(expr) > 1 and "," in expr:
                raise _Refused("'L' cannot be listed with other days of the week")
            if expr_on == DAY_OF_WEEK and expr.count("#") > 1:
                raise _Refused("only one '#' day is supported")
            self.token = expr
            for value in (v for v in expr.split(",") if v):
                self.store(value, expr_on)
        if len(tokens) <= DAY_OF_WEEK:
            self.field = -1
            raise _Refused(f"{len(tokens)} fields; a statement has 6 or 7")
        if len(tokens) <= YEAR:
            self.field = YEAR
            self.store("*", YEAR)
        dom_spec = _NO_SPEC not in self.sets[DAY_OF_MONTH]
        dow_spec = _NO_SPEC not in self.sets[DAY_OF_WEEK]
        if dom_spec == dow_spec:
            self.field = DAY_OF_WEEK
            raise _Refused("give a day-of-month or a day-of-week, and '?' in the other")

    def store(self, s: str, kind: int) -> None:
        i = 0
        while i < len(s) and s[i] in " \t":
            i += 1
        if i >= len(s):
            return
        c = s[i]
        if "A" <= c <= "Z" and s not in ("L", "LW") and not _LAST_DAY_TOKEN.fullmatch(s):
            sub = _substring(s, i, i + 3)
            end_value = -1
            if kind == MONTH:
                start_value = _MONTHS.get(sub, -1)
                if start_value <= 0:
                    raise _Refused(f"invalid month {sub!r}")
                if len(s) > i + 3 and s[i + 3] == "-":
                    i += 4
                    sub = _substring(s, i, i + 3)
                    end_value = _MONTHS.get(sub, -1)
                    if end_value <= 0:
                        raise _Refused(f"invalid month {sub!r}")
            elif kind == DAY_OF_WEEK:
                start_value = _DAYS.get(sub, -1)
                if start_value < 0:
                    raise _Refused(f"invalid day of the week {sub!r}")
                if len(s) > i + 3:
                    c = s[i + 3]
                    if c == "-":
                        i += 4
                        sub = _substring(s, i, i + 3)
                        end_value = _DAYS.get(sub, -1)
                        if end_value < 0:
                            raise _Refused(f"invalid day of the week {sub!r}")
                    elif c == "#":
                        self._nth(s, i + 4)
                    elif c == "L":
                        self.last_day_of_week = True
            else:
                raise _Refused(f"illegal characters {sub!r}")
            self.add(start_value, end_value, 1 if end_value != -1 else 0, kind)
            return

        if c == "?":
            i += 1
            if i + 1 < len(s) and s[i] != " " and s[i + 1] != "\t":
                raise _Refused(f"illegal character after '?': {s[i]!r}")
            if kind not in (DAY_OF_WEEK, DAY_OF_MONTH):
                raise _Refused("'?' is only for day-of-month or day-of-week")
            if kind == DAY_OF_WEEK and not self.last_day_of_month:
                days = self.sets[DAY_OF_MONTH]
                if not days:
                    raise _JavaError("no element")
                if max(days) == _NO_SPEC:
                    raise _Refused("'?' can be in day-of-month or day-of-week, not both")
            self.add(_NO_SPEC, -1, 0, kind)
            return

        if c in "*/":
            if c == "*" and i + 1 >= len(s):
                self.add(_ALL_SPEC, -1, 0, kind)
                return
            if c == "/" and (i + 1 >= len(s) or s[i + 1] in " \t"):
                raise _Refused("'/' must be followed by an integer")
            if c == "*":
                i += 1
            c = _char(s, i)
            if c == "/":
                i += 1
                if i >= len(s):
                    raise _Refused("unexpected end after '/'")
                increment = _parse_int(s[i:])
                self._check_increment(increment, kind)
            else:
                increment = 1
            self.add(_ALL_SPEC, -1, increment, kind)
            return

        if c == "L":
            i += 1
            if kind == DAY_OF_MONTH:
                self.last_day_of_month = True
            if kind == DAY_OF_WEEK:
                self.add(7, 7, 0, kind)
            if kind == DAY_OF_MONTH and len(s) > i:
                if s[i] == "-":
                    value, i = self._value(0, s, i + 1)
                    self.last_day_offset = value
                    if value > 30:
                        raise _Refused("the offset from the last day must be 30 or less")
                if len(s) > i and s[i] == "W":
                    self.nearest_weekday = True
            return

        if "0" <= c <= "9":
            value = int(c)
            i += 1
            if i >= len(s):
                self.add(value, -1, -1, kind)
                return
            if "0" <= s[i] <= "9":
                value, i = self._value(value, s, i)
            self._check_next(i, s, value, kind)
            return

        raise _Refused(f"unexpected character {c!r}")

    def _nth(self, s: str, at: int) -> None:
        try:
            nth = _parse_int(_substring(s, at))
        except _JavaError:
            nth = 0
        if not 1 <= nth <= 5:
            raise _Refused("'#' must be followed by a number from 1 to 5")
        self.nth_day_of_week = nth

    @staticmethod
    def _check_increment(increment: int, kind: int) -> None:
        limits = {SECOND: 59, MINUTE: 59, HOUR: 23, DAY_OF_MONTH: 31, DAY_OF_WEEK: 7, MONTH: 12}
        limit = limits.get(kind)
        if limit is not None and increment > limit:
            raise _Refused(f"increment {increment} is larger than {limit}")

    def _check_next(self, i: int, s: str, value: int, kind: int) -> None:
        if i >= len(s):
            self.add(value, -1, -1, kind)
            return
        c = s[i]
        if c == "L":
            if kind != DAY_OF_WEEK:
                raise _Refused("'L' after a number is only for day-of-week")
            if not 1 <= value <= 7:
                raise _Refused("day-of-week values are 1 to 7")
            self.last_day_of_week = True
            self.sets[kind].add(value)
            return
        if c == "W":
            if kind != DAY_OF_MONTH:
                raise _Refused("'W' is only for day-of-month")
            if value > 31:
                raise _Refused("'W' needs a day of the month from 1 to 31")
            self.nearest_weekday = True
            self.sets[kind].add(value)
            return
        if c == "#":
            if kind != DAY_OF_WEEK:
                raise _Refused("'#' is only for day-of-week")
            self._nth(s, i + 1)
            self.sets[kind].add(value)
            return
        if c == "-":
            i += 1
            end = int(_digit(_char(s, i)))
            i += 1
            if i >= len(s):
                self.add(value, end, 1, kind)
                return
            if "0" <= s[i] <= "9":
                end, i = self._value(end, s, i)
            if i < len(s) and s[i] == "/":
                i += 1
                step = int(_digit(_char(s, i)))
                i += 1
                if i >= len(s):
                    self.add(value, end, step, kind)
                    return
                if "0" <= s[i] <= "9":
                    step, i = self._value(step, s, i)
                self.add(value, end, step, kind)
                return
            self.add(value, end, 1, kind)
            return
        if c == "/":
            if i + 1 >= len(s) or s[i + 1] in " \t":
                raise _Refused("'/' must be followed by an integer")
            i += 1
            step = int(_digit(_char(s, i)))
            i += 1
            if i >= len(s):
                self._check_increment(step, kind)
                self.add(value, -1, step, kind)
                return
            if "0" <= s[i] <= "9":
                step, i = self._value(step, s, i)
                self._check_increment(step, kind)
                self.add(value, -1, step, kind)
                return
            raise _Refused(f"unexpected character {s[i]!r} after '/'")
        self.add(value, -1, 0, kind)

    @staticmethod
    def _value(first: int, s: str, i: int) -> tuple[int, int]:
        """Quartz's ``getValue``: ``first`` followed by the digits at ``i``; and the position."""
        c = _char(s, i)
        text = str(first)
        while "0" <= c <= "9":
            text += c
            i += 1
            if i >= len(s):
                break
            c = s[i]
        return _parse_int(text), (i if i < len(s) else i + 1)

    def add(self, value: int, end: int, increment: int, kind: int) -> None:
        target = self.sets[kind]
        if kind in (SECOND, MINUTE):
            if (value < 0 or value > 59 or end > 59) and value != _ALL_SPEC:
                raise _Refused("values are 0 to 59")
        elif kind == HOUR:
            if (value < 0 or value > 23 or end > 23) and value != _ALL_SPEC:
                raise _Refused("values are 0 to 23")
        elif kind == DAY_OF_MONTH:
            if (value < 1 or value > 31 or end > 31) and value not in (_ALL_SPEC, _NO_SPEC):
                raise _Refused("values are 1 to 31")
        elif kind == MONTH:
            if (value < 1 or value > 12 or end > 12) and value != _ALL_SPEC:
                raise _Refused("values are 1 to 12 or JAN to DEC")
        elif (
            kind == DAY_OF_WEEK
            and (value == 0 or value > 7 or end > 7)
            and value not in (_ALL_SPEC, _NO_SPEC)
        ):
            raise _Refused("values are 1-7 (1 = SUN) or SUN-SAT")

        if increment in (0, -1) and value != _ALL_SPEC:
            target.add(value if value != -1 else _NO_SPEC)
            return
        if kind == YEAR and value == _ALL_SPEC and increment <= 1:
            # Every year Quartz searches (1970-2999): a flag rather than 1,030 set members.
            target.add(_ALL_SPEC)
            self.every_year = True
            return
        start, stop = value, end
        if value == _ALL_SPEC and increment <= 0:
            increment = 1
            target.add(_ALL_SPEC)
        low, high = {
            SECOND: (0, 59),
            MINUTE: (0, 59),
            HOUR: (0, 23),
            DAY_OF_MONTH: (1, 31),
            MONTH: (1, 12),
            DAY_OF_WEEK: (1, 7),
            YEAR: (1970, _QUARTZ_MAX_YEAR),
        }[kind]
        if stop == -1:
            stop = high
        if start in (-1, _ALL_SPEC):
            start = low
        wrap = -1
        if stop < start:
            if kind == YEAR:
                raise _JavaError("start year must be less than stop year")
            wrap = {SECOND: 60, MINUTE: 60, HOUR: 24, MONTH: 12, DAY_OF_WEEK: 7, DAY_OF_MONTH: 31}[
                kind
            ]
            stop += wrap
        for v in range(start, stop + 1, increment):
            if wrap == -1:
                target.add(v)
            else:
                v2 = v % wrap
                if v2 == 0 and kind in (MONTH, DAY_OF_WEEK, DAY_OF_MONTH):
                    v2 = wrap
                target.add(v2)


def _digit(c: str) -> str:
    """``Integer.parseInt(String.valueOf(c))`` for one character."""
    _parse_int(c)
    return c


def _mask(values: set[int]) -> int:
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
    """A parsed Quartz cron statement. Build it with :func:`parse`."""

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

    def __init__(self, statement: str, parser: _QuartzParser) -> None:
        self.statement = statement
        sets = [values - {_ALL_SPEC} for values in parser.sets]
        self._second_mask = _mask(sets[SECOND])
        self._minute_mask = _mask(sets[MINUTE])
        self._hour_mask = _mask(sets[HOUR])
        self._month_mask = _mask(sets[MONTH])
        self.every_hour = self._hour_mask == (1 << 24) - 1
        years = sorted(parser.sets[YEAR] - {_ALL_SPEC})
        everything = (
            len(years) == _QUARTZ_MAX_YEAR - _QUARTZ_MIN_YEAR + 1
            and years[0] == _QUARTZ_MIN_YEAR
            and years[-1] == _QUARTZ_MAX_YEAR
        )
        self._years: tuple[int, ...] | None = (
            None if parser.every_year or everything else tuple(years)
        )
        self._year_set = None if self._years is None else frozenset(self._years)
        self._dom_rule = _NO_SPEC not in parser.sets[DAY_OF_MONTH]
        self._dom_values = sorted(sets[DAY_OF_MONTH] - {_NO_SPEC})
        self._dow_values = sorted(sets[DAY_OF_WEEK] - {_NO_SPEC})
        self._last_day_of_week = parser.last_day_of_week
        self._nth_day_of_week = parser.nth_day_of_week
        self._nearest_weekday = parser.nearest_weekday
        self._last_day_offset = parser.last_day_offset if parser.last_day_of_month else None
        self._day_cache: dict[int, int] = {}
        for kind, name in (
            (SECOND, "second"),
            (MINUTE, "minute"),
            (HOUR, "hour"),
            (MONTH, "month"),
        ):
            if not sets[kind]:
                raise CronSyntaxError(name, "no value", statement)
        if self._dom_rule and self._last_day_offset is None and not self._dom_values:
            raise CronSyntaxError("day-of-month", "no value", statement)
        if not self._dom_rule and not self._dow_values:  # only 99#k: 99 is the '*' marker
            raise CronSyntaxError(
                "day-of-week", "99 is not a day of the week (1-7 or SUN-SAT)", statement
            )
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
        limit_year = _QUARTZ_MAX_YEAR if self._years is not None else start_year + 401
        limit_year = min(limit_year, _QUARTZ_MAX_YEAR)
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
                            _QUARTZ_MIN_YEAR <= piece.year <= _QUARTZ_MAX_YEAR
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


def parse(statement: str) -> CronExpression:
    """Parse a Quartz cron statement; raise :class:`CronSyntaxError` naming the wrong field."""
    if not isinstance(statement, str):
        raise CronSyntaxError("field count", f"a statement is text, not {type(statement).__name__}")
    if len(statement) > _MAX_STATEMENT:
        raise CronSyntaxError("field count", f"longer than {_MAX_STATEMENT} characters")
    parser = _QuartzParser()
    upper = statement.upper()
    try:
        parser.build(upper)
    except _Refused as exc:
        raise CronSyntaxError(_field_name(parser.field), str(exc), statement) from None
    except (_JavaError, IndexError, ValueError) as exc:
        # Quartz reports these as "Illegal cron expression format (java.lang....)": say which
        # value is malformed and how, in words.
        detail = str(exc)
        if "out of range" in detail or detail == "no element":
            detail = "it ends too early, or is not a number, a name, a range or a list"
        elif detail.startswith("for input string"):
            detail = f"{detail.removeprefix('for input string: ')} is not a number"
        raise CronSyntaxError(
            _field_name(parser.field), f"{parser.token!r} is malformed: {detail}", statement
        ) from None
    return CronExpression(statement, parser)


def _field_name(field: int) -> str:
    return FIELD_NAMES[field] if 0 <= field < len(FIELD_NAMES) else "field count"


def utc(moment: datetime) -> datetime:
    """``moment`` in UTC (a helper for callers that print firings)."""
    return moment.astimezone(UTC)
