"""Runtime schedules' definitions on MongoDB (:mod:`.definitions`): the ``schedules``
collection, in the claim store's database, written and read as the runs are (majority, on the
primary).

* One document per name: ``_id`` = the schedule's name, ``generation``, ``entry`` (a
  sub-document), ``operator``, ``createdAt``, ``nextFiring`` (absent once none is left), and on
  a tombstone ``deletedAt``, ``deletedBy`` and ``expiresAt`` (the store's run TTL after the
  delete; the ``{expiresAt: 1}`` index with ``expireAfterSeconds: 0`` removes it then).

``create`` is one ``replace_one`` (upsert) on the filter "this name, a tombstone", so that a
live definition refuses it with a duplicate key (the name unique by the ``_id`` index, never by
a read); ``get`` one ``find_one``, ``live`` one find (``every`` the tombstones too), ``put`` (a
definition carried from another region's store) an insert where none is stored, else a
``replace_one`` on the filter "still the definition read", ``retire`` one
``find_one_and_update`` on the filter "live, with the generation read". ``advance`` takes no
transaction: it marks the answered firing with the step (its next firing's key) while it is
stored and marked with no other step (a late step, or one after a delete, stops there with
nothing written; racing ticks making the same step go on together), puts the next firing,
writes the definition on the filter of :func:`.definitions.moves` (an upsert that a tombstone
or another generation refuses with a duplicate key: both firings go), and deletes the answered
one; the tick that deletes it answers True. A crash between two steps leaves the answered
firing, marked: the next tick makes the same step again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pymongo import ASCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError, PyMongoError

from mini_scheduler.claims.base import Deferred
from mini_scheduler.claims.definitions import carried, created_each, generation_of
from mini_scheduler.claims.mongodb_deferred import DeferredFirings
from mini_scheduler.claims.mongodb_documents import ms, utc
from mini_scheduler.claims.mongodb_slots import Fail
from mini_scheduler.claims.records import Definition
from mini_scheduler.errors import StoreError
from mini_scheduler.mongo import Document

if TYPE_CHECKING:
    from pymongo.collection import Collection

SCHEDULES = "schedules"
SCHEDULES_EXPIRY_INDEX = "schedules-expiry"


def create_indexes(schedules: Collection[Document]) -> None:
    """The tombstones' expiry (idempotent)."""
    schedules.create_index(
        [("expiresAt", ASCENDING)], name=SCHEDULES_EXPIRY_INDEX, expireAfterSeconds=0
    )


class ScheduleBook:
    """The definitions in ``collection``; ``ttl`` is how long a tombstone is kept."""

    def __init__(
        self,
        collection: Collection[Document],
        ttl: timedelta,
        deferred: DeferredFirings,
        fail: Fail,
    ) -> None:
        self._collection = collection
        self._ttl = ttl
        self._deferred = deferred
        self._fail = fail

    def create(self, definition: Definition) -> bool:
        doc = definition_doc(definition, self._ttl)
        try:
            self._collection.replace_one(
                {"_id": definition.name, "deletedAt": {"$exists": True}}, doc, upsert=True
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise self._fail("replace (create schedule)", SCHEDULES, exc) from exc
        return True

    def create_many(self, definitions: Sequence[Definition]) -> list[bool | StoreError]:
        """``create`` for each, one after another: a name is kept unique by a replace's
        upsert, which a bulk write would not answer name by name."""
        return created_each(self.create, definitions)

    def get(self, name: str) -> Definition | None:
        try:
            found = self._collection.find_one({"_id": name})
        except PyMongoError as exc:
            raise self._fail("find (schedule)", SCHEDULES, exc) from exc
        return definition_from(found) if found is not None else None

    def live(self) -> list[Definition]:
        return self._find({"deletedAt": {"$exists": False}})

    def every(self) -> list[Definition]:
        return self._find({})

    def _find(self, wanted: Document) -> list[Definition]:
        try:
            found = self._collection.find(wanted)
            return [definition_from(doc) for doc in found.sort([("_id", ASCENDING)])]
        except PyMongoError as exc:
            raise self._fail("find (schedules)", SCHEDULES, exc) from exc

    def put(self, definition: Definition, over: Definition | None) -> bool:
        doc = definition_doc(definition, self._ttl)
        try:
            if over is None:
                self._collection.insert_one(doc)
                return True
            stored = definition_doc(over, self._ttl)
            unchanged: Document = {"_id": over.name, "generation": over.generation}
            for name in ("nextFiring", "deletedAt"):
                unchanged[name] = stored.get(name, {"$exists": False})
            return self._collection.replace_one(unchanged, doc).matched_count == 1
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise self._fail("replace (carry schedule)", SCHEDULES, exc) from exc

    def retire(
        self, name: str, generation: str, *, operator: str, now: datetime
    ) -> Definition | None:
        try:
            before = self._collection.find_one_and_update(
                {"_id": name, "generation": generation, "deletedAt": {"$exists": False}},
                {
                    "$set": {
                        "deletedAt": ms(now),
                        "deletedBy": operator,
                        "expiresAt": ms(now + self._ttl),
                    }
                },
                return_document=ReturnDocument.BEFORE,
            )
        except PyMongoError as exc:
            raise self._fail("findAndModify (delete schedule)", SCHEDULES, exc) from exc
        return definition_from(before) if before is not None else None

    def advance(self, done: Deferred, following: Deferred | None) -> bool:
        step = following.key if following is not None else "end"
        if not self._deferred.mark_step(done, step):
            return False  # gone (deleted, or the step made), or another step is being made
        if following is not None:
            self._deferred.add([following])
        doc = definition_doc(carried(done, following), self._ttl)
        try:
            self._collection.replace_one(
                {
                    "_id": doc["_id"],
                    "generation": generation_of(done),
                    "deletedAt": {"$exists": False},
                },
                doc,
                upsert=True,
            )
        except DuplicateKeyError:  # deleted, or made again: both firings go
            self._deferred.drop([done, *([following] if following is not None else [])])
            return False
        except PyMongoError as exc:
            raise self._fail("replace (advance schedule)", SCHEDULES, exc) from exc
        return self._deferred.take(done)


def definition_doc(definition: Definition, ttl: timedelta) -> Document:
    doc: Document = {
        "_id": definition.name,
        "generation": definition.generation,
        "entry": dict(definition.entry),
        "operator": definition.operator,
        "createdAt": ms(definition.created_at),
    }
    if definition.next_firing is not None:
        doc["nextFiring"] = ms(definition.next_firing)
    if definition.deleted_at is not None:
        doc["deletedAt"] = ms(definition.deleted_at)
        doc["expiresAt"] = ms(definition.deleted_at + ttl)
    if definition.deleted_by is not None:
        doc["deletedBy"] = definition.deleted_by
    return doc


def definition_from(doc: Mapping[str, Any]) -> Definition:
    created = utc(doc.get("createdAt"))
    if created is None:
        raise ValueError(f"schedule {str(doc.get('_id'))[:100]!r} has no createdAt")
    entry = doc.get("entry")
    deleted_by = doc.get("deletedBy")
    return Definition(
        name=str(doc["_id"]),
        generation=str(doc.get("generation", "")),
        entry=dict(entry) if isinstance(entry, Mapping) else {},
        operator=str(doc.get("operator", "")),
        created_at=created,
        next_firing=utc(doc.get("nextFiring")),
        deleted_at=utc(doc.get("deletedAt")),
        deleted_by=str(deleted_by) if deleted_by is not None else None,
    )
