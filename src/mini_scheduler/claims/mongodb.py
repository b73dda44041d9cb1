"""The claim store on MongoDB (pymongo), in the database :mod:`mini_scheduler.mongo` names.

Collections:

* ``runs``: one document per firing, ``_id`` = the firing id. The claim is ``insert_one`` under
  majority write concern: the unique ``_id`` refuses a second claim (DuplicateKeyError = a peer
  won). Open runs carry ``open: true`` and a ``deadline``; ``sortKey`` (time first) orders a
  job's history; ``expiresAt`` (a date) is when the run expires.
* ``job_state``: one document per job, ``_id`` = the job name: seed 000's job state
  (``service``, ``schedule`` as ``<statement> @<zone>``, ``parameters`` with ``_origin``,
  ``start``, ``end``) plus ``lastFiringId``, ``lastStatus`` and the open slot of ``overlap:
  skip`` (``openFiring``, ``openUntil``).
* ``control``: ``watermark#<scope>`` and ``pause#<job>`` documents (and the active environment,
  see ``environment/mongodb.py``).

Indexes, made once per store (``ensure_indexes``, on first use; a store is built once per
container): ``runs {job: 1, sortKey: -1}`` serves the history, newest first; ``runs {deadline:
1}`` partial on ``{open: true}`` serves the sweep; ``runs {expiresAt: 1}`` with
``expireAfterSeconds: 0`` is the TTL (the date is computed at write time, so a new RUN_TTL_DAYS
never conflicts with the index).

Every collection writes with ``w: majority`` (a claim acknowledged before a primary failover is
not lost) and reads with majority read concern on the primary.

An exclusive claim (``overlap: skip``) takes two writes, in this order:

1. one conditional ``update_one`` (upsert) on the job's state document sets ``openFiring`` only
   when it is absent or already this firing (a concurrent upsert's DuplicateKeyError is retried
   once; a second one means another firing holds the slot: OVERLAP, nothing written);
2. the claim's ``insert_one``. When it loses, the slot is released only when the run it lost to
   is not an open exclusive run (whose slot it is: the same firing id).

Why this order is safe: a run of an exclusive firing never exists without its slot, so two runs
of the job are never open at once. A claimer that dies between the two writes leaves a slot
with no run: the job is skipped (never run twice) until the claim's lease (``openUntil``) has
passed, and then the next exclusive claim releases that slot, conditionally on it being unchanged
(the same lease assumption as a takeover). A slot whose run has ended (its release was lost) is
released the same way at once. This is portable (no transaction, so no replica-set requirement
and nothing mongomock cannot run); the price is a second write on the exclusive path.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import (
    ConnectionFailure,
    DuplicateKeyError,
    OperationFailure,
    PyMongoError,
    ServerSelectionTimeoutError,
)

from mini_scheduler.claims.base import ClaimResult, Control, Pause
from mini_scheduler.claims.records import (
    JOB_FIELDS,
    RUN_FIELDS,
    JobStart,
    JobState,
    Redrive,
    RunRecord,
    job_state_from,
    run_record_from,
    stored_ends,
)
from mini_scheduler.claims.transitions import (
    OPEN,
    Expect,
    Write,
    after_end,
    after_redrive,
    applied,
    change_run,
    claimed,
    dispatched,
    ended,
    failed,
    job_follows,
    job_started,
    log_slot_held,
    release_slot,
    skipped,
    slot_follows,
    take_slot,
    taken_over,
    timed_out,
)
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus, firing_from_id
from mini_scheduler.mongo import (
    CONTROL,
    JOB_STATE,
    RUNS,
    Document,
    describe_error,
    majority,
)

if TYPE_CHECKING:
    from pymongo.database import Database

log = logging.getLogger("mini_scheduler.claims")

HISTORY_INDEX = "history"
DUE_INDEX = "due-runs"
EXPIRY_INDEX = "expiry"
_ATTEMPTS = 3  # a claim insert whose connection broke is tried again, with the same token
_WATERMARK = "watermark#"  # control document ids: watermark#<scope>, pause#<job>
_PAUSE = "pause#"
_RUN: Mapping[str, str] = {**RUN_FIELDS, "firing_id": "_id"}


def _ms(moment: datetime) -> datetime:
    """An aware UTC datetime cut to the millisecond, as BSON stores it (so that an equality
    filter on a value read back matches)."""
    moment = moment.astimezone(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _utc(value: Any) -> datetime | None:
    """A stored date as an aware UTC datetime (a client without ``tz_aware`` answers naive)."""
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _record(doc: Mapping[str, Any]) -> RunRecord:
    return run_record_from(doc, _utc, _RUN)


def _stored(value: Any) -> Any:
    """A logical field's value as the collection keeps it: times as dates cut to the
    millisecond, statuses as strings, earlier ends as documents."""
    if isinstance(value, datetime):
        return _ms(value)
    if isinstance(value, RunStatus):
        return str(value)
    if isinstance(value, tuple):
        return stored_ends(value, _ms)
    return value


def _filter(key: Document, expect: Expect, names: Mapping[str, str]) -> Document:
    """``expect`` as a filter on the document ``key`` selects (None matches an absent field)."""
    query = dict(key)
    for field, allowed in expect.one_of.items():
        values = [_stored(value) for value in allowed]
        query[names[field]] = values[0] if len(values) == 1 else {"$in": values}
    for field, bound in expect.at_most.items():
        query[names[field]] = {"$lte": _stored(bound)}
    return query


def _update(write: Write, names: Mapping[str, str]) -> Document:
    """``write``'s update document: ``$set``, ``$unset`` (a field set to None), ``$inc``."""
    sets = {names[k]: _stored(v) for k, v in write.sets.items() if v is not None}
    unsets = {names[k]: "" for k, v in write.sets.items() if v is None}
    adds = {names[k]: count for k, count in write.adds.items()}
    return {op: part for op, part in (("$set", sets), ("$unset", unsets), ("$inc", adds)) if part}


def _slot(write: Write, until: datetime | None) -> Write:
    """A write to the job's slot noting how long a slot with no run yet holds: the claim's
    lease (``openUntil``; None for a release, which removes it)."""
    return replace(write, sets={**write.sets, "open_until": until})


def _retryable(exc: PyMongoError) -> bool:
    """A broken connection (not a server that could not be found within the selection
    timeout, which has waited long enough already)."""
    return isinstance(exc, ConnectionFailure) and not isinstance(exc, ServerSelectionTimeoutError)


class MongoDBClaimStore:
    """The claim store on MongoDB. ``database`` is a pymongo Database (the container's, from
    :func:`mini_scheduler.mongo.database`; tests inject mongomock's)."""

    def __init__(
        self,
        database: Database[Document],
        *,
        run_ttl_days: int = 30,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.database_name = database.name
        self.name = f"mongodb:{database.name}"
        self.runs = majority(database, RUNS)
        self.states = majority(database, JOB_STATE)
        self.controls = majority(database, CONTROL)
        self._ttl = timedelta(days=run_ttl_days)
        self._sleep = sleep
        self._indexed = False
        self._index_lock = threading.Lock()

    # -- helpers ---------------------------------------------------------------------------

    def _fail(self, operation: str, collection: str, exc: BaseException) -> StoreError:
        return StoreError(
            f"MongoDB {operation} on {self.database_name}.{collection} failed - "
            f"{describe_error(exc)}"
        )

    def ensure_indexes(self) -> None:
        """Create the indexes (idempotent; done once per store, on first use). A server that
        refuses them (no createIndex privilege, a conflicting index) is logged: claims do not
        depend on them, only the history and sweep queries' speed and the runs' expiry do.
        A store that cannot be reached raises StoreError, and the next call tries again."""
        if self._indexed:
            return
        with self._index_lock:
            if self._indexed:
                return
            try:
                # One createIndexes each (not one for all three): mongomock's create_indexes
                # drops partialFilterExpression, its create_index keeps it. Once per container.
                self.runs.create_index(
                    [("job", ASCENDING), ("sortKey", DESCENDING)], name=HISTORY_INDEX
                )
                self.runs.create_index(
                    [("deadline", ASCENDING)],
                    name=DUE_INDEX,
                    partialFilterExpression={"open": True},
                )
                self.runs.create_index(
                    [("expiresAt", ASCENDING)], name=EXPIRY_INDEX, expireAfterSeconds=0
                )
            except OperationFailure as exc:
                log.error(
                    "MongoDB indexes on %s.%s not created - history and sweep queries scan "
                    "and runs do not expire until they are: %s",
                    self.database_name,
                    RUNS,
                    describe_error(exc),
                )
            except PyMongoError as exc:
                raise self._fail("createIndexes", RUNS, exc) from exc
            self._indexed = True

    def _run_doc(self, firing: Firing, run: Mapping[str, Any]) -> Document:
        doc: Document = {_RUN[k]: _stored(v) for k, v in run.items()}
        doc["sortKey"] = firing.sort_key
        return doc

    def _run_filter(self, firing_id: str, expect: Expect) -> Document:
        return _filter({"_id": firing_id}, expect, _RUN)

    # -- claims ----------------------------------------------------------------------------

    def claim(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
        exclusive: bool = False,
    ) -> ClaimResult:
        self.ensure_indexes()
        token = uuid.uuid4().hex
        run = claimed(
            firing,
            now=now,
            lease_until=lease_until,
            origin=origin,
            exclusive=exclusive,
            expires_at=now + self._ttl,
            token=token,
        )
        if exclusive and not self._take_slot(firing, now, lease_until):
            # Nothing written. A firing that already has a record is LOST, as for any claim.
            return ClaimResult.LOST if self._recorded(firing) else ClaimResult.OVERLAP
        won, holder = self._insert_claim(self._run_doc(firing, run), token)
        if won:
            return ClaimResult.WON
        if (
            exclusive
            and holder is not None
            and not (holder.get(_RUN["open"]) and holder.get(_RUN["exclusive"]))
        ):
            # The firing was skipped, has ended, or is a non-exclusive run: the slot just
            # taken belongs to no open run. (An open exclusive run of this firing owns it.)
            self._release_slot(firing.job, release_slot(firing.id), "release job (lost claim)")
        return ClaimResult.LOST

    def _insert_claim(self, doc: Document, token: str) -> tuple[bool, Document | None]:
        """Insert the claim: (True, None) when it is ours, else (False, the run it lost to, or
        None when that run is not yet visible to a majority read)."""
        for attempt in range(_ATTEMPTS):
            try:
                self.runs.insert_one(doc)
            except DuplicateKeyError:
                # A peer's claim, or our own first attempt whose answer was lost: the token,
                # read back from the primary with majority read concern, tells them apart.
                try:
                    holder = self.runs.find_one({"_id": doc["_id"]})
                except PyMongoError as exc:
                    raise self._fail("find (claim holder)", RUNS, exc) from exc
                if holder is not None and holder.get("claimToken") == token:
                    return True, None
                return False, holder
            except PyMongoError as exc:
                if not _retryable(exc) or attempt + 1 == _ATTEMPTS:
                    raise self._fail("insert (claim)", RUNS, exc) from exc
                self._sleep(0.05 * 2**attempt)
            else:
                return True, None
        raise AssertionError("unreachable")

    def _recorded(self, firing: Firing) -> bool:
        try:
            return self.runs.find_one({"_id": firing.id}, {"_id": 1}) is not None
        except PyMongoError as exc:
            raise self._fail("find (run)", RUNS, exc) from exc

    def _take_slot(self, firing: Firing, now: datetime, lease_until: datetime) -> bool:
        """Set the job's ``openFiring`` to this firing unless another firing holds it."""
        take = _slot(take_slot(firing.id), lease_until)
        free, update = (
            _filter({"_id": firing.job}, take.expect, JOB_FIELDS),
            _update(take, JOB_FIELDS),
        )
        for _ in range(_ATTEMPTS):
            try:
                self.states.update_one(free, update, upsert=True)
            except DuplicateKeyError:
                # The filter missed, so the upsert met the job's document: another firing
                # holds the slot, or a concurrent first upsert created the document.
                try:
                    state = self.states.find_one({"_id": firing.job})
                except PyMongoError as exc:
                    raise self._fail("find (job slot)", JOB_STATE, exc) from exc
                held = state.get(JOB_FIELDS["open_firing"]) if state is not None else None
                if state is None or held in (None, firing.id):
                    continue
                if not self._release_stale_slot(firing.job, str(held), state, now):
                    return False
            except PyMongoError as exc:
                raise self._fail("update (take job slot)", JOB_STATE, exc) from exc
            else:
                return True
        return False

    def _release_stale_slot(
        self, job: str, held: str, state: Mapping[str, Any], now: datetime
    ) -> bool:
        """Release a slot no open run holds: its run has ended, or no run was recorded within
        its claim's lease (the claimer died between the two writes). The release is
        conditional on the slot being as read. True: the slot was stale (released, here or by
        someone else), so the caller tries to take it again; False: it is held."""
        status = _RUN["status"]
        try:
            run = self.runs.find_one({"_id": held}, {status: 1})
        except PyMongoError as exc:
            raise self._fail("find (slot holder)", RUNS, exc) from exc
        lease = state.get(JOB_FIELDS["open_until"])
        until = _utc(lease)
        if run is not None:
            if run.get(status) in OPEN:
                return False
            why = "its run has ended"
        elif until is not None and until <= now:
            why = "no run was recorded within its claim's lease"
        else:
            return False
        released = self._release_slot(
            job, release_slot(held), "release stale job slot", {JOB_FIELDS["open_until"]: lease}
        )
        if released:
            log.warning("Job %s - open slot of firing %s released: %s", job, held, why)
        return True

    def _release_slot(
        self, job: str, release: Write, operation: str, seen: Mapping[str, Any] | None = None
    ) -> bool:
        """Release the slot as ``release`` says, and (``seen``) if it is as it was read."""
        release = _slot(release, None)
        query = {**_filter({"_id": job}, release.expect, JOB_FIELDS), **(seen or {})}
        try:
            result = self.states.update_one(query, _update(release, JOB_FIELDS))
        except PyMongoError as exc:
            raise self._fail(f"update ({operation})", JOB_STATE, exc) from exc
        return result.modified_count == 1

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        write = taken_over(run, now=now, lease_until=lease_until, origin=origin)
        if write is None:
            return False
        self.ensure_indexes()
        try:
            result = self.runs.update_one(
                self._run_filter(run.firing_id, write.expect), _update(write, _RUN)
            )
        except PyMongoError as exc:
            raise self._fail("update (take over)", RUNS, exc) from exc
        return result.modified_count == 1

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        self.ensure_indexes()
        mark = dispatched(now=now, deadline=deadline)
        try:
            # A run already closed (a very fast target) or taken over stays as it is.
            marked = self.runs.update_one(
                self._run_filter(firing.id, mark.expect), _update(mark, _RUN)
            )
        except PyMongoError as exc:
            raise self._fail("update (mark dispatched)", RUNS, exc) from exc
        ended_run = None
        if marked.matched_count == 0:
            # Not CLAIMED any more: a closed run's end goes to the job's latest state; a run
            # taken over is marked by its new claimer.
            ended_run = self.run(firing.id)
            if ended_run is None or ended_run.status.open:
                return
        started = job_started(firing, now=now, start=start, ended=ended_run)
        try:
            self.states.update_one({"_id": firing.job}, _update(started, JOB_FIELDS), upsert=True)
        except PyMongoError as exc:
            # The run says DISPATCHED, which is what keeps a takeover from dispatching it again.
            log.warning(
                "Job %s - firing %s: the job's latest state was not updated (%s)",
                firing.job,
                firing.id,
                describe_error(exc),
            )

    # -- ends ------------------------------------------------------------------------------

    def _finish(self, firing: Firing, write: Write) -> RunRecord | None:
        """An open run's end in one conditional write, then the job's state and slot; the run
        as it was before, or None when the write's condition failed."""
        self.ensure_indexes()
        try:
            found = self.runs.find_one_and_update(
                self._run_filter(firing.id, write.expect),
                _update(write, _RUN),
                return_document=ReturnDocument.BEFORE,
            )
        except PyMongoError as exc:
            raise self._fail("findAndModify (close run)", RUNS, exc) from exc
        if found is None:
            return None
        before = _record(found)
        self._follow(firing, before, applied(before, write))
        return before

    def _change(
        self, firing: Firing, decide: Callable[[RunRecord], RunRecord | None]
    ) -> RunRecord | None:
        """``decide``'s change of the run as read (read again when it changed meanwhile),
        followed in the job's state and slot: the run as it was before, or None."""

        def write(change: Write) -> bool:
            try:
                result = self.runs.update_one(
                    self._run_filter(firing.id, change.expect), _update(change, _RUN)
                )
            except PyMongoError as exc:
                raise self._fail("update (end run)", RUNS, exc) from exc
            return result.modified_count == 1

        done = change_run(lambda: self.run(firing.id), write, decide, _ATTEMPTS)
        if done is None:
            return None
        self._follow(firing, *done)
        return done[0]

    def _follow(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        """The job's latest state follows the run, and an exclusive run's slot its end or its
        reopening. A failure here is logged, not raised: the run's change is what the caller
        asked for, and a slot left behind by an ended run is released by the next exclusive
        claim."""
        state = job_follows(firing.id, after)
        slot = slot_follows(firing.id, before, after)
        try:
            self.states.update_one(
                _filter({"_id": firing.job}, state.expect, JOB_FIELDS), _update(state, JOB_FIELDS)
            )
            if slot is not None and not after.status.open:
                self._release_slot(firing.job, slot, "release job")
            elif slot is not None:
                take = _slot(slot, after.deadline)
                taken = self.states.update_one(
                    _filter({"_id": firing.job}, take.expect, JOB_FIELDS),
                    _update(take, JOB_FIELDS),
                )
                if taken.matched_count == 0:
                    log_slot_held(firing.job, firing.id)
        except (PyMongoError, StoreError) as exc:
            log.warning(
                "Job %s - firing %s %s, but the job's latest state was not updated (%s)",
                firing.job,
                firing.id,
                f"ended {after.status}" if after.ended_at else "redriven",
                exc if isinstance(exc, StoreError) else describe_error(exc),
            )

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        self._finish(firing, failed(now=now, error=error))

    def close(
        self,
        firing_id: str,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None = None,
        redrive: Redrive | None = None,
    ) -> RunRecord | None:
        firing = firing_from_id(firing_id)
        if redrive is None:
            # The usual end: an open run never redriven, in one conditional write.
            before = self._finish(firing, ended(status, now=now, error=error))
            if before is not None:
                return before
        return self._change(
            firing, lambda run: after_end(run, status, now=now, error=error, redrive=redrive)
        )

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        return self._change(firing_from_id(firing_id), lambda run: after_redrive(run, redrive))

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        return self._finish(firing_from_id(run.firing_id), timed_out(now=now)) is not None

    # -- skips -----------------------------------------------------------------------------

    def _insert_once(self, doc: Document, operation: str) -> bool:
        self.ensure_indexes()
        try:
            self.runs.insert_one(doc)
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise self._fail(f"insert ({operation})", RUNS, exc) from exc
        return True

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        run = skipped(firing, now=now, reason=reason, origin=origin, expires_at=now + self._ttl)
        return self._insert_once(self._run_doc(firing, run), "skip")

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
    ) -> bool:
        firing = Firing(job, first)
        run = skipped(
            firing,
            now=now,
            reason=reason,
            origin=origin,
            expires_at=now + self._ttl,
            until=last,
            count=count,
        )
        return self._insert_once(self._run_doc(firing, run), "skipped range")

    # -- reads -----------------------------------------------------------------------------

    def _find(
        self, operation: str, query: Mapping[str, Any], sort: tuple[str, int], limit: int
    ) -> list[RunRecord]:
        if limit <= 0:
            return []
        self.ensure_indexes()
        try:
            return [_record(doc) for doc in self.runs.find(query).sort(*sort).limit(limit)]
        except PyMongoError as exc:
            raise self._fail(f"find ({operation})", RUNS, exc) from exc

    def due_runs(self, now: datetime, limit: int = 1000) -> Sequence[RunRecord]:
        # ``open: true`` in the query lets the partial index on deadline serve it.
        found = self._find(
            "open runs",
            {"open": True, "deadline": {"$lte": _ms(now)}},
            ("deadline", ASCENDING),
            limit,
        )
        return [run for run in found if run.status.open]

    def history(self, job: str, limit: int = 20) -> Sequence[RunRecord]:
        return self._find("history", {"job": job}, ("sortKey", DESCENDING), limit)

    def run(self, firing_id: str) -> RunRecord | None:
        self.ensure_indexes()
        try:
            doc = self.runs.find_one({"_id": firing_id})
        except PyMongoError as exc:
            raise self._fail("find (run)", RUNS, exc) from exc
        return _record(doc) if doc is not None else None

    def job_state(self, job: str) -> JobState | None:
        try:
            doc = self.states.find_one({"_id": job})
        except PyMongoError as exc:
            raise self._fail("find (job state)", JOB_STATE, exc) from exc
        if doc is None:
            return None
        return job_state_from(job, doc, _utc)

    # -- control ---------------------------------------------------------------------------

    def control(self, scope: str) -> Control:
        """The scope's watermark, every scope's (the region's and each shard's: the ticker's
        hand-over between unsharded and sharded ticks reads them) and the pauses, in one find.
        Both ``_id`` prefixes are anchored, so the ``_id`` index serves it."""
        watermarks: dict[str, datetime] = {}
        paused: dict[str, Pause] = {}
        wanted = [{"_id": {"$regex": f"^{prefix}"}} for prefix in (_WATERMARK, _PAUSE)]
        try:
            docs = list(self.controls.find({"$or": wanted}))
        except PyMongoError as exc:
            raise self._fail("find (control)", CONTROL, exc) from exc
        for doc in docs:
            key = str(doc["_id"])
            if key.startswith(_WATERMARK):
                mark = _utc(doc.get("watermark"))
                if mark is not None:
                    watermarks[key.removeprefix(_WATERMARK)] = mark
            else:
                job = key.removeprefix(_PAUSE)
                at = _utc(doc.get("at")) or datetime.min.replace(tzinfo=UTC)
                paused[job] = Pause(job, str(doc.get("operator", "")), at)
        return Control(watermarks.get(scope), paused, watermarks)

    def advance_watermark(self, scope: str, to: datetime) -> None:
        to = _ms(to)
        behind = {
            "_id": f"{_WATERMARK}{scope}",
            "$or": [{"watermark": {"$exists": False}}, {"watermark": {"$lt": to}}],
        }
        for _ in range(2):
            try:
                self.controls.update_one(
                    behind, {"$set": {"watermark": to, "scope": scope}}, upsert=True
                )
                return
            except DuplicateKeyError:
                # The filter missed: the watermark is at or past ``to`` already (nothing to
                # do), or a concurrent first write created the document (the second try
                # decides).
                continue
            except PyMongoError as exc:
                raise self._fail("update (watermark)", CONTROL, exc) from exc

    def set_paused(self, job: str, paused: bool, *, operator: str, now: datetime) -> None:
        key = f"pause#{job}"
        try:
            if paused:
                self.controls.replace_one(
                    {"_id": key}, {"job": job, "operator": operator, "at": _ms(now)}, upsert=True
                )
            else:
                self.controls.delete_one({"_id": key})
        except PyMongoError as exc:
            raise self._fail(
                "replace (pause)" if paused else "delete (resume)", CONTROL, exc
            ) from exc
