"""Daylight saving time, case by case (docs/cron-yaml.md, "Time zones and daylight saving"):

* a wall time the clocks skip does not fire;
* a wall time the clocks repeat fires once, at its first occurrence;
* a statement whose hour field selects every hour (``*``, ``0/1``, ``0-23``) keeps its real-time
  rhythm and fires in both passes of a repeated hour;
* a daily job keeps its wall time across the change (its UTC instant moves).

Each row is checked three ways, which must agree: the ``next_after`` chain from ``start``,
``firings`` over the whole span, and ``firings`` tick by tick (one-minute windows, as the ticker
asks). Transition instants, from the pinned tzdata, are in the comment above each group.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from mini_scheduler.cron import parse
from mini_scheduler.cron.zones import get_zone

MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class Row:
    id: str
    statement: str
    zone: str
    start: str  # UTC; the firings expected strictly after it, in order
    expected: tuple[str, ...]


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


NY, LONDON, SYDNEY, CHATHAM = (
    "America/New_York",
    "Europe/London",
    "Australia/Sydney",
    "Pacific/Chatham",
)
SAO_PAULO, SANTIAGO, LORD_HOWE = "America/Sao_Paulo", "America/Santiago", "Australia/Lord_Howe"

ROWS = [
    # America/New_York 2026: 2026-03-08T07:00Z 02:00 EST -> 03:00 EDT (02:00-02:59 skipped);
    #                        2026-11-01T06:00Z 02:00 EDT -> 01:00 EST (01:00-01:59 repeated).
    Row("ny-skipped-0230", "0 30 2 * * ?", NY, "2026-03-06T12:00",
        ("2026-03-07T07:30", "2026-03-09T06:30", "2026-03-10T06:30")),
    Row("ny-repeated-0130-first-occurrence", "0 30 1 * * ?", NY, "2026-10-31T00:00",
        ("2026-10-31T05:30", "2026-11-01T05:30", "2026-11-02T06:30")),
    Row("ny-repeated-seconds-once", "*/20 30 1 * * ?", NY, "2026-11-01T05:00",
        ("2026-11-01T05:30:00", "2026-11-01T05:30:20", "2026-11-01T05:30:40",
         "2026-11-02T06:30:00")),
    Row("ny-repeated-hour-range-not-every-hour", "0 30 0-3 * * ?", NY, "2026-11-01T04:00",
        ("2026-11-01T04:30", "2026-11-01T05:30", "2026-11-01T07:30", "2026-11-01T08:30",
         "2026-11-02T05:30")),
    Row("ny-hourly-both-passes", "0 0 * * * ?", NY, "2026-11-01T03:30",
        ("2026-11-01T04:00", "2026-11-01T05:00", "2026-11-01T06:00", "2026-11-01T07:00")),
    Row("ny-0-23-both-passes", "0 30 0-23 * * ?", NY, "2026-11-01T04:00",
        ("2026-11-01T04:30", "2026-11-01T05:30", "2026-11-01T06:30", "2026-11-01T07:30")),
    Row("ny-0/1-both-passes", "0 30 0/1 * * ?", NY, "2026-11-01T04:00",
        ("2026-11-01T04:30", "2026-11-01T05:30", "2026-11-01T06:30", "2026-11-01T07:30")),
    Row("ny-every-15-min-fall", "0 0/15 * * * ?", NY, "2026-11-01T04:50",
        ("2026-11-01T05:00", "2026-11-01T05:15", "2026-11-01T05:30", "2026-11-01T05:45",
         "2026-11-01T06:00", "2026-11-01T06:15", "2026-11-01T06:30", "2026-11-01T06:45",
         "2026-11-01T07:00", "2026-11-01T07:15")),
    Row("ny-hourly-spring", "0 0 * * * ?", NY, "2026-03-08T05:30",
        ("2026-03-08T06:00", "2026-03-08T07:00", "2026-03-08T08:00")),
    Row("ny-every-15-min-spring", "0 0/15 * * * ?", NY, "2026-03-08T06:20",
        ("2026-03-08T06:30", "2026-03-08T06:45", "2026-03-08T07:00", "2026-03-08T07:15")),
    Row("ny-daily-0900-keeps-wall-time-spring", "0 0 9 * * ?", NY, "2026-03-06T00:00",
        ("2026-03-06T14:00", "2026-03-07T14:00", "2026-03-08T13:00", "2026-03-09T13:00")),
    Row("ny-daily-0900-keeps-wall-time-fall", "0 0 9 * * ?", NY, "2026-10-31T00:00",
        ("2026-10-31T13:00", "2026-11-01T14:00", "2026-11-02T14:00")),
    # Europe/London 2026: 2026-03-29T01:00Z 01:00 GMT -> 02:00 BST (01:00-01:59 skipped);
    #                     2026-10-25T01:00Z 02:00 BST -> 01:00 GMT (01:00-01:59 repeated).
    Row("london-skipped-0130", "0 30 1 * * ?", LONDON, "2026-03-28T00:00",
        ("2026-03-28T01:30", "2026-03-30T00:30")),
    Row("london-repeated-0130", "0 30 1 * * ?", LONDON, "2026-10-24T12:00",
        ("2026-10-25T00:30", "2026-10-26T01:30")),
    Row("london-hourly-both-passes", "0 0 * * * ?", LONDON, "2026-10-24T23:30",
        ("2026-10-25T00:00", "2026-10-25T01:00", "2026-10-25T02:00")),
    # Australia/Sydney 2026: 2026-04-04T16:00Z 03:00 AEDT -> 02:00 AEST (02:00-02:59 repeated);
    #                        2026-10-03T16:00Z 02:00 AEST -> 03:00 AEDT (02:00-02:59 skipped).
    Row("sydney-skipped-0230", "0 30 2 * * ?", SYDNEY, "2026-10-02T12:00",
        ("2026-10-02T16:30", "2026-10-04T15:30")),
    Row("sydney-repeated-0230", "0 30 2 * * ?", SYDNEY, "2026-04-04T12:00",
        ("2026-04-04T15:30", "2026-04-05T16:30")),
    Row("sydney-hourly-both-passes", "0 0 * * * ?", SYDNEY, "2026-04-04T14:30",
        ("2026-04-04T15:00", "2026-04-04T16:00", "2026-04-04T17:00")),
    # Pacific/Chatham 2026: 2026-04-04T14:00Z 03:45 +1345 -> 02:45 +1245 (02:45-03:44 repeated);
    #                       2026-09-26T14:00Z 02:45 +1245 -> 03:45 +1345 (02:45-03:44 skipped).
    Row("chatham-skipped-0300", "0 0 3 * * ?", CHATHAM, "2026-09-25T00:00",
        ("2026-09-25T14:15", "2026-09-27T13:15")),
    Row("chatham-skipped-0245-the-change-itself", "0 45 2 * * ?", CHATHAM, "2026-09-25T00:00",
        ("2026-09-25T14:00", "2026-09-27T13:00")),
    Row("chatham-repeated-0300", "0 0 3 * * ?", CHATHAM, "2026-04-03T12:00",
        ("2026-04-03T13:15", "2026-04-04T13:15", "2026-04-05T14:15")),
    Row("chatham-every-15-min-fall", "0 0/15 * * * ?", CHATHAM, "2026-04-04T13:20",
        ("2026-04-04T13:30", "2026-04-04T13:45", "2026-04-04T14:00", "2026-04-04T14:15")),
    # Australia/Lord_Howe 2026 (30-minute DST): 2026-04-04T15:00Z 02:00 +11 -> 01:30 +1030
    # (01:30-01:59 repeated); 2026-10-03T15:30Z 02:00 +1030 -> 02:30 +11 (02:00-02:29 skipped).
    Row("lord-howe-repeated-0145", "0 45 1 * * ?", LORD_HOWE, "2026-04-04T12:00",
        ("2026-04-04T14:45", "2026-04-05T15:15")),
    Row("lord-howe-hourly-both-passes", "0 45 * * * ?", LORD_HOWE, "2026-04-04T14:00",
        ("2026-04-04T14:45", "2026-04-04T15:15", "2026-04-04T16:15")),
    Row("lord-howe-skipped-0215", "0 15 2 * * ?", LORD_HOWE, "2026-10-02T12:00",
        ("2026-10-02T15:45", "2026-10-04T15:15")),
    # America/Sao_Paulo 2018, changes at midnight: 2018-02-18T02:00Z Sun 00:00 -02 -> Sat 23:00
    # -03 (Saturday 23:00-23:59 repeated); 2018-11-04T03:00Z Sun 00:00 -03 -> 01:00 -02 (Sunday
    # 00:00-00:59 skipped: that Sunday has no midnight).
    Row("sao-paulo-skipped-midnight", "0 0 0 * * ?", SAO_PAULO, "2018-11-02T12:00",
        ("2018-11-03T03:00", "2018-11-05T02:00")),
    Row("sao-paulo-skipped-sunday-0030", "0 30 0 ? * SUN", SAO_PAULO, "2018-10-27T12:00",
        ("2018-10-28T03:30", "2018-11-11T02:30")),
    Row("sao-paulo-repeated-saturday-2330", "0 30 23 * * ?", SAO_PAULO, "2018-02-16T12:00",
        ("2018-02-17T01:30", "2018-02-18T01:30", "2018-02-19T02:30")),
    Row("sao-paulo-repeated-saturday-by-weekday", "0 30 23 ? * SAT", SAO_PAULO,
        "2018-02-17T12:00", ("2018-02-18T01:30", "2018-02-25T02:30")),
    Row("sao-paulo-hourly-both-passes", "0 30 * * * ?", SAO_PAULO, "2018-02-18T01:00",
        ("2018-02-18T01:30", "2018-02-18T02:30", "2018-02-18T03:30")),
    # America/Santiago 2026, 24:00 -> 23:00: 2026-04-05T03:00Z Sat 24:00 -03 -> Sat 23:00 -04
    # (Saturday 23:00-23:59 repeated); 2026-09-06T04:00Z Sat 24:00 -04 -> Sun 01:00 -03 (Sunday
    # 00:00-00:59 skipped).
    Row("santiago-repeated-2330", "0 30 23 * * ?", SANTIAGO, "2026-04-04T12:00",
        ("2026-04-05T02:30", "2026-04-06T03:30")),
    Row("santiago-skipped-0015", "0 15 0 * * ?", SANTIAGO, "2026-09-05T00:00",
        ("2026-09-05T04:15", "2026-09-07T03:15")),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_next_after_chain(row: Row) -> None:
    expression = parse(row.statement)
    got: list[datetime] = []
    moment: datetime | None = _utc(row.start)
    for _ in row.expected:
        assert moment is not None
        moment = expression.next_after(moment, row.zone)
        assert moment is not None
        got.append(moment)
    assert got == [_utc(t) for t in row.expected]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_firings_over_the_span(row: Row) -> None:
    expression = parse(row.statement)
    start = _utc(row.start) + timedelta(seconds=1)  # strictly after, as the chain
    end = _utc(row.expected[-1]) + timedelta(seconds=1)
    assert list(expression.firings(start, end, get_zone(row.zone))) == [
        _utc(t) for t in row.expected
    ]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_firings_tick_by_tick(row: Row) -> None:
    """The ticker's question, one minute at a time, over the whole span."""
    expression = parse(row.statement)
    start = _utc(row.start) + timedelta(seconds=1)
    end = _utc(row.expected[-1]) + timedelta(seconds=1)
    minute = start.replace(second=0)
    got: list[datetime] = []
    while minute < end:
        got.extend(
            f for f in expression.firings(minute, minute + MINUTE, row.zone) if start <= f < end
        )
        minute += MINUTE
    assert got == [_utc(t) for t in row.expected]


# The ticker's minute, in and around a repeated hour (New York, 2026-11-01T06:00Z, 02:00 EDT ->
# 01:00 EST): the second pass of 01:30 is not a firing of a daily job, but is one of an hourly job.
TICKS = [
    ("daily-first-pass", "0 30 1 * * ?", "2026-11-01T05:30", ("2026-11-01T05:30",)),
    ("daily-second-pass", "0 30 1 * * ?", "2026-11-01T06:30", ()),
    ("hourly-second-pass", "0 30 * * * ?", "2026-11-01T06:30", ("2026-11-01T06:30",)),
    ("every-15s-second-pass", "0/15 * * * * ?", "2026-11-01T06:30",
     ("2026-11-01T06:30:00", "2026-11-01T06:30:15", "2026-11-01T06:30:30",
      "2026-11-01T06:30:45")),
    ("every-15s-daily-hour-second-pass", "0/15 * 1 * * ?", "2026-11-01T06:30", ()),
    ("every-15s-daily-hour-first-pass", "0/15 * 1 * * ?", "2026-11-01T05:59",
     ("2026-11-01T05:59:00", "2026-11-01T05:59:15", "2026-11-01T05:59:30",
      "2026-11-01T05:59:45")),
    # 2026-03-08T07:00Z, 02:00 EST -> 03:00 EDT: the minutes on both sides of the gap.
    ("skipped-hour-before-the-gap", "0 59 1,2 * * ?", "2026-03-08T06:59", ("2026-03-08T06:59",)),
    ("skipped-hour-after-the-gap", "0 0 2,3 * * ?", "2026-03-08T07:00", ("2026-03-08T07:00",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("statement", "minute", "expected"), [t[1:] for t in TICKS], ids=[t[0] for t in TICKS]
)
def test_tick_window_in_new_york(statement: str, minute: str, expected: tuple[str, ...]) -> None:
    start = _utc(minute)
    got = list(parse(statement).firings(start, start + MINUTE, NY))
    assert got == [_utc(t) for t in expected]


def test_skipped_wall_time_never_fires_in_any_tick_of_the_day() -> None:
    """02:30 New York on 2026-03-08: no minute of that UTC day fires ``0 30 2 * * ?``."""
    expression = parse("0 30 2 * * ?")
    day = _utc("2026-03-08T00:00")
    fired = [
        f
        for k in range(24 * 60)
        for f in expression.firings(day + k * MINUTE, day + (k + 1) * MINUTE, NY)
    ]
    assert fired == []
