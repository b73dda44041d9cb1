"""Time zones from the pinned ``tzdata`` package, and the offset timeline the cron engine walks.

Zones are read from the ``tzdata`` wheel, never from the operating system, so a laptop, CI and
Lambda agree on every firing. ``ZoneTimeline`` splits time into segments of constant UTC offset;
within a segment wall time and UTC move together, which is what makes the DST rules exact.
"""

from __future__ import annotations

import bisect
import re
import struct
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import cache, lru_cache
from importlib import resources
from typing import NamedTuple
from zoneinfo import ZoneInfo

from mini_scheduler.errors import UnknownTimeZoneError

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+\-]+(?:/[A-Za-z0-9_+\-]+)*")
_ZERO_OFFSET_NAMES = frozenset(
    {
        "UTC",
        "Etc/UTC",
        "Etc/UCT",
        "UCT",
        "Etc/Universal",
        "Universal",
        "Zulu",
        "Etc/Zulu",
        "GMT",
        "Etc/GMT",
        "Etc/GMT0",
        "Etc/GMT+0",
        "Etc/GMT-0",
        "GMT0",
        "GMT+0",
        "GMT-0",
        "Etc/Greenwich",
        "Greenwich",
    }
)


def _zone_file(name: str) -> bytes:
    if len(name) > 64 or not _ZONE_NAME.fullmatch(name) or ".." in name:
        raise UnknownTimeZoneError(name)
    node = resources.files("tzdata.zoneinfo")
    for part in name.split("/"):
        node = node.joinpath(part)
    try:
        data = node.read_bytes()
    except OSError as exc:  # not found, a directory, a name the file system refuses
        raise UnknownTimeZoneError(name) from exc
    if not data.startswith(b"TZif"):
        raise UnknownTimeZoneError(name)
    return data


@cache
def get_zone(name: str) -> ZoneInfo:
    """The zone ``name`` (an IANA id such as ``America/New_York``) from the pinned tzdata."""
    data = _zone_file(name)
    import io

    return ZoneInfo.from_file(io.BytesIO(data), key=name)


_GUESS_CUTOFF = 0.88
"""How alike (difflib's ratio, case aside) a zone id must be to an unknown one to be suggested:
``America/NewYork`` is 0.97 like America/New_York, ``GMT+5`` only 0.8 like GMT+0 (a wrong hint)."""


@cache
def _zone_ids() -> dict[str, str]:
    """Every zone id of the pinned tzdata, by its lower case; read on the first unknown zone."""
    text = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return {name.lower(): name for name in text.split()}


@cache
def _named_zone_ids() -> dict[str, str]:
    """The zone ids without a digit, the ones a guess may name: a near miss of ``Etc/GMT+5``
    (which is UTC-5) or ``EST5EDT`` is an offset written another way, not a typo."""
    return {key: name for key, name in _zone_ids().items() if not any(c.isdigit() for c in key)}


@cache
def _zones_by_place() -> dict[str, tuple[str, ...]]:
    """The zone ids by their last part in lower case (``new_york``: America/New_York)."""
    places: dict[str, list[str]] = {}
    for name in _named_zone_ids().values():
        places.setdefault(name.rsplit("/", 1)[-1].lower(), []).append(name)
    return {place: tuple(names) for place, names in places.items()}


@lru_cache(maxsize=256)
def suggest_zone(name: str, *, fuzzy: bool = True) -> str | None:
    """The zone id an unknown ``name`` most likely meant, or None: the same id in another case
    (``america/new_york``), a place with one zone (``New York``, ``Kolkata``), or with ``fuzzy``
    the one closest in spelling (``Europe/Pariss``). The fuzzy search compares with each of the
    ~600 ids (a few milliseconds): callers that meet many unknown zones bound how often they ask.
    """
    if not 0 < len(name) <= 64:
        return None
    key = "_".join(name.split()).lower()
    ids = _zone_ids()
    found = ids.get(key) or ids.get(key.replace("-", "_"))
    if found:
        return found
    place = _zones_by_place().get(key)
    if place is not None and len(place) == 1:
        return place[0]
    if not fuzzy:
        return None
    import difflib  # here only: a guess for a zone id that is wrong, never a valid one's read

    named = _named_zone_ids()
    close = difflib.get_close_matches(key, named, n=1, cutoff=_GUESS_CUTOFF)
    return named[close[0]] if close else None


def resolve_zone(zone: tzinfo | str) -> tzinfo:
    """A ``tzinfo`` for an IANA name or an existing ``tzinfo`` (returned as it is)."""
    if isinstance(zone, tzinfo):
        return zone
    if isinstance(zone, str):
        return get_zone(zone)
    raise TypeError(f"tz must be a ZoneInfo or an IANA name, not {type(zone).__name__}")


@cache
def is_fixed_offset(name: str) -> bool:
    """True for a zone id that is not a region and whose offset has not changed since 1970 and
    follows no daylight saving: an abbreviation or a fixed offset (``EST``, ``MST``, ``HST``,
    ``Etc/GMT+5``), UTC excepted. Since tzdata 2024b ``EST`` is a link to America/Panama, whose
    last change was in 1908, so "no transition ever" would miss it."""
    if name in _ZERO_OFFSET_NAMES or ("/" in name and not name.startswith("Etc/")):
        return False
    data = _zone_file(name)
    counts = struct.unpack(">6l", data[20:44])
    times: tuple[int, ...] = ()
    footer = b""
    if data[4:5] >= b"2":
        # Skip the version 1 block (32-bit times) to the version 2 header and its 64-bit times.
        isut, isstd, leap, time_count, type_count, char_count = counts
        header2 = 44 + time_count * 5 + type_count * 6 + char_count + leap * 8 + isstd + isut
        time_count = struct.unpack(">6l", data[header2 + 20 : header2 + 44])[3]
        times = struct.unpack(f">{time_count}q", data[header2 + 44 : header2 + 44 + 8 * time_count])
        footer = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    else:
        time_count = counts[3]
        times = struct.unpack(f">{time_count}l", data[44 : 44 + 4 * time_count])
    if any(t >= 0 for t in times) or b"," in footer:
        return False
    offset = get_zone(name).utcoffset(datetime(2000, 1, 1))
    return offset != timedelta(0)


class Transition(NamedTuple):
    at: int  # UTC epoch seconds of the first instant with the new offset
    before: int  # offset in seconds before
    after: int  # offset in seconds from ``at`` on


@dataclass(frozen=True, slots=True)
class Segment:
    """UTC instants ``[start, end)`` share ``offset``; wall times below ``repeat_until`` repeat
    wall times that an earlier segment already showed (the second pass after clocks go back)."""

    start: int
    end: int
    offset: int
    repeat_until: int


# Offsets are probed once a day, then the change is pinned to the second by bisection. The
# closest two transitions of any zone in the pinned tzdata (1900-2100) are 166 hours apart
# (America/Cambridge_Bay 2000, Asia/Gaza 2040), so a daily probe sees every one of them.
_PROBE = 86400
_FIRST_YEAR = 2  # datetime's range, less a year of margin on each side
_LAST_YEAR = 9997


def _year_start(year: int) -> int:
    return (datetime(year, 1, 1, tzinfo=UTC) - EPOCH) // timedelta(seconds=1)


class HourPiece(NamedTuple):
    """The part of a window ``[first, stop)`` that lies in one segment and one local hour."""

    stop: int  # exclusive end: the window's end, the local hour's end or the segment's end
    offset: int
    repeat_until: int  # as in Segment
    wall: int  # local wall seconds since 1970 of ``first``
    year: int
    month: int
    day: int
    hour: int


_EPOCH_ORDINAL = EPOCH.toordinal()


class ZoneTimeline:
    """The offset changes of one zone, found by probing the zone itself and cached per year."""

    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone
        self._years: dict[int, list[Transition]] = {}
        self._last: Segment | None = None
        self._piece: tuple[int, int, HourPiece] | None = None

    def offset_at(self, instant: int) -> int:
        offset = datetime.fromtimestamp(instant, self.zone).utcoffset()
        assert offset is not None  # nosec B101 # type narrowing: a ZoneInfo always has one
        return offset.days * 86400 + offset.seconds

    def _transitions(self, year: int) -> list[Transition]:
        found = self._years.get(year)
        if found is not None:
            return found
        found = []
        if not _FIRST_YEAR <= year <= _LAST_YEAR:
            self._years[year] = found
            return found
        start, end = _year_start(year), _year_start(year + 1)
        previous = self.offset_at(start)
        probe = start
        while probe < end:
            nxt = min(probe + _PROBE, end)
            offset = self.offset_at(nxt)
            if offset != previous:
                low, high = probe, nxt  # offset_at(low) == previous, offset_at(high) == offset
                while high - low > 1:
                    middle = (low + high) // 2
                    if self.offset_at(middle) == previous:
                        low = middle
                    else:
                        high = middle
                found.append(Transition(high, previous, offset))
                previous = offset
            probe = nxt
        self._years[year] = found
        return found

    def segment(self, instant: int) -> Segment:
        """The segment of constant offset that holds ``instant`` (UTC epoch seconds)."""
        last = self._last
        if last is not None and last.start <= instant < last.end:
            return last
        year = min(max((EPOCH + timedelta(seconds=instant)).year, _FIRST_YEAR), _LAST_YEAR)
        nearby = [
            *self._transitions(year - 1),
            *self._transitions(year),
            *self._transitions(year + 1),
        ]
        index = bisect.bisect_right([t.at for t in nearby], instant)
        offset = self.offset_at(instant)
        if index > 0:
            previous = nearby[index - 1]
            start = previous.at
            repeat_until = start + max(previous.before, offset)
        else:
            start = _year_start(year - 1)
            repeat_until = start + offset
        end = nearby[index].at if index < len(nearby) else _year_start(year + 2)
        segment = Segment(start, end, offset, repeat_until)
        self._last = segment
        return segment

    def hour_piece(self, first: int, stop: int) -> HourPiece:
        """The start of ``[first, stop)`` that shares ``first``'s segment and local hour, with
        its wall clock. The last answer is kept: a tick asks the same of every job in a zone."""
        cached = self._piece
        if cached is not None and cached[0] == first and cached[1] == stop:
            return cached[2]
        segment = self.segment(first)
        wall = first + segment.offset
        days, time_of_day = divmod(wall, 86400)
        day = date.fromordinal(_EPOCH_ORDINAL + days)
        piece = HourPiece(
            min(stop, segment.end, first + 3600 - time_of_day % 3600),
            segment.offset,
            segment.repeat_until,
            wall,
            day.year,
            day.month,
            day.day,
            time_of_day // 3600,
        )
        self._piece = (first, stop, piece)
        return piece


_TIMELINES: dict[tzinfo, ZoneTimeline] = {}


def timeline(zone: tzinfo) -> ZoneTimeline:
    """The (cached) timeline of ``zone``."""
    found = _TIMELINES.get(zone)
    if found is None:
        found = _TIMELINES[zone] = ZoneTimeline(zone)
    return found
