"""The MongoDB claim store's claims and marks (:mod:`.mongodb`'s doc says how each is written).
The store is :class:`.mongodb.MongoDBClaimStore`; this is the part of it that claims, takes
over and marks a run."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from pymongo.errors import (
    BulkWriteError,
    ConnectionFailure,
    PyMongoError,
    ServerSelectionTimeoutError,
)

from mini_scheduler.claims import places, transitions
from mini_scheduler.claims.base import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    MarkRequest,
)
from mini_scheduler.claims.mongodb_documents import (
    DUPLICATE_KEY,
    RUN,
    batch_errors,
    filter_for,
    ms,
    run_doc,
    run_from,
    run_update,
    update_for,
    update_jobs,
)
from mini_scheduler.claims.mongodb_places import Caps
from mini_scheduler.claims.mongodb_reads import MongoDBReads
from mini_scheduler.claims.mongodb_slots import JobSlots
from mini_scheduler.claims.oneby import Lease, OneByOne
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.claims.transitions import Write
from mini_scheduler.errors import StoreError
from mini_scheduler.model import RunStatus
from mini_scheduler.mongo import RUNS, Document, describe_error

if TYPE_CHECKING:
    from pymongo.results import UpdateResult

log = logging.getLogger("mini_scheduler.claims")

_ATTEMPTS = 3  # a claim insert whose connection broke is tried again, with the same token
_HOLDER = {
    RUN[name]: 1
    for name in (
        *("job", "scheduled_time", "status", "claim_token", "open", "exclusive", "places"),
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


class MongoDBClaims(MongoDBReads, OneByOne):
    """The claims and marks of the claim store on MongoDB (``claim`` and ``mark_dispatched``
    are batches of one: :class:`.base.OneByOne`)."""

    _ttl: timedelta
    _sleep: Callable[[float], None]
    _slots: JobSlots
    _caps: Caps

    def _update_run(self, firing_id: str, write: Write, operation: str) -> UpdateResult:
        try:
            return self.runs.update_one(
                filter_for({"_id": firing_id}, write.expect, RUN), update_for(write, RUN)
            )
        except PyMongoError as exc:
            raise self._fail(f"update ({operation})", RUNS, exc) from exc

    # -- claims and marks --------------------------------------------------------------------

    def _claim_batch(self, claims: Sequence[ClaimRequest], lease: Lease) -> list[ClaimOutcome]:
        """The batch's claims in one unordered ``insert_many``, the exclusive claims' slots
        taken before it, together (OVERLAP, nothing inserted, when another firing holds it). Raises
        StoreError when the store cannot be reached or a majority did not acknowledge the
        batch (the caller holds every firing of it)."""
        self.ensure_indexes()
        now, lease_until, origin = lease.now, lease.until, lease.origin
        answers: dict[int, ClaimOutcome] = {}
        inserts: dict[int, Document] = {}
        exclusive = [i for i, request in enumerate(claims) if request.exclusive]
        takes = [(claims[i].firing, claims[i].over_skipped) for i in exclusive]
        refusals = dict(
            zip(
                exclusive,
                self._slots.refusals(takes, now=now, lease_until=lease_until) if takes else [],
                strict=True,
            )
        )
        for index, request in enumerate(claims):
            firing = request.firing
            refused = refusals.get(index)
            if refused is None and request.places:
                refused = self._take_places(request, now=now, lease_until=lease_until)
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
                places=places.held(request.places),
                start=request.start,
            )
            inserts[index] = run_doc(firing, run)
        inserted = self._insert_claims(list(inserts.values())) if inserts else []
        for index, answer in zip(inserts, inserted, strict=True):
            request = claims[index]
            if isinstance(answer, dict) and transitions.replaces(
                request.over_skipped, run_from(answer)
            ):
                answer = self._claim_over_skip(inserts[index], run_from(answer))
            if isinstance(answer, dict) and request.places:  # lost to this run
                kept = places.lost_keeps_places(run_from(answer))
                answer = (None if kept else self._give_back(request, exclusive=False)) or answer
            if isinstance(answer, dict) and request.exclusive:
                answer = self._slots.lost(request.firing, answer)
            answers[index] = ClaimResult.LOST if isinstance(answer, dict) else answer
        return [answers[index] for index in range(len(claims))]

    def _take_places(
        self, request: ClaimRequest, *, now: datetime, lease_until: datetime
    ) -> ClaimOutcome | None:
        """Take a capped claim's places, one ``update_one`` each (:mod:`.mongodb_places`):
        None when all are taken; else it gives back what it took (its slot too) and answers
        OVERLAP (LOST for a firing recorded already), or a StoreError."""
        taken: list[str] = []
        try:
            for place in request.places:
                if not self._caps.take(
                    place.key, request.firing.id, place.limit, lease=lease_until, now=now
                ):
                    break
                taken.append(place.key)
            else:
                return None
            status = self._slots.recorded(request.firing.id)
        except StoreError as exc:
            return self._give_back(request, taken) or exc
        refused = self._give_back(request, taken)
        if refused is not None:
            return refused
        if status is None or (request.over_skipped and status == RunStatus.SKIPPED):
            return ClaimResult.OVERLAP
        return ClaimResult.LOST

    def _give_back(
        self, request: ClaimRequest, keys: Sequence[str] | None = None, *, exclusive: bool = True
    ) -> StoreError | None:
        """A claim that will not be written (or was lost) gives back its places (``keys``;
        None: all of them) and, ``exclusive``, its slot: None, or why a release failed (the
        place is then released as stale)."""
        try:
            for key in keys if keys is not None else [p.key for p in request.places]:
                self._caps.release(key, request.firing.id)
            if exclusive and request.exclusive:
                release = transitions.release_slot(request.firing.id)
                self._slots.release(request.firing.job, release, "release job (cap)")
        except StoreError as exc:
            return exc
        return None

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
        requests = [run_update(m.firing.id, transitions.marked(m, now=now)) for m in marks]
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
            job: transitions.job_marked(m, now=now, ended=ends[m.firing.id])
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
