"""The Quartz statement for a Unix cron line, said in the message that refuses the line.

A five-field statement (``*/5 * * * *``) is the commonest mistake in a cron.yaml. Unix cron has no
seconds field, counts day-of-week 0-7 with 0 and 7 for Sunday where Quartz counts 1-7 for SUN-SAT,
and restricts both day fields where Quartz takes ``?`` in one of them. :func:`unix_hint` says what
the Quartz statement is, and suggests only a statement that parses and fires when the Unix line
does. Where Quartz cannot say it in one statement (both day fields restricted: Unix cron then
fires when either matches, or, when one of them starts with ``*``, when both do), the hint says so.

The Unix syntax read is Vixie cron's: in each field a comma-separated list of ``*``, ``n`` or
``n-m``, each optionally ``/step``, with the names ``JAN``-``DEC`` and ``SUN``-``SAT``. Anything
else (``?``, ``L``, ``W``, ``#``, ``n/step``) is not a Unix line, and gets no hint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from mini_scheduler.cron.parser import parse
from mini_scheduler.errors import CronSyntaxError

__all__ = ["quartz_for", "unix_hint"]

_MONTHS: Final = {
    name: number
    for number, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"),
        start=1,
    )
}
_DAY_NAMES: Final = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_DAYS: Final = {name: number for number, name in enumerate(_DAY_NAMES)}
_RANGES: Final[tuple[tuple[int, int, dict[str, int]], ...]] = (
    (0, 59, {}),  # minute
    (0, 23, {}),  # hour
    (1, 31, {}),  # day-of-month
    (1, 12, _MONTHS),
    (0, 7, _DAYS),  # day-of-week: 0 and 7 are Sunday
)
_ITEM: Final = re.compile(
    r"(?:\*|(?P<first>[A-Za-z0-9]+)(?:-(?P<last>[A-Za-z0-9]+))?)(?:/(?P<step>[0-9]+))?"
)
_ASK: Final = "written for Unix cron?"
_BOTH_DAYS: Final = (
    f"{_ASK} Quartz cannot say it in one statement: it restricts day-of-month or day-of-week, "
    "with '?' in the other, and this line restricts both"
)


@dataclass(frozen=True, slots=True)
class _Field:
    text: str
    values: frozenset[int]
    starred: bool  # starts with '*': Vixie cron then ANDs the day fields instead of ORing them


def _value(text: str, low: int, high: int, names: dict[str, int]) -> int | None:
    number = int(text) if text.isdigit() and len(text) <= 2 else names.get(text.upper())
    return number if number is not None and low <= number <= high else None


def _span(item: str, low: int, high: int, names: dict[str, int]) -> range | None:
    """The values one item of a Unix cron field selects, or None when it is not one."""
    matched = _ITEM.fullmatch(item)
    if matched is None:
        return None
    first, last, step = matched["first"], matched["last"], matched["step"]
    increment = 1 if step is None else int(step)
    if increment < 1 or (first is not None and last is None and step is not None):
        return None  # a step of 0, or n/step (not Vixie cron's)
    if first is None:
        return range(low, high + 1, increment)
    start = _value(first, low, high, names)
    end = start if last is None else _value(last, low, high, names)
    if start is None or end is None or end < start:
        return None
    return range(start, end + 1, increment)


def _read(text: str, low: int, high: int, names: dict[str, int]) -> _Field | None:
    """The values a Unix cron field selects, or None when it is not one."""
    values: set[int] = set()
    for item in text.split(","):
        span = _span(item, low, high, names)
        if span is None:
            return None
        values.update(span)
    return _Field(text, frozenset(values), text.startswith("*"))


def _read_line(statement: str) -> tuple[_Field, ...] | None:
    """The five fields of a Unix cron line, or None when ``statement`` is not one."""
    texts = statement.split()
    if len(texts) != len(_RANGES):
        return None
    fields = []
    for text, (low, high, names) in zip(texts, _RANGES, strict=True):
        field = _read(text, low, high, names)
        if field is None:
            return None
        fields.append(field)
    return tuple(fields)


def _weekdays(days: frozenset[int]) -> str:
    """Unix days (0-7, 7 is Sunday again) as Quartz names: runs as ranges, never wrapping."""
    selected = [day in days or day + 7 in days for day in range(7)]
    parts: list[str] = []
    day = 0
    while day < 7:
        if not selected[day]:
            day += 1
            continue
        end = day
        while end + 1 < 7 and selected[end + 1]:
            end += 1
        parts.append(_DAY_NAMES[day] if end == day else f"{_DAY_NAMES[day]}-{_DAY_NAMES[end]}")
        day = end + 1
    return ",".join(parts)


def _month(field: _Field) -> str:
    """A month field with its names as numbers: Quartz drops a ``/step`` that follows a name."""
    if len(field.values) == 12:
        return "*"
    return re.sub(r"[A-Za-z]+", lambda name: str(_MONTHS[name[0].upper()]), field.text)


def _days(day_of_month: _Field, day_of_week: _Field) -> tuple[str, str] | None:
    """Quartz's two day fields for Unix's, or None when one Quartz statement cannot say them."""
    every_date = len(day_of_month.values) == 31
    every_weekday = len({day % 7 for day in day_of_week.values}) == 7  # 7 is Sunday again
    if not (day_of_month.starred or day_of_week.starred):
        # Vixie cron ORs two restricted fields: one that selects every day selects every day.
        return ("*", "?") if every_date or every_weekday else None
    if every_weekday:
        return ("*" if every_date else day_of_month.text), "?"
    if every_date:
        return "?", _weekdays(day_of_week.values)
    return None  # Vixie cron ANDs them: a date that is also a given weekday


def quartz_for(statement: str) -> str | None:
    """The Quartz statement that fires when the Unix cron line ``statement`` does, or None when
    it is not a Unix line or no single Quartz statement says the same."""
    fields = _read_line(statement)
    if fields is None:
        return None
    minute, hour, day_of_month, month, day_of_week = fields
    days = _days(day_of_month, day_of_week)
    if days is None:
        return None
    quartz = f"0 {minute.text} {hour.text} {days[0]} {_month(month)} {days[1]}"
    try:
        parse(quartz)
    except CronSyntaxError:
        return None
    return quartz


def unix_hint(statement: str) -> str | None:
    """What to add to the refusal of a five-field ``statement`` read as Unix cron: its Quartz
    statement, or that Quartz cannot say it in one; None for anything else."""
    quartz = quartz_for(statement)
    if quartz is not None:
        return f"{_ASK} In Quartz it is '{quartz}'"
    fields = _read_line(statement)
    if fields is not None and _days(fields[2], fields[4]) is None:
        return _BOTH_DAYS
    return None
