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

from mini_scheduler.claims.base import (
    TIMED_OUT_ERROR,
    ClaimResult,
    Control,
    JobStart,
    JobState,
    Pause,
    Redrive,
    RunRecord,
    after_end,
    after_redrive,
    changed_fields,
    job_state_from,
    log_slot_held,
    run_record_from,
)
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus, firing_from_id, iso_seconds
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
_OPEN = (str(RunStatus.CLAIMED), str(RunStatus.DISPATCHED))
_WATERMARK = "watermark#"  # control document ids: watermark#<scope>, pause#<job>
_PAUSE = "pause#"


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
    return run_record_from(str(doc["_id"]), doc, _utc)


def _stored(value: Any) -> Any:
    """A changed field as the collection keeps it: times as dates cut to the millisecond."""
    if isinstance(value, datetime):
        return _ms(value)
    if isinstance(value, list):
        return [{k: _stored(v) for k, v in end.items()} for end in value]
    return value


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

    def _run_doc(
        self, firing: Firing, status: RunStatus, now: datetime, origin: str, **extra: Any
    ) -> Document:
        doc: Document = {
            "_id": firing.id,
            "job": firing.job,
            "sortKey": firing.sort_key,
            "scheduledTime": firing.scheduled_time,
            "status": str(status),
            "origin": origin,
            "expiresAt": _ms(now + self._ttl),
        }
        if firing.manual:
            doc["manual"] = True
            doc["parameters"] = dict(firing.parameters)
        if firing.operator:
            doc["operator"] = firing.operator
        doc.update({key: value for key, value in extra.items() if value is not None})
        return doc

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
        doc = self._run_doc(
            firing,
            RunStatus.CLAIMED,
            now,
            origin,
            claimedAt=_ms(now),
            deadline=_ms(lease_until),
            open=True,
            exclusive=exclusive or None,
            claimToken=token,
        )
        if exclusive and not self._take_slot(firing, now, lease_until):
            # Nothing written. A firing that already has a record is LOST, as for any claim.
            return ClaimResult.LOST if self._recorded(firing) else ClaimResult.OVERLAP
        won, holder = self._insert_claim(doc, token)
        if won:
            return ClaimResult.WON
        if (
            exclusive
            and holder is not None
            and not (holder.get("open") and holder.get("exclusive"))
        ):
            # The firing was skipped, has ended, or is a non-exclusive run: the slot just
            # taken belongs to no open run. (An open exclusive run of this firing owns it.)
            self._release_slot(firing.job, {"openFiring": firing.id}, "release job (lost claim)")
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
        free = {"_id": firing.job, "openFiring": {"$in": [None, firing.id]}}
        take = {"$set": {"openFiring": firing.id, "openUntil": _ms(lease_until)}}
        for _ in range(_ATTEMPTS):
            try:
                self.states.update_one(free, take, upsert=True)
            except DuplicateKeyError:
                # The filter missed, so the upsert met the job's document: another firing
                # holds the slot, or a concurrent first upsert created the document.
                try:
                    state = self.states.find_one({"_id": firing.job})
                except PyMongoError as exc:
                    raise self._fail("find (job slot)", JOB_STATE, exc) from exc
                if state is None or state.get("openFiring") in (None, firing.id):
                    continue
                if not self._release_stale_slot(firing.job, str(state["openFiring"]), state, now):
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
        try:
            run = self.runs.find_one({"_id": held}, {"status": 1})
        except PyMongoError as exc:
            raise self._fail("find (slot holder)", RUNS, exc) from exc
        until = _utc(state.get("openUntil"))
        if run is not None:
            if run.get("status") in _OPEN:
                return False
            why = "its run has ended"
        elif until is not None and until <= now:
            why = "no run was recorded within its claim's lease"
        else:
            return False
        released = self._release_slot(
            job,
            {"openFiring": held, "openUntil": state.get("openUntil")},
            "release stale job slot",
        )
        if released:
            log.warning("Job %s - open slot of firing %s released: %s", job, held, why)
        return True

    def _release_slot(self, job: str, condition: Mapping[str, Any], operation: str) -> bool:
        try:
            result = self.states.update_one(
                {"_id": job, **condition}, {"$unset": {"openFiring": "", "openUntil": ""}}
            )
        except PyMongoError as exc:
            raise self._fail(f"update ({operation})", JOB_STATE, exc) from exc
        return result.modified_count == 1

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        if run.claimed_at is None:
            return False
        self.ensure_indexes()
        try:
            result = self.runs.update_one(
                {
                    "_id": run.firing_id,
                    "status": str(RunStatus.CLAIMED),
                    "claimedAt": _ms(run.claimed_at),
                },
                {
                    "$set": {"claimedAt": _ms(now), "deadline": _ms(lease_until), "origin": origin},
                    "$inc": {"takeovers": 1},
                },
            )
        except PyMongoError as exc:
            raise self._fail("update (take over)", RUNS, exc) from exc
        return result.modified_count == 1

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        self.ensure_indexes()
        try:
            # A run already closed (a very fast target) or taken over stays as it is.
            marked = self.runs.update_one(
                {"_id": firing.id, "status": str(RunStatus.CLAIMED)},
                {
                    "$set": {
                        "status": str(RunStatus.DISPATCHED),
                        "startedAt": _ms(now),
                        "deadline": _ms(deadline),
                    }
                },
            )
        except PyMongoError as exc:
            raise self._fail("update (mark dispatched)", RUNS, exc) from exc
        fields: dict[str, Any] = {
            "service": start.service,
            "schedule": start.schedule,
            "parameters": dict(start.parameters),
            "start": _ms(now),
            "lastFiringId": firing.id,
            "lastStatus": str(RunStatus.DISPATCHED),
        }
        change: dict[str, Any] = {"$set": fields, "$unset": {"end": ""}}
        if marked.matched_count == 0:
            # Not CLAIMED any more: a closed run's end goes to the job's latest state; a run
            # taken over is marked by its new claimer.
            run_now = self.run(firing.id)
            if run_now is None or run_now.status.open:
                return
            fields["lastStatus"] = str(run_now.status)
            if run_now.ended_at is not None:
                fields["end"] = _ms(run_now.ended_at)
                change = {"$set": fields}
        try:
            self.states.update_one({"_id": firing.job}, change, upsert=True)
        except PyMongoError as exc:
            # The run says DISPATCHED, which is what keeps a takeover from dispatching it again.
            log.warning(
                "Job %s - firing %s: the job's latest state was not updated (%s)",
                firing.job,
                firing.id,
                describe_error(exc),
            )

    # -- ends ------------------------------------------------------------------------------

    def _finish(
        self,
        firing: Firing,
        status: RunStatus,
        now: datetime,
        error: str | None,
        allowed: Sequence[RunStatus],
        extra: Mapping[str, Any] | None = None,
        **condition: Any,
    ) -> RunRecord | None:
        """An open run's end in one conditional write (its deadline stays), then the job's
        state and slot; the run as it was before, or None when the condition failed."""
        self.ensure_indexes()
        changes: Document = {"status": str(status), "endedAt": _ms(now), **(extra or {})}
        if error is not None:
            changes["error"] = error[:4000]
        try:
            found = self.runs.find_one_and_update(
                {"_id": firing.id, "status": {"$in": [str(s) for s in allowed]}, **condition},
                {"$set": changes, "$unset": {"open": ""}},
                return_document=ReturnDocument.BEFORE,
            )
        except PyMongoError as exc:
            raise self._fail("findAndModify (close run)", RUNS, exc) from exc
        if found is None:
            return None
        before = _record(found)
        after = replace(
            before, status=status, ended_at=now, error=error if error is not None else before.error
        )
        self._follow(firing, before, after)
        return before

    def _change(
        self, firing: Firing, decide: Callable[[RunRecord], RunRecord | None]
    ) -> RunRecord | None:
        """Read the run, write ``decide``'s answer conditionally on the run being as read (its
        status, end and redrive count: every change moves one of them), and follow it in the
        job's state and slot. A run changed meanwhile is read again. The run as it was before,
        or None (unknown, or nothing to change)."""
        for _ in range(_ATTEMPTS):
            before = self.run(firing.id)
            after = decide(before) if before is not None else None
            if before is None or after is None:
                return None
            sets: Document = {}
            unsets: Document = {}
            for name, value in changed_fields(before, after).items():
                if value is None:
                    unsets[name] = ""
                else:
                    sets[name] = _stored(value)
            if after.status.open and not before.status.open:
                sets["open"] = True
            elif before.status.open and not after.status.open:
                unsets["open"] = ""
            seen = {
                "_id": firing.id,
                "status": str(before.status),
                "endedAt": _ms(before.ended_at) if before.ended_at else None,
                "redrives": before.redrives,
            }
            update = {k: v for k, v in (("$set", sets), ("$unset", unsets)) if v}
            try:
                changed = self.runs.update_one(seen, update).modified_count == 1
            except PyMongoError as exc:
                raise self._fail("update (end run)", RUNS, exc) from exc
            if changed:
                self._follow(firing, before, after)
                return before
        return None

    def _follow(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        """The job's latest state follows its last firing's run; an exclusive run's end
        releases the job's slot if it holds it, and its reopening takes the slot if it is free.
        A failure here is logged, not raised: the run's change is what the caller asked for,
        and a slot left behind by an ended run is released by the next exclusive claim."""
        state: Document = {"$set": {"lastStatus": str(after.status)}}
        if after.ended_at is not None:
            state["$set"]["end"] = _ms(after.ended_at)
        else:
            state["$unset"] = {"end": ""}
        try:
            self.states.update_one({"_id": firing.job, "lastFiringId": firing.id}, state)
            if before.exclusive and before.status.open and not after.status.open:
                self._release_slot(firing.job, {"openFiring": firing.id}, "release job")
            elif before.exclusive and after.status.open and not before.status.open:
                until = _ms(after.deadline) if after.deadline else None
                taken = self.states.update_one(
                    {"_id": firing.job, "openFiring": {"$in": [None, firing.id]}},
                    {"$set": {"openFiring": firing.id, "openUntil": until}},
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
        self._finish(
            firing, RunStatus.FAILED, now, error, (RunStatus.CLAIMED, RunStatus.DISPATCHED)
        )

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
            before = self._finish(
                firing,
                status,
                now,
                error,
                (RunStatus.CLAIMED, RunStatus.DISPATCHED),
                redrives=None,
            )
            if before is not None:
                return before
        return self._change(
            firing, lambda run: after_end(run, status, now=now, error=error, redrive=redrive)
        )

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        return self._change(firing_from_id(firing_id), lambda run: after_redrive(run, redrive))

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        done = self._finish(
            firing_from_id(run.firing_id),
            RunStatus.TIMED_OUT,
            now,
            TIMED_OUT_ERROR,
            (RunStatus.DISPATCHED,),
            extra={"timedOutAt": _ms(now)},
            deadline={"$lte": _ms(now)},
        )
        return done is not None

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
        doc = self._run_doc(firing, RunStatus.SKIPPED, now, origin, reason=reason, endedAt=_ms(now))
        return self._insert_once(doc, "skip")

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
        doc = self._run_doc(
            Firing(job, first),
            RunStatus.SKIPPED,
            now,
            origin,
            reason=reason,
            endedAt=_ms(now),
            skippedUntil=iso_seconds(last),
            skippedCount=count,
        )
        return self._insert_once(doc, "skipped range")

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
