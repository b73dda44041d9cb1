"""A drill's watch: the first firing the region taking over claims after the switch.

The region's state table is read as ``history`` reads it (each watched name's runs, newest
first, paged back to the switch), every few seconds until a run is there or the time is up. A
run counts when its firing is scheduled at or after the switch and a tick claimed it: a manual
run or a skipped firing is no sign that the region's ticker took over. The time measured is the
claim's (its start's, when a store kept no claim time) from the switch: when the region's
ticker acted, not when the watch happened to look.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from mini_scheduler.cli.context import Context
from mini_scheduler.instants import iso_seconds, parse_instant
from mini_scheduler.model import RunStatus

if TYPE_CHECKING:
    from mini_scheduler.claims.base import ClaimStore
    from mini_scheduler.claims.records import RunRecord

POLL: Final = 5.0  # seconds between two reads of the state table
_PAGE: Final = 20


@dataclass(frozen=True, slots=True)
class FirstFiring:
    """The first run a tick claimed in ``region`` after the switch, and how long after."""

    region: str
    run: RunRecord
    claimed: datetime
    after: timedelta

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.run.job,
            "firingId": self.run.firing_id,
            "region": self.region,
            "scheduledTime": self.run.scheduled_time,
            "claimedAt": iso_seconds(self.claimed),
            "secondsAfterSwitch": round(self.after.total_seconds(), 1),
        }


def first_firing(
    context: Context,
    claims: ClaimStore,
    region: str,
    names: Sequence[str],
    since: datetime,
    timeout: float,
) -> FirstFiring | None:
    """Poll ``claims`` for the first firing of ``names`` since ``since`` (the switch), until
    ``timeout`` seconds after it; None when none came. The reads are bounded by count as well as
    by the clock, so a clock that stands still cannot keep the watch going."""
    deadline = since + timedelta(seconds=timeout)
    for _ in range(math.ceil(timeout / POLL) + 1):
        runs = [run for name in names for run in _since(claims, name, since)]
        if runs:
            run = min(runs, key=lambda r: (_claimed(r), r.scheduled_time, r.job))
            return FirstFiring(region, run, _claimed(run), _claimed(run) - since)
        left = (deadline - context.clock.now()).total_seconds()
        if left <= 0:
            return None
        context.sleep(min(POLL, left))
    return None


def _since(claims: ClaimStore, name: str, since: datetime) -> Iterator[RunRecord]:
    """``name``'s runs claimed by a tick for firings scheduled at or after ``since``."""
    before: str | None = None
    while True:
        page = claims.history(name, limit=_PAGE, before=before)
        for run in page:
            if _scheduled(run) < since:
                return
            if not run.manual and run.status is not RunStatus.SKIPPED:
                yield run
        if len(page) < _PAGE:
            return
        before = page[-1].sort_key


def _scheduled(run: RunRecord) -> datetime:
    return parse_instant(run.scheduled_time)


def _claimed(run: RunRecord) -> datetime:
    """When a tick took the firing: its claim, its start, or (neither kept) its schedule."""
    return run.claimed_at or run.started_at or _scheduled(run)
