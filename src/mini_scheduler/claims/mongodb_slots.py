"""The open slot of ``overlap: skip`` on MongoDB: taken in a write of its own, before the claim.

An exclusive claim takes two writes, in this order:

1. one conditional ``update_one`` (upsert) on the job's state document sets ``openFiring`` only
   when it is absent or already this firing (a concurrent upsert's DuplicateKeyError is retried
   once; a second one means another firing holds the slot: OVERLAP, nothing written);
2. the claim's insert, in its batch's ``insert_many`` (every slot of the batch is taken before
   it: the batch's takes go in one unordered ``bulk_write`` (:meth:`JobSlots.refusals`), and
   only those refused are asked again one by one). When it loses, the slot is released only
   when the run it lost to is not an open exclusive run (whose slot it is: the same firing id).

Why this order is safe: a run of an exclusive firing never exists without its slot, so two runs
of the job are never open at once. A claimer that dies between the two writes leaves a slot
with no run: the job is skipped (never run twice) until the claim's lease (``openUntil``) has
passed, and then the next exclusive claim releases that slot, conditionally on it being unchanged
(the same lease assumption as a takeover). A slot whose run has ended (its release was lost) is
released the same way at once. A slot taken by a backfill's claim over a SKIPPED record
(``openOverSkip``) counts that record as no run yet: the claim replaces it after the slot.
The job's document keeps the firings that ``overlap: buffer_one`` and ``buffer_all`` keep waiting
(``waiting``, an array used as a set): a place is taken with ``$addToSet`` (upsert) on the
condition that the array has no element at ``limit - 1`` or holds this firing
(:func:`.transitions.may_wait`), and given back with ``$pull``.
This is portable (no transaction, so no replica-set requirement and nothing mongomock cannot
run); the price is a second write on the exclusive path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pymongo.errors import ConnectionFailure, DuplicateKeyError, PyMongoError

from mini_scheduler.claims import places, transitions
from mini_scheduler.claims.base import ClaimOutcome, ClaimResult
from mini_scheduler.claims.mongodb_documents import (
    RUN,
    run_from,
    update_job,
    update_jobs,
    utc,
    with_lease,
)
from mini_scheduler.claims.records import JOB_FIELDS
from mini_scheduler.claims.transitions import Write
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus
from mini_scheduler.mongo import JOB_STATE, RUNS, Document

if TYPE_CHECKING:
    from pymongo.collection import Collection

log = logging.getLogger("mini_scheduler.claims")

_ATTEMPTS = 3

Fail = Callable[[str, str, BaseException], StoreError]
"""How the store names a failed request: (operation, collection, error) -> StoreError."""


class JobSlots:
    """The jobs' open slots, in ``states`` (the job_state collection); ``runs`` tells a slot no
    open run holds any more."""

    def __init__(
        self, runs: Collection[Document], states: Collection[Document], fail: Fail
    ) -> None:
        self._runs = runs
        self._states = states
        self._fail = fail

    def take(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        over_skip: bool = False,
        claiming: Container[str] = (),
    ) -> bool:
        """Set the job's ``openFiring`` to this firing unless another firing holds it
        (``over_skip``: for a backfill's claim over the firing's SKIPPED record; ``claiming``:
        the firings of its claim batch, :meth:`_release_stale`)."""
        take = transitions.take_slot(firing.id, over_skip=over_skip, lease_until=lease_until)
        for _ in range(_ATTEMPTS):
            try:
                update_job(self._states, firing.job, take, upsert=True)
            except DuplicateKeyError:
                # The filter missed, so the upsert met the job's document: another firing
                # holds the slot, or a concurrent first upsert created the document.
                try:
                    state = self._states.find_one({"_id": firing.job})
                except PyMongoError as exc:
                    raise self._fail("find (job slot)", JOB_STATE, exc) from exc
                held = state.get(JOB_FIELDS["open_firing"]) if state is not None else None
                if state is None or held in (None, firing.id):
                    continue
                if not self._release_stale(firing.job, str(held), state, now, claiming):
                    return False
            except PyMongoError as exc:
                raise self._fail("update (take job slot)", JOB_STATE, exc) from exc
            else:
                return True
        return False

    def wait(self, job: str, firing_id: str, limit: int) -> bool:
        """Take a place among the job's waiting firings: False when ``limit`` others hold one
        (the filter missed, so the upsert met the job's document: DuplicateKeyError; a
        concurrent first upsert is told from it by trying once more)."""
        waiting = JOB_FIELDS["waiting"]
        query = {
            "_id": job,
            "$or": [{f"{waiting}.{limit - 1}": {"$exists": False}}, {waiting: firing_id}],
        }
        for _ in range(2):
            try:
                self._states.update_one(query, {"$addToSet": {waiting: firing_id}}, upsert=True)
            except DuplicateKeyError:
                continue
            except PyMongoError as exc:
                raise self._fail("update (wait for job slot)", JOB_STATE, exc) from exc
            return True
        return False

    def leave(self, job: str, firing_id: str) -> None:
        """Give the firing's place among the job's waiting firings back, if it holds one."""
        waiting = JOB_FIELDS["waiting"]
        try:
            query = {"_id": job, waiting: firing_id}
            self._states.update_one(query, {"$pull": {waiting: firing_id}})
        except PyMongoError as exc:
            raise self._fail("update (stop waiting for job slot)", JOB_STATE, exc) from exc

    def refusals(
        self, takes: Sequence[tuple[Firing, bool]], *, now: datetime, lease_until: datetime
    ) -> list[ClaimOutcome | None]:
        """:meth:`refusal` for each (firing, over_skipped) of a claim batch, in order: every
        job's first take in one ``bulk_write``; a take refused there (the slot held, a
        concurrent upsert, the request failed), and a job's second firing in the batch, asked
        again alone, as :meth:`refusal` does."""
        writes: dict[str, Write] = {}
        for firing, over_skipped in takes:
            if firing.job not in writes:
                writes[firing.job] = transitions.take_slot(
                    firing.id, over_skip=over_skipped, lease_until=lease_until
                )
        failed = update_jobs(self._states, writes) if writes else {}
        taken = {job for job in writes if job not in failed}
        answers: list[ClaimOutcome | None] = []
        claiming = {firing.id for firing, _ in takes}
        for firing, over_skipped in takes:
            if firing.job in taken:
                taken.discard(firing.job)  # the job's first take; a second is asked alone
                answers.append(None)
            else:
                answers.append(
                    self.refusal(
                        firing,
                        now=now,
                        lease_until=lease_until,
                        over_skipped=over_skipped,
                        claiming=claiming,
                    )
                )
        return answers

    def refusal(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        over_skipped: bool = False,
        claiming: Container[str] = (),
    ) -> ClaimOutcome | None:
        """Take an exclusive claim's slot: None when taken, else the claim's answer (OVERLAP;
        LOST for a firing that has a record, but a SKIPPED one for a backfill's claim; the
        firing's StoreError). Raises StoreError when the store cannot be reached: the batch
        fails as a whole, not slot by slot."""
        try:
            if self.take(
                firing,
                now=now,
                lease_until=lease_until,
                over_skip=over_skipped,
                claiming=claiming,
            ):
                return None
            # Nothing written. A firing that already has a record is LOST, as for any claim.
            status = self.recorded(firing.id)
        except StoreError as exc:
            if isinstance(exc.__cause__, ConnectionFailure):
                raise
            return exc
        if status is None or (over_skipped and status == RunStatus.SKIPPED):
            return ClaimResult.OVERLAP
        return ClaimResult.LOST

    def recorded(self, firing_id: str) -> str | None:
        """The status of the firing's record, None when it has none."""
        status = RUN["status"]
        try:
            found = self._runs.find_one({"_id": firing_id}, {status: 1})
        except PyMongoError as exc:
            raise self._fail("find (run)", RUNS, exc) from exc
        return None if found is None else str(found.get(status))

    def lost(self, firing: Firing, holder: Mapping[str, Any]) -> ClaimOutcome:
        """An exclusive claim lost to ``holder``: its slot is released unless ``holder`` is an
        open exclusive run (the same firing: the slot is its own). LOST, or the release's
        StoreError."""
        if transitions.lost_keeps_slot(run_from(holder)):
            return ClaimResult.LOST
        # The firing was skipped, has ended, or is a non-exclusive run: no open run owns the slot.
        try:
            self.release(
                firing.job, transitions.release_slot(firing.id), "release job (lost claim)"
            )
        except StoreError as exc:
            return exc
        return ClaimResult.LOST

    def release(
        self, job: str, release: Write, operation: str, seen: Document | None = None
    ) -> bool:
        """Release the slot as ``release`` says, and (``seen``) if it is as it was read."""
        try:
            result = update_job(self._states, job, with_lease(release, None), seen=seen)
        except PyMongoError as exc:
            raise self._fail(f"update ({operation})", JOB_STATE, exc) from exc
        return result.modified_count == 1

    def _release_stale(
        self,
        job: str,
        held: str,
        state: Mapping[str, Any],
        now: datetime,
        claiming: Container[str] = (),
    ) -> bool:
        """Release a slot no open run holds: its run has ended, or no run was recorded within
        its claim's lease (the claimer died between the two writes). The release is
        conditional on the slot being as read. True: the slot was stale (released, here or by
        someone else), so the caller tries to take it again; False: it is held. Said at
        WARNING, but at DEBUG when ``held`` is a firing of the same claim batch (``claiming``):
        the batch took that slot a moment before for a firing recorded already, whose claim is
        lost and gives it back (:func:`.transitions.lost_keeps_slot`)."""
        try:
            found = self._runs.find_one({"_id": held})
        except PyMongoError as exc:
            raise self._fail("find (slot holder)", RUNS, exc) from exc
        lease = state.get(JOB_FIELDS["open_until"])
        holder = run_from(found) if found is not None else None
        over_skip = bool(state.get(JOB_FIELDS["open_over_skip"]))
        why = transitions.stale_slot(holder, utc(lease), now, over_skip=over_skip)
        if why is None:
            return False
        released = self.release(
            job,
            transitions.release_slot(held),
            "release stale job slot",
            {JOB_FIELDS["open_until"]: lease},
        )
        if released:
            places.log_stale_released(job, held, why, claiming)
        return True
