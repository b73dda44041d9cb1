"""What bringing two regions' stores in step writes in each, decided from what each holds: pure,
no store is read or written here (:mod:`.carrier` reads the two and writes what this says).

Three kinds of state follow the active region (the rest, a job's runs, stays where it ran):

* **Runtime schedules' definitions**, one per name. Of two, the newer wins: the later
  generation (a generation starts with the instant it was made); in one generation a tombstone
  over a live one (a delete), and of two live ones the one moved further on (a tick's advance).
* **Pauses**: each job's latest mark, a pause or a resume, by its instant.
* **Waiting firings** (retries, runtime schedules' next firings, backfills), each kept under
  the region that wrote it (its origin). The active region's own, and those it holds for
  others, are copied to the peer; the peer's copies of firings that came from elsewhere and
  that the active region no longer holds are dropped there (answered, or forgotten); the
  peer's own waiting firings that the active region does not hold are copied to it, to be
  taken over (:mod:`.takeover`) rather than wait for their region to be active again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from mini_scheduler.claims.base import Deferred, Pause
from mini_scheduler.claims.records import Definition, RunRecord
from mini_scheduler.model import RunStatus

HEARTBEAT = "carried-from/"
"""The watermark scope, ``carried-from/<region>``, under which a store keeps when the region
that brought it in step last did so."""


def heartbeat(region: str) -> str:
    return HEARTBEAT + region


def origin_region(origin: str) -> str:
    """The region of an origin (``<region>/<environment>``)."""
    return origin.partition("/")[0]


TAKEN_OVER = "taken over by "
TAKEN_OVER_END = ": it runs there"


def taken_over_by(region: str) -> str:
    """The reason of the SKIPPED record with which ``region`` takes a waiting firing over."""
    return f"{TAKEN_OVER}{region}{TAKEN_OVER_END}"


def fenced_by(run: RunRecord | None) -> str | None:
    """The region whose takeover ``run`` is (a SKIPPED record :func:`taken_over_by` wrote), or
    None for any other record."""
    if run is None or run.status is not RunStatus.SKIPPED or run.reason is None:
        return None
    reason = run.reason
    if not (reason.startswith(TAKEN_OVER) and reason.endswith(TAKEN_OVER_END)):
        return None
    return reason[len(TAKEN_OVER) : -len(TAKEN_OVER_END)] or None


def later_fence(one: RunRecord | None, other: RunRecord | None) -> bool:
    """Whether the takeover record ``one`` was written after ``other`` (each written once)."""
    if one is None or other is None or one.ended_at is None or other.ended_at is None:
        return False
    return one.ended_at > other.ended_at


def taken_back(here: RunRecord | None, there: RunRecord | None, region: str, peer: str) -> bool:
    """Whether ``peer`` took back a waiting firing that ``region`` took over from it: ``peer``'s
    record of it (``there``) is ``region``'s takeover, and ``region``'s own (``here``) is
    ``peer``'s, later. It runs in ``peer`` then, never in ``region``."""
    return fenced_by(there) == region and fenced_by(here) == peer and later_fence(here, there)


@dataclass(frozen=True, slots=True)
class Mark:
    """A job's latest pause or resume."""

    paused: bool
    pause: Pause


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one store holds of the state that follows the active region."""

    region: str
    definitions: Mapping[str, Definition]
    marks: Mapping[str, Mark]
    waiting: Mapping[str, Deferred]  # by key


@dataclass(slots=True)
class Writes:
    """What to write in one store to bring it in step."""

    definitions: list[tuple[Definition, Definition | None]] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    defer: list[Deferred] = field(default_factory=list)
    drop: list[Deferred] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.definitions or self.marks or self.defer or self.drop)

    def counts(self) -> dict[str, int]:
        return {
            "schedules": len(self.definitions),
            "pauses": len(self.marks),
            "waiting": len(self.defer),
            "dropped": len(self.drop),
        }


def marks_of(paused: Mapping[str, Pause], resumed: Mapping[str, Pause]) -> dict[str, Mark]:
    marks = {job: Mark(False, pause) for job, pause in resumed.items()}
    marks.update({job: Mark(True, pause) for job, pause in paused.items()})
    return marks


def newer(a: Definition | None, b: Definition | None) -> Definition | None:
    """The definition of a name that wins of two stores' (``a`` on a tie)."""
    if a is None or b is None:
        return a or b
    if a.generation != b.generation:
        return a if a.generation > b.generation else b
    if a.live != b.live:
        return a if not a.live else b
    return a if _progress(a) >= _progress(b) else b


def _progress(definition: Definition) -> datetime:
    """How far a live definition has moved on (one with no firing left, furthest)."""
    return definition.next_firing or datetime.max.replace(tzinfo=definition.created_at.tzinfo)


def _later(a: Mark | None, b: Mark | None) -> Mark | None:
    if a is None or b is None:
        return a or b
    return b if b.pause.at > a.pause.at else a


def in_step(home: Snapshot, peer: Snapshot, *, active: bool = True) -> tuple[Writes, Writes]:
    """What to write in ``home`` (the region that brings the two in step) and in ``peer``.
    Only an ``active`` home hands on the waiting firings it holds for others, drops the peer's
    copies and takes the peer's own over; any other (an operator's action in a standby region)
    hands on its own only: its copies may be a minute old."""
    to_home, to_peer = Writes(), Writes()
    for name in sorted(home.definitions.keys() | peer.definitions.keys()):
        mine, theirs = home.definitions.get(name), peer.definitions.get(name)
        winner = newer(mine, theirs)
        if winner is not None and winner != theirs:
            to_peer.definitions.append((winner, theirs))
        if winner is not None and winner != mine:
            to_home.definitions.append((winner, mine))
    for job in sorted(home.marks.keys() | peer.marks.keys()):
        mine_mark, theirs_mark = home.marks.get(job), peer.marks.get(job)
        latest = _later(mine_mark, theirs_mark)
        if latest is not None and latest != theirs_mark:
            to_peer.marks.append(latest)
        if latest is not None and latest != mine_mark:
            to_home.marks.append(latest)
    for key, item in sorted(home.waiting.items()):
        if key not in peer.waiting and (active or origin_region(item.origin) == home.region):
            to_peer.defer.append(item)
    for key, item in sorted(peer.waiting.items()):
        if key in home.waiting or not active:
            continue
        if origin_region(item.origin) == peer.region:
            to_home.defer.append(item)  # the peer's own: taken over here
        else:
            to_peer.drop.append(item)  # carried there once; answered or forgotten since
    return to_home, to_peer
