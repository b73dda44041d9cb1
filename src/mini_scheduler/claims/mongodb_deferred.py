"""Deferred firings on MongoDB (:class:`~mini_scheduler.claims.base.Deferred`): the ``deferred``
collection, in the claim store's database, written and read as the runs are (majority, on the
primary).

* One document per deferred firing: ``_id`` = :attr:`.Deferred.key` (``<due instant, ms>#<run
  id>``, so the same firing deferred twice to one instant is one document), ``firingId`` (the
  run's id), ``due``, ``reason``, ``origin``, ``writtenAt``, ``detail`` (the reason's detail,
  a sub-document, when it has one), and ``expiresAt`` (the due instant
  plus the store's run TTL); times are dates cut to the millisecond.
* Indexes (:func:`create_indexes`): ``{due: 1, _id: 1}`` serves the tick's read, those due
  before an instant oldest first (``_id`` orders the ones due together as the other stores
  do); ``{expiresAt: 1}`` with ``expireAfterSeconds: 0`` is the TTL.

``add`` is one unordered ``insert_many``: a document whose ``_id`` exists (code 11000) is there
already, not an error. ``due`` is one find on the index, ``drop`` one ``delete_many`` by ``_id``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pymongo import ASCENDING
from pymongo.errors import BulkWriteError, PyMongoError

from mini_scheduler.claims.base import Deferred, deferred_firing
from mini_scheduler.claims.mongodb_documents import DUPLICATE_KEY, batch_errors, ms, utc
from mini_scheduler.claims.mongodb_slots import Fail
from mini_scheduler.mongo import Document

if TYPE_CHECKING:
    from pymongo.collection import Collection

DEFERRED = "deferred"
DEFERRED_DUE_INDEX = "deferred-due"
DEFERRED_EXPIRY_INDEX = "deferred-expiry"


def create_indexes(deferred: Collection[Document]) -> None:
    """The deferred firings' indexes (idempotent)."""
    deferred.create_index([("due", ASCENDING), ("_id", ASCENDING)], name=DEFERRED_DUE_INDEX)
    deferred.create_index(
        [("expiresAt", ASCENDING)], name=DEFERRED_EXPIRY_INDEX, expireAfterSeconds=0
    )


class DeferredFirings:
    """The deferred firings in ``collection`` (the ``deferred`` collection, majority reads and
    writes); ``ttl`` is how long a document outlives its due instant."""

    def __init__(self, collection: Collection[Document], ttl: timedelta, fail: Fail) -> None:
        self._collection = collection
        self._ttl = ttl
        self._fail = fail

    def add(self, deferred: Sequence[Deferred]) -> None:
        """Insert each one, unordered; one there already stays as it is. Raises StoreError when
        a document was refused for another reason, or a majority did not acknowledge them."""
        if not deferred:
            return
        docs = [deferred_doc(item, self._ttl) for item in deferred]
        try:
            self._collection.insert_many(docs, ordered=False)
        except BulkWriteError as exc:
            errors = batch_errors(exc)
            if errors is None:
                raise self._fail("insert (defer)", DEFERRED, exc) from exc
            refused = [error for error in errors.values() if error.code != DUPLICATE_KEY]
            if refused:
                operation = f"insert (defer: {len(refused)} of {len(docs)} refused)"
                raise self._fail(operation, DEFERRED, refused[0]) from exc
        except PyMongoError as exc:
            raise self._fail("insert (defer)", DEFERRED, exc) from exc

    def due(self, until: datetime, limit: int) -> list[Deferred]:
        """Those due before ``until``, oldest first, at most ``limit``."""
        if limit <= 0:
            return []
        query = {"due": {"$lt": ms(until)}}
        try:
            found = self._collection.find(query).sort([("due", ASCENDING), ("_id", ASCENDING)])
            return [deferred_from(doc) for doc in found.limit(limit)]
        except PyMongoError as exc:
            raise self._fail("find (deferred)", DEFERRED, exc) from exc

    def pending(self, reason: str) -> list[Deferred]:
        """Every one stored for ``reason``, oldest due first."""
        try:
            found = self._collection.find({"reason": reason})
            return [
                deferred_from(doc) for doc in found.sort([("due", ASCENDING), ("_id", ASCENDING)])
            ]
        except PyMongoError as exc:
            raise self._fail("find (pending deferred)", DEFERRED, exc) from exc

    def drop(self, deferred: Sequence[Deferred]) -> None:
        """Delete them (one already gone is no error)."""
        if not deferred:
            return
        keys = list(dict.fromkeys(item.key for item in deferred))
        try:
            self._collection.delete_many({"_id": {"$in": keys}})
        except PyMongoError as exc:
            raise self._fail("delete (deferred)", DEFERRED, exc) from exc

    def mark_step(self, item: Deferred, step: str) -> bool:
        """Mark ``item`` with ``step`` while it is stored and marked with no other step: False
        when it is gone, or another step marked it."""
        try:
            found = self._collection.update_one(
                {"_id": item.key, "$or": [{"step": {"$exists": False}}, {"step": step}]},
                {"$set": {"step": step}},
            )
        except PyMongoError as exc:
            raise self._fail("update (deferred step)", DEFERRED, exc) from exc
        return found.matched_count == 1

    def take(self, item: Deferred) -> bool:
        """Delete ``item``: False when it was gone already (another tick removed it)."""
        try:
            return self._collection.delete_one({"_id": item.key}).deleted_count == 1
        except PyMongoError as exc:
            raise self._fail("delete (advance schedule)", DEFERRED, exc) from exc


def deferred_doc(deferred: Deferred, ttl: timedelta) -> Document:
    doc: Document = {
        "_id": deferred.key,
        "firingId": deferred.firing.id,
        "due": ms(deferred.due),
        "reason": deferred.reason,
        "origin": deferred.origin,
        "writtenAt": ms(deferred.written_at),
        "expiresAt": ms(deferred.due + ttl),
    }
    if deferred.detail:
        doc["detail"] = dict(deferred.detail)
    return doc


def deferred_from(doc: Mapping[str, Any]) -> Deferred:
    """The deferred firing a document keeps (ValueError when it is not one)."""
    due, written_at = utc(doc.get("due")), utc(doc.get("writtenAt"))
    if due is None or written_at is None:
        raise ValueError(
            f"deferred firing {str(doc.get('_id'))[:100]!r} has no due or written time"
        )
    reason = str(doc.get("reason", ""))
    found = doc.get("detail")
    detail = dict(found) if isinstance(found, Mapping) else {}
    return Deferred(
        firing=deferred_firing(str(doc["firingId"]), reason, detail),
        due=due,
        reason=reason,
        origin=str(doc.get("origin", "")),
        written_at=written_at,
        detail=detail,
    )
