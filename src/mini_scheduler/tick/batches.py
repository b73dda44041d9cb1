"""The minute's writes: the firings are watched (the sweep will look at their runs), then claimed
in batches of :data:`~.work.BATCH` on the claim lane (a batch goes as soon as it is full, or when
the next firing's second is still to come), each firing won dispatched as soon as its batch
answers, on a dispatch worker of its own, and a batch's marks written in one request on the mark
lane as soon as its dispatches have answered (:mod:`.work`). A firing whose claim failed is
held.

The skipped firings and ranges of the plan are recorded on the same workers. Last, once every
claim has an answer, the firings the plan queues behind a waiting one (``overlap: buffer_*``) are
kept waiting in order (:mod:`.waits`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from functools import partial

from mini_scheduler import metrics as m
from mini_scheduler.claims.base import ClaimOutcome, ClaimRequest, ClaimResult
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs import Job, Target
from mini_scheduler.jobs.caps import cap_detail
from mini_scheduler.model import SkipReason, floor_minute, iso_seconds, log_keys
from mini_scheduler.tick.cancels import CANCEL, Cancels
from mini_scheduler.tick.dispatch import Dispatching, job_start, parameters_of
from mini_scheduler.tick.means import Means, Part
from mini_scheduler.tick.plan import Dispatch, TickPlan
from mini_scheduler.tick.report import Tally
from mini_scheduler.tick.skips import Skips
from mini_scheduler.tick.waits import Waits, waited
from mini_scheduler.tick.work import BATCH, STORE_WORKERS, Awaited, Marks, Work

log = logging.getLogger("mini_scheduler.ticker")


class MinuteWrites(Part):
    """Claims, dispatches and marks a plan's firings, and records its skips, on a pool of
    ``settings.dispatch_workers``."""

    def __init__(self, means: Means, *, dispatching: Dispatching, skips: Skips) -> None:
        super().__init__(means)
        self.dispatching = dispatching
        self.skips = skips
        self.waits = Waits(means, skips=skips)
        self.cancels = Cancels(means, dispatchers=dispatching.dispatchers, skips=skips)

    def write(self, plan: TickPlan, tally: Tally, deadline: datetime | None) -> bool:
        """Carry out the plan's claims and skips; False when no firing could be claimed (their
        watch was not written): the deferred firings are then left as they are."""
        jobs = len(plan.dispatches) + len(plan.misfire_runs) + len(plan.skips) + len(plan.ranges)
        jobs += len(plan.waits)
        workers = max(1, min(self.settings.dispatch_workers, jobs))
        store = min(STORE_WORKERS, workers)
        with (
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dispatch") as pool,
            ThreadPoolExecutor(max_workers=store, thread_name_prefix="claim") as claiming,
            ThreadPoolExecutor(max_workers=store, thread_name_prefix="mark") as marking,
        ):
            work = Work(pool, claims=claiming, marks=marking)
            for skip_range in plan.ranges:
                work.submit(self.skips.skip_range, skip_range, tally)
            for s in plan.skips:
                work.submit(self.skips.skip, s.job, s.firing, s.reason, tally, s.deferred, s.detail)
            claims = [*plan.dispatches, *(d for group in plan.misfire_runs for d in group)]
            if claims and not self._watch(claims, tally):
                work.wait()
                return False
            marks = Marks(work, partial(self.dispatching.mark_all, tally=tally))
            for group in plan.misfire_runs:
                work.submit(self._fire_in_order, group, tally, deadline, marks)
            try:
                if any(group[0].job.capped for group in plan.misfire_runs):
                    # The oldest firing of an ``overlap: skip`` job takes its slot, not whichever
                    # claim a worker sends first: its missed firings before the minute's.
                    work.wait()
                self._claim_as_due(plan.dispatches, tally, deadline, work, marks)
                work.wait()
                for d in plan.waits:  # after the claims: the place of one that starts is free
                    self.waits.wait(d, tally)
            finally:
                # Whatever went wrong, the firings that were dispatched are marked: every task
                # let end first (a dispatch still running marks itself), then what is held.
                work.drain()
                marks.flush()
                work.wait()
        return True

    def _watch(self, claims: Sequence[Dispatch], tally: Tally) -> bool:
        """Have the sweep look at the runs of ``claims`` from the minute the first of their
        deadlines can pass (a lease, or a job's timeout); when that cannot be written, none is
        claimed (each is held)."""
        try:
            self.claims.watch(
                [d.firing.id for d in claims], self.first_deadline([d.job for d in claims])
            )
        except StoreError as exc:
            tally.add("errors")
            self.metrics.add(m.CLAIM_ERRORS)
            for d in claims:
                _hold(d, tally)
            log.error("No firing claimed this tick (%d held): %s", len(claims), exc)
            return False
        return True

    def first_deadline(self, jobs: Sequence[Job]) -> datetime:
        """The start of the minute in which a run claimed from now on can first pass its
        deadline: the store looks at the runs from then on, each again at its own deadline."""
        soonest = min([self.settings.claim_lease_seconds, *(job.timeout for job in jobs)])
        return floor_minute(self.clock.now()) + timedelta(seconds=soonest)

    def _claim_as_due(
        self,
        dispatches: Sequence[Dispatch],
        tally: Tally,
        deadline: datetime | None,
        work: Work,
        marks: Marks,
    ) -> None:
        """Claim the firings in batches as they fall due: a batch goes when it is full, or
        before waiting for a later firing's second (each batch's marks go when its dispatches
        have answered: nothing waits for the next batch)."""
        batch: list[Dispatch] = []

        def send() -> None:
            if batch:
                work.claim(self._fire_batch, list(batch), tally, deadline, marks)
                batch.clear()

        for d in dispatches:
            if deadline is not None and d.due >= deadline:
                send()
                self._out_of_time(d, tally, deadline)  # no sleeping past the deadline
                continue
            wait = (d.due - self.clock.now()).total_seconds()
            if wait > 0:
                send()
                if wait >= 1:  # the firings in flight go, and are marked, before the wait
                    work.settle(timeout=wait - 0.5)
                    wait = (d.due - self.clock.now()).total_seconds()
                if wait > 0:
                    self.clock.sleep(wait)
            batch.append(d)
            if len(batch) == BATCH:
                send()
        send()

    def _fire_in_order(
        self, group: tuple[Dispatch, ...], tally: Tally, deadline: datetime | None, marks: Marks
    ) -> None:
        """A job's missed firings (``fire_all``), oldest first: each claimed, then dispatched,
        before the next; their marks a batch."""
        awaited = marks.expect(len(group))
        for d in group:
            self._fire_batch([d], tally, deadline, marks, awaited=awaited)

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
        marks: Marks,
        *,
        awaited: Awaited | None = None,
    ) -> None:
        """Claim ``batch`` in one request; dispatch each firing won on a worker of its own, the
        batch's marks written when they have answered. With ``awaited`` (a job's missed
        firings, in order) each is dispatched here, and counted down there."""
        now = self.clock.now()
        if deadline is not None and now >= deadline:
            for d in batch:
                self._out_of_time(d, tally, deadline)
            if awaited is not None:
                awaited.done(None)
            return
        lease = now + timedelta(seconds=self.settings.claim_lease_seconds)
        origin = self.settings.origin
        requests = [
            ClaimRequest(
                d.firing,
                d.job.exclusive,
                _over_skipped(d),
                d.job.places,
                job_start(d.job, parameters_of(d.job, d.firing), origin),
            )
            for d in batch
        ]
        try:
            outcomes = self.claims.claim_many(
                requests, now=now, lease_until=lease, origin=self.settings.origin
            )
        except StoreError as exc:
            outcomes = [exc] * len(batch)
        won = [
            d
            for d, outcome in zip(batch, outcomes, strict=True)
            if self._claimed(d, outcome, tally)
        ]
        if awaited is not None:  # a batch of one, in order
            if won:
                self._dispatch_and_mark(won, tally, awaited)
            else:
                awaited.done(None)
            return
        batch_marks = marks.expect(len(won))
        for group in self._groups(won):  # each on a dispatch worker of its own
            marks.work.submit(self._dispatch_and_mark, group, tally, batch_marks)

    def _groups(self, won: Sequence[Dispatch]) -> list[list[Dispatch]]:
        """The firings won, as the dispatches that send them: one each, or a target's firings
        together in requests of its kind's batch size (a queue's, a topic's, a bus's)."""
        dispatchers = self.dispatching.dispatchers
        groups: list[list[Dispatch]] = []
        open_groups: dict[Target, list[Dispatch]] = {}
        for d in won:
            size = dispatchers.batch_size(d.job.target)
            if size <= 1:
                groups.append([d])
                continue
            group = open_groups.get(d.job.target)
            if group is None or len(group) >= size:
                group = open_groups[d.job.target] = []
                groups.append(group)
            group.append(d)
        return groups

    def _claimed(self, d: Dispatch, outcome: ClaimOutcome, tally: Tally) -> bool:
        """Whether the claim of ``d`` was won; a claim lost, refused or failed is counted and
        said here. A deferred firing's claim that has an answer is noted, to forget it. An
        ``overlap: cancel_other`` firing refused stops the open run and claims again."""
        if outcome is ClaimResult.OVERLAP and d.job.overlap == CANCEL:
            retaken = self.cancels.retake(d, tally)
            if retaken is None:  # not stopped: recorded SKIPPED (answered there), saying why
                return False
            outcome = retaken
        if not isinstance(outcome, StoreError):
            self._answer(d, outcome, tally)
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
        elif outcome is ClaimResult.OVERLAP and d.job.buffer_limit:
            self.waits.refused(d, tally)
        elif outcome is ClaimResult.OVERLAP:
            self.skips.skip(d.job, d.firing, SkipReason.OVERLAP, tally, detail=cap_detail(d.job))
        else:
            tally.add("claimed")
            self.metrics.add(m.FIRINGS_CLAIMED)
            return True
        return False

    def _answer(self, d: Dispatch, outcome: ClaimResult, tally: Tally) -> None:
        """Note that ``d``'s deferred firing has an answer, to forget it; for a job whose
        firings wait (:mod:`.waits`), a waiting one is forgotten at once once it starts (or
        waits on), and one kept waiting on a refusal is answered when it is."""
        if d.deferred is None:
            return
        if d.job.buffer_limit and waited(d):
            if outcome is not ClaimResult.OVERLAP:
                self.waits.answered(d, outcome, tally)
        elif not (d.job.buffer_limit and outcome is ClaimResult.OVERLAP):
            tally.answer(d.deferred)

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

    def _dispatch_and_mark(self, group: Sequence[Dispatch], tally: Tally, batch: Awaited) -> None:
        """Dispatch ``group`` (one target's firings), each counted down in ``batch`` whatever
        happened: the batch's other marks never wait on it."""
        answered = 0
        try:
            target = group[0].job.target
            pairs = [(d.job, d.firing) for d in group]
            for mark in self.dispatching.dispatch_many(target, pairs, tally):
                answered += 1
                batch.done(mark)
        finally:
            for _ in range(len(group) - answered):
                batch.done(None)


def _hold(d: Dispatch, tally: Tally) -> None:
    """Leave ``d`` to the next tick: a cron firing holds the watermark at its instant; a
    deferred one stays stored, and the next tick reads it again (its instant, long past, must
    not pull the watermark back)."""
    if d.deferred is None:
        tally.hold(d.held_at)


def _over_skipped(d: Dispatch) -> bool:
    """Whether ``d``'s claim wins over its firing's SKIPPED record: a backfill's, and a waiting
    firing taken back from the region that took it over (:mod:`mini_scheduler.carry.takeover`)."""
    return d.firing.backfill or d.over_skipped
