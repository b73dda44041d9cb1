"""croniter as a second opinion, on the part of Quartz's syntax where it is right.

croniter (a test dependency only) is wrong on many Quartz statements: it refuses ``5L``, ``LW``
and ``L-3``, counts day-of-week from Sunday = 0, fires at 03:00 when 02:30 is skipped by the
clocks, and fires a daily job twice in a repeated hour. The subset compared here avoids all of
that:

* UTC only (no daylight saving, so no DST rule is involved);
* 6 fields, no year;
* seconds, minutes, hours, day-of-month and month: numbers, ``*``, ranges (those that wrap
  around too: ``22-2``, ``28-3``, ``NOV-FEB``), steps (``*/s``, ``a/s``, ``a-b/s``), lists, and
  month names; written the same for both engines (croniter reads the seconds field first with
  ``second_at_beginning=True``). Not a step through a range that wraps around: Quartz steps on
  round the circle (hours ``14-11/11`` are 14 and 1), croniter restarts at the bottom (14, 2);
  and not a range from a value to itself (``5-5``), which croniter reads as the whole cycle;
* no ``L``, ``W`` or ``#``; the day field that is not ``?`` in Quartz is the only one restricted
  (croniter reads ``?`` as ``*``, and ORs two restricted day fields where Quartz refuses them);
* day-of-week translated: Quartz's 1-7 = SUN-SAT (names, ranges, steps) becomes the explicit list
  of croniter's 0-6;
* day-of-month at most 28 unless every month is allowed, so that no statement is impossible.

A few hundred statements from a seeded generator, the next 20 firings of each from a random
instant between 2000 and 2040.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from croniter import croniter

from mini_scheduler.cron import parse
from tests.unit.cron.oracle import stepped

COUNT = 300
FIRINGS = 20
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


@dataclass(frozen=True)
class Pair:
    quartz: str
    croniter: str
    start: datetime


def _item(rng: random.Random, low: int, high: int, names: tuple[str, ...] = ()) -> str:
    a, b = rng.randint(low, high), rng.randint(low, high)
    shape = rng.choice(["*", "n", "n", "a-b", "a-b/s", "a/s", "*/s"] + (["name"] if names else []))
    if shape == "*":
        return "*"
    if shape == "n" or (a == b and shape.startswith("a-b")):
        return str(a)
    if shape == "name":
        return names[a - low] if rng.random() < 0.5 else f"{names[a - low]}-{names[b - low]}"
    step = rng.randint(1, max(1, (high - low) // 2))
    first, last = sorted((a, b))  # croniter steps through a wrapped range differently
    return {
        "a-b": f"{a}-{b}",
        "a-b/s": f"{first}-{last}/{step}",
        "a/s": f"{a}/{step}",
        "*/s": f"*/{step}",
    }[shape]


def _field(rng: random.Random, low: int, high: int, names: tuple[str, ...] = ()) -> str:
    return ",".join(_item(rng, low, high, names) for _ in range(rng.choice([1, 1, 1, 2, 3])))


def _weekdays(rng: random.Random) -> tuple[str, str]:
    """A Quartz day-of-week field, and croniter's explicit 0-6 list for the same days."""
    items: list[str] = []
    values: set[int] = set()
    for _ in range(rng.choice([1, 1, 2])):
        a, b, step = rng.randint(1, 7), rng.randint(1, 7), rng.randint(1, 3)
        first, last = sorted((a, b))
        shape = rng.choice(["n", "name", "a-b", "names", "a-b/s", "a/s", "*"])
        if a == b and shape in ("a-b", "names", "a-b/s"):
            shape = "n"
        text, chosen = {
            "n": (str(a), {a}),
            "name": (DAYS[a - 1], {a}),
            "a-b": (f"{a}-{b}", stepped(1, 7, a, b, 1)),
            "names": (f"{DAYS[a - 1]}-{DAYS[b - 1]}", stepped(1, 7, a, b, 1)),
            "a-b/s": (f"{first}-{last}/{step}", stepped(1, 7, first, last, step)),
            "a/s": (f"{a}/{step}", stepped(1, 7, a, 7, step)),
            "*": ("*", stepped(1, 7, 1, 7, 1)),
        }[shape]
        items.append(text)
        values |= chosen
    return ",".join(items), ",".join(str(v - 1) for v in sorted(values))


def pairs(count: int, seed: int = 20260601) -> list[Pair]:
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        seconds = "0" if rng.random() < 0.5 else _field(rng, 0, 59)
        minutes, hours = _field(rng, 0, 59), _field(rng, 0, 23)
        months = "*" if rng.random() < 0.5 else _field(rng, 1, 12, MONTHS)
        start = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(
            seconds=rng.randrange(40 * 365 * 86400)
        )
        head = f"{seconds} {minutes} {hours}"
        if rng.random() < 0.5:
            days = _field(rng, 1, 31 if months == "*" else 28)
            quartz, cron = f"{head} {days} {months} ?", f"{head} {days} {months} *"
        else:
            weekdays, cron_weekdays = _weekdays(rng)
            quartz = f"{head} ? {months} {weekdays}"
            cron = f"{head} * {months} {cron_weekdays}"
        found.append(Pair(quartz, cron, start))
    return found


PAIRS = pairs(COUNT)


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{p.quartz} @{p.start:%Y-%m-%d}" for p in PAIRS])
def test_agrees_with_croniter(pair: Pair) -> None:
    expression = parse(pair.quartz)
    theirs = croniter(pair.croniter, pair.start, second_at_beginning=True)
    ours: list[datetime] = []
    moment: datetime | None = pair.start
    for _ in range(FIRINGS):
        assert moment is not None
        moment = expression.next_after(moment, "UTC")
        assert moment is not None
        ours.append(moment)
    assert ours == [theirs.get_next(datetime).astimezone(UTC) for _ in range(FIRINGS)]
    # the same firings, read as the ticker reads them
    window = list(expression.firings(pair.start + timedelta(seconds=1), ours[-1], "UTC"))
    assert window == ours[:-1]


def test_the_translation_of_days_of_the_week() -> None:
    rng = random.Random(7)
    assert _weekdays(rng)[1]  # never empty
    assert stepped(1, 7, 6, 2, 1) == {6, 7, 1, 2}  # FRI-MON
    assert parse("0 0 12 ? * FRI-MON").next_after(datetime(2026, 1, 1, tzinfo=UTC), "UTC") == (
        croniter("0 0 12 * * 0,1,5,6", datetime(2026, 1, 1, tzinfo=UTC), second_at_beginning=True)
        .get_next(datetime)
        .astimezone(UTC)
    )
