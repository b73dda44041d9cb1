"""Carry out a tick's plan against the stores, and report what happened.

The executor decides nothing the plan has not decided; what it learns on the way (a claim a
peer won, a job's slot still held by its previous run, a store or target that failed) it reports
in the :class:`~mini_scheduler.tick.report.Tally`. Order: the sweep first (a run it times out
frees its job's overlap slot for this minute), then the fan-out or the minute's writes, then the
watermark, which never moves past a firing that was neither claimed nor recorded.

The minute's writes: the firings are watched (the sweep will look at their runs), then claimed
in batches of :data:`BATCH` (a batch goes as soon as it is full, or when the next firing's second
is still to come), each firing won dispatched at once on its own worker, and the marks of the
dispatched firings written in batches the same way. A firing whose claim failed is held.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from mini_scheduler import metrics as m
from mini_scheduler.claims.base import (
    SCHEDULE,
    ClaimRequest,
    ClaimResult,
    ClaimStore,
    Deferred,
    MarkRequest,
)
from mini_scheduler.claims.records import JobStart, RunRecord
from mini_scheduler.clock import Clock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.errors import DispatchError, StoreError
from mini_scheduler.failures import FinalFailures, dispatch_failed
from mini_scheduler.jobs import Job
from mini_scheduler.jobs.model import pause_after_failures
from mini_scheduler.metrics import Metrics
from mini_scheduler.model import (
    Firing,
    RunStatus,
    SkipReason,
    firing_from_id,
    floor_minute,
    iso_seconds,
    job_of,
    log_keys,
    payload,
)
from mini_scheduler.retries import defer_retry
from mini_scheduler.tick.lines import (
    DISPATCHED,
    NOT_DISPATCHED,
    SKIPPED,
    SKIPPED_OVERLAP,
    SKIPPED_RANGE,
    TAKEN_OVER,
    log_decisions,
)
from mini_scheduler.tick.plan import Dispatch, SkipRange, TickPlan
from mini_scheduler.tick.report import Tally
from mini_scheduler.wake import Wake

log = logging.getLogger("mini_scheduler.ticker")

MARK_ATTEMPTS = 3  # tries of a dispatched firing's mark, on top of the SDK's own retries
BATCH = 25  # claims or marks in one store request (DynamoDB's BatchExecuteStatement limit)


class _Work:
    """The futures of one tick's writes; tasks may add more while it waits for them all."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self._pool = pool
        self._lock = threading.Lock()
        self._futures: list[Future[None]] = []

    def submit(self, task: Callable[..., None], *args: object) -> None:
        future = self._pool.submit(task, *args)
        with self._lock:
            self._futures.append(future)

    def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds (real time) until no task runs, counting those the
        running ones add meanwhile: a claimed batch submits its dispatches, whose marks must be
        in before the caller flushes them. Errors are ``wait``'s."""
        end = time.monotonic() + timeout
        while True:
            with self._lock:
                pending = [f for f in self._futures if not f.done()]
            left = end - time.monotonic()
            if not pending or left <= 0:
                return
            wait(pending, timeout=left)

    def wait(self) -> None:
        """Wait for every task, those added meanwhile too; the first error raised is raised."""
        while True:
            with self._lock:
                pending = [f for f in self._futures if not f.done()]
            if not pending:
                break
            wait(pending)
        for future in self._futures:
            future.result()


class _Marks:
    """Marks of dispatched firings, written :data:`BATCH` at a time on the tick's workers."""

    def __init__(self, work: _Work, write: Callable[[Sequence[MarkRequest]], None]) -> None:
        self.work = work
        self._write = write
        self._lock = threading.Lock()
        self._waiting: list[MarkRequest] = []

    def add(self, mark: MarkRequest) -> None:
        with self._lock:
            self._waiting.append(mark)
            if len(self._waiting) < BATCH:
                return
            batch, self._waiting = self._waiting, []
        self.work.submit(self._write, batch)

    def flush(self) -> None:
        with self._lock:
            batch, self._waiting = self._waiting, []
        if batch:
            self.work.submit(self._write, batch)


class Executor:
    """Carries plans out. One per container; ``execute`` is safe to call repeatedly."""

    def __init__(
        self,
        *,
        settings: Settings,
        claims: ClaimStore,
        dispatchers: Dispatchers,
        clock: Clock,
        metrics: Metrics,
        fanout: Callable[[dict[str, Any]], None] | None = None,
        retry_sleep: Callable[[float], None] = time.sleep,
        failures: FinalFailures | None = None,
        wake: Wake | None = None,
    ) -> None:
        self.settings = settings
        self.claims = claims
        self.dispatchers = dispatchers
        self.clock = clock
        self.metrics = metrics
        self.fanout = fanout
        self.retry_sleep = retry_sleep  # worker threads back off on it, not on the clock
        self.failures = failures  # a final failure's event and pause (None: neither)
        self.wake = wake  # told of a retry deferred, in case it is due in this minute

    def execute(self, plan: TickPlan, *, deadline: datetime | None = None) -> Tally:
        """Carry ``plan`` out. Past ``deadline`` no firing is claimed: each one left is held, so
        the watermark stops at the first and the next tick handles them as misfires."""
        tally = Tally()
        if plan.failed_closed:
            tally.errors += 1
            return tally
        if plan.already_handled:
            return tally
        tally.misfired = plan.misfired
        self._log_decisions(plan, tally)
        self._sweep(plan, tally)
        if plan.fan_out:
            self._fan_out(plan.minute, plan.due_count, tally)
            if (
                plan.dispatches or plan.dropped or plan.moved or plan.skips
            ):  # the deferred firings: the parent's own
                self._write(plan, tally, deadline)
            return tally
        if plan.mode == "active":
            self._write(plan, tally, deadline)
        self._advance(plan, tally)
        return tally

    # -- what the plan decided, said ---------------------------------------------------------

    def _log_decisions(self, plan: TickPlan, tally: Tally) -> None:
        for left in plan.left_alone:
            reason = "standby" if left.pause is None else "paused"
            tally.skip(reason, left.firings)
            self.metrics.add(m.skipped(reason), left.firings)
        log_decisions(plan)

    # -- the minute's writes -----------------------------------------------------------------

    def _write(self, plan: TickPlan, tally: Tally, deadline: datetime | None) -> None:
        jobs = len(plan.dispatches) + len(plan.misfire_runs) + len(plan.skips) + len(plan.ranges)
        workers = max(1, min(self.settings.dispatch_workers, jobs))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dispatch") as pool:
            work = _Work(pool)
            for skip_range in plan.ranges:
                work.submit(self._skip_range, skip_range, tally)
            for s in plan.skips:
                work.submit(self._skip, s.job, s.firing, s.reason, tally, s.deferred)
            claims = [*plan.dispatches, *(d for group in plan.misfire_runs for d in group)]
            if claims and not self._watch(claims, tally):
                work.wait()
                return
            marks = _Marks(work, partial(self._mark_all, tally=tally))
            for group in plan.misfire_runs:
                work.submit(self._fire_in_order, group, tally, deadline, marks)
            try:
                if any(group[0].job.overlap == "skip" for group in plan.misfire_runs):
                    # The oldest firing of an ``overlap: skip`` job takes its slot, not whichever
                    # claim a worker sends first: its missed firings before the minute's.
                    work.wait()
                self._claim_as_due(plan.dispatches, tally, deadline, work, marks)
                work.wait()
            finally:
                # Whatever went wrong, the firings that were dispatched are marked.
                marks.flush()
                work.wait()
        self._forget_deferred(plan, tally)

    def _forget_deferred(self, plan: TickPlan, tally: Tally) -> None:
        """Forget the deferred firings whose claim has an answer, and those no job can run
        (said once, here). One that could not be forgotten is read again: its claim is then
        LOST, which changes nothing."""
        for item, why in plan.dropped:
            log.warning(
                "Deferred firing %s (%s) dropped - %s",
                item.firing.id,
                item.reason,
                why,
                extra=log_keys(item.firing.job, item.firing.id),
            )
        done = [*tally.answered, *(item for item, _ in plan.dropped)]
        if not done and not plan.moved:
            return
        answered = {item.key for item in tally.answered}
        steps = [(d.deferred, d.then) for d in plan.dispatches]
        steps += [(s.deferred, s.then) for s in plan.skips]
        advances = {
            deferred.key: (deferred, then)
            for deferred, then in steps
            if then is not None and deferred is not None and deferred.key in answered
        }
        advances.update((done.key, (done, then)) for done, then in plan.moved)
        ends: dict[str, tuple[Deferred, Deferred | None]] = {
            item.key: (item, None)
            for item in done
            if item.reason == SCHEDULE and item.key not in advances
        }
        try:
            for deferred, then in advances.values():  # each schedule keeps its next firing
                self._advance_schedule(deferred, then)
            for deferred, _ in ends.values():  # one with none left ends: its definition goes
                self.claims.advance_schedule(deferred, None)
            self.claims.drop_deferred(
                [item for item in done if item.key not in advances and item.key not in ends]
            )
        except StoreError as exc:
            tally.add("errors")
            log.error("Deferred firings not forgotten (read again next tick): %s", exc)

    def _advance_schedule(self, done: Deferred, then: Deferred) -> None:
        """A runtime schedule's next firing in place of the one answered, unless the schedule
        was deleted since the tick read it (a delete is never undone)."""
        if not self.claims.advance_schedule(done, then):
            log.info(
                "Runtime schedule %s was deleted, or moved on by another tick, during this tick "
                "- its next firing %s is not written here",
                done.firing.job,
                then.firing.id,
                extra=log_keys(done.firing.job, then.firing.id),
            )

    def _watch(self, claims: Sequence[Dispatch], tally: Tally) -> bool:
        """Have the sweep look at the runs of ``claims`` from the minute the first of their
        deadlines can pass (a lease, or a job's timeout); when that cannot be written, none is
        claimed (each is held)."""
        try:
            self.claims.watch(
                [d.firing.id for d in claims], self._first_deadline([d.job for d in claims])
            )
        except StoreError as exc:
            tally.add("errors")
            self.metrics.add(m.CLAIM_ERRORS)
            for d in claims:
                _hold(d, tally)
            log.error("No firing claimed this tick (%d held): %s", len(claims), exc)
            return False
        return True

    def _first_deadline(self, jobs: Sequence[Job]) -> datetime:
        """The start of the minute in which a run claimed from now on can first pass its
        deadline: the store looks at the runs from then on, each again at its own deadline."""
        soonest = min([self.settings.claim_lease_seconds, *(job.timeout for job in jobs)])
        return floor_minute(self.clock.now()) + timedelta(seconds=soonest)

    def _claim_as_due(
        self,
        dispatches: Sequence[Dispatch],
        tally: Tally,
        deadline: datetime | None,
        work: _Work,
        marks: _Marks,
    ) -> None:
        """Claim the firings in batches as they fall due: a batch goes when it is full, or
        before waiting for a later firing's second. Before a wait of a second or more, the
        firings in flight are let finish and their marks go (not a second later)."""
        batch: list[Dispatch] = []

        def send() -> None:
            if batch:
                work.submit(self._fire_batch, list(batch), tally, deadline, marks)
                batch.clear()

        for d in dispatches:
            if deadline is not None and d.due >= deadline:
                send()
                self._out_of_time(d, tally, deadline)  # no sleeping past the deadline
                continue
            wait = (d.due - self.clock.now()).total_seconds()
            if wait > 0:
                send()
                if wait >= 1:
                    work.settle(timeout=wait - 0.5)
                    marks.flush()
                    wait = (d.due - self.clock.now()).total_seconds()
                if wait > 0:
                    self.clock.sleep(wait)
            batch.append(d)
            if len(batch) == BATCH:
                send()
        send()

    def _advance(self, plan: TickPlan, tally: Tally) -> None:
        if plan.advance_to is None:
            return
        held = min(tally.held_at, default=None)
        target = plan.advance_to if held is None else min(plan.advance_to, held)
        # A first tick that held its first firing still writes the watermark (at that firing):
        # without one, the next tick would count itself the region's first and skip the minute.
        if plan.handled is None or target > plan.handled:
            self.claims.advance_watermark(plan.scope, target)

    # -- the sweep ---------------------------------------------------------------------------

    def _sweep(self, plan: TickPlan, tally: Tally) -> None:
        """Runs past their deadline, each on its own: one that fails leaves the others."""
        now = self.clock.now()
        sweep = plan.sweep
        steps: list[tuple[RunRecord, Callable[[], None]]] = [
            (run, partial(self._time_out, run, now, tally)) for run in sweep.time_outs
        ]
        steps += [(run, partial(self._fail_unrunnable, run, why, now)) for run, why in sweep.fails]
        steps += [
            (run, partial(self._take_over, run, job, now, tally)) for run, job in sweep.take_overs
        ]
        for run, step in steps:
            try:
                step()
            except StoreError as exc:
                tally.add("errors")
                log.error("Sweep of firing %s failed: %s", run.firing_id, exc)

    def _fail_unrunnable(self, run: RunRecord, why: str, now: datetime) -> None:
        self.claims.fail(firing_from_id(run.firing_id), now=now, error=f"not dispatched: {why}")
        log.error(
            NOT_DISPATCHED,
            run.job,
            run.firing_id,
            why,
            extra=log_keys(run.job, run.firing_id),
        )

    # -- one firing ------------------------------------------------------------------------

    def _fan_out(self, minute: datetime, due: int, tally: Tally) -> int:
        """Invoke one shard worker (this function, asynchronously) per shard. A shard whose
        invocation fails keeps its watermark: Lambda retries it, or the next tick's shard takes
        its minute as misfires. Nothing is lost."""
        assert self.fanout is not None  # nosec B101 # narrowing: fan-out is planned only with one
        count = self.settings.fanout_shards
        log.info(
            "%d firings due in minute %s - fanning out to %d shards",
            due,
            iso_seconds(minute),
            count,
        )

        def invoke(index: int) -> None:
            assert self.fanout is not None  # nosec B101 # type narrowing, as above
            event = {"tick": iso_seconds(minute), "shard": index, "shards": count}
            try:
                self.fanout(event)
            except DispatchError as exc:
                tally.add("errors")
                log.error(
                    "Shard %d of %d for minute %s not invoked: %s",
                    index,
                    count,
                    iso_seconds(minute),
                    exc,
                )

        # The shard invocations go out together: one after another, 40 of them took a second.
        with ThreadPoolExecutor(max_workers=min(count, 16), thread_name_prefix="fanout") as pool:
            list(pool.map(invoke, range(count)))
        return count

    def _fire_in_order(
        self, group: tuple[Dispatch, ...], tally: Tally, deadline: datetime | None, marks: _Marks
    ) -> None:
        """A job's missed firings (``fire_all``), oldest first: each claimed, then dispatched,
        before the next."""
        for d in group:
            self._fire_batch([d], tally, deadline, marks, at_once=True)

    def _out_of_time(self, plan: Dispatch, tally: Tally, deadline: datetime) -> None:
        _hold(plan, tally)
        self.metrics.add(m.FIRINGS_HELD)
        log.warning(
            "Job %s not claimed this tick - firing %s: the tick is out of time (its deadline "
            "was %s); the next tick handles it",
            plan.job.name,
            plan.firing.id,
            iso_seconds(deadline),
            extra=log_keys(plan.job.name, plan.firing.id),
        )

    def _fire_batch(
        self,
        batch: Sequence[Dispatch],
        tally: Tally,
        deadline: datetime | None,
        marks: _Marks,
        *,
        at_once: bool = False,
    ) -> None:
        """Claim ``batch`` in one request; dispatch each firing won on a worker of its own (or
        here, ``at_once``), its mark added to ``marks``."""
        now = self.clock.now()
        if deadline is not None and now >= deadline:
            for d in batch:
                self._out_of_time(d, tally, deadline)
            return
        lease = now + timedelta(seconds=self.settings.claim_lease_seconds)
        requests = [
            ClaimRequest(d.firing, d.job.overlap == "skip", over_skipped=d.firing.backfill)
            for d in batch
        ]
        try:
            outcomes = self.claims.claim_many(
                requests, now=now, lease_until=lease, origin=self.settings.origin
            )
        except StoreError as exc:
            outcomes = [exc] * len(batch)
        won: list[Dispatch] = []
        for d, outcome in zip(batch, outcomes, strict=True):
            if d.deferred is not None and not isinstance(outcome, StoreError):
                tally.answer(d.deferred)
            if isinstance(outcome, StoreError):
                self._not_claimed(d, outcome, tally)
            elif outcome is ClaimResult.LOST:
                tally.skip("lost_claim")
                self.metrics.add(m.skipped("lost_claim"))
                log.debug(
                    "Job %s claimed by a peer - firing %s",
                    d.job.name,
                    d.firing.id,
                    extra=log_keys(d.job.name, d.firing.id),
                )
            elif outcome is ClaimResult.OVERLAP:
                self._skip(d.job, d.firing, SkipReason.OVERLAP, tally)
            else:
                tally.add("claimed")
                self.metrics.add(m.FIRINGS_CLAIMED)
                won.append(d)
        for d in won:
            if at_once:
                self._dispatch_and_mark(d.job, d.firing, tally, marks)
            else:  # each on a worker of its own
                marks.work.submit(self._dispatch_and_mark, d.job, d.firing, tally, marks)

    def _not_claimed(self, d: Dispatch, exc: StoreError, tally: Tally) -> None:
        tally.add("errors")
        _hold(d, tally)
        self.metrics.add(m.CLAIM_ERRORS)
        log.error(
            "Job %s not claimed this tick - firing %s: %s",
            d.job.name,
            d.firing.id,
            exc,
            extra=log_keys(d.job.name, d.firing.id),
        )

    def _dispatch_and_mark(self, job: Job, firing: Firing, tally: Tally, marks: _Marks) -> None:
        mark = self._dispatch(job, firing, tally)
        if mark is not None:
            marks.add(mark)

    def _dispatch(self, job: Job, firing: Firing, tally: Tally) -> MarkRequest | None:
        """Dispatch a claimed firing: the mark to write, or None when the dispatch failed (the
        run is then recorded FAILED)."""
        parameters = dict(firing.parameters) if firing.manual else dict(job.parameters)
        body = payload(firing, parameters, self.settings.origin)
        try:
            reference = self.dispatchers.dispatch(job.target, firing.id, body)
        except DispatchError as exc:
            tally.add("errors")
            self.metrics.add(m.DISPATCH_ERRORS)
            log.error(
                "Job %s dispatch to %s failed - firing %s: %s",
                job.name,
                job.service,
                firing.id,
                exc,
                extra=log_keys(job.name, firing.id),
            )
            now = self.clock.now()
            try:
                self.claims.fail(firing, now=now, error=str(exc))
            except StoreError as store_exc:
                # Not recorded FAILED: the run stays CLAIMED and a later tick takes it over.
                log.error(
                    "Job %s - firing %s could not be recorded FAILED: %s",
                    job.name,
                    firing.id,
                    store_exc,
                    extra=log_keys(job.name, firing.id),
                )
                return None
            failed = dispatch_failed(job, firing, str(exc), origin=self.settings.origin, at=now)
            self._defer_retry(failed, "FAILED (dispatch)", tally, job.pause_after_failures)
            return None
        log.info(
            DISPATCHED,
            job.name,
            job.service,
            firing.id,
            extra=log_keys(job.name, firing.id, reference=reference),
        )
        tally.add("dispatched")
        self.metrics.add(m.FIRINGS_DISPATCHED)
        start = JobStart(
            job.service,
            job.schedule,
            {**parameters, "_origin": self.settings.origin},
            job.policy_record,
        )
        now = self.clock.now()
        return MarkRequest(firing, now + timedelta(seconds=job.timeout), start)

    def _mark_all(self, marks: Sequence[MarkRequest], *, tally: Tally) -> None:
        """Once dispatched, a run must say so, or a takeover would dispatch it again: the marks
        get attempts of their own on top of the SDK's retries, each one that failed again."""
        left: list[tuple[MarkRequest, StoreError | None]] = [(mark, None) for mark in marks]
        for attempt in range(MARK_ATTEMPTS):
            if attempt:
                self.retry_sleep(0.2 * 2 ** (attempt - 1))
            batch = [mark for mark, _ in left]
            try:
                errors = self.claims.mark_many(batch, now=self.clock.now())
            except StoreError as exc:
                errors = [exc] * len(batch)
            left = [(mark, e) for mark, e in zip(batch, errors, strict=True) if e is not None]
            if not left:
                return
        for mark, error in left:
            tally.add("errors")
            job = mark.firing.job
            log.error(
                "Job %s dispatched but not marked - firing %s may be dispatched again after "
                "its lease: %s",
                job,
                mark.firing.id,
                error,
                extra=log_keys(job, mark.firing.id),
            )

    def _skip(
        self,
        job: Job,
        firing: Firing,
        reason: str,
        tally: Tally,
        deferred: Deferred | None = None,
    ) -> None:
        """Record ``firing`` SKIPPED; a deferred firing's is forgotten once recorded (or found
        recorded), and read again when the write fails (it holds no watermark)."""
        try:
            written = self.claims.record_skipped(
                firing, now=self.clock.now(), reason=str(reason), origin=self.settings.origin
            )
        except StoreError as exc:
            tally.add("errors")
            if deferred is None:
                tally.hold(firing.scheduled)
            log.error(
                "Job %s - firing %s could not be recorded SKIPPED: %s",
                job.name,
                firing.id,
                exc,
                extra=log_keys(job.name, firing.id),
            )
            return
        if deferred is not None:
            tally.answer(deferred)
        if not written:
            return  # it has a record already (a peer claimed or skipped it)
        tally.skip(str(reason))
        self.metrics.add(m.skipped(str(reason)))
        if reason == SkipReason.OVERLAP:
            log.info(
                SKIPPED_OVERLAP,
                job.name,
                firing.id,
                extra=log_keys(job.name, firing.id),
            )
        else:
            log.info(
                SKIPPED,
                job.name,
                firing.id,
                reason,
                extra=log_keys(job.name, firing.id),
            )

    def _skip_range(self, skip_range: SkipRange, tally: Tally) -> None:
        job, firings, reason = skip_range.job, list(skip_range.firings), skip_range.reason
        # The range's record is keyed by its first firing. When that firing has a record of its
        # own (a tick that held the watermark behind it claimed it), the store writes nothing:
        # the range then starts at the next firing, or the rest would have no record at all.
        first = 0
        try:
            while first < len(firings):
                written = self.claims.record_skipped_range(
                    job.name,
                    firings[first],
                    firings[-1],
                    len(firings) - first,
                    now=self.clock.now(),
                    reason=str(reason),
                    origin=self.settings.origin,
                )
                if written is not False:  # None: a store that cannot tell
                    break
                first += 1
        except StoreError as exc:
            tally.add("errors")
            tally.hold(firings[first])
            log.error(
                "Job %s - %d missed firings could not be recorded SKIPPED: %s",
                job.name,
                len(firings) - first,
                exc,
                extra=log_keys(job.name),
            )
            return
        if first == len(firings):
            return  # every one of them has a record already
        firings = firings[first:]
        tally.skip(str(reason), len(firings))
        self.metrics.add(m.skipped(str(reason)), len(firings))
        log.info(
            SKIPPED_RANGE,
            job.name,
            len(firings),
            iso_seconds(firings[0]),
            iso_seconds(firings[-1]),
            reason,
            extra=log_keys(job.name),
        )

    def _time_out(self, run: RunRecord, now: datetime, tally: Tally) -> None:
        if not self.claims.time_out(run, now=now):
            return
        tally.add("timed_out")
        self.metrics.add(m.RUNS_TIMED_OUT)
        took = int((now - run.started_at).total_seconds() * 1000) if run.started_at else 0
        log.warning(
            "Job %s ended %s after %d ms - firing %s",
            run.job,
            RunStatus.TIMED_OUT,
            took,
            run.firing_id,
            extra=log_keys(run.job, run.firing_id),
        )
        timed_out = replace(run, status=RunStatus.TIMED_OUT, ended_at=now, timed_out_at=now)
        self._defer_retry(
            timed_out, str(RunStatus.TIMED_OUT), tally, pause_after_failures(run.retry)
        )

    def _defer_retry(
        self, run: RunRecord, status: str, tally: Tally, pause_after: int | None
    ) -> None:
        """Defer the failed run's next attempt; a store that cannot write it loses that retry
        (the run has ended: no later tick looks at it again), which is said, and counted. A
        failure no attempt follows is final: its event, and its job's pause when due."""
        run_id, now = run.firing_id, run.ended_at or self.clock.now()
        try:
            deferred = defer_retry(
                self.claims,
                run_id,
                run.retry,
                status,
                failed_at=now,
                origin=self.settings.origin,
                now=now,
                metrics=self.metrics,
            )
        except StoreError as exc:
            tally.add("errors")
            self.metrics.add(m.CLAIM_ERRORS)
            log.error(
                "Job %s - the retry of firing %s was not deferred, and will not run: %s",
                job_of(run_id),
                run_id,
                exc,
                extra=log_keys(job_of(run_id), run_id),
            )
            return
        if deferred is None and self.failures is not None:
            self.failures.failed(run, pause_after)
        elif deferred is not None and self.wake is not None:
            self.wake([deferred.due])

    def _take_over(self, run: RunRecord, job: Job, now: datetime, tally: Tally) -> None:
        base = firing_from_id(run.firing_id)
        lease = now + timedelta(seconds=self.settings.claim_lease_seconds)
        if not self.claims.take_over(run, now=now, lease_until=lease, origin=self.settings.origin):
            return
        tally.add("taken_over")
        log.warning(
            TAKEN_OVER,
            run.job,
            run.firing_id,
            extra=log_keys(run.job, run.firing_id),
        )
        firing = Firing(
            base.job,
            base.scheduled,
            base.manual,
            base.nonce,
            run.operator,
            run.parameters or {},
            base.attempt,
            reruns=run.reruns,
        )
        self._dispatch_now(job, firing, tally)

    def _dispatch_now(self, job: Job, firing: Firing, tally: Tally) -> None:
        """Dispatch one claimed firing and mark it, outside a tick's batches."""
        mark = self._dispatch(job, firing, tally)
        if mark is not None:
            self._mark_all([mark], tally=tally)

    # -- a manual run ------------------------------------------------------------------------

    def run_now(self, job: Job, firing: Firing) -> bool:
        """Claim a manual firing (its id is unique: the claim cannot be lost) and dispatch it;
        whether the dispatch went out."""
        self.claims.watch([firing.id], self._first_deadline([job]))
        now = self.clock.now()
        lease = now + timedelta(seconds=self.settings.claim_lease_seconds)
        result = self.claims.claim(firing, now=now, origin=self.settings.origin, lease_until=lease)
        if result is not ClaimResult.WON:
            raise StoreError(f"manual firing {firing.id} was already recorded")
        tally = Tally()
        self._dispatch_now(job, firing, tally)
        return tally.dispatched > 0


def _hold(d: Dispatch, tally: Tally) -> None:
    """Leave ``d`` to the next tick: a cron firing holds the watermark at its instant; a
    deferred one stays stored, and the next tick reads it again (its instant, long past, must
    not pull the watermark back)."""
    if d.deferred is None:
        tally.hold(d.firing.scheduled)
