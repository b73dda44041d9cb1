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
from mini_scheduler.carry.merge import heartbeat, origin_region
from mini_scheduler.claims.base import ClaimStore, Control, Deferred
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.errors import SchedulerError, describe_aws_error
from mini_scheduler.model import RunStatus, iso_seconds, log_keys

log = logging.getLogger("mini_scheduler.carry")

STANDBY = "standby/"


def standby_scope(origin: str) -> str:
    """The watermark scope under which a region keeps its last standby tick's minute."""
    return STANDBY + origin


def taken_over_by(region: str) -> str:
    return f"taken over by {region}: it runs there"


class Takeover:
    """Takes over, in the stores of the regions that wrote them, the waiting firings that this
    region's tick is about to claim."""

    def __init__(self, peers: Peers, origin: str) -> None:
        self.peers = peers
        self.origin = origin

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
