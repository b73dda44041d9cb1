"""Statements that never fire (again) answer None, promptly; and the ends of time.

"Promptly" is asserted as bounded work, never as a duration: the engine's search steps (one call
of ``CronExpression._next_wall`` per offset segment it looks at) are counted, and a statement that
cannot fire in any month is ruled out before any search at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from mini_scheduler.cron import CronExpression, parse
from mini_scheduler.cron.zones import get_zone

FROM = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Steps:
    count: int = 0


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> Iterator[Steps]:
    """Counts the engine's search steps."""
    counter = Steps()
    original = CronExpression._next_wall

    def counted(self: CronExpression, wall: int, limit_year: int) -> int | None:
        counter.count += 1
        return original(self, wall, limit_year)

    monkeypatch.setattr(CronExpression, "_next_wall", counted)
    yield counter


NEVER = [
    # (id, statement, zone, most search steps)
    ("february-30th", "0 0 0 30 2 ?", "UTC", 0),
    ("31st-of-30-day-months", "0 0 0 31 4,6,9,11 ?", "America/New_York", 0),
    ("L-30-in-february", "0 0 0 L-30 2 ?", "Europe/London", 0),
    ("30W-in-february", "0 0 0 30W 2 ?", "UTC", 0),  # nW fires only in months with a day n
    ("0W, which Quartz accepts", "0 0 0 0W * ?", "UTC", 0),
    ("a past year", "0 0 12 * * ? 2001", "UTC", 1),
    ("a past year, in a DST zone", "0 0 12 * * ? 2001", "Australia/Sydney", 1),
    ("29th-february-2100-is-no-leap-day", "0 0 0 29 2 ? 2100", "Europe/London", 2),
    ("no-fifth-monday-in-february-2026-or-2027", "0 0 0 ? 2 2#5 2026-2027", "UTC", 2),
    ("L in the year field, which Quartz accepts", "0 0 12 1 * ? L", "UTC", 1),
    # Quartz checks no range before '#': 8#1 and 9#2 are accepted, name no day, and never fire
    # in Quartz either (0#k is the kth Saturday: test_syntax.py).
    ("9#2, which Quartz accepts", "0 0 0 ? * 9#2", "UTC", 0),
    ("8#1, which Quartz accepts", "0 0 0 ? * 8#1", "Pacific/Chatham", 0),
    # L-29 is before the 1st of every February: no firing (Quartz searches for ever).
    ("L-29W-in-february", "0 0 0 L-29W 2 ?", "UTC", 0),
    # Every second Sunday of March, 02:30 New York is skipped (since 2007, and by the zone's
    # rule for ever after): each year costs a step in each of its two segments.
    ("always-in-the-dst-gap-for-five-years", "0 30 2 ? 3 1#2 2026-2030", "America/New_York", 12),
    ("always-in-the-dst-gap", "0 30 2 ? 3 1#2", "America/New_York", 2 * 402 + 2),
]


@pytest.mark.parametrize(
    ("statement", "zone", "most"), [n[1:] for n in NEVER], ids=[n[0] for n in NEVER]
)
def test_never_fires_and_says_so_promptly(
    statement: str, zone: str, most: int, steps: Steps
) -> None:
    expression = parse(statement)
    assert expression.next_after(FROM, zone) is None
    assert steps.count <= most
    steps.count = 0
    assert list(expression.firings(FROM, FROM + timedelta(days=3 * 366), zone)) == []
    assert steps.count <= most + 3
    steps.count = 0
    assert list(expression.firings(FROM, FROM + timedelta(seconds=60), zone)) == []
    assert steps.count == 0  # a tick's window is read from the fields, not searched


@pytest.mark.parametrize(
    ("zone", "expected"),
    [("UTC", "2999-01-01T00:00:00"), ("America/New_York", "2999-01-01T05:00:00")],
)
def test_a_far_future_statement_fires_once_then_never(
    zone: str, expected: str, steps: Steps
) -> None:
    expression = parse("0 0 0 1 1 ? 2999")
    first = expression.next_after(FROM, zone)
    assert first == datetime.fromisoformat(expected).replace(tzinfo=UTC)
    assert steps.count <= 3  # no walk through 973 years of offset segments
    assert expression.next_after(first, zone) is None
    window = list(expression.firings(first - timedelta(days=1), first + timedelta(days=400), zone))
    assert window == [first]
    assert steps.count <= 12


def test_a_rare_statement_is_found_without_visiting_every_segment(steps: Steps) -> None:
    """The fifth Friday of February in Chatham: 2036, ten years of DST segments away."""
    expression = parse("0 0 0 ? 2 6#5")
    assert expression.next_after(FROM, "Pacific/Chatham") == datetime(
        2036, 2, 28, 10, 15, tzinfo=UTC
    )
    assert steps.count <= 4


# -- the ends of time: Quartz's years are 1970 to 2999 ----------------------------------------

EVERY_SECOND = parse("* * * * * ?")


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Pacific/Kiritimati"])
def test_before_1970_the_first_firing_is_in_1970(zone: str) -> None:
    """Regression: datetime.min once crashed the search (year 0); 1900 fired in 1900."""
    for moment in (datetime.min.replace(tzinfo=UTC), datetime(1900, 1, 1, tzinfo=UTC)):
        found = EVERY_SECOND.next_after(moment, zone)
        assert found is not None
        assert found.astimezone(get_zone(zone)).replace(tzinfo=None) == datetime(1970, 1, 1)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Pacific/Kiritimati"])
def test_after_2999_nothing_fires(zone: str) -> None:
    """Regression: datetime.max once raised OverflowError."""
    assert EVERY_SECOND.next_after(datetime.max.replace(tzinfo=UTC), zone) is None
    assert EVERY_SECOND.next_after(datetime(3001, 1, 1, tzinfo=UTC), zone) is None
    far = datetime.max.replace(tzinfo=UTC)
    assert list(EVERY_SECOND.firings(far - timedelta(minutes=1), far, zone)) == []
    assert list(EVERY_SECOND.firings(far - timedelta(days=1), far, zone)) == []


def test_the_last_second_of_2999() -> None:
    last = datetime(2999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert EVERY_SECOND.next_after(last - timedelta(seconds=1), "UTC") == last
    assert EVERY_SECOND.next_after(last, "UTC") is None
    assert list(EVERY_SECOND.firings(last, last + timedelta(hours=1), "UTC")) == [last]
