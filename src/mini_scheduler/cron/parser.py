"""Quartz cron statements parsed as Quartz 2.3.2 parses them.

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

This module is a port, and reads like its original: ``_QuartzParser``'s methods are Quartz's
``buildExpression``, ``storeExpressionVals`` (split by the value's first character),
``checkNext``, ``getValue`` and ``addToSet``, line by line, so some are longer than the rest of
the code's functions, and Java's exceptions are raised where Java would throw them. What the
statement selects goes to :class:`~mini_scheduler.cron.evaluator.CronExpression` as
:class:`~mini_scheduler.cron.evaluator.Fields`.
"""

from __future__ import annotations

import re
from typing import Final

from mini_scheduler.cron.evaluator import QUARTZ_MAX_YEAR, QUARTZ_MIN_YEAR, CronExpression, Fields
from mini_scheduler.errors import CronSyntaxError

__all__ = ["parse"]

SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK, YEAR = range(7)
FIELD_NAMES: Final = ("second", "minute", "hour", "day-of-month", "month", "day-of-week", "year")
_ALL_SPEC: Final = 99  # Quartz's marker for '*'
_NO_SPEC: Final = 98  # Quartz's marker for '?'

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
        """Quartz's ``buildExpression``: the fields of ``expression``, one value at a time."""
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
        """``storeExpressionVals``: one value of a field, by its first character."""
        i = 0
        while i < len(s) and s[i] in " \t":
            i += 1
        if i >= len(s):
            return
        c = s[i]
        if "A" <= c <= "Z" and s not in ("L", "LW") and not _LAST_DAY_TOKEN.fullmatch(s):
            self._store_name(s, i, kind)
        elif c == "?":
            self._store_no_spec(s, i, kind)
        elif c in "*/":
            self._store_all(s, i, kind)
        elif c == "L":
            self._store_last(s, i, kind)
        elif "0" <= c <= "9":
            value = int(c)
            i += 1
            if i >= len(s):
                self.add(value, -1, -1, kind)
                return
            if "0" <= s[i] <= "9":
                value, i = self._value(value, s, i)
            self._check_next(i, s, value, kind)
        else:
            raise _Refused(f"unexpected character {c!r}")

    def _store_name(self, s: str, i: int, kind: int) -> None:
        """A month or day name (``JAN``, ``MON-FRI``, ``FRI#2``, ``FRIL``)."""
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

    def _store_no_spec(self, s: str, i: int, kind: int) -> None:
        """``?``."""
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

    def _store_all(self, s: str, i: int, kind: int) -> None:
        """``*``, ``*/n`` or ``/n``."""
        c = s[i]
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

    def _store_last(self, s: str, i: int, kind: int) -> None:
        """``L``, ``LW``, ``L-n`` or ``L-nW``."""
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
        """Quartz's ``checkNext``: what follows the number ``value`` ending before ``i``."""
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
            self._store_range(i + 1, s, value, kind)
            return
        if c == "/":
            self._store_step(i, s, value, kind)
            return
        self.add(value, -1, 0, kind)

    def _store_range(self, i: int, s: str, value: int, kind: int) -> None:
        """``checkNext``'s ``n-m`` and ``n-m/k``, from the character after the ``-``."""
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

    def _store_step(self, i: int, s: str, value: int, kind: int) -> None:
        """``checkNext``'s ``n/k``, from the ``/``."""
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
        """Quartz's ``addToSet``: the values ``value``-``end`` every ``increment``."""
        _check_bounds(value, end, kind)
        target = self.sets[kind]
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
            YEAR: (QUARTZ_MIN_YEAR, QUARTZ_MAX_YEAR),
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


def _check_bounds(value: int, end: int, kind: int) -> None:
    """The range check that opens Quartz's ``addToSet``."""
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


def _digit(c: str) -> str:
    """``Integer.parseInt(String.valueOf(c))`` for one character."""
    _parse_int(c)
    return c


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
    return CronExpression(statement, _fields(parser, statement))


def _fields(parser: _QuartzParser, statement: str) -> Fields:
    """What the parsed statement selects; refuse a field that selects nothing (a departure)."""
    sets = [frozenset(values - {_ALL_SPEC}) for values in parser.sets]
    years = sorted(parser.sets[YEAR] - {_ALL_SPEC})
    everything = (
        len(years) == QUARTZ_MAX_YEAR - QUARTZ_MIN_YEAR + 1
        and years[0] == QUARTZ_MIN_YEAR
        and years[-1] == QUARTZ_MAX_YEAR
    )
    fields = Fields(
        seconds=sets[SECOND],
        minutes=sets[MINUTE],
        hours=sets[HOUR],
        months=sets[MONTH],
        years=None if parser.every_year or everything else tuple(years),
        dom_rule=_NO_SPEC not in parser.sets[DAY_OF_MONTH],
        days_of_month=tuple(sorted(sets[DAY_OF_MONTH] - {_NO_SPEC})),
        days_of_week=tuple(sorted(sets[DAY_OF_WEEK] - {_NO_SPEC})),
        last_day_of_week=parser.last_day_of_week,
        nth_day_of_week=parser.nth_day_of_week,
        nearest_weekday=parser.nearest_weekday,
        last_day_offset=parser.last_day_offset if parser.last_day_of_month else None,
    )
    for kind in (SECOND, MINUTE, HOUR, MONTH):
        if not sets[kind]:
            raise CronSyntaxError(FIELD_NAMES[kind], "no value", statement)
    if fields.dom_rule and fields.last_day_offset is None and not fields.days_of_month:
        raise CronSyntaxError("day-of-month", "no value", statement)
    if not fields.dom_rule and not fields.days_of_week:  # only 99#k: 99 is the '*' marker
        raise CronSyntaxError(
            "day-of-week", "99 is not a day of the week (1-7 or SUN-SAT)", statement
        )
    return fields


def _field_name(field: int) -> str:
    return FIELD_NAMES[field] if 0 <= field < len(FIELD_NAMES) else "field count"
