"""How MongoDB keeps the claim store's records: the documents, their indexes, and a
:class:`~mini_scheduler.claims.transitions.Write` as a filter and an update document.

Collections:

* ``runs``: one document per firing, ``_id`` = the firing id, the other fields :mod:`.records`'
  names. Open runs carry ``open: true`` and a ``deadline``; ``sortKey`` (time first) orders a
  job's history; ``expiresAt`` (a date) is when the run expires.
* ``job_state``: one document per job, ``_id`` = the job name: seed 000's job state
  (``service``, ``schedule`` as ``<statement> @<zone>``, ``parameters`` with ``_origin``,
  ``start``, ``end``) plus ``lastFiringId``, ``lastStatus`` and the open slot of ``overlap:
  skip`` (``openFiring``, ``openUntil``).
* ``control``: ``watermark#<scope>`` and ``pause#<job>`` documents (and the active environment,
  see ``environment/mongodb.py``).

Indexes (:func:`create_indexes`, once per store): ``runs {job: 1, sortKey: -1}`` serves the
history, newest first; ``runs {deadline: 1}`` partial on ``{open: true}`` serves the sweep;
``runs {expiresAt: 1}`` with ``expireAfterSeconds: 0`` is the TTL (the date is computed at write
time, so a new RUN_TTL_DAYS never conflicts with the index).

A batch's requests are built here too (:func:`run_update`, :func:`update_jobs`), and a batch's
answer is read per document by :func:`batch_errors`.

Times are dates cut to the millisecond, as BSON keeps them, so that an equality filter on a
value read back matches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pymongo import ASCENDING, DESCENDING, UpdateOne
from pymongo.errors import BulkWriteError, PyMongoError, WriteError

from mini_scheduler.claims.records import (
    JOB_FIELDS,
    RUN_FIELDS,
    RunRecord,
    run_record_from,
    stored_ends,
)
from mini_scheduler.claims.transitions import Expect, Write
from mini_scheduler.jobs.model import FailurePolicy
from mini_scheduler.model import Firing, RunStatus
from mini_scheduler.mongo import Document

if TYPE_CHECKING:
    from pymongo.collection import Collection
    from pymongo.results import UpdateResult

HISTORY_INDEX = "history"
DUE_INDEX = "due-runs"
EXPIRY_INDEX = "expiry"
RUN: Mapping[str, str] = {**RUN_FIELDS, "firing_id": "_id"}
"""A run document's field names: the firing id is its ``_id``."""
DUPLICATE_KEY = 11000
"""The server's code for an insert whose ``_id`` exists (a batch's ``writeErrors`` carry it)."""


def create_indexes(runs: Collection[Document]) -> None:
    """The runs' indexes (idempotent). One createIndexes each, not one for all three:
    mongomock's create_indexes drops partialFilterExpression, its create_index keeps it."""
    runs.create_index([("job", ASCENDING), ("sortKey", DESCENDING)], name=HISTORY_INDEX)
    runs.create_index(
        [("deadline", ASCENDING)], name=DUE_INDEX, partialFilterExpression={"open": True}
    )
    runs.create_index([("expiresAt", ASCENDING)], name=EXPIRY_INDEX, expireAfterSeconds=0)


def ms(moment: datetime) -> datetime:
    """An aware UTC datetime cut to the millisecond, as BSON stores it (so that an equality
    filter on a value read back matches)."""
    moment = moment.astimezone(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def utc(value: Any) -> datetime | None:
    """A stored date as an aware UTC datetime (a client without ``tz_aware`` answers naive)."""
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def run_from(doc: Mapping[str, Any]) -> RunRecord:
    return run_record_from(doc, utc, RUN)


def run_doc(firing: Firing, run: Mapping[str, Any]) -> Document:
    """A new run's document: its fields (:func:`.transitions.claimed`, ``skipped``) and the
    history's sort key."""
    doc: Document = {RUN[k]: stored(v) for k, v in run.items()}
    doc["sortKey"] = firing.sort_key
    return doc


def stored(value: Any) -> Any:
    """A logical field's value as the collection keeps it: times as dates cut to the
    millisecond, statuses as strings, earlier ends as documents."""
    if isinstance(value, datetime):
        return ms(value)
    if isinstance(value, RunStatus):
        return str(value)
    if isinstance(value, tuple):
        return stored_ends(value, ms)
    if isinstance(value, FailurePolicy):
        return value.as_record()
    return value


def filter_for(key: Document, expect: Expect, names: Mapping[str, str]) -> Document:
    """``expect`` as a filter on the document ``key`` selects (None matches an absent field)."""
    query = dict(key)
    for field, allowed in expect.one_of.items():
        values = [stored(value) for value in allowed]
        query[names[field]] = values[0] if len(values) == 1 else {"$in": values}
    for field, bound in expect.at_most.items():
        query[names[field]] = {"$lte": stored(bound)}
    return query


def update_for(write: Write, names: Mapping[str, str]) -> Document:
    """``write``'s update document: ``$set``, ``$unset`` (a field set to None), ``$inc``."""
    sets = {names[k]: stored(v) for k, v in write.sets.items() if v is not None}
    unsets = {names[k]: "" for k, v in write.sets.items() if v is None}
    adds = {names[k]: count for k, count in write.adds.items()}
    return {op: part for op, part in (("$set", sets), ("$unset", unsets), ("$inc", adds)) if part}


def with_lease(write: Write, until: datetime | None) -> Write:
    """A write to the job's slot noting how long a slot with no run yet holds: the claim's
    lease (``openUntil``; None for a release, which removes it)."""
    return replace(write, sets={**write.sets, "open_until": until})


def update_job(
    states: Collection[Document],
    job: str,
    write: Write,
    *,
    upsert: bool = False,
    seen: Document | None = None,
) -> UpdateResult:
    """``write`` on the job's state document (``seen``: only if these fields are as read)."""
    query = {**filter_for({"_id": job}, write.expect, JOB_FIELDS), **(seen or {})}
    return states.update_one(query, update_for(write, JOB_FIELDS), upsert=upsert)


def update_jobs(states: Collection[Document], writes: Mapping[str, Write]) -> dict[str, Exception]:
    """Each job's write on its state document (created if absent), in one unordered
    ``bulk_write``: the jobs whose write failed, with why (none when every one was written)."""
    jobs = list(writes)
    requests = [
        UpdateOne(
            filter_for({"_id": job}, write.expect, JOB_FIELDS),
            update_for(write, JOB_FIELDS),
            upsert=True,
        )
        for job, write in writes.items()
    ]
    try:
        states.bulk_write(requests, ordered=False)
    except BulkWriteError as exc:
        errors = batch_errors(exc)
        if errors is None:
            return dict.fromkeys(jobs, exc)
        return {jobs[index]: error for index, error in errors.items()}
    except PyMongoError as exc:
        return dict.fromkeys(jobs, exc)
    return {}


def run_update(firing_id: str, write: Write) -> UpdateOne:
    """``write`` on the firing's run document, as a request of a batch."""
    return UpdateOne(filter_for({"_id": firing_id}, write.expect, RUN), update_for(write, RUN))


def batch_errors(exc: BulkWriteError) -> dict[int, WriteError] | None:
    """An unordered batch's errors by the index of the request each names, each as the error
    a single write would have raised (without the copy of the document the entry holds); None
    when the batch failed as a whole: written, but not acknowledged by a majority
    (``writeConcernErrors``)."""
    if exc.details.get("writeConcernErrors"):
        return None
    return {
        int(error["index"]): WriteError(str(error.get("errmsg", "")), error.get("code"))
        for error in exc.details.get("writeErrors", [])
    }
