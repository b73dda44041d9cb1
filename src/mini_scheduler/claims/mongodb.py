"""The claim store on MongoDB (pymongo), in the database :mod:`mini_scheduler.mongo` names; its
documents and indexes are :mod:`.mongodb_documents`'.

* A claim is an insert whose unique ``_id`` (the firing id) refuses a second claim. A batch of
  claims is one unordered ``insert_many``: each document's duplicate key (code 11000 in the
  answer's ``writeErrors``, by index) is a lost claim, unless the document found carries this
  claim's token (an earlier try of the same batch, whose answer was lost: a broken connection
  retries the whole ``insert_many`` with the same documents, so the same tokens); any other
  error of a document is that firing's StoreError. ``claim`` is a batch of one.
* A batch of marks is one unordered ``bulk_write`` of conditional updates on the runs
  (CLAIMED -> DISPATCHED), then one on the job_state documents (the job's latest start, one
  upsert a job). Its answer counts the runs matched, not which: when some did not match, the
  runs are read back in one find. ``mark_dispatched`` is a batch of one.
* Every collection writes with ``w: majority`` (a claim acknowledged before a primary failover
  is not lost; a batch a majority did not acknowledge fails as a whole) and reads with
  majority read concern on the primary.
* An exclusive claim also takes the job's open slot, in a write of its own before the batch's
  insert (:mod:`.mongodb_slots`).
* Deferred firings are the ``deferred`` collection's documents (:mod:`.mongodb_deferred`).
* Runtime schedules' definitions are the ``schedules`` collection's (:mod:`.mongodb_schedules`).

A firing costs three writes on the hot path, each shared by its batch: the claim's insert, the
mark, the job's start; and two at its end (the run's, then the job's state).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import (
    BulkWriteError,
    ConnectionFailure,
    DuplicateKeyError,
    OperationFailure,
    PyMongoError,
    ServerSelectionTimeoutError,
)

from mini_scheduler.claims import transitions
from mini_scheduler.claims.base import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    Control,
    Deferred,
    MarkRequest,
    OneByOne,
    Pause,
    history_cursor,
)
from mini_scheduler.claims.definitions import Definition
from mini_scheduler.claims.mongodb_deferred import DEFERRED, DeferredFirings
from mini_scheduler.claims.mongodb_deferred import create_indexes as create_deferred_indexes
from mini_scheduler.claims.mongodb_documents import (
    DUPLICATE_KEY,
    RUN,
    batch_errors,
    create_indexes,
    filter_for,
    ms,
    run_doc,
    run_from,
    run_update,
    update_for,
    update_job,
    update_jobs,
    utc,
    with_lease,
)
from mini_scheduler.claims.mongodb_schedules import SCHEDULES, ScheduleBook
from mini_scheduler.claims.mongodb_schedules import create_indexes as create_schedule_indexes
from mini_scheduler.claims.mongodb_slots import JobSlots
from mini_scheduler.claims.records import JobState, Redrive, RunRecord, job_state_from
from mini_scheduler.claims.transitions import Write
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus, firing_from_id
from mini_scheduler.mongo import CONTROL, JOB_STATE, RUNS, Document, describe_error, majority

if TYPE_CHECKING:
    from pymongo.collection import Collection
    from pymongo.database import Database
    from pymongo.results import UpdateResult

log = logging.getLogger("mini_scheduler.claims")

_ATTEMPTS = 3  # a claim insert whose connection broke is tried again, with the same token
_WATERMARK = "watermark#"  # control document ids: watermark#<scope>, pause#<job>
_PAUSE = "pause#"
_HOLDER = {
    RUN[name]: 1
    for name in (
        *("job", "scheduled_time", "status", "claim_token", "open", "exclusive"),
        *("ended_at", "reason", "skipped_until", "skipped_count"),
    )
}
"""What a lost claim reads of the run it lost to: its token, whether it holds the job's slot,
and the skip a backfill's claim replaces. Each read is given a copy (:func:`_holder`): a driver
may change the projection it is given (mongomock adds to it), and claim batches run on several
threads at once."""


def _holder() -> dict[str, int]:
    return dict(_HOLDER)


def _retryable(exc: PyMongoError) -> bool:
    """A broken connection (not a server that could not be found within the selection
    timeout, which has waited long enough already)."""
    return isinstance(exc, ConnectionFailure) and not isinstance(exc, ServerSelectionTimeoutError)


class MongoDBClaimStore(OneByOne):
    """The claim store on MongoDB. ``database`` is a pymongo Database (the container's, from
    :func:`mini_scheduler.mongo.database`; tests inject mongomock's). ``claim`` and
    ``mark_dispatched`` are batches of one (:class:`.base.OneByOne`)."""

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
        self.deferred = majority(database, DEFERRED)
        self._ttl = timedelta(days=run_ttl_days)
        self._sleep = sleep
        self._indexed = False
        self._index_lock = threading.Lock()
        self._slots = JobSlots(self.runs, self.states, self._fail)
        self._deferred = DeferredFirings(self.deferred, self._ttl, self._fail)
        self.schedule_docs = majority(database, SCHEDULES)
        self._schedules = ScheduleBook(self.schedule_docs, self._ttl, self._deferred, self._fail)

    # -- helpers ---------------------------------------------------------------------------

    def _fail(self, operation: str, collection: str, exc: BaseException) -> StoreError:
        return StoreError(
            f"MongoDB {operation} on {self.database_name}.{collection} failed - "
            f"{describe_error(exc)}"
        )

    def ensure_indexes(self) -> None:
        """Create the indexes (idempotent; done once per store, on first use). A server that
        refuses them (no createIndex privilege, a conflicting index) is logged: claims do not
        depend on them, only the queries' speed and the documents' expiry do. A store that
        cannot be reached raises StoreError, and the next call tries again."""
        if self._indexed:
            return
        with self._index_lock:
            if self._indexed:
                return
            self._create_indexes(
                create_indexes, self.runs, "history and sweep queries scan and runs do not expire"
            )
            self._create_indexes(
                create_deferred_indexes,
                self.deferred,
                "the read of deferred firings scans and they do not expire",
            )
            self._create_indexes(
                create_schedule_indexes, self.schedule_docs, "schedules' tombstones do not expire"
            )
            self._indexed = True

    def _create_indexes(
        self,
        create: Callable[[Collection[Document]], None],
        collection: Collection[Document],
        without: str,
    ) -> None:
        try:
            create(collection)
        except OperationFailure as exc:
            log.error(
                "MongoDB indexes on %s.%s not created - %s until they are: %s",
                self.database_name,
                collection.name,
                without,
                describe_error(exc),
            )
        except PyMongoError as exc:
            raise self._fail("createIndexes", collection.name, exc) from exc

    def _update_run(self, firing_id: str, write: Write, operation: str) -> UpdateResult:
        try:
            return self.runs.update_one(
                filter_for({"_id": firing_id}, write.expect, RUN), update_for(write, RUN)
            )
        except PyMongoError as exc:
            raise self._fail(f"update ({operation})", RUNS, exc) from exc

    # -- claims and marks --------------------------------------------------------------------

    def claim_many(
        self,
        claims: Sequence[ClaimRequest],
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
    ) -> list[ClaimOutcome]:
        """The batch's claims in one unordered ``insert_many``, each exclusive claim's slot
        taken before it (OVERLAP, nothing inserted, when another firing holds it). Raises
        StoreError when the store cannot be reached or a majority did not acknowledge the
        batch (the caller holds every firing of it)."""
        self.ensure_indexes()
        answers: dict[int, ClaimOutcome] = {}
        inserts: dict[int, Document] = {}
        for index, request in enumerate(claims):
            firing = request.firing
            if request.exclusive:
                refused = self._slots.refusal(
                    firing, now=now, lease_until=lease_until, over_skipped=request.over_skipped
                )
                if refused is not None:
                    answers[index] = refused
                    continue
            run = transitions.claimed(
                firing,
                now=now,
                lease_until=lease_until,
                origin=origin,
                exclusive=request.exclusive,
                expires_at=now + self._ttl,
                token=uuid.uuid4().hex,
            )
            inserts[index] = run_doc(firing, run)
        inserted = self._insert_claims(list(inserts.values())) if inserts else []
        for index, answer in zip(inserts, inserted, strict=True):
            request = claims[index]
            if isinstance(answer, dict) and transitions.replaces(
                request.over_skipped, run_from(answer)
            ):
                answer = self._claim_over_skip(inserts[index], run_from(answer))
            if isinstance(answer, dict) and request.exclusive:  # lost to this run
                answer = self._slots.lost(request.firing, answer)
            answers[index] = ClaimResult.LOST if isinstance(answer, dict) else answer
        return [answers[index] for index in range(len(claims))]

    def _claim_over_skip(self, claim: Document, skip: RunRecord) -> ClaimOutcome | Document:
        """A backfill's claim over ``skip``, the firing's SKIPPED record as read: one
        ``replace_one`` of it by ``claim`` (keeping what it replaces), conditional on the record
        being still that skip. WON, its StoreError, or the run it lost to (a peer's claim over
        the same skip; read back, with the token that tells our own earlier try)."""
        doc = {**claim, RUN["replaced_skip"]: transitions.replaced(skip)}
        still = filter_for({"_id": doc["_id"]}, transitions.over_skip(skip), RUN)
        try:
            if self.runs.replace_one(still, doc).matched_count == 1:
                return ClaimResult.WON
            holder = self.runs.find_one({"_id": doc["_id"]}, _holder())
        except PyMongoError as exc:
            return self._fail("replace (claim over skip)", RUNS, exc)
        if holder is None:
            return ClaimResult.LOST
        token = RUN["claim_token"]
        return ClaimResult.WON if holder.get(token) == doc[token] else holder

    def _insert_claims(self, docs: list[Document]) -> list[ClaimOutcome | Document]:
        """Insert the claims, unordered: for each WON, the run it lost to (LOST when that run
        is not yet visible to a majority read), or its StoreError (an error other than a
        duplicate key). A connection that broke is tried again with the same documents (so
        the same tokens); a batch not acknowledged by a majority raises StoreError."""
        for attempt in range(_ATTEMPTS):
            try:
                self.runs.insert_many(docs, ordered=False)
            except BulkWriteError as exc:
                errors = batch_errors(exc)
                if errors is None:
                    raise self._fail("insert (claims)", RUNS, exc) from exc
                answers: list[ClaimOutcome | Document] = [ClaimResult.WON] * len(docs)
                for index, error in errors.items():
                    if error.code != DUPLICATE_KEY:
                        answers[index] = self._fail("insert (claim)", RUNS, error)
                taken = [i for i, error in errors.items() if error.code == DUPLICATE_KEY]
                return self._holders(docs, taken, answers) if taken else answers
            except PyMongoError as exc:
                if not _retryable(exc) or attempt + 1 == _ATTEMPTS:
                    raise self._fail("insert (claims)", RUNS, exc) from exc
                self._sleep(0.05 * 2**attempt)
            else:
                return [ClaimResult.WON] * len(docs)
        raise AssertionError("unreachable")

    def _holders(
        self, docs: list[Document], taken: list[int], answers: list[ClaimOutcome | Document]
    ) -> list[ClaimOutcome | Document]:
        """The answers of the claims whose ``_id`` was ``taken``: a peer's claim, or our own
        insert of an earlier attempt whose answer was lost. The token, read back from the
        primary with majority read concern, tells them apart."""
        token = RUN["claim_token"]
        wanted = {"_id": {"$in": [docs[index]["_id"] for index in taken]}}
        try:
            found = self.runs.find(wanted, _holder())
            holders = {doc["_id"]: doc for doc in found}
        except PyMongoError as exc:
            for index in taken:
                answers[index] = self._fail("find (claim holders)", RUNS, exc)
            return answers
        for index in taken:
            holder = holders.get(docs[index]["_id"])
            ours = holder is not None and holder.get(token) == docs[index][token]
            answers[index] = ClaimResult.WON if ours else holder or ClaimResult.LOST
        return answers

    def watch(self, firing_ids: Sequence[str], at: datetime) -> None:
        """Nothing to do: the partial index on open runs' deadlines finds them for the sweep."""

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        write = transitions.taken_over(run, now=now, lease_until=lease_until, origin=origin)
        if write is None:
            return False
        self.ensure_indexes()
        return self._update_run(run.firing_id, write, "take over").modified_count == 1

    def mark_many(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        """The runs CLAIMED -> DISPATCHED in one unordered ``bulk_write``, then the jobs'
        latest states in another. A run already closed (a very fast target) or taken over
        stays as it is: a closed run's end goes to the job's latest state; a run taken over
        is marked by its new claimer."""
        if not marks:
            return []
        self.ensure_indexes()
        errors: list[StoreError | None] = [None] * len(marks)
        mark = transitions.dispatched
        requests = [
            run_update(m.firing.id, mark(now=now, deadline=m.deadline, start=m.start))
            for m in marks
        ]
        try:
            matched = self.runs.bulk_write(requests, ordered=False).matched_count
        except BulkWriteError as exc:
            failed = batch_errors(exc)
            if failed is None:
                raise self._fail("update (mark dispatched)", RUNS, exc) from exc
            for index, error in failed.items():
                errors[index] = self._fail("update (mark dispatched)", RUNS, error)
            matched = int(exc.details.get("nMatched", 0))
        except PyMongoError as exc:
            raise self._fail("update (mark dispatched)", RUNS, exc) from exc
        marked = [m for m, error in zip(marks, errors, strict=True) if error is None]
        if matched == len(marked):
            ends: dict[str, RunRecord | None] = {m.firing.id: None for m in marked}
        else:
            ends = self._marked(marked, now)
        last = {m.firing.job: m for m in marked if m.firing.id in ends}  # a job's last firing
        started = {
            job: transitions.job_started(m.firing, now=now, start=m.start, ended=ends[m.firing.id])
            for job, m in last.items()
        }
        for job, reason in (update_jobs(self.states, started) if started else {}).items():
            # The run says DISPATCHED, which is what keeps a takeover from dispatching it again.
            log.warning(
                "Job %s - firing %s: the job's latest state was not updated (%s)",
                job,
                last[job].firing.id,
                describe_error(reason),
            )
        return errors

    def _marked(self, marks: list[MarkRequest], now: datetime) -> dict[str, RunRecord | None]:
        """Which runs this batch marked (None) and which had ended before their mark (the run),
        read back: a batch's answer counts the runs it matched, not which. A run marked here,
        or by an earlier try of this batch whose answer was lost, is DISPATCHED at ``now``
        until its deadline; an unknown run, or one taken over, is neither."""
        runs = self._runs([m.firing.id for m in marks])
        ends: dict[str, RunRecord | None] = {}
        for m in marks:
            run = runs.get(m.firing.id)
            if run is not None and not run.status.open:
                ends[m.firing.id] = run
            elif run is not None and (run.status, run.started_at, run.deadline) == (
                RunStatus.DISPATCHED,
                ms(now),
                ms(m.deadline),
            ):
                ends[m.firing.id] = None
        return ends

    # -- ends ------------------------------------------------------------------------------

    def _finish(self, firing: Firing, write: Write) -> RunRecord | None:
        """An open run's end in one conditional write, then the job's state and slot; the run
        as it was before, or None when the write's condition failed."""
        self.ensure_indexes()
        try:
            found = self.runs.find_one_and_update(
                filter_for({"_id": firing.id}, write.expect, RUN),
                update_for(write, RUN),
                return_document=ReturnDocument.BEFORE,
            )
        except PyMongoError as exc:
            raise self._fail("findAndModify (close run)", RUNS, exc) from exc
        if found is None:
            return None
        before = run_from(found)
        self._follow(firing, before, transitions.applied(before, write))
        return before

    def _change(
        self, firing: Firing, decide: Callable[[RunRecord], RunRecord | None]
    ) -> RunRecord | None:
        """``decide``'s change of the run as read (read again when it changed meanwhile),
        followed in the job's state and slot: the run as it was before, or None."""

        def write(change: Write) -> bool:
            return self._update_run(firing.id, change, "end run").modified_count == 1

        done = transitions.change_run(lambda: self.run(firing.id), write, decide, _ATTEMPTS)
        if done is None:
            return None
        self._follow(firing, *done)
        return done[0]

    def _follow(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        """The job's latest state follows the run, and an exclusive run's slot its end or its
        reopening. A failure here is logged, not raised: the run's change is what the caller
        asked for, and a slot left behind by an ended run is released by the next exclusive
        claim."""
        slot = transitions.slot_follows(firing.id, before, after)
        try:
            update_job(self.states, firing.job, transitions.job_follows(firing.id, after))
            if slot is not None and not after.status.open:
                self._slots.release(firing.job, slot, "release job")
            elif slot is not None:
                taken = update_job(self.states, firing.job, with_lease(slot, after.deadline))
                if taken.matched_count == 0:
                    transitions.log_slot_held(firing.job, firing.id)
        except (PyMongoError, StoreError) as exc:
            log.warning(
                "Job %s - firing %s %s, but the job's latest state was not updated (%s)",
                firing.job,
                firing.id,
                f"ended {after.status}" if after.ended_at else "redriven",
                exc if isinstance(exc, StoreError) else describe_error(exc),
            )

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        self._finish(firing, transitions.failed(now=now, error=error))

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
            before = self._finish(firing, transitions.ended(status, now=now, error=error))
            if before is not None:
                return before
        return self._change(
            firing,
            lambda run: transitions.after_end(run, status, now=now, error=error, redrive=redrive),
        )

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        return self._change(
            firing_from_id(firing_id), lambda run: transitions.after_redrive(run, redrive)
        )

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        return (
            self._finish(firing_from_id(run.firing_id), transitions.timed_out(now=now)) is not None
        )

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
        run = transitions.skipped(
            firing, now=now, reason=reason, origin=origin, expires_at=now + self._ttl
        )
        return self._insert_once(run_doc(firing, run), "skip")

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
        run = transitions.skipped(
            firing,
            now=now,
            reason=reason,
            origin=origin,
            expires_at=now + self._ttl,
            until=last,
            count=count,
        )
        return self._insert_once(run_doc(firing, run), "skipped range")

    # -- reads -----------------------------------------------------------------------------

    def _find(
        self, operation: str, query: Mapping[str, Any], sort: tuple[str, int], limit: int
    ) -> list[RunRecord]:
        if limit <= 0:
            return []
        self.ensure_indexes()
        try:
            return [run_from(doc) for doc in self.runs.find(query).sort(*sort).limit(limit)]
        except PyMongoError as exc:
            raise self._fail(f"find ({operation})", RUNS, exc) from exc

    def due_runs(
        self, now: datetime, limit: int = 1000, *, settle: bool = False
    ) -> Sequence[RunRecord]:
        # ``open: true`` in the query lets the partial index on deadline serve it. Nothing is
        # watched here (see ``watch``), so ``settle`` has nothing to move on.
        found = self._find(
            "open runs",
            {"open": True, "deadline": {"$lte": ms(now)}},
            ("deadline", ASCENDING),
            limit,
        )
        return [run for run in found if run.status.open]

    def history(self, job: str, limit: int = 20, before: str | None = None) -> Sequence[RunRecord]:
        # A bound on sortKey, the history index's second key: the index serves the page.
        cursor = history_cursor(before)
        query: dict[str, Any] = {"job": job}
        if cursor is not None:
            query["sortKey"] = {"$lt": cursor}
        return self._find("history", query, ("sortKey", DESCENDING), limit)

    def _runs(self, firing_ids: Sequence[str]) -> dict[str, RunRecord]:
        """The runs of these firings that exist, by firing id, in one find."""
        try:
            found = self.runs.find({"_id": {"$in": list(firing_ids)}})
            return {str(doc["_id"]): run_from(doc) for doc in found}
        except PyMongoError as exc:
            raise self._fail("find (runs)", RUNS, exc) from exc

    def run(self, firing_id: str) -> RunRecord | None:
        self.ensure_indexes()
        try:
            doc = self.runs.find_one({"_id": firing_id})
        except PyMongoError as exc:
            raise self._fail("find (run)", RUNS, exc) from exc
        return run_from(doc) if doc is not None else None

    def job_state(self, job: str) -> JobState | None:
        try:
            doc = self.states.find_one({"_id": job})
        except PyMongoError as exc:
            raise self._fail("find (job state)", JOB_STATE, exc) from exc
        if doc is None:
            return None
        return job_state_from(job, doc, utc)

    # -- deferred firings ------------------------------------------------------------------

    def defer(self, deferred: Sequence[Deferred]) -> None:
        self.ensure_indexes()
        self._deferred.add(deferred)

    def due_deferred(self, until: datetime, limit: int = 1000) -> Sequence[Deferred]:
        self.ensure_indexes()
        return self._deferred.due(until, limit)

    def drop_deferred(self, deferred: Sequence[Deferred]) -> None:
        self._deferred.drop(deferred)

    def advance_schedule(self, done: Deferred, following: Deferred | None) -> bool:
        self.ensure_indexes()
        return self._schedules.advance(done, following)

    def create_schedule(self, definition: Definition) -> bool:
        self.ensure_indexes()
        return self._schedules.create(definition)

    def schedule(self, name: str) -> Definition | None:
        return self._schedules.get(name)

    def schedules(self) -> Sequence[Definition]:
        return self._schedules.live()

    def delete_schedule(
        self, name: str, generation: str, *, operator: str, now: datetime
    ) -> Definition | None:
        return self._schedules.retire(name, generation, operator=operator, now=now)

    def pending_deferred(self, reason: str) -> Sequence[Deferred]:
        self.ensure_indexes()
        return self._deferred.pending(reason)

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
                mark = utc(doc.get("watermark"))
                if mark is not None:
                    watermarks[key.removeprefix(_WATERMARK)] = mark
            else:
                job = key.removeprefix(_PAUSE)
                at = utc(doc.get("at")) or datetime.min.replace(tzinfo=UTC)
                paused[job] = Pause(job, str(doc.get("operator", "")), at)
        return Control(watermarks.get(scope), paused, watermarks)

    def advance_watermark(self, scope: str, to: datetime) -> None:
        to = ms(to)
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
                    {"_id": key}, {"job": job, "operator": operator, "at": ms(now)}, upsert=True
                )
            else:
                self.controls.delete_one({"_id": key})
        except PyMongoError as exc:
            raise self._fail(
                "replace (pause)" if paused else "delete (resume)", CONTROL, exc
            ) from exc
