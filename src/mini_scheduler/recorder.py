"""The recorder closes runs from their completions: the end of a run's execution, or a redrive
that reopens it. The handler parses the event (:mod:`mini_scheduler.handlers.events`).

What an end does to a run that has ended already (a completion after the sweep's TIMED_OUT, the
end of a redriven attempt) is the claim store's rule
(:func:`mini_scheduler.claims.transitions.after_end`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mini_scheduler import metrics as m
from mini_scheduler.alerts.base import Alerts
from mini_scheduler.alerts.memory import RecordingAlerts
from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.claims.records import Redrive, RunRecord
from mini_scheduler.claims.transitions import after_end
from mini_scheduler.clock import Clock
from mini_scheduler.failures import FinalFailures
from mini_scheduler.jobs.model import FailurePolicy
from mini_scheduler.metrics import Metrics, RecordingMetrics
from mini_scheduler.model import RunStatus, iso_seconds, job_of, log_keys
from mini_scheduler.retries import defer_retry, next_attempt
from mini_scheduler.tick.cancels import cancelled
from mini_scheduler.wake import Wake

if TYPE_CHECKING:
    from mini_scheduler.carry.carrier import Peers

log = logging.getLogger("mini_scheduler.recorder")


@dataclass(frozen=True, slots=True)
class Completion:
    """The end of a run's execution; ``redrive_count`` > 0: of its redriven attempt (which
    began at ``redriven_at``, when the event says)."""

    firing_id: str
    status: RunStatus
    ended_at: datetime | None
    error: str | None
    source: str
    redrive_count: int = 0
    redriven_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Redriven:
    """Step Functions runs the execution again (a RUNNING event with ``redriveCount`` >= 1)."""

    firing_id: str
    count: int
    at: datetime | None


def _redrive(count: int, at: datetime | None, fallback: datetime) -> Redrive | None:
    return Redrive(count, at or fallback) if count else None


class Recorder:
    """Records completions in the claim store."""

    def __init__(
        self,
        claims: ClaimStore,
        clock: Clock,
        metrics: Metrics | None = None,
        *,
        origin: str = "recorder",
        alerts: Alerts | None = None,
        wake: Wake | None = None,
        peers: Peers | None = None,
        failures: FinalFailures | None = None,
    ) -> None:
        """``failures``: a ticker's own (its alerts and peers); else made of ``alerts`` and
        ``peers``."""
        self.claims = claims
        self.wake = wake  # told of a retry deferred, in case it is due in this minute
        self.clock = clock
        self.metrics: Metrics = metrics if metrics is not None else RecordingMetrics()
        self.origin = origin  # who defers a retry: this region's
        self.failures = failures or FinalFailures(
            claims,
            alerts if alerts is not None else RecordingAlerts(),
            clock,
            self.metrics,
            origin=origin,
            peers=peers,
        )

    def record(self, found: Completion | Redriven | None) -> dict[str, Any]:
        """Close (or reopen) the run ``found`` names, and answer what was done; None (an event
        that is no end of a run) changes nothing."""
        if found is None:
            return {"recorded": False, "reason": "not an end of run"}
        if isinstance(found, Redriven):
            return self._redriven(found)
        return self._ended(found)

    def _ended(self, completion: Completion) -> dict[str, Any]:
        ended = completion.ended_at or self.clock.now()
        count = completion.redrive_count
        redrive = _redrive(count, completion.redriven_at, ended)
        before = self.claims.close(
            completion.firing_id,
            completion.status,
            now=ended,
            error=completion.error,
            redrive=redrive,
        )
        if before is None:
            self._retry_again(completion)
            return self._ignored(completion.firing_id, completion.source, count)
        return self._recorded(before, completion, ended, redrive)

    def ended_at_dispatch(self, before: RunRecord, completion: Completion) -> dict[str, Any]:
        """What follows a run's end written in its mark (its dispatch answered its end:
        :func:`.transitions.marked`), ``before`` the run as its mark found it: its line, its
        count, a failed run's retry or final failure, as for an end the store closed here."""
        return self._recorded(before, completion, completion.ended_at or self.clock.now(), None)

    def _recorded(
        self,
        before: RunRecord,
        completion: Completion,
        ended: datetime,
        redrive: Redrive | None,
    ) -> dict[str, Any]:
        count = completion.redrive_count
        final = False  # a failure no attempt follows, heard for the first time
        if completion.status in _RETRIED and before.status.open:
            first = not before.earlier_ends  # a redriven run was counted at its first end
            last = self._retry(
                completion.firing_id, before.policy, completion.status, ended, count=first
            )
            final = first and last
        seen = before.redrives or 0
        late = before.swept and count == seen
        began = redrive.at if redrive and count > seen else before.redriven_at
        took = _millis(began or before.started_at or before.claimed_at or ended, ended)
        # Each run counts once, at its first end: a late end was counted as RunsTimedOut, a
        # redriven run at the end it had before its redrive. Counted before the end's line,
        # which may carry the count on Lambda (model.FIRING_LINE).
        if before.status.open and not before.earlier_ends:
            self.metrics.add(
                {
                    RunStatus.SUCCEEDED: m.RUNS_SUCCEEDED,
                    RunStatus.FAILED: m.RUNS_FAILED,
                    RunStatus.TIMED_OUT: m.RUNS_TIMED_OUT,
                }[completion.status]
            )
        self._log_end(before, completion, took, late)
        if before.buffered and before.status.open and self.wake is not None:
            self.wake([self.clock.now()])  # its slot is free: a firing that waits starts now
        if final:  # the run as the store wrote it
            after = after_end(
                before, completion.status, now=ended, error=completion.error, redrive=redrive
            )
            self.failures.failed(after or before, before.pause_after)
        answer: dict[str, Any] = {
            "recorded": True,
            "firingId": completion.firing_id,
            "status": str(completion.status),
            "endedAt": iso_seconds(ended),
            "durationMs": took,
        }
        if count:
            answer["redrive"] = count
        if late and before.timed_out_at is not None:
            answer["timedOutAt"] = iso_seconds(before.timed_out_at)
        return answer

    def _retry(
        self,
        run_id: str,
        policy: FailurePolicy | None,
        status: RunStatus,
        ended: datetime,
        *,
        count: bool = False,
    ) -> bool:
        """Defer the failed run's next attempt, if its policy leaves one (a StoreError fails
        the invocation: Lambda delivers the event again, and :meth:`_retry_again` defers it);
        whether the failure is final (no attempt follows)."""
        deferred = defer_retry(
            self.claims,
            run_id,
            policy,
            str(status),
            failed_at=ended,
            origin=self.origin,
            now=self.clock.now(),
            metrics=self.metrics if count else None,
        )
        if deferred is not None and self.wake is not None:
            self.wake([deferred.due])
        return deferred is None

    def _retry_again(self, completion: Completion) -> None:
        """A failure heard again (an event delivered twice, or again after this function
        failed between closing the run and deferring its retry): defer the retry again, which
        writes nothing new when it was deferred."""
        if completion.status not in _RETRIED:
            return
        run = self.claims.run(completion.firing_id)
        if run is not None and cancelled(run):
            return  # a later firing stopped it (overlap: cancel_other): no attempt follows
        if run is not None and run.status is completion.status and run.ended_at is not None:
            self._retry(run.firing_id, run.policy, run.status, run.ended_at)

    def _cancel_retry(self, before: RunRecord) -> None:
        """A failed run redriven runs again: the retry its failure deferred is dropped (its key
        follows from the run's end and policy). A retry already claimed runs all the same."""
        if before.status not in _RETRIED or before.ended_at is None:
            return
        pending = next_attempt(
            before.firing_id,
            before.policy,
            failed_at=before.ended_at,
            origin=self.origin,
            now=self.clock.now(),
        )
        if pending is None:
            return
        self.claims.drop_deferred([pending])
        log.info(
            "Job %s - firing %s redriven: its retry (attempt %d, due %s) is dropped",
            before.job,
            before.firing_id,
            pending.firing.attempt,
            iso_seconds(pending.due),
            extra=log_keys(before.job, before.firing_id),
        )

    def _log_end(self, before: RunRecord, completion: Completion, took: int, late: bool) -> None:
        notes = ""
        if completion.redrive_count:
            notes += f" - redrive {completion.redrive_count}"
        if late and before.timed_out_at is not None:
            notes += (
                f" - it had been marked TIMED_OUT at {iso_seconds(before.timed_out_at)}: "
                "the job's timeout is shorter than this run"
            )
        level = logging.ERROR
        if completion.status is RunStatus.SUCCEEDED:
            level = logging.WARNING if late else logging.INFO
        error = {"error": completion.error} if completion.error else {}
        # a run's end like most (SUCCEEDED, in time): a firing's own line, the job named in it
        keys = log_keys(before.job, completion.firing_id, named=level == logging.INFO, **error)
        log.log(
            level,
            "Job %s ended %s after %d ms - firing %s%s",
            before.job,
            completion.status,
            took,
            completion.firing_id,
            notes,
            extra=keys,
        )

    def _redriven(self, found: Redriven) -> dict[str, Any]:
        redrive = Redrive(found.count, found.at or self.clock.now())
        before = self.claims.redrive(found.firing_id, redrive)
        if before is None:
            return self._ignored(found.firing_id, "stepfunctions", found.count, redrive=True)
        self._cancel_retry(before)
        log.info(
            "Job %s - firing %s redriven by Step Functions (redrive %d): running again %s",
            before.job,
            found.firing_id,
            found.count,
            "(its earlier end was not heard)"
            if before.status.open
            else f"after it ended {before.status}",
            extra=log_keys(before.job, found.firing_id),
        )
        return {
            "recorded": True,
            "firingId": found.firing_id,
            "status": str(RunStatus.DISPATCHED if not before.status.open else before.status),
            "redrive": found.count,
            "redrivenAt": iso_seconds(redrive.at),
        }

    def _ignored(
        self, firing_id: str, source: str, count: int, *, redrive: bool = False
    ) -> dict[str, Any]:
        """The answer for an event that changed nothing, with the reason."""
        what = f"Redrive {count}" if redrive else "Completion"
        known = self.claims.run(firing_id)
        if known is None:
            log.warning(
                "%s for unknown firing %s ignored (%s)",
                what,
                firing_id,
                source,
                extra=log_keys(job_of(firing_id), firing_id),
            )
            return {"recorded": False, "firingId": firing_id, "reason": "unknown firing"}
        seen = known.redrives or 0
        if seen > count or (redrive and seen == count):
            reason = f"the run was redriven {seen} time(s): this event is older"
            if seen == count:
                reason = f"redrive {count} is recorded already"
        elif known.status.open:
            reason = f"the run is {known.status}"
        else:
            reason = f"already ended {known.status}"
        log.info(
            "%s for firing %s ignored - %s",
            what,
            firing_id,
            reason,
            extra=log_keys(known.job, firing_id),
        )
        return {"recorded": False, "firingId": firing_id, "reason": reason}


_RETRIED = (RunStatus.FAILED, RunStatus.TIMED_OUT)


def _millis(start: datetime, end: datetime) -> int:
    return max(0, int((end - start).total_seconds() * 1000))
