"""What follows a run's final failure: its ``Job Run Failed`` event, and the job's pause once
``pause_after_failures`` of its firings in a row have failed for good.

A failure is final when no attempt follows it (:func:`mini_scheduler.retries.defer_retry`
answers None: retries spent, no ``retry``, a manual run). Whoever learns it first hands it here,
once: the recorder at the first end it hears of a run, the sweep for a run it timed out, the
executor for a dispatch that failed. An alert that cannot be published is said and counted
(``AlertsUnpublished``), never raised: the run's recording stands.

*In a row* is read from the job's history at that moment, so a successful run writes nothing
more: the firings newest first (each firing's outcome is its latest attempt's), leaving out
those still open, skipped, or failed with an attempt to come; the job is paused when the
latest ``pause_after_failures`` of them all failed, none succeeding since. A resumed job whose
firings go on failing is paused again at its next final failure: its latest firings still all
failed. A job that is paused already is left alone (one ``Job Paused`` a pause).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final

from mini_scheduler import metrics as m
from mini_scheduler.alerts.base import DEAD_LETTER, JOB_PAUSED, RUN_FAILED, Alerts, dead_letter
from mini_scheduler.alerts.schema import PAUSED_BY, JobPaused, JobRunFailed
from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.clock import Clock
from mini_scheduler.errors import AlertError, SchedulerError, StoreError
from mini_scheduler.jobs.model import Job
from mini_scheduler.metrics import Metrics
from mini_scheduler.model import Firing, RunStatus, firing_from_id, log_keys
from mini_scheduler.retries import attempt_left

if TYPE_CHECKING:
    from mini_scheduler.carry.carrier import Peers

log = logging.getLogger("mini_scheduler.failures")

PAUSED = "Job %s paused after %d failures in a row - resume it with: mini-scheduler resume %s"
NOT_PUBLISHED = "Job %s - event %s of firing %s not published: %s"
NOT_COUNTED_THERE = "Job %s - its failures in a row in %s not counted (unread): %s"
NOT_COUNTED = "Job %s - its failures in a row were not counted, the job is not paused: %s"
MOST_READ: Final = 2000
"""The most run records read to count a job's failures in a row."""
_FAILED: Final = (RunStatus.FAILED, RunStatus.TIMED_OUT)


class FinalFailures:
    """Publishes final failures and pauses the jobs that keep failing. ``origin`` is this
    region and environment (``<region>/<environment>``)."""

    def __init__(
        self,
        claims: ClaimStore,
        alerts: Alerts,
        clock: Clock,
        metrics: Metrics,
        *,
        origin: str,
        peers: Peers | None = None,
    ) -> None:
        self.claims = claims
        self.peers = peers  # their histories count too: a failover carries the count
        self.alerts = alerts
        self.clock = clock
        self.metrics = metrics
        self.origin = origin

    def failed(self, run: RunRecord, pause_after: int | None) -> None:
        """``run`` (its record as it ended) failed for good: publish it (its
        :class:`~mini_scheduler.alerts.schema.JobRunFailed`, never the record), then pause its
        job when it is the ``pause_after``-th final failure in a row (None: never)."""
        failed = JobRunFailed.from_run(run, self.origin)
        self._publish(RUN_FAILED, run, lambda: self.alerts.run_failed(failed))
        queue = run.policy.dead_letter if run.policy is not None else None
        if queue is not None:
            letter = dead_letter(failed, run.parameters)
            self._publish(DEAD_LETTER, run, lambda: self.alerts.dead_letter(queue, letter))
        if pause_after is None:
            return
        try:
            self._pause_if_failing(run, pause_after)
        except StoreError as exc:
            log.error(NOT_COUNTED, run.job, exc, extra=log_keys(run.job, run.firing_id))

    def _pause_if_failing(self, run: RunRecord, pause_after: int) -> None:
        retry = run.policy.retry if run.policy is not None else None
        attempts = retry.retries + 1 if retry is not None else 1
        limit = min(MOST_READ, pause_after * (attempts + 1) + 10)
        failures = failures_in_a_row(self._history(run.job, limit), run)
        if failures < pause_after or run.job in self.claims.control(self.origin).paused:
            return
        now = self.clock.now()
        self.claims.set_paused(run.job, True, operator=PAUSED_BY, now=now)
        self.metrics.add(m.JOBS_PAUSED)
        log.error(
            PAUSED,
            run.job,
            failures,
            run.job,
            extra=log_keys(run.job, run.firing_id, failures=failures),
        )
        firing_id = firing_from_id(run.firing_id).firing_id
        paused = JobPaused(run.job, failures, firing_id, self.origin, now)
        self._publish(JOB_PAUSED, run, lambda: self.alerts.job_paused(paused))

    def _history(self, job: str, limit: int) -> list[RunRecord]:
        """The job's latest runs here, and in each peer region that answers (a failover
        carries the count: the firings that failed there before it count here); a run both
        hold is this region's."""
        runs: list[RunRecord] = []
        peers = self.peers
        if peers is not None:
            for region in peers.regions:
                try:
                    there = peers.store(region)
                    runs.extend(there.history(job, limit) if there is not None else ())
                except SchedulerError as exc:
                    log.warning(NOT_COUNTED_THERE, job, region, exc, extra=log_keys(job))
        return [*runs, *self.claims.history(job, limit)]

    def _publish(self, detail_type: str, run: RunRecord, publish: Callable[[], None]) -> None:
        """Publish, or say and count why not: whatever went wrong, the run stays recorded."""
        try:
            publish()
        except Exception as exc:  # an alert never fails the recording of a run
            why = str(exc) if isinstance(exc, AlertError) else f"{type(exc).__name__}: {exc}"
            self.metrics.add(m.ALERTS_UNPUBLISHED)
            log.error(
                NOT_PUBLISHED,
                run.job,
                detail_type,
                run.firing_id,
                why,
                extra=log_keys(run.job, run.firing_id),
            )


def failures_in_a_row(history: Sequence[RunRecord], latest: RunRecord) -> int:
    """How many of the job's latest firings failed for good in a row, newest first: the
    firings of ``history`` (a job's runs, any order) and of ``latest`` (its run that just
    failed, which a history read a moment before may not show yet), each judged by its latest
    attempt. One that succeeded ends the count; one still open, skipped, or failed with an
    attempt to come is passed over. A run's policy decides whether an attempt comes; one that
    kept none (a failed dispatch) is judged by ``latest``'s."""
    runs = {run.firing_id: run for run in history}
    runs[latest.firing_id] = latest
    newest: dict[str, tuple[str, RunRecord]] = {}  # firing id -> (its latest attempt's key, run)
    for run in runs.values():
        try:
            firing = firing_from_id(run.firing_id)
        except ValueError:
            continue
        held = newest.get(firing.firing_id)
        if held is None or firing.sort_key > held[0]:
            newest[firing.firing_id] = (firing.sort_key, run)
    count = 0
    for _, run in sorted(newest.values(), key=lambda found: found[0], reverse=True):
        if run.status is RunStatus.SUCCEEDED:
            break
        if run.status not in _FAILED:
            continue
        policy = run.policy if run.policy is not None else latest.policy
        if not attempt_left(run.firing_id, policy):
            count += 1
    return count


def dispatch_failed(
    job: Job, firing: Firing, error: str, *, origin: str, at: datetime
) -> RunRecord:
    """The record of a run whose dispatch failed at ``at``, as far as the ticker knows it
    (what the store wrote, and where it was to go)."""
    return RunRecord(
        firing.id,
        job.name,
        firing.scheduled_time,
        RunStatus.FAILED,
        origin=origin,
        ended_at=at,
        error=error,
        operator=firing.operator,
        manual=firing.manual,
        parameters=dict(firing.parameters) if firing.manual else dict(job.parameters),
        service=job.service,
        schedule=job.schedule,
        policy=job.failure_policy,
    )
