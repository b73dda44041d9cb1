"""Places under a cap (a job's ``max_running``, a named pool): the rules, decided once, no I/O.

A run of a capped job holds a place under each of its caps (:class:`.jobs.model.Place`)
while it is open. A cap's holders are firing ids, each with the lease of the claim that took
its place; every store keeps them beside the cap's key (DynamoDB: a map on the cap's item;
MongoDB: an array on its document; memory: a dict) and writes these rules as conditions:

* a claim takes its places before its run is written, each in one conditional write that
  holds when fewer than the cap's limit hold one, or this firing does (:func:`may_take`: two
  claimers of one firing share the place, and one of them wins the claim); a place refused
  gives back the places and the slot the claim took before it, and the claim is OVERLAP;
* a claim lost to its firing's record gives its places back, unless the record is an open run
  that holds places: the same firing's, so they are its own (:func:`lost_keeps_places`);
* a run's end gives its places back, its reopening (a redrive) takes them again
  (:func:`following`), each conditional on the place being this firing's;
* a place whose release was lost, or whose claimer died before writing its run, is released
  by the next claim the cap refuses, conditionally on it being as read (:func:`stale`); only a
  place whose claim's lease has passed is looked at, so a cap that is full of open runs costs
  that claim one read of their runs.

So a cap never has more open runs than its limit, whichever ticker shard or region's writer
claims, and a crash at any point leaves at most a place held by no run until its lease.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Mapping, Sequence
from datetime import datetime

from mini_scheduler.claims.records import RunRecord
from mini_scheduler.jobs.model import Place
from mini_scheduler.model import RunStatus

__all__ = [
    "following",
    "held",
    "log_held",
    "log_released",
    "log_slot_held",
    "log_stale_released",
    "lost_keeps_places",
    "may_take",
    "past_lease",
    "stale",
]

log = logging.getLogger("mini_scheduler.claims")


def may_take(holders: Mapping[str, datetime], firing_id: str, limit: int) -> bool:
    """Whether ``firing_id`` may hold a place among ``holders``: it holds one already, or
    fewer than ``limit`` do."""
    return firing_id in holders or len(holders) < limit


def held(places: Sequence[Place]) -> dict[str, int] | None:
    """What a claimed run records of its places (each cap's key and limit: a redrive takes
    them again with it), or None for a run that holds none."""
    return {place.key: place.limit for place in places} or None


def lost_keeps_places(holder: RunRecord | None) -> bool:
    """Whether the places a claim took stay taken when the claim is lost to ``holder``, its
    firing's record: only for an open run that holds places (the same firing's)."""
    return holder is not None and holder.status.open and bool(holder.places)


def following(before: RunRecord, after: RunRecord) -> tuple[bool, Mapping[str, int]]:
    """The places a run's change moves: (False, its places) when it ends (give them back),
    (True, its places) when it reopens (take them again), an empty mapping otherwise."""
    places = before.places or {}
    if not places or after.status.open == before.status.open:
        return False, {}
    return after.status.open, places


def stale(
    holders: Mapping[str, datetime], runs: Mapping[str, RunRecord | None], now: datetime
) -> list[tuple[str, datetime, str]]:
    """The places that may be released although their firing holds them, each with its lease
    as read (the release's condition) and why: past its claim's lease, its run has ended (the
    release was lost) or was never written (the claimer died first; a SKIPPED record a
    backfill's claim meant to replace counts as none). ``runs``: the holders past their lease,
    as read (None: no record)."""
    found: list[tuple[str, datetime, str]] = []
    for firing_id, lease in sorted(holders.items()):
        if lease > now or firing_id not in runs:
            continue
        run = runs[firing_id]
        if run is None or run.status is RunStatus.SKIPPED:
            found.append((firing_id, lease, "no run was recorded within its claim's lease"))
        elif not run.status.open:
            found.append((firing_id, lease, "its run has ended"))
    return found


def past_lease(holders: Mapping[str, datetime], now: datetime) -> list[str]:
    """The holders whose claim's lease has passed: the ones :func:`stale` may release."""
    return sorted(firing_id for firing_id, lease in holders.items() if lease <= now)


def log_released(key: str, firing_id: str, why: str) -> None:
    """A stale place was released (the store's condition held: it was as read)."""
    log.warning("Cap %s - place of firing %s released: %s", key, firing_id, why)


def log_held(key: str, firing_id: str) -> None:
    """A redriven run found its cap full: it runs beside the runs that hold it."""
    log.warning(
        "Cap %s - firing %s redriven while the cap is full: it runs beside the runs that hold "
        "it, and its end gives back no other run's place",
        key,
        firing_id,
    )


# -- the lines of an exclusive job's slot (a cap of one, kept on the job's own item) ---------


def log_stale_released(job: str, held: str, why: str, claiming: Container[str]) -> None:
    """A stale slot released: at WARNING, at DEBUG when ``held`` is a firing of the same claim
    batch (``claiming``), whose lost claim gives it back anyway."""
    level = logging.DEBUG if held in claiming else logging.WARNING
    log.log(level, "Job %s - open slot of firing %s released: %s", job, held, why)


def log_slot_held(job: str, firing_id: str) -> None:
    """A redriven exclusive run found the job's slot held by another run."""
    log.warning(
        "Job %s - firing %s redriven while another run holds the job's slot (overlap: skip): "
        "it runs beside that run, and its end leaves that run's slot alone",
        job,
        firing_id,
    )
