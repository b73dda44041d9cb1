"""Where a firing of a job with ``jitter`` or ``window`` starts: its planned instant.

A job's firing keeps its nominal instant (the Quartz one): its id ``<job>@<instant>``, its
claim and its ``scheduledTime`` do not change. It *starts* at its planned instant, the nominal
one plus an offset that is a pure function of the firing id, so that the tick, the dry run,
``next``, the console and a retry's envelope all find the same one:

* ``jitter: SECONDS`` spreads over ``[0, SECONDS)``, ``window: MINUTES`` over ``[0, MINUTES *
  60)`` (EventBridge Scheduler's flexible time window). One job takes one of them, never both.
* The offset is the first 8 bytes of the sha256 of the firing id, modulo the span, in whole
  seconds: stable, and even over many jobs (1,000 jobs of one minute with ``window: 10`` put
  about 100 in each of the 10 minutes).
* A firing never starts at or after the job's next nominal firing: the span is cut to the time
  until it (a job every 5 minutes with ``window: 10`` spreads each over its 5 minutes). So the
  planned instants keep the firings' order, and only the last firing before an instant can
  start after it: what lets the tick of a minute find the firings whose planned instant falls
  in it (:func:`planned_in`) without reading back a whole window.

Pure: nothing here reads the clock. A job without either key plans each firing at its nominal
instant, with no hashing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Final

from mini_scheduler.instants import firing_id, iso_seconds
from mini_scheduler.jobs.model import Job
from mini_scheduler.jobs.text import describe

__all__ = [
    "MAX_JITTER",
    "MAX_WINDOW",
    "next_start",
    "offset",
    "planned",
    "planned_after",
    "planned_in",
    "read_jitter",
    "read_window",
    "spread_conflict",
]

MAX_JITTER: Final = 3600
"""Seconds: an hour. A longer spread is a ``window``."""
MAX_WINDOW: Final = 1440
"""Minutes: a day, EventBridge Scheduler's longest flexible time window."""
_PROBES: Final = (60, 3600)  # seconds looked back for the firing before a window, then all


def offset(firing_id: str, span: int) -> int:
    """Seconds in ``[0, span)`` for ``firing_id``: the same id, the same offset."""
    if span <= 1:
        return 0
    digest = hashlib.sha256(firing_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % span


def planned(job: Job, nominal: datetime, following: datetime | None = None) -> datetime:
    """The instant ``job``'s firing of ``nominal`` starts at. ``following``, the job's next
    nominal firing, is looked up when not given (None: it has none)."""
    span = job.spread_seconds
    if not span:
        return nominal
    if following is None:
        following = job.next_after(nominal)
    if following is not None:
        span = min(span, int((following - nominal).total_seconds()))
    return nominal + timedelta(seconds=offset(firing_id(job.name, iso_seconds(nominal)), span))


def planned_in(job: Job, begin: datetime, end: datetime) -> Iterator[tuple[datetime, datetime]]:
    """The firings of ``job`` planned in ``[begin, end)``, in order: ``(nominal, planned)``.
    Without a spread, each firing of the range at its own instant."""
    span = job.spread_seconds
    if not span:
        for at in job.firings(begin, end):
            yield at, at
        return
    before = _last_before(job, begin, span)
    previous = before
    for at in job.firings(begin, end):
        if previous is not None:
            start = planned(job, previous, at)
            if begin <= start:
                yield previous, start
        previous = at
    if previous is not None:
        start = planned(job, previous)
        if begin <= start < end:
            yield previous, start


def planned_after(job: Job, after: datetime, count: int) -> list[tuple[datetime, datetime]]:
    """The next ``count`` firings of ``job`` planned after ``after``: ``(nominal, planned)``."""
    found: list[tuple[datetime, datetime]] = []
    span = job.spread_seconds
    nominal = _last_before(job, after + timedelta(seconds=1), span) if span else None
    if nominal is None:
        nominal = job.next_after(after)
    while nominal is not None and len(found) < count:
        following = job.next_after(nominal)
        start = planned(job, nominal, following)
        if start > after:
            found.append((nominal, start))
        nominal = following
    return found


def next_start(job: Job, after: datetime) -> datetime | None:
    """When the job's first firing planned after ``after`` starts (None: it fires no more)."""
    if not job.spread_seconds:
        return job.next_after(after)
    found = planned_after(job, after, 1)
    return found[0][1] if found else None


def _last_before(job: Job, begin: datetime, span: int) -> datetime | None:
    """The job's last firing in ``[begin - span + 1 s, begin)``: the only one before ``begin``
    that can be planned at or after it (a firing starts before the next one). Looked for a
    minute back, then an hour, then the whole span: a frequent job never reads far back."""
    earliest = begin - timedelta(seconds=span - 1)
    for probe in (*_PROBES, span - 1):
        low = max(begin - timedelta(seconds=probe), earliest)
        last = None
        for last in job.firings(low, begin):  # noqa: B007 # the last one is kept
            pass
        if last is not None or low <= earliest:
            return last
    return None


# -- the keys, read as jobs/validate.py reads the others -------------------------------------


def read_jitter(value: object) -> tuple[int, str | None]:
    """``jitter``: whole seconds from 0 to :data:`MAX_JITTER` (0: none); the reason if not."""
    return _whole(value, "jitter", "seconds", MAX_JITTER)


def read_window(value: object) -> tuple[int, str | None]:
    """``window``: whole minutes from 0 to :data:`MAX_WINDOW` (0: none); the reason if not."""
    return _whole(value, "window", "minutes", MAX_WINDOW)


def _whole(value: object, key: str, unit: str, most: int) -> tuple[int, str | None]:
    if value is None:
        return 0, None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        return 0, f"{key} must be a whole number of {unit} from 0 to {most}, not {describe(value)}"
    return value, None


def spread_conflict(jitter: int, window: int) -> str | None:
    """The reason a job may not take both keys: they say the same thing twice."""
    if jitter and window:
        return (
            "jitter and window both spread a firing: give one (window is in minutes, "
            "jitter in seconds)"
        )
    return None
