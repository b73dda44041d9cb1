"""The MongoDB claim store's reads (a run, a job's history and latest state, many jobs' states at
once, the sweep's due runs, the control documents a tick reads), its control writes (watermarks,
pauses) and its indexes, with the helpers every part of the store shares. The store is
:class:`.mongodb.MongoDBClaimStore`; this is the part of it that neither claims nor ends a run."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError, OperationFailure, PyMongoError

from mini_scheduler.claims.base import Control, Latest, Pause, history_cursor, named_firings
from mini_scheduler.claims.mongodb_deferred import create_indexes as create_deferred_indexes
from mini_scheduler.claims.mongodb_documents import create_indexes, ms, run_from, utc
from mini_scheduler.claims.mongodb_schedules import create_indexes as create_schedule_indexes
from mini_scheduler.claims.records import JobState, RunRecord, job_state_from
from mini_scheduler.errors import StoreError
from mini_scheduler.mongo import CONTROL, JOB_STATE, RUNS, Document, describe_error

if TYPE_CHECKING:
    from pymongo.collection import Collection

log = logging.getLogger("mini_scheduler.claims")

_WATERMARK = "watermark#"  # control document ids: watermark#<scope>, pause#<job>
_PAUSE = "pause#"


class MongoDBReads:
    """The reads, control writes and indexes of the claim store on MongoDB (its attributes are
    set by :class:`.mongodb.MongoDBClaimStore`)."""

    database_name: str
    runs: Collection[Document]
    states: Collection[Document]
    controls: Collection[Document]
    deferred: Collection[Document]
    schedule_docs: Collection[Document]
    _indexed: bool
    _index_lock: threading.Lock

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

    def latest_runs(self, named: Mapping[str, Sequence[str]]) -> dict[str, Latest]:
        """Each job's state document, every job in one find (the names are only checked)."""
        named_firings(named)
        if not named:
            return {}
        try:
            docs = {str(doc["_id"]): doc for doc in self.states.find({"_id": {"$in": list(named)}})}
        except PyMongoError as exc:
            raise self._fail("find (job states)", JOB_STATE, exc) from exc
        return {
            job: Latest(job_state_from(job, docs[job], utc) if job in docs else None, exact=True)
            for job in named
        }

    # -- control ---------------------------------------------------------------------------

    def control(self, scope: str) -> Control:
        """The scope's watermark, every scope's (the region's and each shard's: the ticker's
        hand-over between unsharded and sharded ticks reads them) and the pauses, in one find.
        Both ``_id`` prefixes are anchored, so the ``_id`` index serves it."""
        watermarks: dict[str, datetime] = {}
        paused: dict[str, Pause] = {}
        resumed: dict[str, Pause] = {}
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
                pause = Pause(job, str(doc.get("operator", "")), at)
                (resumed if doc.get("resumed") else paused)[job] = pause
        return Control(watermarks.get(scope), paused, watermarks, resumed)

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
        mark: Document = {"job": job, "operator": operator, "at": ms(now)}
        if not paused:
            mark["resumed"] = True
        try:
            self.controls.replace_one({"_id": key}, mark, upsert=True)
        except PyMongoError as exc:
            raise self._fail(
                "replace (pause)" if paused else "replace (resume)", CONTROL, exc
            ) from exc
