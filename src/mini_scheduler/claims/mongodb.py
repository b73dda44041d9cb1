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

A firing costs three writes on the hot path, each shared by its batch: the claim's insert, the
mark, the job's start; and two at its end (the run's, then the job's state).

The store is in parts: its reads, control writes and indexes (:mod:`.mongodb_reads`), its claims
and marks (:mod:`.mongodb_claims`), and its ends, redrives, time-outs and skips, which are
:class:`.ends.RunEnds`' over the primitives here.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError, PyMongoError

from mini_scheduler.claims import transitions
from mini_scheduler.claims.base import BUFFER, Deferred
from mini_scheduler.claims.definitions import KeptInABook
from mini_scheduler.claims.ends import PlacesInItems, RunEnds
from mini_scheduler.claims.mongodb_claims import MongoDBClaims
from mini_scheduler.claims.mongodb_deferred import DEFERRED, DeferredFirings
from mini_scheduler.claims.mongodb_documents import (
    RUN,
    filter_for,
    run_doc,
    run_from,
    update_for,
    update_job,
    with_lease,
)
from mini_scheduler.claims.mongodb_places import CAPS, Caps
from mini_scheduler.claims.mongodb_schedules import SCHEDULES, ScheduleBook
from mini_scheduler.claims.mongodb_slots import JobSlots
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.claims.transitions import Write
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing
from mini_scheduler.mongo import CONTROL, JOB_STATE, RUNS, Document, describe_error, majority

if TYPE_CHECKING:
    from pymongo.database import Database

log = logging.getLogger("mini_scheduler.claims")

_CONFLICT_ATTEMPTS = 3  # a change decided on a run read again when it changed meanwhile


class MongoDBClaimStore(PlacesInItems[Caps], RunEnds, KeptInABook, MongoDBClaims):
    """The claim store on MongoDB. ``database`` is a pymongo Database (the container's, from
    :func:`mini_scheduler.mongo.database`; tests inject mongomock's). ``claim`` and
    ``mark_dispatched`` are batches of one (:class:`.base.OneByOne`)."""

    _conflict_attempts = _CONFLICT_ATTEMPTS

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
        self._caps = Caps(self.runs, majority(database, CAPS), self._fail)
        self._deferred = DeferredFirings(self.deferred, self._ttl, self._fail)
        self.schedule_docs = majority(database, SCHEDULES)
        self._schedules = ScheduleBook(self.schedule_docs, self._ttl, self._deferred, self._fail)

    # -- the primitives of the ends (:mod:`.ends`) -------------------------------------------

    def _expiry(self, now: datetime) -> datetime:
        return now + self._ttl

    def _end_run(self, firing: Firing, write: Write) -> RunRecord | None:
        self.ensure_indexes()
        try:
            found = self.runs.find_one_and_update(
                filter_for({"_id": firing.id}, write.expect, RUN),
                update_for(write, RUN),
                return_document=ReturnDocument.BEFORE,
            )
        except PyMongoError as exc:
            raise self._fail("findAndModify (close run)", RUNS, exc) from exc
        return run_from(found) if found is not None else None

    def _rewrite_run(self, firing: Firing, write: Write) -> bool:
        return self._update_run(firing.id, write, "end run").modified_count == 1

    def _insert_run(self, firing: Firing, run: Mapping[str, Any], operation: str) -> bool:
        self.ensure_indexes()
        try:
            self.runs.insert_one(run_doc(firing, run))
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise self._fail(f"insert ({operation})", RUNS, exc) from exc
        return True

    def _follow_run(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        update_job(self.states, firing.job, transitions.job_follows(firing.id, after))

    def _release_slot(self, firing: Firing, release: Write) -> None:
        self._slots.release(firing.job, release, "release job")

    def _take_back_slot(self, firing: Firing, take: Write, after: RunRecord) -> bool:
        return (
            update_job(self.states, firing.job, with_lease(take, after.deadline)).matched_count != 0
        )

    @contextlib.contextmanager
    def _following(self, firing: Firing, after: RunRecord) -> Iterator[None]:
        """A failure of the follow-up (the job's state, a second collection, and its slot) is
        logged, not raised: the run's change is what the caller asked for, and a slot left
        behind by an ended run is released by the next exclusive claim."""
        try:
            yield
        except (PyMongoError, StoreError) as exc:
            log.warning(
                "Job %s - firing %s %s, but the job's latest state was not updated (%s)",
                firing.job,
                firing.id,
                f"ended {after.status}" if after.ended_at else "redriven",
                exc if isinstance(exc, StoreError) else describe_error(exc),
            )

    # -- deferred firings ------------------------------------------------------------------

    def defer(self, deferred: Sequence[Deferred]) -> None:
        self.ensure_indexes()
        self._deferred.add(deferred)

    def due_deferred(self, until: datetime, limit: int = 1000) -> Sequence[Deferred]:
        self.ensure_indexes()
        return self._deferred.due(until, limit)

    def drop_deferred(self, deferred: Sequence[Deferred]) -> None:
        for item in deferred:  # a buffered firing's place first: never one held by nothing
            if item.reason == BUFFER:
                self._slots.leave(item.firing.job, item.firing.id)
        self._deferred.drop(deferred)

    def buffer(self, deferred: Deferred, limit: int) -> bool:
        self.ensure_indexes()
        self._deferred.add([deferred])
        if self._slots.wait(deferred.firing.job, deferred.firing.id, limit):
            return True
        self._deferred.drop([deferred])
        return False

    def _ready(self) -> None:
        self.ensure_indexes()

    def pending_deferred(self, reason: str) -> Sequence[Deferred]:
        self.ensure_indexes()
        return self._deferred.pending(reason)
