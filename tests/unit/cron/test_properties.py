"""Properties of the engine on random valid statements, random zones and random instants, judged
by the brute-force oracle of ``tests/unit/cron/oracle.py`` (which never calls the engine).

The generator builds a statement from Quartz's whole syntax (lists, ranges that wrap, steps,
names in any case, ``L``, ``L-n``, ``nL``, ``W``, ``LW``, ``#``, years) together with its meaning;
the zones include DST zones of both hemispheres, Chatham (changes at 02:45/03:45), Lord Howe (30
minute DST), Troll (2 hour DST), midnight changes (Sao Paulo, Santiago, Havana, Gaza), Apia (skipped
a whole day in 2011), negative DST (Dublin, Casablanca) and fixed offsets. Starts fall between 1990
and 2060, half of them close to one of the zone's transitions.

Windows come in three sizes: a tick's minute, up to an hour (both read from the precompiled
fields), and up to a few days (the search). A window is shorter for statements that fire often,
so the oracle, which looks at every minute, stays cheap.
"""

from __future__ import annotations

import calendar
import itertools
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_scheduler.cron import CronSyntaxError, parse
from mini_scheduler.cron.zones import get_zone
from tests.unit.cron.oracle import (
    DAY,
    SECOND,
    DayRule,
    Schedule,
    expected_firings,
    fires_at,
    quartz_weekday,
    some_firing_between,
    stepped,
)

ZONES = (
    "UTC",
    "America/New_York",
    "Europe/London",
    "Europe/Dublin",
    "Europe/Moscow",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "America/Sao_Paulo",
    "America/Santiago",
    "America/Havana",
    "America/St_Johns",
    "Asia/Gaza",
    "Asia/Tehran",
    "Africa/Casablanca",
    "Antarctica/Troll",
    "Pacific/Apia",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Etc/GMT+5",
    "Etc/GMT-14",
    "EST",
)
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# field: (lowest, highest, largest step Quartz accepts after '*' or a start value)
BOUNDS = {
    "second": (0, 59, 59),
    "minute": (0, 59, 59),
    "hour": (0, 23, 23),
    "day-of-month": (1, 31, 31),
    "month": (1, 12, 12),
    "day-of-week": (1, 7, 7),
}
PROPERTY_SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

Token = tuple[str, frozenset[int]]


def _case(draw: st.DrawFn, name: str) -> str:
    return draw(st.sampled_from((str.upper, str.lower, str.title)))(name)


@st.composite
def plain_item(draw: st.DrawFn, field: str) -> Token:
    """One comma-separated item of a field, without the special characters L, W, #, ?."""
    low, high, largest_step = BOUNDS[field]
    names = {"month": MONTHS, "day-of-week": DAYS}.get(field)
    value = st.integers(low, high)
    shape = draw(
        st.sampled_from(["*", "n", "n", "a-b", "a-b/s", "a/s", "*/s"] + (["name"] if names else []))
    )
    if shape == "*":
        return "*", stepped(low, high, low, high, 1)
    if shape == "n":
        n = draw(value)
        return str(n), frozenset({n})
    if shape == "name":
        assert names is not None
        a = draw(value)
        if draw(st.booleans()):
            return _case(draw, names[a - low]), frozenset({a})
        b = draw(value)
        text = f"{_case(draw, names[a - low])}-{_case(draw, names[b - low])}"
        return text, stepped(low, high, a, b, 1)
    if shape == "a-b":
        a, b = draw(value), draw(value)
        return f"{a}-{b}", stepped(low, high, a, b, 1)
    if shape == "a-b/s":
        a, b, step = draw(value), draw(value), draw(st.integers(1, high - low + 1))
        return f"{a}-{b}/{step}", stepped(low, high, a, b, step)
    step = draw(st.integers(1, largest_step))
    if shape == "a/s":
        a = draw(value)
        return f"{a}/{step}", stepped(low, high, a, high, step)
    return f"*/{step}", stepped(low, high, low, high, step)


@st.composite
def plain_field(draw: st.DrawFn, field: str) -> Token:
    items = draw(st.lists(plain_item(field), min_size=1, max_size=3))
    values: frozenset[int] = frozenset().union(*(v for _, v in items))
    return ",".join(text for text, _ in items), values


@st.composite
def day_of_month(draw: st.DrawFn, special: bool = True) -> tuple[str, DayRule]:
    shapes = ["plain", "plain", "L", "L-n", "LW", "L-nW", "nW"] if special else ["plain"]
    shape = draw(st.sampled_from(shapes))
    if shape == "plain":
        text, values = draw(plain_field("day-of-month"))
        return text, DayRule("days", values)
    if shape == "nW":
        n = draw(st.integers(1, 31))
        return f"{n}W", DayRule("nearest", number=n)
    n = draw(st.integers(0, 30)) if "n" in shape else 0
    text = "L" + (f"-{n}" if "n" in shape else "") + ("W" if shape.endswith("W") else "")
    return text, DayRule("last", number=n, nearest=shape.endswith("W"))


@st.composite
def day_of_week(draw: st.DrawFn, special: bool = True) -> tuple[str, DayRule]:
    shape = draw(st.sampled_from(["plain", "plain", "L", "nL", "n#k"] if special else ["plain"]))
    if shape == "plain":
        text, values = draw(plain_field("day-of-week"))
        return text, DayRule("weekdays", values)
    if shape == "L":  # alone in day-of-week, L is Saturday
        return "L", DayRule("weekdays", frozenset({7}))
    n = draw(st.integers(1, 7))
    day = _case(draw, DAYS[n - 1]) if draw(st.booleans()) else str(n)
    if shape == "nL":
        return f"{day}L", DayRule("last-weekday", number=n)
    k = draw(st.integers(1, 5))
    return f"{day}#{k}", DayRule("nth-weekday", number=n, nth=k)


@st.composite
def year_field(draw: st.DrawFn) -> tuple[str, frozenset[int] | None]:
    shape = draw(st.sampled_from(["*", "y", "a-b", "a/s", "list"]))
    year = st.integers(1985, 2080)
    if shape == "*":
        return "*", None
    if shape == "y":
        y = draw(year)
        return str(y), frozenset({y})
    if shape == "a-b":
        a, b = sorted((draw(year), draw(year)))
        return f"{a}-{b}", frozenset(range(a, b + 1))
    if shape == "a/s":
        a, step = draw(year), draw(st.integers(1, 20))
        return f"{a}/{step}", frozenset(range(a, 3000, step))
    years = draw(st.lists(year, min_size=1, max_size=4))
    return ",".join(map(str, years)), frozenset(years)


@dataclass(frozen=True)
class Steer:
    """Values to add to a statement's fields, so that it fires around a DST change."""

    hours: frozenset[int] = frozenset()
    minutes: frozenset[int] = frozenset()
    dates: tuple[date, ...] = ()


def _add(token: Token, extra: frozenset[int]) -> Token:
    if not extra:
        return token
    return ",".join([token[0], *map(str, sorted(extra))]), token[1] | extra


@st.composite
def schedules(draw: st.DrawFn, steer: Steer | None = None) -> Schedule:
    """A valid Quartz statement and what it means; ``steer`` adds values to its fields."""
    # A steered statement mostly keeps to plain day fields, which the steering can extend.
    special = steer is None or draw(st.integers(0, 3)) == 0
    steer = steer or Steer()
    seconds = draw(
        st.one_of(st.sampled_from([("0", frozenset({0}))]), plain_field("second"))
    )  # mostly whole minutes: real statements, and cheaper windows
    minutes = _add(draw(plain_field("minute")), steer.minutes)
    hours = _add(draw(plain_field("hour")), steer.hours)
    months = _add(draw(plain_field("month")), frozenset(d.month for d in steer.dates))
    if draw(st.booleans()):
        day_text, rule = draw(day_of_month(special))
        if rule.kind == "days":
            day_text, values = _add((day_text, rule.values), frozenset(d.day for d in steer.dates))
            rule = DayRule("days", values)
        days = f"{day_text} {months[0]} ?"
    else:
        day_text, rule = draw(day_of_week(special))
        if rule.kind == "weekdays" and day_text != "L":
            weekdays = frozenset(quartz_weekday(d) for d in steer.dates)
            day_text, values = _add((day_text, rule.values), weekdays)
            rule = DayRule("weekdays", values)
        days = f"? {months[0]} {day_text}"
    years: frozenset[int] | None = None
    text = f"{seconds[0]} {minutes[0]} {hours[0]} {days}"
    if draw(st.booleans()):
        year_text, years = draw(year_field())
        if years is not None:
            year_text, years = _add((year_text, years), frozenset(d.year for d in steer.dates))
        text += f" {year_text}"
    return Schedule(text, seconds[1], minutes[1], hours[1], rule, months[1], years)


@cache
def transitions(name: str, year: int) -> tuple[datetime, ...]:
    """The instants of ``year`` at which ``name``'s UTC offset changes (zoneinfo, bisected)."""
    zone = get_zone(name)

    def offset(at: datetime) -> timedelta | None:
        return at.astimezone(zone).utcoffset()

    found = []
    probe = datetime(year, 1, 1, tzinfo=UTC)
    while probe.year == year:
        nxt = probe + DAY
        if offset(nxt) != offset(probe):
            low, high = probe, nxt
            while high - low > SECOND:
                middle = low + (high - low) / 2
                middle = middle.replace(microsecond=0)
                if offset(middle) == offset(low):
                    low = middle
                else:
                    high = middle
            found.append(high)
        probe = nxt
    return tuple(found)


def window_length(schedule: Schedule, kind: str) -> int:
    """Seconds: a tick, up to an hour, or a few days (less for a statement that fires often)."""
    if kind == "tick":
        return 60
    if kind == "short":
        return 3600
    per_day = max(schedule.per_day(), 1)
    return int(min(3 * 86400, max(3600, 1200 * 86400 / per_day)))


def _steer_hours(before: datetime, after: datetime) -> frozenset[int]:
    """The local hours on both sides of a change, and those the clocks skip."""
    hours = {before.hour, after.hour}
    hour = before.hour
    while after.replace(tzinfo=None) - before.replace(tzinfo=None) > timedelta(hours=1) and (
        hour != after.hour
    ):
        hour = (hour + 1) % 24
        hours.add(hour)
    return frozenset(hours)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Schedule, str, datetime, datetime]:
    """A statement, a zone and a window ``[start, end)``; half of them straddle or follow one of
    the zone's offset changes, with the statement steered to fire around it."""
    name = draw(st.sampled_from(ZONES))
    zone = get_zone(name)
    kind = draw(st.sampled_from(["tick", "short", "long", "long"]))
    year = draw(st.integers(1990, 2059))
    changes = transitions(name, year)
    if not changes or draw(st.integers(0, 2)) == 0:
        schedule = draw(schedules())
        length = window_length(schedule, kind)
        if kind == "short":
            length = draw(st.integers(1, length))
        moment = datetime(year, 1, 1, tzinfo=UTC)
        start = moment + timedelta(seconds=draw(st.integers(0, 365 * 86400)))
    else:
        change = draw(st.sampled_from(changes))
        before, after = (change - SECOND).astimezone(zone), change.astimezone(zone)
        steer = Steer(_steer_hours(before, after), dates=(before.date(), after.date()))
        if kind == "long":
            schedule = draw(schedules(steer if draw(st.integers(0, 3)) else None))
            length = window_length(schedule, kind)
            start = change - timedelta(seconds=draw(st.integers(0, length)))
        else:
            length = 60 if kind == "tick" else draw(st.integers(1, 3600))
            # a window in the hours after the change (a repeated hour's second pass) or over it
            start = change + timedelta(seconds=draw(st.integers(-length, 2 * 3600)))
            first, last = start.astimezone(zone), (start + (length - 1) * SECOND).astimezone(zone)
            steer = Steer(steer.hours, frozenset({first.minute, last.minute}), steer.dates)
            schedule = draw(schedules(steer if draw(st.integers(0, 3)) else None))
    if kind == "tick":
        start = start.replace(second=0)
    elif draw(st.booleans()):
        start = start.replace(microsecond=draw(st.integers(0, 999_999)))
    return schedule, name, start, start + timedelta(seconds=length)


def _aware_utc(moment: datetime) -> bool:
    return moment.tzinfo is not None and moment.utcoffset() == timedelta(0)


@PROPERTY_SETTINGS
@given(cases(), st.booleans())
def test_firings_are_exactly_the_oracles(
    case: tuple[Schedule, str, datetime, datetime], by_name: bool
) -> None:
    schedule, name, start, end = case
    zone = get_zone(name)
    expression = parse(schedule.text)
    got = list(expression.firings(start, end, name if by_name else zone))

    assert all(map(_aware_utc, got))
    assert all(a < b for a, b in itertools.pairwise(got)), "firings strictly increase"
    for firing in got:
        assert fires_at(schedule, zone, firing), f"{firing} does not match {schedule.text!r}"
        wall = firing.astimezone(zone)
        naive = wall.replace(tzinfo=None)
        # the wall time exists (it round-trips), so no firing sits in a skipped hour
        assert naive.replace(tzinfo=zone, fold=wall.fold).astimezone(UTC) == firing
    walls = [f.astimezone(zone).replace(tzinfo=None) for f in got]
    if not schedule.every_hour:
        assert len(set(walls)) == len(walls), "a repeated wall time fired twice"
    assert got == expected_firings(schedule, zone, start, end)


@PROPERTY_SETTINGS
@given(cases())
def test_next_after_chain_matches_firings_and_the_oracle(
    case: tuple[Schedule, str, datetime, datetime],
) -> None:
    schedule, name, start, end = case
    zone = get_zone(name)
    expression = parse(schedule.text)
    window = list(expression.firings(start, end, zone))

    chain: list[datetime] = []
    moment: datetime | None = start - timedelta(microseconds=1)
    beyond = 0
    while moment is not None and beyond < 3:
        moment = expression.next_after(moment, zone)
        if moment is None:
            break
        assert _aware_utc(moment)
        assert fires_at(schedule, zone, moment), f"{moment} does not match {schedule.text!r}"
        assert not chain or moment > chain[-1]
        if moment >= end:
            beyond += 1
        chain.append(moment)
    assert [f for f in chain if start <= f < end] == window

    # Between the window and the chain's later firings, and after its end, nothing was missed.
    if schedule.per_day() <= 1440:
        later = [f for f in chain if f >= end]
        bounds = [end - SECOND, *later]
        if moment is None:  # the statement has no firing after the chain's last one
            bounds.append(max(end, *(chain or [end])) + 400 * DAY)
        for after, before in itertools.pairwise(bounds):
            missed = some_firing_between(schedule, zone, after, before)
            assert missed is None, f"{missed} fires between {after} and {before}"


# -- parse: anything but a valid statement is a CronSyntaxError naming a field ------------------

ALPHABET = "0123456789*?-,/#LW \tJANFEBMRPYULGSOCTVDEHIW"
TOKENS = (
    "*",
    "?",
    "L",
    "W",
    "LW",
    "#",
    "-",
    "/",
    ",",
    "0",
    "1",
    "5",
    "7",
    "8",
    "12",
    "13",
    "23",
    "24",
    "29",
    "30",
    "31",
    "32",
    "59",
    "60",
    "2024",
    "2999",
    "3000",
    "JAN",
    "dec",
    "MON",
    "fri",
    "SUN",
    "L-3",
    "15W",
    "5L",
    "6#3",
    "*/5",
    "0/15",
    "1-5",
    "22-2",
    "NOV-FEB",
    "MON-FRI",
    "?#",
    "L-",
    "W5",
    "#1",
    "1#",
    "1/",
    "/5",
    "--",
    ",,",
    "-1",
    "+1",
    "1.5",
    "\uff19",
)


def _check_parse(text: str) -> None:
    try:
        expression = parse(text)
    except CronSyntaxError as exc:
        assert exc.field in CronSyntaxError.FIELDS
        return
    # accepted: asking it a question raises nothing either
    expression.next_after(datetime(2026, 1, 1, tzinfo=UTC), "UTC")


token_soup = st.lists(st.sampled_from(TOKENS), min_size=0, max_size=9).map(" ".join)
glued_soup = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12).map("".join)
FUZZ = st.one_of(
    st.text(max_size=60), st.text(alphabet=ALPHABET, max_size=60), token_soup, glued_soup
)


@settings(max_examples=300, deadline=None)
@given(FUZZ)
def test_parse_raises_only_cron_syntax_errors(text: str) -> None:
    _check_parse(text)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None)
@given(FUZZ)
def test_parse_raises_only_cron_syntax_errors_at_length(text: str) -> None:
    _check_parse(text)


@settings(max_examples=100, deadline=None)
@given(schedules())
def test_every_generated_statement_parses(schedule: Schedule) -> None:
    parse(schedule.text)


def test_stepped_wraps_like_quartz() -> None:
    assert stepped(0, 23, 22, 2, 1) == {22, 23, 0, 1, 2}
    assert stepped(1, 12, 11, 2, 1) == {11, 12, 1, 2}
    assert stepped(1, 31, 28, 3, 2) == {28, 30, 1, 3}
    assert stepped(0, 59, 10, 40, 15) == {10, 25, 40}


def test_oracle_day_rules_on_known_months() -> None:
    """The oracle's own reading of the day rules, on a calendar checked by hand (2026)."""
    march = [date(2026, 3, d) for d in range(1, calendar.monthrange(2026, 3)[1] + 1)]

    def days(rule: DayRule) -> list[int]:
        return [d.day for d in march if rule.selects(d)]

    check: list[tuple[DayRule, list[int]]] = [
        (DayRule("last"), [31]),
        (DayRule("last", number=2, nearest=True), [30]),  # 29th is a Sunday: Monday the 30th
        (DayRule("nearest", number=1), [2]),  # the 1st is a Sunday: Monday the 2nd
        (DayRule("nearest", number=14), [13]),  # Saturday: Friday the 13th
        (DayRule("last-weekday", number=6), [27]),  # last Friday
        (DayRule("nth-weekday", number=1, nth=2), [8]),  # second Sunday
        (DayRule("weekdays", frozenset({7})), [7, 14, 21, 28]),
    ]
    for rule, expected in check:
        assert days(rule) == expected, rule
