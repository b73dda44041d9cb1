"""A claimed firing dispatched to its target and marked DISPATCHED; a run that failed here (its
dispatch, or its timeout in the sweep) gets its retry deferred, or its final failure said.

The mark is what keeps a takeover from dispatching a firing twice, so it gets attempts of its
own on top of the SDK's retries (:data:`MARK_ATTEMPTS`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from mini_scheduler import metrics as m
from mini_scheduler.claims.base import MarkRequest
from mini_scheduler.claims.records import JobStart, RunRecord
from mini_scheduler.dispatch.base import Answer, Dispatchers, Ended
from mini_scheduler.errors import DispatchError, StoreError
from mini_scheduler.jobs import Job, Target
from mini_scheduler.jobs.inputs import fill_input
from mini_scheduler.jobs.spread import planned
from mini_scheduler.model import Firing, firing_from_id, job_of, log_keys, payload
from mini_scheduler.tick.ends import DispatchEnds
from mini_scheduler.tick.lines import DISPATCHED
from mini_scheduler.tick.means import Means, Part
from mini_scheduler.tick.report import Tally
from mini_scheduler.wake import Wake

if TYPE_CHECKING:  # failures and retries are imported where a run fails, not at a cold start
    from mini_scheduler.failures import FinalFailures

log = logging.getLogger("mini_scheduler.ticker")

MARK_ATTEMPTS = 3  # tries of a dispatched firing's mark, on top of the SDK's own retries


class Dispatching(Part):
    """Dispatches claimed firings and marks them; defers the retry of a run that failed."""

    def __init__(
        self,
        means: Means,
        *,
        dispatchers: Dispatchers,
        retry_sleep: Callable[[float], None] = time.sleep,
        failures: FinalFailures | None = None,
        wake: Wake | None = None,
    ) -> None:
        super().__init__(means)
        self.dispatchers = dispatchers
        self.retry_sleep = retry_sleep  # worker threads back off on it, not on the clock
        self.failures = failures  # a final failure's event and pause (None: neither)
        self.wake = wake  # told of a retry deferred, in case it is due in this minute
        self.ends = DispatchEnds(
            self.claims,
            self.clock,
            self.metrics,
            origin=self.settings.origin,
            failures=failures,
            wake=wake,
            sleep=retry_sleep,
        )  # what follows the runs a dispatch ended

    def dispatch(self, job: Job, firing: Firing, tally: Tally) -> MarkRequest | None:
        """Dispatch a claimed firing: the mark to write, or None when the dispatch failed (the
        run is then recorded FAILED)."""
        return self.dispatch_many(job.target, [(job, firing)], tally)[0]

    def dispatch_many(
        self, target: Target, firings: Sequence[tuple[Job, Firing]], tally: Tally
    ) -> list[MarkRequest | None]:
        """Dispatch claimed firings of one ``target``, in as few requests as its kind allows
        (:meth:`Dispatchers.batch_size`): a mark each, None where the dispatch failed."""
        bodies = [self._body(job, firing) for job, firing in firings]
        if len(firings) == 1:
            firing, body = firings[0][1], bodies[0][1]
            answers: list[Answer | DispatchError]
            try:
                answers = [self.dispatchers.dispatch(target, firing.id, body)]
            except DispatchError as exc:
                answers = [exc]
        else:
            sent = [
                (firing.id, body) for (_, firing), (_, body) in zip(firings, bodies, strict=True)
            ]
            answers = self.dispatchers.dispatch_batch(target, sent)
        marks: list[MarkRequest | None] = []
        for (job, firing), (parameters, _), answer in zip(firings, bodies, answers, strict=True):
            try:
                marks.append(self._answered(job, firing, parameters, answer, tally))
            except Exception:  # one firing's trouble never costs the others their marks
                tally.add("errors")
                log.exception(
                    "Job %s - firing %s: its answer (%s) could not be handled",
                    job.name,
                    firing.id,
                    type(answer).__name__,
                    extra=log_keys(job.name, firing.id),
                )
                marks.append(None)
        return marks

    def _body(self, job: Job, firing: Firing) -> tuple[dict[str, Any], dict[str, Any]]:
        """The firing's parameters, and what its target receives (the envelope, or the job's
        ``input`` filled in from it)."""
        parameters = parameters_of(job, firing)
        body = payload(firing, parameters, self.settings.origin, _planned(job, firing))
        if job.input is not None:
            body = fill_input(job.input, body)
        return parameters, body

    def _answered(
        self,
        job: Job,
        firing: Firing,
        parameters: dict[str, Any],
        answer: Answer | DispatchError,
        tally: Tally,
    ) -> MarkRequest | None:
        if isinstance(answer, DispatchError):
            self._failed(job, firing, answer, tally)
            return None
        ended = answer if isinstance(answer, Ended) else None
        reference = answer.reference if isinstance(answer, Ended) else answer
        log.info(
            DISPATCHED,
            job.name,
            job.service,
            firing.id,
            extra=log_keys(
                job.name, firing.id, named=True, reference=logged(reference, job.target)
            ),
        )
        tally.add("dispatched")
        self.metrics.add(m.FIRINGS_DISPATCHED)
        start = job_start(job, parameters, self.settings.origin)
        deadline = self.clock.now() + timedelta(seconds=job.timeout)
        if ended is None:
            return MarkRequest(firing, deadline, start)
        if job.capped:  # its slot and places are given back by the store's close
            self.ends.hold(firing.id, ended.status, ended.error)
            return MarkRequest(firing, deadline, start)
        return MarkRequest(firing, deadline, start, ended.status, ended.error)

    def _failed(self, job: Job, firing: Firing, exc: DispatchError, tally: Tally) -> None:
        """A dispatch that failed: said, its run recorded FAILED, and its retry deferred."""
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
            return
        from mini_scheduler.failures import dispatch_failed

        failed = dispatch_failed(job, firing, str(exc), origin=self.settings.origin, at=now)
        self.defer_retry(failed, "FAILED (dispatch)", tally, job.pause_after_failures)

    def mark_all(self, marks: Sequence[MarkRequest], *, tally: Tally) -> None:
        """Once dispatched, a run must say so, or a takeover would dispatch it again: the marks
        get attempts of their own on top of the SDK's retries, each one that failed again."""
        left: list[tuple[MarkRequest, StoreError | None]] = [(mark, None) for mark in marks]
        at: dict[int, datetime] = {}  # when each mark was written
        for attempt in range(MARK_ATTEMPTS):
            if attempt:
                self.retry_sleep(0.2 * 2 ** (attempt - 1))
            batch, now = [mark for mark, _ in left], self.clock.now()
            try:
                errors = self.claims.mark_many(batch, now=now)
            except StoreError as exc:
                errors = [exc] * len(batch)
            at.update((id(mark), now) for mark, e in zip(batch, errors, strict=True) if e is None)
            left = [(mark, e) for mark, e in zip(batch, errors, strict=True) if e is not None]
            if not left:
                break
        self.ends.marked([(mark, at[id(mark)]) for mark in marks if id(mark) in at], tally)
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

    def dispatch_now(self, job: Job, firing: Firing, tally: Tally) -> None:
        """Dispatch one claimed firing and mark it, outside a tick's batches."""
        mark = self.dispatch(job, firing, tally)
        if mark is not None:
            self.mark_all([mark], tally=tally)

    def defer_retry(
        self, run: RunRecord, status: str, tally: Tally, pause_after: int | None
    ) -> None:
        """Defer the failed run's next attempt; a store that cannot write it loses that retry
        (the run has ended: no later tick looks at it again), which is said, and counted. A
        failure no attempt follows is final: its event, and its job's pause when due."""
        from mini_scheduler import retries

        run_id, now = run.firing_id, run.ended_at or self.clock.now()
        try:
            deferred = retries.defer_retry(
                self.claims,
                run_id,
                run.policy,
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


def parameters_of(job: Job, firing: Firing) -> dict[str, Any]:
    """The parameters a firing is dispatched with: a manual run's own, else its job's."""
    return dict(firing.parameters) if firing.manual else dict(job.parameters)


def job_start(job: Job, parameters: dict[str, Any], origin: str) -> JobStart:
    """Where a firing of ``job`` goes and with what (its claim writes it, and its mark)."""
    return JobStart(
        job.service,
        job.schedule,
        {**parameters, "_origin": origin},
        job.failure_policy,
        buffered=job.buffer_limit > 0 or job.pool is not None,
    )


def logged(reference: str, target: Target) -> str:
    """A dispatch line's ``reference``: the target's own id of the request (a Lambda request
    id, a message id), less the kind and name its message says already (``lambda:NAME:``)."""
    return reference.removeprefix(f"{target.kind}:{target.name}:")


def _planned(job: Job, firing: Firing) -> datetime | None:
    """The instant a job's ``jitter`` or ``window`` starts ``firing`` at, for its envelope:
    every attempt of the firing says the same, and a rerun the one of the firing it repeats (a
    manual run itself starts at once: it is not spread); None for a job that does not spread."""
    if not job.spread_seconds:
        return None
    if firing.reruns is not None:
        return planned(job, firing_from_id(firing.reruns).scheduled)
    return None if firing.manual else planned(job, firing.scheduled)
