"""A waiting firing that another region wrote (carried here by :mod:`.carrier`) is run here only
once that region can no longer run it: before its claim, the tick *takes it over* in the store
of the region that wrote it, with the write that region's own claim would lose to, a SKIPPED
record saying where it runs (``record_skipped``: a conditional insert, as a claim is).

* Written: that region will never run it; the firing is claimed here as any other (and its
  waiting copy there is dropped). Both histories say where it ran.
* That region has a record of it already: it ran there (or is running). The tick records it
  SKIPPED here (``elsewhere``), saying so, and forgets it.
* That region cannot be reached: whether it ran the firing cannot be known. A firing due
  before this region became active (its last standby tick, :func:`standby_scope`) may have run
  there, and is recorded SKIPPED with the reason, never run twice; one due since cannot have
  (that region was standing by, or gone), and runs here.

A firing kept waiting for its job's open run (``overlap: buffer_*``) outlives the tick that
took it over: the region that took it may still hold it, waiting, when its region is active
again (a fail-back), and hand a copy back. Its claim there would lose to the fence, and the
copy that waits be dropped: lost. So that region *takes it back* (:meth:`Takeover.taken_back`):
it fences it in the store of the region that took it (``taken over by <this region>``), which
then never runs it (its claim there loses), and claims it over its own fence
(``over_skipped``, as a backfill's claim: one conditional write on the skip as read, so one of
its racing tickers wins). Of two regions each fenced by the other, only the later fence's
writer claims over its own: a fence is written once, so the two can never both run it.

Without peers (one region, or a store the regions share: the claim itself is then the fence)
nothing is taken over: each firing is claimed as it always was.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.carry.carrier import Peers
from mini_scheduler.carry.merge import (
    fenced_by,
    heartbeat,
    later_fence,
    origin_region,
    taken_back,
    taken_over_by,
)
from mini_scheduler.claims.base import BUFFER, ClaimStore, Control, Deferred
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.errors import SchedulerError, describe_aws_error
from mini_scheduler.model import RunStatus, iso_seconds, log_keys

log = logging.getLogger("mini_scheduler.carry")

STANDBY = "standby/"


def standby_scope(origin: str) -> str:
    """The watermark scope under which a region keeps its last standby tick's minute."""
    return STANDBY + origin


class Takeover:
    """Takes over, in the stores of the regions that wrote them, the waiting firings that this
    region's tick is about to claim."""

    def __init__(self, peers: Peers, origin: str, home: ClaimStore | None = None) -> None:
        self.peers = peers
        self.origin = origin
        self.home = home

    def taken_back(self, items: Sequence[Deferred], now: datetime) -> frozenset[str]:
        """The keys of this region's own waiting firings (``buffer``) that another region took
        over and still holds, taken back here: each is claimed over its fence
        (``over_skipped``). One whose takeover ran there, or a region that cannot be reached,
        is left to its claim, which loses to the fence (never run twice)."""
        back: set[str] = set()
        for item in items:
            if self.home is None or item.reason != BUFFER:
                continue
            if origin_region(item.origin) != self.peers.region:
                continue
            try:
                if self._back(item, now):
                    back.add(item.key)
            except (SchedulerError, BotoCoreError, ClientError) as exc:
                error = str(exc) if isinstance(exc, SchedulerError) else describe_aws_error(exc)
                log.warning(
                    "Waiting firing %s not taken back - %s; its claim here loses to the "
                    "takeover's record: run it by hand if it must run",
                    item.firing.id,
                    error,
                    extra=log_keys(item.firing.job, item.firing.id),
                )
        return frozenset(back)

    def _back(self, item: Deferred, now: datetime) -> bool:
        """Whether ``item``, fenced here by a region that took it over, is taken back: fenced
        there by this region, later than that region's fence here."""
        fence = self.home.run(item.firing.id) if self.home is not None else None
        region = fenced_by(fence)
        there = self.peers.store(region) if region is not None else None
        if region is None or there is None:
            return False
        mine = taken_over_by(self.peers.region)
        there.record_skipped(item.firing, now=now, reason=mine, origin=self.origin)
        found = there.run(item.firing.id)
        if fenced_by(found) != self.peers.region:
            return False  # it ran (or runs) there: its claim here loses, and it is forgotten
        if not later_fence(found, fence):  # that region took it back after this one's fence
            log.warning(
                "Waiting firing %s not taken back from %s - its takeover there is later than "
                "this region's; it runs there, not here",
                item.firing.id,
                region,
                extra=log_keys(item.firing.job, item.firing.id),
            )
            return False
        return True

    def fence(self, items: Sequence[Deferred], control: Control, now: datetime) -> dict[str, str]:
        """The keys of ``items`` that must not run here, each with why: the tick records them
        SKIPPED (``elsewhere``) and forgets them, a runtime schedule's moving on. A region that
        cannot be reached is asked once a tick, not once a firing."""
        elsewhere: dict[str, str] = {}
        down: dict[str, str] = {}  # region -> why it could not be reached, this tick
        for item in items:
            region = origin_region(item.origin)
            if region == self.peers.region or region not in self.peers.regions:
                continue
            why = self._why_not(item, region, control, now, down)
            if why is not None:
                elsewhere[item.key] = why
        return elsewhere

    def _why_not(
        self, item: Deferred, region: str, control: Control, now: datetime, down: dict[str, str]
    ) -> str | None:
        """None when ``item`` runs here (taken over there), else why not."""
        error = down.get(region)
        if error is None:
            try:
                return self._taken(item, region, now)
            except (SchedulerError, BotoCoreError, ClientError) as exc:
                error = str(exc) if isinstance(exc, SchedulerError) else describe_aws_error(exc)
                down[region] = error
        since = active_since(control, self.origin)
        if since is not None and item.due >= since:
            log.warning(
                "Waiting firing %s from %s runs here untaken - %s cannot be reached (%s); it "
                "was due after this region became active (%s)",
                item.firing.id,
                region,
                region,
                error,
                iso_seconds(since),
                extra=log_keys(item.firing.job, item.firing.id),
            )
            return None
        last = control.watermarks.get(heartbeat(region))
        return _unreachable(region, error, item, since, last)

    def _taken(self, item: Deferred, region: str, now: datetime) -> str | None:
        """Take ``item`` over in ``region``'s store: None when taken (it runs here), else why
        not (it ran there)."""
        there = self.peers.store(region)
        if there is None:  # pragma: no cover - fence asks only of peers
            return None
        mine = taken_over_by(self.peers.region)
        if not there.record_skipped(item.firing, now=now, reason=mine, origin=self.origin):
            found = there.run(item.firing.id)
            if found is None or found.reason != mine:
                _drop(there, item)
                return _ran_there(region, found)
            if self.home is not None:
                here = self.home.run(item.firing.id)
                if taken_back(here, found, self.peers.region, region):
                    return _taken_back(region)  # its copy there waits: it runs there
        _drop(there, item)
        return None


def active_since(control: Control, origin: str) -> datetime | None:
    """When this region became active: the minute after its last standby tick (None: it has
    not stood by since it kept them)."""
    last = control.watermarks.get(standby_scope(origin))
    return last + timedelta(minutes=1) if last is not None else None


def _drop(store: ClaimStore, item: Deferred) -> None:
    # One left is carried back and taken over again: answered there, dropped then.
    with contextlib.suppress(SchedulerError):
        store.drop_deferred([item])


def _taken_back(region: str) -> str:
    return (
        f"taken back by {region} after this region took it over: it runs there once {region} "
        "is active again"
    )


def _ran_there(region: str, run: RunRecord | None) -> str:
    status = run.status if run is not None else RunStatus.CLAIMED
    return f"ran in {region} ({status} there, by {run.origin if run else 'its ticker'})"


def _unreachable(
    region: str,
    error: str,
    item: Deferred,
    since: datetime | None,
    last: datetime | None,
) -> str:
    heard = f"; its last word here {iso_seconds(last)}" if last is not None else ""
    became = f"this region active since {iso_seconds(since)}" if since else "no standby known"
    return (
        f"{region} cannot be reached ({error}) to tell whether it ran this firing, due "
        f"{iso_seconds(item.due)} while it may have been active ({became}{heard}): not run "
        "twice - run it by hand if it must run"
    )
