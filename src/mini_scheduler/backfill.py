"""Backfill: a past window of a cron.yaml job's firings, run again on an operator's demand.

* **What it writes.** Each scheduled firing of the window (``--from`` included, ``--to`` not)
  becomes a deferred firing (reason ``backfill``) of the same firing id (``<job>@<instant>``),
  its payload saying ``"backfill": true``. Nothing else: the deferred firings are the backfill,
  and their detail (its id, size, window and operator) is its progress.
* **Exactly once.** Each is claimed by its own firing id: a firing that ran (or is running)
  has a record, its claim is LOST and nothing is dispatched; one that never ran, or was
  recorded SKIPPED (a misfire, a skipped range's first firing), is claimed and run. A backfill
  sent twice (or by two operators) claims each firing once.
* **Pace.** ``rate`` firings a minute: the firings are due ``now``, ``now + 1 min``, ... in
  groups of ``rate``, oldest first, so the ticks of the coming minutes dispatch them at that
  pace beside the job's own firings; a backfill is never "late" (``misfire.grace`` does not
  apply to it).
* **Bounds.** The window must have ended (``--to`` not after now) and hold at most
  :data:`MAX_FIRINGS` firings; the job must be in cron.yaml and enabled. Anything else is
  refused before anything is written.
"""

from __future__ import annotations

import logging
import secrets
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from mini_scheduler.claims.base import BACKFILL, ClaimStore, Deferred
from mini_scheduler.errors import EventError
from mini_scheduler.jobs import Job
from mini_scheduler.model import Firing, iso_millis, iso_seconds, log_keys, parse_instant

log = logging.getLogger("mini_scheduler.ticker")

MAX_FIRINGS: Final = 10_000
"""Firings one backfill may hold (a bound on the work a request does, and on a mistake)."""
DEFAULT_RATE: Final = 60
MAX_RATE: Final = 1_000
_MINUTE: Final = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class Backfill:
    """One backfill as its deferred firings tell it: ``pending`` of ``total`` left."""

    id: str
    job: str
    start: str  # the window, as asked
    end: str
    rate: int
    operator: str
    total: int
    pending: int
    next_due: datetime | None
    last_due: datetime | None

    @property
    def done(self) -> int:
        return self.total - self.pending

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "job": self.job,
            "from": self.start,
            "to": self.end,
            "rate": self.rate,
            "operator": self.operator,
            "total": self.total,
            "pending": self.pending,
            "done": self.done,
            "nextDue": iso_seconds(self.next_due) if self.next_due else None,
            "lastDue": iso_seconds(self.last_due) if self.last_due else None,
        }


def check_window(start: object, end: object, now: datetime) -> tuple[datetime, datetime]:
    """``from`` and ``to`` as instants; EventError naming what is wrong."""
    found: list[datetime] = []
    for key, value in (("from", start), ("to", end)):
        if isinstance(value, datetime) and value.tzinfo is not None:
            found.append(value)
            continue
        if not isinstance(value, str):
            raise EventError(f"{key} is required: an instant such as 2026-11-30T00:00:00Z")
        try:
            found.append(parse_instant(value))
        except ValueError as exc:
            raise EventError(f"{key} {value[:40]!r} is not an instant: {exc}") from None
    begin, stop = found
    if stop <= begin:
        raise EventError(f"to {iso_seconds(stop)} is not after from {iso_seconds(begin)}")
    if stop > now:
        raise EventError(
            f"to {iso_seconds(stop)} is in the future (now {iso_seconds(now)}): a backfill "
            "runs firings that are past; the schedule runs the others"
        )
    return begin, stop


def check_rate(rate: object) -> int:
    if rate is None:
        return DEFAULT_RATE
    if isinstance(rate, bool) or not isinstance(rate, int) or not 1 <= rate <= MAX_RATE:
        raise EventError(f"rate must be a whole number of firings a minute, 1 to {MAX_RATE}")
    return rate


def plan_backfill(
    job: Job,
    start: datetime,
    end: datetime,
    *,
    rate: int,
    operator: str,
    origin: str,
    now: datetime,
) -> list[Deferred]:
    """The deferred firings of a backfill of ``job`` over ``[start, end)``; EventError when
    the window holds none, or more than :data:`MAX_FIRINGS`."""
    firings: list[datetime] = []
    for at in job.firings(start, end):
        firings.append(at)
        if len(firings) > MAX_FIRINGS:
            raise EventError(
                f"the window {iso_seconds(start)} to {iso_seconds(end)} holds more than "
                f"{MAX_FIRINGS} firings of {job.name} ({job.schedule}): backfill a shorter one"
            )
    if not firings:
        raise EventError(
            f"{job.name} ({job.schedule}) has no firing from {iso_seconds(start)} to "
            f"{iso_seconds(end)}: nothing to backfill"
        )
    ident = f"{job.name}@backfill-{iso_millis(now)}-{secrets.token_hex(4)}"
    detail = {
        "backfill": ident,
        "from": iso_seconds(start),
        "to": iso_seconds(end),
        "rate": rate,
        "total": len(firings),
        "operator": operator,
    }
    return [
        Deferred(
            Firing(job.name, at, backfill=True),
            now + _MINUTE * (i // rate),
            BACKFILL,
            origin,
            now,
            detail,
        )
        for i, at in enumerate(firings)
    ]


def start_backfill(claims: ClaimStore, items: Sequence[Deferred]) -> Backfill:
    """Write a backfill's deferred firings (:func:`plan_backfill`) and say so; StoreError when
    the store refused part of them (writing them again is harmless: the same keys, the same
    claims)."""
    claims.defer(items)
    (backfill,) = summarize(items)
    log.info(
        "Operator %s backfills %s: %d firings from %s to %s, %d a minute (backfill %s)",
        backfill.operator,
        backfill.job,
        backfill.total,
        backfill.start,
        backfill.end,
        backfill.rate,
        backfill.id,
        extra=log_keys(backfill.job, backfill=backfill.id),
    )
    return backfill


def summarize(items: Sequence[Deferred]) -> list[Backfill]:
    """The backfills that deferred firings belong to, oldest first."""
    groups: dict[str, list[Deferred]] = defaultdict(list)
    for item in items:
        ident = item.detail.get("backfill")
        if isinstance(ident, str):
            groups[ident].append(item)
    found: list[Backfill] = []
    for ident, group in groups.items():
        detail = group[0].detail
        dues = sorted(item.due for item in group)
        total = detail.get("total")
        rate = detail.get("rate")
        found.append(
            Backfill(
                id=ident,
                job=group[0].firing.job,
                start=str(detail.get("from", "")),
                end=str(detail.get("to", "")),
                rate=rate if isinstance(rate, int) else DEFAULT_RATE,
                operator=str(detail.get("operator", "")),
                total=total if isinstance(total, int) else len(group),
                pending=len(group),
                next_due=dues[0],
                last_due=dues[-1],
            )
        )
    return sorted(found, key=lambda b: (b.id.rpartition("@backfill-")[2], b.job))


def status(claims: ClaimStore, job: str | None = None) -> list[Backfill]:
    """The backfills with firings still to dispatch (of ``job``, or of every job)."""
    items = claims.pending_deferred(BACKFILL)
    return summarize([item for item in items if job is None or item.firing.job == job])
