"""A claim store that notes each write it passes on to the store it wraps.

Every write of the ClaimStore protocol is noted, as ``(kind, *what)``; every other member of
the protocol (the reads, and a member added later) goes straight through to the wrapped store,
and nothing else does. The contract suite runs it over the memory store ("recording"), and
``tests/contract/test_fakes.py`` checks it offers the whole protocol."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from mini_scheduler.claims.base import ClaimRequest, ClaimStore, Deferred, MarkRequest
from mini_scheduler.claims.records import Redrive, RunRecord
from mini_scheduler.model import Firing, RunStatus
from tests.contract.seams import protocol_members

CLAIM_STORE = protocol_members(ClaimStore)


class Recording:
    """``inner`` with its writes noted in :attr:`writes`. With ``watched_first`` a claim of a
    firing no ``watch`` named fails the test (the ticker always watches first)."""

    def __init__(self, inner: ClaimStore, *, watched_first: bool = True) -> None:
        self._inner = inner
        self._watched_first = watched_first
        self._lock = threading.Lock()
        self.writes: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in CLAIM_STORE:
            raise AttributeError(name)
        return getattr(self._inner, name)

    def _note(self, *write: Any) -> None:
        with self._lock:
            self.writes.append(write)

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        with self._lock:
            return [w[1:] for w in self.writes if w[0] == kind]

    def _check_watched(self, firing_ids: Sequence[str]) -> None:
        if self._watched_first:
            watched = {w[0] for w in self.of("watch")}
            assert all(fid in watched for fid in firing_ids), "claimed before it was watched"

    # -- claims and marks ------------------------------------------------------------------

    def claim(self, firing: Firing, **kwargs: Any) -> Any:
        self._check_watched([firing.id])
        outcome = self._inner.claim(firing, **kwargs)
        self._note("claim", firing.id, kwargs.get("exclusive", False), outcome)
        return outcome

    def claim_many(self, claims: Sequence[ClaimRequest], **kwargs: Any) -> list[Any]:
        self._check_watched([c.firing.id for c in claims])
        outcomes = self._inner.claim_many(claims, **kwargs)
        for c, outcome in zip(claims, outcomes, strict=True):
            self._note("claim", c.firing.id, c.exclusive, outcome)
        return outcomes

    def watch(self, firing_ids: Sequence[str], at: datetime) -> None:
        for firing_id in firing_ids:
            self._note("watch", firing_id)
        self._inner.watch(firing_ids, at)

    def take_over(self, run: RunRecord, **kwargs: Any) -> bool:
        self._note("take_over", run.firing_id)
        return self._inner.take_over(run, **kwargs)

    def mark_dispatched(self, firing: Firing, **kwargs: Any) -> None:
        self._note("mark", firing.id)
        self._inner.mark_dispatched(firing, **kwargs)

    def mark_many(self, marks: Sequence[MarkRequest], **kwargs: Any) -> list[Any]:
        for mark in marks:
            self._note("mark", mark.firing.id)
        return self._inner.mark_many(marks, **kwargs)

    def fail(self, firing: Firing, **kwargs: Any) -> None:
        self._note("fail", firing.id)
        self._inner.fail(firing, **kwargs)

    # -- skips, ends, the sweep ------------------------------------------------------------

    def record_skipped(self, firing: Firing, **kwargs: Any) -> bool:
        self._note("skip", firing.id, kwargs["reason"])
        return self._inner.record_skipped(firing, **kwargs)

    def record_skipped_range(self, job: str, first: datetime, *args: Any, **kwargs: Any) -> Any:
        self._note("range", job, first, args[1], kwargs["reason"])
        return self._inner.record_skipped_range(job, first, *args, **kwargs)

    def close(self, firing_id: str, status: RunStatus, **kwargs: Any) -> RunRecord | None:
        self._note("close", firing_id, status)
        return self._inner.close(firing_id, status, **kwargs)

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        self._note("redrive", firing_id)
        return self._inner.redrive(firing_id, redrive)

    def time_out(self, run: RunRecord, **kwargs: Any) -> bool:
        self._note("time_out", run.firing_id)
        return self._inner.time_out(run, **kwargs)

    # -- the job's and the table's state ---------------------------------------------------

    def advance_watermark(self, scope: str, to: datetime) -> None:
        self._note("watermark", scope, to)
        self._inner.advance_watermark(scope, to)

    def set_paused(self, job: str, paused: bool, **kwargs: Any) -> None:
        self._note("pause", job, paused)
        self._inner.set_paused(job, paused, **kwargs)

    # -- deferred firings ------------------------------------------------------------------

    def defer(self, deferred: Sequence[Deferred]) -> None:
        for item in deferred:
            self._note("defer", item.key, item.reason)
        self._inner.defer(deferred)

    def drop_deferred(self, deferred: Sequence[Deferred]) -> None:
        for item in deferred:
            self._note("drop", item.key)
        self._inner.drop_deferred(deferred)

    def buffer(self, deferred: Deferred, limit: int) -> bool:
        self._note("buffer", deferred.key, limit)
        return self._inner.buffer(deferred, limit)
