"""A run's ends, redrives, time-outs and skips, written once for every backend.

What each of them writes is decided by :mod:`.transitions` (pure: no I/O, like a protocol
machine); the order of the writes, the read again of a run that changed meanwhile and the
follow-up in the job's state and slot are :class:`RunEnds`'. A backend only carries out a decided
write with a few primitives of its own, each one request (or one change under the memory store's
lock):

* ``_end_run``: an open run's end in one conditional update that answers the run as it was
  before (DynamoDB's ``ReturnValues: ALL_OLD``, MongoDB's ``findAndModify``);
* ``_read_run`` and ``_rewrite_run``: a change decided on the run as read, written conditionally
  on it being as read (tried again ``_conflict_attempts`` times when it changed meanwhile);
* ``_insert_run``: a new record unless the firing has one (a skip);
* ``_follow_run``, ``_release_slot``, ``_take_back_slot``, ``_release_place``, ``_take_place``:
  what follows a run's change outside its record (the job's latest state, or on DynamoDB, which
  keeps none, the sweep's watch of a reopened run; an exclusive run's slot; a capped run's
  places, :mod:`.places`), with ``_following`` saying what a failure of those
  does (MongoDB logs it; the others raise it);
* ``_expiry``: when a new record expires (None: never);
* ``_operation``: what surrounds each operation (the memory store's lock and call count).

:class:`Skips` is the skips alone, over one ``_skip``: the dry run's store, which writes nothing,
takes them from it too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

from mini_scheduler.claims import places, transitions
from mini_scheduler.claims.records import Redrive, RunRecord
from mini_scheduler.claims.transitions import Write
from mini_scheduler.model import Firing, RunStatus, firing_from_id

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""The lease of a place a redrive takes back: its run exists, so the lease never counts."""


@dataclass(frozen=True, slots=True)
class Skip:
    """A skip to record: ``firing`` SKIPPED at ``now``; with ``until`` and ``count``, as the
    first of a skipped range."""

    firing: Firing
    now: datetime
    reason: str
    origin: str
    until: datetime | None = None
    count: int | None = None


class Skips:
    """``record_skipped`` and ``record_skipped_range`` over one ``_skip``."""

    def _skip(self, skip: Skip) -> bool:
        """Record ``skip`` unless its firing has a record (False then)."""
        raise NotImplementedError

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        return self._skip(Skip(firing, now, reason, origin))

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
        return self._skip(Skip(Firing(job, first), now, reason, origin, last, count))


class CapItems(Protocol):
    """A store's caps kept as items of their own, a holder per place (:mod:`.dynamodb_places`,
    :mod:`.mongodb_places`)."""

    def holders(self, key: str) -> Mapping[str, datetime]: ...

    def take(
        self, key: str, firing_id: str, limit: int, *, lease: datetime, now: datetime
    ) -> bool: ...

    def release(self, key: str, firing_id: str) -> bool: ...


_Caps = TypeVar("_Caps", bound=CapItems)


class PlacesInItems(Generic[_Caps]):
    """``_release_place``, ``_take_place`` (a redrive's place, taken back with its lease passed:
    its run exists) and ``holders``, for a store whose caps are :class:`CapItems`."""

    _caps: _Caps

    def _release_place(self, key: str, firing_id: str) -> None:
        self._caps.release(key, firing_id)

    def _take_place(self, key: str, firing_id: str, limit: int, now: datetime) -> bool:
        return self._caps.take(key, firing_id, limit, lease=now, now=now)

    def holders(self, key: str) -> Mapping[str, datetime]:
        return self._caps.holders(key)


class RunEnds(Skips):
    """``fail``, ``close``, ``redrive``, ``time_out`` and the skips of the claim store
    protocol (:class:`.base.ClaimStore`), over the backend's primitives (the module's doc)."""

    _conflict_attempts = 1
    """How many times a change decided on a run as read is tried (read again each time)."""

    # -- the backend's primitives ------------------------------------------------------------

    def _operation(self) -> AbstractContextManager[None]:
        """What surrounds each operation: nothing, unless the store says otherwise."""
        return contextlib.nullcontext()

    run: Callable[[str], RunRecord | None]  # the store's read of one run (ClaimStore.run)

    def _expiry(self, now: datetime) -> datetime | None:
        """When a record written at ``now`` expires (None: it is kept)."""
        return None

    def _read_run(self, firing: Firing) -> RunRecord | None:
        """The firing's run as stored now (a consistent read), or None: the store's ``run``."""
        return self.run(firing.id)

    def _end_run(self, firing: Firing, write: Write) -> RunRecord | None:
        """``write`` (an open run's end) in one conditional update: the run as it was before,
        or None when the condition failed."""
        raise NotImplementedError

    def _rewrite_run(self, firing: Firing, write: Write) -> bool:
        """``write`` (a change decided on the run as read) in one conditional update: True
        when written, False when the condition failed."""
        raise NotImplementedError

    def _insert_run(self, firing: Firing, run: Mapping[str, Any], operation: str) -> bool:
        """A new record of ``run``'s fields unless the firing has one: True when written."""
        raise NotImplementedError

    def _follow_run(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        """What the store keeps beside the run record follows its change (the job's latest
        state, :func:`.transitions.job_follows`, where the store writes one)."""
        raise NotImplementedError

    def _release_slot(self, firing: Firing, release: Write) -> None:
        """An ended exclusive run releases the job's slot, if it holds it (``release``)."""
        raise NotImplementedError

    def _take_back_slot(self, firing: Firing, take: Write, after: RunRecord) -> bool:
        """A reopened exclusive run (``after``) takes the job's slot back, if it is free
        (``take``): False when another run holds it."""
        raise NotImplementedError

    def _release_place(self, key: str, firing_id: str) -> None:
        """An ended run gives back its place under the cap ``key``, if it holds one."""
        raise NotImplementedError

    def _take_place(self, key: str, firing_id: str, limit: int, now: datetime) -> bool:
        """A reopened run takes its place under the cap ``key`` again: False when the cap is
        full of others."""
        raise NotImplementedError

    def _following(self, firing: Firing, after: RunRecord) -> AbstractContextManager[None]:
        """What a failure of the follow-up does: raised, unless the store says otherwise."""
        return contextlib.nullcontext()

    # -- written once --------------------------------------------------------------------------

    def _finish(self, firing: Firing, write: Write) -> RunRecord | None:
        """An open run's end in one conditional write, then the job's state and slot; the run
        as it was before, or None when the write's condition failed."""
        before = self._end_run(firing, write)
        if before is None:
            return None
        self._follow(firing, before, transitions.applied(before, write))
        return before

    def _change(
        self, firing: Firing, decide: Callable[[RunRecord], RunRecord | None]
    ) -> RunRecord | None:
        """``decide``'s change of the run as read (read again when it changed meanwhile),
        followed in the job's state and slot: the run as it was before, or None."""
        done = transitions.change_run(
            lambda: self._read_run(firing),
            lambda change: self._rewrite_run(firing, change),
            decide,
            self._conflict_attempts,
        )
        if done is None:
            return None
        self._follow(firing, *done)
        return done[0]

    def _follow(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        """The store's own follow-up of the run, then an exclusive run's slot follows its end
        or its reopening (conditional: never another run's slot)."""
        with self._following(firing, after):
            self._follow_run(firing, before, after)
            reopened, caps = places.following(before, after)
            for key, limit in caps.items():
                if not reopened:
                    self._release_place(key, firing.id)
                elif not self._take_place(key, firing.id, limit, after.redriven_at or _EPOCH):
                    places.log_held(key, firing.id)
            slot = transitions.slot_follows(firing.id, before, after)
            if slot is None:
                return
            if not after.status.open:
                self._release_slot(firing, slot)
            elif not self._take_back_slot(firing, slot, after):
                places.log_slot_held(firing.job, firing.id)

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        with self._operation():
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
        with self._operation():
            if redrive is None:
                # The usual end: an open run never redriven, in one conditional write.
                before = self._finish(firing, transitions.ended(status, now=now, error=error))
                if before is not None:
                    return before
            return self._change(
                firing,
                lambda run: transitions.after_end(
                    run, status, now=now, error=error, redrive=redrive
                ),
            )

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        with self._operation():
            return self._change(
                firing_from_id(firing_id), lambda run: transitions.after_redrive(run, redrive)
            )

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        with self._operation():
            write = transitions.timed_out(now=now)
            return self._finish(firing_from_id(run.firing_id), write) is not None

    def _skip(self, skip: Skip) -> bool:
        run = transitions.skipped(
            skip.firing,
            now=skip.now,
            reason=skip.reason,
            origin=skip.origin,
            expires_at=self._expiry(skip.now),
            until=skip.until,
            count=skip.count,
        )
        operation = "skip" if skip.until is None else "skipped range"
        with self._operation():
            return self._insert_run(skip.firing, run, operation)
