"""The zone timeline the engine walks finds every offset change, to the second.

The timeline probes each zone once a day and bisects a change to the second; that is exact as
long as no two changes are closer than a day. Checked here against an hour-by-hour scan of
``zoneinfo`` for zone-years chosen for their oddities (the two closest pairs of changes in the
pinned data, 166 hours apart; a skipped day; negative DST; Ramadan suspensions; 30-minute and
2-hour DST); and the spacing of every change of every zone from 1970 to 2100.
"""

from __future__ import annotations

import io
import itertools
from datetime import UTC, datetime, timedelta
from importlib import resources

import pytest

from mini_scheduler.cron.zones import _zone_file, get_zone, timeline

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
SECOND = timedelta(seconds=1)

ZONE_YEARS = [
    ("America/Cambridge_Bay", 2000),  # changes 166 hours apart
    ("Asia/Gaza", 2040),  # 167 hours apart, from the zone's predicted rules
    ("America/Asuncion", 2024),
    ("Pacific/Apia", 2011),  # 2011-12-30 did not happen
    ("Africa/Casablanca", 2026),  # DST suspended for Ramadan
    ("Europe/Dublin", 2026),  # negative DST in winter
    ("Antarctica/Troll", 2026),  # 2-hour DST
    ("Australia/Lord_Howe", 2026),  # 30-minute DST
    ("Pacific/Chatham", 2026),
    ("America/New_York", 2055),  # past the explicit transitions: the POSIX rule
    ("UTC", 2026),
]


def _offset(zone_name: str, at: datetime) -> timedelta | None:
    return at.astimezone(get_zone(zone_name)).utcoffset()


def brute_force_changes(zone_name: str, year: int) -> list[int]:
    """Every instant of ``year`` at which the offset changes: an hourly scan, then bisection."""
    found = []
    at = datetime(year, 1, 1, tzinfo=UTC)
    end = datetime(year + 1, 1, 1, tzinfo=UTC)
    while at < end:
        nxt = min(at + HOUR, end)
        if _offset(zone_name, nxt) != _offset(zone_name, at):
            low, high = at, nxt
            while high - low > SECOND:
                middle = low + (high - low) // 2
                if _offset(zone_name, middle) == _offset(zone_name, low):
                    low = middle
                else:
                    high = middle
            found.append(int((high - EPOCH).total_seconds()))
        at = nxt
    return found


@pytest.mark.parametrize(("zone_name", "year"), ZONE_YEARS, ids=[f"{z}-{y}" for z, y in ZONE_YEARS])
def test_segments_end_at_every_change_and_only_there(zone_name: str, year: int) -> None:
    line = timeline(get_zone(zone_name))
    start = int((datetime(year, 1, 1, tzinfo=UTC) - EPOCH).total_seconds())
    end = int((datetime(year + 1, 1, 1, tzinfo=UTC) - EPOCH).total_seconds())
    boundaries = []
    instant = start
    while instant < end:
        segment = line.segment(instant)
        assert segment.start <= instant < segment.end
        moment = EPOCH + timedelta(seconds=instant)
        assert timedelta(seconds=segment.offset) == _offset(zone_name, moment)
        if segment.end < end:
            boundaries.append(segment.end)
        instant = segment.end
    changes = [
        b
        for b in boundaries
        if _offset(zone_name, EPOCH + timedelta(seconds=b - 1))
        != _offset(zone_name, EPOCH + timedelta(seconds=b))
    ]
    assert changes == brute_force_changes(zone_name, year)


def test_no_two_changes_are_within_a_day_of_each_other() -> None:
    """The daily probe's premise, for every zone of the pinned data, 1970-2100 (the explicit
    transitions; past them, zones repeat yearly rules whose changes are months apart)."""
    zoneinfo_module = pytest.importorskip("zoneinfo._zoneinfo")
    low = (datetime(1970, 1, 1, tzinfo=UTC) - EPOCH).total_seconds()
    high = (datetime(2100, 1, 1, tzinfo=UTC) - EPOCH).total_seconds()
    names = []
    root = resources.files("tzdata.zoneinfo")
    stack = [(root, "")]
    while stack:
        node, prefix = stack.pop()
        for child in node.iterdir():
            name = f"{prefix}{child.name}"
            if child.is_dir():
                stack.append((child, f"{name}/"))
            elif child.read_bytes()[:4] == b"TZif":
                names.append(name)
    assert len(names) > 500
    closest = timedelta(days=365)
    for name in names:
        zone = zoneinfo_module.ZoneInfo.from_file(io.BytesIO(_zone_file(name)), key=name)
        changes = [t for t in zone._trans_utc if low <= t <= high]
        for a, b in itertools.pairwise(changes):
            closest = min(closest, timedelta(seconds=b - a))
    assert closest > timedelta(days=1), closest
