"""Firings that wait for their job's open run to end (``overlap: buffer_one``, ``buffer_all``).

A firing of such a job whose exclusive claim finds the slot held is not skipped: it is kept
waiting (:meth:`~mini_scheduler.claims.base.ClaimStore.buffer`), a deferred firing for
``buffer`` due at its own instant, which every tick reads and claims again, the oldest of each
job first, until the slot is free (:func:`.deferred.plan_deferred`). At most the job's
``buffer_limit`` wait, a condition in the claim store; a firing past it is recorded SKIPPED
(``buffer_full``), saying that enough are already waiting. A waiting firing whose claim has an
answer is forgotten at once, its place given back, so that a firing queued behind it in the
same tick (:attr:`.plan.TickPlan.waits`) finds the place free. A deferred firing kept waiting
keeps its detail: a runtime schedule's entry, a backfill's id (read back, a backfill's firing is
still one, :func:`~mini_scheduler.claims.base.deferred_firing`: its claim wins over its SKIPPED
record, and its payload says ``"backfill": true``).

Like any deferred firing it survives a ticker's crash (it is read again, and its claim decides
that it starts once) and a failover: :mod:`mini_scheduler.carry` carries it with its place, under
its job's limit (:func:`carried_limit`), so that the region taking over keeps the same limit."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from mini_scheduler.claims.base import BUFFER, ClaimResult, Deferred
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs import CronFile, Job
from mini_scheduler.model import SkipReason, log_keys
from mini_scheduler.tick.deferred import deferred_job
from mini_scheduler.tick.lines import STILL_WAITING, WAITING, WAITING_STARTS
from mini_scheduler.tick.means import Means, Part
from mini_scheduler.tick.plan import Dispatch
from mini_scheduler.tick.report import Tally
from mini_scheduler.tick.skips import Skips

log = logging.getLogger("mini_scheduler.ticker")

_MS = timedelta(milliseconds=1)


def waited(d: Dispatch) -> bool:
    """Whether ``d`` is a firing that was kept waiting (its claim is tried again each tick)."""
    return d.deferred is not None and d.deferred.reason == BUFFER


def _due(d: Dispatch) -> datetime:
    """When a firing kept waiting is due: its own instant; a deferred firing's (a retry, a
    runtime schedule's) a millisecond after the one it stands for, whose key would be its own
    (that one is forgotten once this one waits)."""
    if d.deferred is None:
        return d.firing.scheduled
    return d.deferred.due + _MS


def full_detail(job: Job) -> str:
    """What a firing skipped because enough wait says (its record's reason)."""
    if job.buffer_limit == 1:
        return "a firing is already waiting for the previous run to end (overlap: buffer_one)"
    return (
        f"{job.buffer_limit} firings are already waiting for the previous run to end "
        f"(overlap: buffer_all, max_buffered {job.buffer_limit})"
    )


def carried_limit(item: Deferred, cron_file: CronFile | None) -> tuple[int, str] | None:
    """How many firings of ``item``'s job another region's store keeps waiting when a
    failover's carry writes ``item`` there (:mod:`mini_scheduler.carry`), and what a refusal
    says: its job's ``buffer_limit`` (cron.yaml's job, or the runtime schedule its detail
    keeps) and :func:`full_detail`. None for a job not known here (no cron file read yet, no
    job runs it, or it buffers no more): the carry then takes the strictest limit."""
    job = deferred_job(item, cron_file)[0] if cron_file is not None else None
    if job is None or not job.buffer_limit:
        return None
    return job.buffer_limit, full_detail(job)


class Waits(Part):
    """Keeps firings waiting, says when one starts, and skips those past the job's limit."""

    def __init__(self, means: Means, *, skips: Skips) -> None:
        super().__init__(means)
        self.skips = skips

    def refused(self, d: Dispatch, tally: Tally) -> None:
        """``d``'s claim found the slot held (OVERLAP) and its job buffers: a waiting firing
        stays waiting (read again next tick); any other is kept waiting now."""
        if waited(d):
            log.debug(STILL_WAITING, d.job.name, d.firing.id, extra=log_keys(d.job.name))
            return
        self.wait(d, tally)

    def answered(self, d: Dispatch, outcome: ClaimResult, tally: Tally) -> None:
        """A waiting firing's claim has an answer (WON: it starts now): forgotten at once, its
        place given back; one that cannot be forgotten now is at the tick's end."""
        if d.deferred is None:
            return
        if outcome is ClaimResult.WON:
            waited_for = self.clock.now() - d.firing.scheduled
            log.info(
                WAITING_STARTS,
                d.job.name,
                d.firing.id,
                int(waited_for.total_seconds()),
                extra=log_keys(d.job.name, d.firing.id),
            )
        try:
            self.claims.drop_deferred([d.deferred])
        except StoreError:
            tally.answer(d.deferred)

    def wait(self, d: Dispatch, tally: Tally) -> None:
        """Keep ``d`` waiting, or record it SKIPPED when its job has enough waiting. A store
        that fails holds a cron firing (the watermark stops at it) and leaves a deferred one
        to be read again."""
        job, firing = d.job, d.firing
        item = Deferred(
            firing,
            _due(d),
            BUFFER,
            self.settings.origin,
            self.clock.now(),
            dict(d.deferred.detail) if d.deferred is not None else {},
        )
        try:
            kept = self.claims.buffer(item, job.buffer_limit)
        except StoreError as exc:
            tally.add("errors")
            if d.deferred is None:
                tally.hold(firing.scheduled)
            log.error(
                "Job %s - firing %s could not be kept waiting: %s",
                job.name,
                firing.id,
                exc,
                extra=log_keys(job.name, firing.id),
            )
            return
        if not kept:
            self.skips.skip(
                job, firing, SkipReason.BUFFER_FULL, tally, d.deferred, full_detail(job)
            )
            return
        if d.deferred is not None:
            tally.answer(d.deferred)  # the waiting firing stands for it now
        tally.add("waiting")
        log.info(WAITING, job.name, firing.id, job.overlap, extra=log_keys(job.name, firing.id))
