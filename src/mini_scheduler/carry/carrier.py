"""Bring this region's store and each peer region's in step (:func:`.merge.in_step` decides
what to write). The active region's ticker does it after each tick, and an operator action
after its own write, so that a failover finds in the region taking over the schedules, the
pauses and the waiting firings the other held a minute ago, at most.

A firing kept waiting for its job's open run (``overlap: buffer_*``, :data:`.BUFFER`) is written
with :meth:`.ClaimStore.buffer`, under its job's limit (``limit``: the ticker's cron file says
it), so that the other store holds its place and keeps the job's limit as this one does; the
copy of an answered one is dropped first, its place being the next one's. One the other store
refuses (as many wait there already) is not written and not recorded SKIPPED: it waits, and
runs, where it is; the refusal is logged and the next carry tries again. (A SKIPPED record
there would make the firing's own claim there lose after a failover: lost, not run once.)

A peer that cannot be read or written is named in the report and left for the next time; it
never fails the tick or the action. Each peer's store is built on first use (a region whose
stack is not deployed yet costs nothing until then).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.carry.merge import (
    Mark,
    Snapshot,
    Writes,
    fenced_by,
    heartbeat,
    in_step,
    marks_of,
    taken_back,
)
from mini_scheduler.claims.base import BUFFER, DEFERRED_REASONS, ClaimStore, Deferred
from mini_scheduler.claims.transitions import replaces
from mini_scheduler.errors import SchedulerError, describe_aws_error
from mini_scheduler.model import log_keys

log = logging.getLogger("mini_scheduler.carry")

NOT_CARRIED = "Region %s not brought in step with %s: %s - the next tick tries again"
NOT_WAITING = (
    "Waiting firing %s not carried to %s - %s there; it waits in %s, and is carried once a "
    "place frees there"
)

Limit = Callable[[Deferred], tuple[int, str]]
"""How many firings of a waiting firing's job a store keeps waiting, and what a refusal says."""

STRICTEST = "its job is not known here (the strictest limit, 1, taken) and a firing waits"


def strictest(item: Deferred) -> tuple[int, str]:
    """The limit of a job the carry does not know (no cron file read, no job of the name, one
    that buffers no more): 1, the fewest any buffering job keeps, so that the other store never
    keeps more waiting than the job allows; one it refuses waits where it is, not lost."""
    return 1, STRICTEST


class Peers:
    """The peer regions' claim stores, each made by its factory on first use."""

    def __init__(self, region: str, factories: Mapping[str, Callable[[], ClaimStore]]) -> None:
        self.region = region
        self._factories = {r: f for r, f in factories.items() if r != region}
        self._stores: dict[str, ClaimStore] = {}

    @property
    def regions(self) -> list[str]:
        return list(self._factories)

    def store(self, region: str) -> ClaimStore | None:
        """``region``'s store, or None when it is no peer of this one."""
        if region not in self._factories:
            return None
        found = self._stores.get(region)
        if found is None:
            found = self._stores[region] = self._factories[region]()
        return found


@dataclass(slots=True)
class CarryReport:
    """Each peer brought in step (what was written in each store), and each that was not."""

    written: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"inStep": sorted(self.written)}
        if self.failed:
            out["notInStep"] = dict(self.failed)
        return out


def snapshot(store: ClaimStore, region: str) -> Snapshot:
    """What ``store`` holds of the state that follows the active region (a query per kind)."""
    control = store.control("")
    waiting = {
        item.key: item for reason in DEFERRED_REASONS for item in store.pending_deferred(reason)
    }
    return Snapshot(
        region,
        {d.name: d for d in store.definitions()},
        marks_of(control.paused, control.resumed),
        waiting,
    )


def write(
    store: ClaimStore, writes: Writes, limit: Limit = strictest
) -> list[tuple[Deferred, str]]:
    """``writes`` in ``store``; the waiting firings ``store`` refused a place (left where they
    wait), each with why. A definition changed meanwhile is left (the next carry reads it
    again). The dropped go first: an answered firing's place is the next one's."""
    for definition, over in writes.definitions:
        store.carry_schedule(definition, over)
    for mark in writes.marks:
        _mark(store, mark)
    if writes.drop:
        store.drop_deferred(writes.drop)
    plain = [item for item in writes.defer if item.reason != BUFFER]
    if plain:
        store.defer(plain)
    refused: list[tuple[Deferred, str]] = []
    for item in writes.defer:
        if item.reason == BUFFER:
            most, why = limit(item)
            if not store.buffer(item, most):
                refused.append((item, why))
    return refused


def _mark(store: ClaimStore, mark: Mark) -> None:
    pause = mark.pause
    store.set_paused(pause.job, mark.paused, operator=pause.operator, now=pause.at)


class Carrier:
    """Brings ``home`` (this region's store) and every peer's in step; ``limit`` gives a
    waiting firing's job's limit (:data:`Limit`; without it, :func:`strictest`)."""

    def __init__(self, home: ClaimStore, peers: Peers, limit: Limit = strictest) -> None:
        self.home = home
        self.peers = peers
        self.limit = limit

    def carry(self, now: datetime, *, active: bool = True) -> CarryReport:
        """Bring every peer in step (:func:`.merge.in_step`; ``active``: this region is the
        active one, and a tick of it does this)."""
        report = CarryReport()
        if not self.peers.regions:
            return report
        try:
            mine = snapshot(self.home, self.peers.region)
        except SchedulerError as exc:
            for region in self.peers.regions:
                report.failed[region] = f"this region's store unread: {exc}"
            return report
        stale = False  # this region's store written since it was read: read again for the next
        for region in self.peers.regions:
            try:
                if stale:
                    mine, stale = snapshot(self.home, self.peers.region), False
                report.written[region] = self._with(region, mine, now, active)
                stale = bool(report.written[region])
            except (SchedulerError, BotoCoreError, ClientError) as exc:
                report.failed[region] = _described(exc)
                log.warning(NOT_CARRIED, region, self.peers.region, report.failed[region])
        return report

    def _with(
        self, region: str, mine: Snapshot, now: datetime, active: bool
    ) -> dict[str, dict[str, int]]:
        peer = self.peers.store(region)
        if peer is None:  # pragma: no cover - regions come from the peers
            return {}
        to_home, to_peer = in_step(mine, snapshot(peer, region), active=active)
        _never_there(peer, to_home, to_peer, self.home, (self.peers.region, region))
        there = _said(write(peer, to_peer, self.limit), region, self.peers.region)
        here = _said(write(self.home, to_home, self.limit), self.peers.region, region)
        if active:
            peer.advance_watermark(heartbeat(self.peers.region), now)
        if not (to_home or to_peer):
            return {}
        counts = {"there": _less(to_peer, there), "here": _less(to_home, here)}
        log.info(
            "Region %s brought in step - written there %s, here %s",
            region,
            counts["there"],
            counts["here"],
        )
        return counts


def _never_there(
    peer: ClaimStore,
    to_home: Writes,
    to_peer: Writes,
    home: ClaimStore,
    regions: tuple[str, str],
) -> None:
    """Of the peer's own waiting firings (:data:`.BUFFER`) that this region would take over,
    those with a record there that their claim there loses to (:func:`.transitions.replaces`:
    it ran there, or this region took it over, kept it waiting, handed a copy back and has
    answered it since) can never run there: they are dropped there, their places given back,
    rather than take a place here (or be refused one every minute while this region's are
    full). One the peer took back (:func:`.merge.taken_back`) runs there: it is left there,
    not taken here."""
    for item in [d for d in to_home.defer if d.reason == BUFFER]:
        record = peer.run(item.firing.id)
        if record is None or replaces(item.firing.backfill, record):
            continue
        to_home.defer.remove(item)
        mine = fenced_by(record) == regions[0]
        if mine and taken_back(home.run(item.firing.id), record, *regions):
            continue  # it waits there, for its region
        to_peer.drop.append(item)


def _said(refused: list[tuple[Deferred, str]], to: str, held: str) -> int:
    """Log each waiting firing ``to``'s store refused (it waits in ``held``'s); how many."""
    for item, why in refused:
        firing = item.firing
        log.warning(NOT_WAITING, firing.id, to, why, held, extra=log_keys(firing.job, firing.id))
    return len(refused)


def _less(writes: Writes, refused: int) -> dict[str, int]:
    counts = writes.counts()
    if refused:
        counts["waiting"] -= refused
        counts["refused"] = refused
    return counts


def _described(exc: SchedulerError | BotoCoreError | ClientError) -> str:
    if isinstance(exc, SchedulerError):
        return str(exc)
    return describe_aws_error(exc)
