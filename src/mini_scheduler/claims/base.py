"""The claim store: claims, run records, each job's latest state, pauses and watermarks.

The contract is written once, here; every backend (DynamoDB, MongoDB, memory) honours it and the
contract test suite holds each to it.

* ``claim`` is the decision: one conditional write keyed by the firing id. Exactly one caller
  wins a firing however many race for it; nothing is read back. ``claim_many`` and
  ``mark_many`` make a batch of them (25 a request where the store batches: DynamoDB's PartiQL
  ``BatchExecuteStatement``, MongoDB's unordered ``insert_many`` and ``bulk_write``), each
  firing with its own answer: a firing whose write failed is that firing's StoreError, not
  its batch's.
* ``watch`` is called before a batch of claims: the sweep's ``due_runs`` finds the watched
  runs that are still open past their deadline. (A store that indexes its open runs itself,
  as MongoDB and the memory store do, has nothing to do; DynamoDB keeps no index entry that
  moves with every status, so it is told where to look.)
* A run record moves CLAIMED -> DISPATCHED -> SUCCEEDED | FAILED | TIMED_OUT, or is written
  SKIPPED once; a record that exists is never overwritten by a claim or a skip, with one
  exception: a backfill's claim (``over_skipped``) also wins where the firing's record is
  SKIPPED (the firing never ran). It is still one conditional write, on the skip as read, so
  exactly one of its racing claimers wins; over any other status it is LOST. Its CLAIMED run
  keeps the skip it replaced (``replacedSkip``: :func:`.transitions.replaced`).
* A run carries a deadline: the claim's lease, then the job's timeout (kept when the run ends).
  ``due_runs`` lists the open runs (CLAIMED or DISPATCHED) past their deadline (the sweep).
* An exclusive claim (``overlap: skip``) also takes the job's open slot; the slot is released
  when the run closes, fails or times out, so a lost completion event cannot block the job. A
  release is conditional on the slot being this run's: an end never frees another run's slot.
  A capped claim (``max_running`` above 1, a pool) takes a place under each cap the same way,
  before its run is written; a cap that is full makes it OVERLAP (:mod:`.places`), and
  ``holders`` reads who holds a cap's places.
* What an end event does to a run that has ended already (a completion after the sweep's
  TIMED_OUT, a Step Functions redrive) is decided by :func:`.transitions.after_end` and
  :func:`.transitions.after_redrive`, the same for every backend; a backend only writes the
  answer, conditionally on the run being as it read it.
* Watermarks only move forward.
* A *deferred firing* is a firing due at an instant no cron statement's next time gives: a
  retry (attempt 2 and on), later a one-time schedule or a backfill. ``defer`` stores it under
  its due instant (writing the same one twice keeps one), ``due_deferred`` lists those due
  before an instant, oldest first, with one range read on the due instant (never a scan, so a
  tick pays one request however many wait for later), and ``drop_deferred`` forgets them once
  their claim has an answer; ``advance_schedule`` forgets a runtime schedule's firing and
  stores its next one in one step that a delete of the schedule wins. A deferred firing is
  claimed by its run's id like any firing, so a firing deferred twice (by two writers) or read
  by two ticks still runs once.
* ``buffer`` keeps a firing waiting for the job's slot (``overlap: buffer_*``): a deferred
  firing, and a place among the job's waiting firings (at most ``limit``, a store condition);
  ``drop_deferred`` gives the place back before it forgets the firing.

The run record's fields and the names they are stored under are :mod:`.records`; what each
operation writes, and on which condition, is :mod:`.transitions`: a backend translates those
writes into its requests and restates neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from mini_scheduler.claims.records import Definition, JobStart, JobState, Redrive, RunRecord
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs.model import Place
from mini_scheduler.model import Firing, RunStatus, firing_from_id, iso_millis


class ClaimResult(StrEnum):
    WON = "won"
    LOST = "lost"  # a peer holds the claim (or the firing was already recorded)
    OVERLAP = "overlap"  # exclusive claim refused: the job's previous run is still open


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """One firing to claim; ``exclusive`` (``overlap: skip``) takes the job's open slot too,
    ``places`` a place under each of its caps (``max_running``, a pool: :mod:`.places`).
    ``over_skipped`` (a backfill's firing) wins over a SKIPPED record of the firing as well as
    where it has none: a skipped firing never ran, and a backfill is for those. ``start``:
    where the run goes (the job's service, schedule, parameters, policy), written by the claim
    so that its mark says only when it went (a store may then mark a batch in one item)."""

    firing: Firing
    exclusive: bool = False
    over_skipped: bool = False
    places: tuple[Place, ...] = ()
    start: JobStart | None = None


@dataclass(frozen=True, slots=True)
class MarkRequest:
    """A firing its target accepted: the run becomes DISPATCHED until ``deadline``. ``ended``:
    the target's answer was the run's end too (a queue took the message, a webhook answered),
    with ``error`` for a FAILED one: the run is closed once its mark is written."""

    firing: Firing
    deadline: datetime
    start: JobStart
    ended: RunStatus | None = None
    error: str | None = None


RETRY, SCHEDULE, BACKFILL, BUFFER = "retry", "schedule", "backfill", "buffer"
DEFERRED_REASONS = (RETRY, SCHEDULE, BACKFILL, BUFFER)
"""Why a firing is deferred: a failed run's next attempt, a runtime schedule's next firing
(:mod:`mini_scheduler.schedules`), a past firing an operator runs again
(:mod:`mini_scheduler.backfill`), one waiting for its job's open run (:meth:`ClaimStore.buffer`)."""


@dataclass(frozen=True, slots=True)
class Deferred:
    """``firing`` (its job, instant and attempt) to be claimed and dispatched from ``due`` on,
    written by ``origin`` at ``written_at`` for ``reason``. ``detail`` is what the reason needs
    besides (JSON values): a runtime schedule's entry and who made it, a backfill's id and
    size."""

    firing: Firing
    due: datetime
    reason: str
    origin: str
    written_at: datetime
    detail: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> str:
        """What a store keys it by: the due instant (ms), then the run's id."""
        return f"{iso_millis(self.due)}#{self.firing.id}"


def deferred_firing(run_id: str, reason: str, detail: Mapping[str, Any] | None = None) -> Firing:
    """The firing a stored deferred firing names: its run's id, and what its reason and detail
    say (a backfill's firing is marked so, its payload saying ``"backfill": true``: one of
    :data:`BACKFILL`, or one whose detail names its backfill, as a backfill's firing kept
    waiting for its job's open run keeps it)."""
    firing = firing_from_id(run_id)
    named = isinstance(detail, Mapping) and isinstance(detail.get("backfill"), str)
    return replace(firing, backfill=True) if reason == BACKFILL or named else firing


MAX_CURSOR = 300
"""The longest cursor ``history`` takes (a run's sort key is about 50 characters)."""


def history_cursor(before: object) -> str | None:
    """``history``'s ``before`` checked: None, or the cursor it is. A ValueError, saying why,
    for one that cannot be a run's sort key: not a string, empty, longer than
    :data:`MAX_CURSOR`, or not printable ASCII (a sort key always is; the check keeps every
    store comparing the same bytes, and a store's key size limit out of reach)."""
    if before is None:
        return None
    if not isinstance(before, str):
        raise ValueError(f"a history cursor is a string, not {type(before).__name__}")
    if not before:
        raise ValueError("a history cursor cannot be empty")
    if len(before) > MAX_CURSOR:
        raise ValueError(f"a history cursor is at most {MAX_CURSOR} characters, not {len(before)}")
    if not (before.isascii() and before.isprintable()):
        raise ValueError(
            f"a history cursor is printable ASCII (a run's sort key): {before[:100]!a}"
        )
    return before


@dataclass(frozen=True, slots=True)
class Latest:
    """A job's latest dispatched run as :meth:`ClaimStore.latest_runs` found it: ``state``
    (None: none found), ``exact`` when the store keeps each job's latest state (it is
    ``job_state``'s), else the newest started of the runs it was named."""

    state: JobState | None
    exact: bool


def named_firings(named: Mapping[str, Sequence[str]]) -> dict[str, list[Firing]]:
    """``latest_runs``' names checked: each job's runs as firings; a ValueError for a name
    that is not a run id of its job."""
    found: dict[str, list[Firing]] = {}
    for job, run_ids in named.items():
        found[job] = [firing_from_id(run_id) for run_id in run_ids]
        if any(firing.job != job for firing in found[job]):
            raise ValueError(f"a run named for job {job[:100]!r} is another job's")
    return found


ClaimOutcome = ClaimResult | StoreError
"""A batched claim's answer for one firing: the result, or why its write failed (after
retries; the caller holds that firing)."""


@dataclass(frozen=True, slots=True)
class Pause:
    job: str
    operator: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Control:
    """What a tick reads once: its watermark, every watermark of the table (scope -> end of
    the last window handled; shards and regions), the paused jobs, and the jobs resumed (who
    resumed each, and when: a resume is kept, so that it can be told from a pause another
    region's store has not heard of, :mod:`mini_scheduler.carry`)."""

    watermark: datetime | None
    paused: Mapping[str, Pause]
    watermarks: Mapping[str, datetime] = field(default_factory=dict)
    resumed: Mapping[str, Pause] = field(default_factory=dict)


class ClaimStore(Protocol):
    """Where claims and run records live (DynamoDB by default; MongoDB; memory for tests)."""

    name: str

    def claim(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
        exclusive: bool = False,
        over_skipped: bool = False,
        places: Sequence[Place] = (),
    ) -> ClaimResult:
        """Claim ``firing`` in one conditional write: WON for exactly one caller. With
        ``exclusive`` the job's open slot must be free as well, with ``places`` a place under
        each cap (else OVERLAP, nothing left taken).
        With ``over_skipped`` the claim also wins over the firing's SKIPPED record, replacing
        it (:class:`ClaimRequest`). A run of a backfill's firing says ``backfill``. Raises
        StoreError when the store cannot answer (after retries)."""
        ...

    def claim_many(
        self,
        claims: Sequence[ClaimRequest],
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
    ) -> list[ClaimOutcome]:
        """Claim each firing as ``claim`` does, batched: one answer per request, in order (a
        StoreError for a firing whose write failed after retries). Raises StoreError when the
        store could not answer for the batch as a whole."""
        ...

    def watch(self, firing_ids: Sequence[str], at: datetime) -> None:
        """Have the sweep look at these firings' runs from ``at`` on (called before claiming
        them, with ``at`` past their lease). Raises StoreError when it could not be written
        (the caller then claims none of them)."""
        ...

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        """Take over a CLAIMED run whose lease has passed (the claimer died before dispatching):
        one conditional update on the claim as ``run`` saw it; True for exactly one caller."""
        ...

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        """The target accepted the firing: the run becomes DISPATCHED with the job's timeout as
        its deadline, and the job's latest state records the start."""
        ...

    def mark_many(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        """Mark each firing as ``mark_dispatched`` does, batched: None for a firing marked (or
        whose run had moved on: closed, or taken over), its StoreError when the write failed
        after retries. Raises StoreError when the store could not answer for the batch."""
        ...

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        """The dispatch failed for good: the run becomes FAILED with the error."""
        ...

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        """Record a SKIPPED firing unless it already has a record (False then)."""
        ...

    def record_skipped_range(
        self,
        job: str,
        first: datetime,
        last: datetime,
        count: int,
        *,
        now: datetime,
        reason: str,
        origin: str,
    ) -> bool | None:
        """One SKIPPED record for ``count`` firings of ``job`` from ``first`` to ``last``, keyed
        by the first. False when the first firing already has a record (nothing written: the
        caller starts the range at the next firing); None from a store that cannot tell."""
        ...

    def close(
        self,
        firing_id: str,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None = None,
        redrive: Redrive | None = None,
    ) -> RunRecord | None:
        """Record a completion event (of the redriven attempt ``redrive``, None for the first)
        as :func:`.transitions.after_end` decides, update the job's latest state and release
        the job's slot if this run holds it; answer the run as it was before, or None when the
        firing is unknown or the event changes nothing (a duplicate, an attempt's end heard
        after a later redrive). An open run's end is one conditional write."""
        ...

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        """Record that Step Functions redrove the run's execution, as
        :func:`.transitions.after_redrive` decides; a reopened exclusive run takes the job's
        slot back only when it is free. Answer the run as it was before, or None (unknown
        firing, nothing changed)."""
        ...

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        """Mark a DISPATCHED run past its deadline TIMED_OUT (conditional; True if done), noting
        ``timed_out_at`` so that its late completion can still be recorded."""
        ...

    def due_runs(
        self, now: datetime, limit: int = 1000, *, settle: bool = False
    ) -> Sequence[RunRecord]:
        """Open runs whose deadline has passed, oldest deadline first (the sweep). With
        ``settle`` (the tick's sweep, not a dry run) the store also moves on what it watches:
        it forgets runs that ended and keeps looking at those still open."""
        ...

    def run(self, firing_id: str) -> RunRecord | None:
        """One run record."""
        ...

    def history(self, job: str, limit: int = 20, before: str | None = None) -> Sequence[RunRecord]:
        """The job's runs, newest first (at most ``limit``), without a scan. ``before`` pages
        on: an opaque cursor, a run's sort key (:attr:`.RunRecord.sort_key`, the last run of
        the page before), and only the runs sorted strictly before it (older; a firing's
        earlier attempts) are answered, read by a range on the sort key itself (a key
        condition, an index bound), never by a filter. Paging from ``None`` until a page is
        empty gives each run once. A cursor that is not a non-empty string of printable ASCII
        of at most :data:`MAX_CURSOR` characters raises ValueError (:func:`history_cursor`)
        before any request."""
        ...

    def job_state(self, job: str) -> JobState | None: ...

    def holders(self, key: str) -> Mapping[str, datetime]:
        """Who holds a place under the cap ``key`` (``job:<name>``, ``pool:<name>``): each
        firing id, with the lease of the claim that took it (:mod:`.places`)."""
        ...

    def latest_runs(self, named: Mapping[str, Sequence[str]]) -> Mapping[str, Latest]:
        """Many jobs' latest dispatched runs in one read (the console's list): ``named`` gives
        each job the run ids the caller expects to be its newest (recent firings, the last run
        it was shown). A store that keeps each job's latest state (MongoDB, memory) answers
        ``job_state``'s, exact, in one request whatever is named. One that reads runs by key
        (DynamoDB: a BatchGetItem per 100) answers the newest started, by sort key, of the
        runs named and of the later attempts a failed one's policy retries (a request more
        per attempt found): a run not named is not seen. ValueError, before any request, for
        a name that is not a run id of its job (:func:`named_firings`)."""
        ...

    def control(self, scope: str) -> Control:
        """The watermark of ``scope`` (region/environment[/shard]) and the paused jobs, read
        consistently in one request."""
        ...

    def advance_watermark(self, scope: str, to: datetime) -> None:
        """Move the watermark of ``scope`` to ``to``, never backwards."""
        ...

    def set_paused(self, job: str, paused: bool, *, operator: str, now: datetime) -> None:
        """Pause ``job``, or resume it, as ``operator`` at ``now``: one write of the job's mark,
        whichever it was (a resume too is kept, dated)."""
        ...

    def defer(self, deferred: Sequence[Deferred]) -> None:
        """Store each deferred firing under its due instant (batched where the store batches);
        one already stored under the same key stays one. Raises StoreError when any could not
        be written (after retries): the caller writes them all again, which is harmless."""
        ...

    def due_deferred(self, until: datetime, limit: int = 1000) -> Sequence[Deferred]:
        """The deferred firings due before ``until``, oldest first (at most ``limit``), read
        consistently with one range query on the due instant."""
        ...

    def drop_deferred(self, deferred: Sequence[Deferred]) -> None:
        """Forget these deferred firings (their claims have an answer; a :data:`BUFFER` one's
        place goes first). StoreError when any is left: it is read again, its claim LOST."""
        ...

    def buffer(self, deferred: Deferred, limit: int) -> bool:
        """Store ``deferred`` (:data:`BUFFER`) and take its place in its job's state if fewer
        than ``limit`` hold one, or it does; False (nothing left stored) when ``limit`` others
        wait. A crash between the two leaves it stored without a place: it waits all the same."""
        ...

    def pending_deferred(self, reason: str) -> Sequence[Deferred]:
        """Every deferred firing stored for ``reason``, oldest due first: an operator's listing
        (a backfill's progress, the retries waiting) that reads them all; a tick never does."""
        ...

    def advance_schedule(self, done: Deferred, following: Deferred | None) -> bool:
        """A runtime schedule moves on from ``done`` (a firing with an answer) to ``following``
        (None: it has no firing left, and its definition becomes a tombstone), in one step
        conditional on ``done`` being still stored and on the schedule's definition moving
        (:func:`.definitions.moves`: live, with the generation ``done`` names). False, and
        nothing stored, when either fails: the schedule was deleted (or made again) meanwhile,
        or another tick moved it on, and a tick that read it before must not bring it back;
        ``done`` is then forgotten. Raises StoreError when the store cannot answer."""
        ...

    def create_schedule(self, definition: Definition) -> bool:
        """Store a runtime schedule's definition, on the condition that no live one has its
        name (the store keeps names unique: of two operators making one name at once, one
        wins). False, nothing written, when one has."""
        ...

    def create_schedules(self, definitions: Sequence[Definition]) -> list[bool | StoreError]:
        """:meth:`create_schedule` for each of ``definitions`` (their names distinct), in as
        few requests as the store allows: each one's answer, or the StoreError that its write
        met (one whose answer was lost may be written)."""
        ...

    def schedule(self, name: str) -> Definition | None:
        """The definition stored under ``name`` (a tombstone too), read consistently with one
        get."""
        ...

    def schedules(self) -> Sequence[Definition]:
        """Every live definition, by name, read consistently with one query."""
        ...

    def definitions(self) -> Sequence[Definition]:
        """Every definition, tombstones too, by name, read consistently with one query: what
        another region's store is brought in step with (:mod:`mini_scheduler.carry`)."""
        ...

    def carry_schedule(self, definition: Definition, over: Definition | None) -> bool:
        """Store ``definition`` (as another region's store holds it) on the condition that the
        one stored under its name is still ``over`` (None: that none is); False, nothing
        written, when it is not (a tick or an operator changed it since it was read)."""
        ...

    def delete_schedule(
        self, name: str, generation: str, *, operator: str, now: datetime
    ) -> Definition | None:
        """Make the definition of ``name`` a tombstone, on the condition that it is live with
        ``generation``; the definition as it was (its next firing as the last tick left it), or
        None when it was not live with that generation."""
        ...
