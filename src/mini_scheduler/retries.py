"""When a failed run is tried again: its firing's next attempt, as a deferred firing.

A run that ends FAILED or TIMED_OUT, or whose dispatch fails, is followed by the next attempt of
the same firing when the job's ``retry`` policy leaves one: attempt ``n + 1`` is deferred to the
failure's instant plus the policy's wait, and the tick that reaches that instant claims it by
``<firingId>#<n + 1>`` and dispatches it with the same ``firingId`` and ``attempt: n + 1``. The
policy is the one the run was dispatched with (the run record keeps it), so the recorder, the
sweep and a failed dispatch all decide alike. Deferring is idempotent: whoever sees the failure
again (a completion event delivered twice, a recorder retried after it closed the run) defers
the same attempt, and its claim runs it once.

A manual run is an operator's: it is not retried (they run it again if they want to).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from mini_scheduler import metrics as m
from mini_scheduler.claims.base import ClaimStore, Deferred
from mini_scheduler.jobs.model import FailurePolicy
from mini_scheduler.metrics import Metrics
from mini_scheduler.model import firing_from_id, iso_seconds, log_keys

log = logging.getLogger(__name__)

RETRY_DUE = "Job %s attempt %d ended %s - firing %s: attempt %d of %d is due at %s"
NO_ATTEMPT_LEFT = "Job %s attempt %d ended %s - firing %s: no attempt left (retry.retries %d)"


def next_attempt(
    run_id: str,
    policy: FailurePolicy | None,
    *,
    failed_at: datetime,
    origin: str,
    now: datetime,
) -> Deferred | None:
    """The deferred firing that retries the run ``run_id`` after it failed at ``failed_at``,
    or None: no policy, a manual run, or no attempt left."""
    firing = firing_from_id(run_id)
    retry = policy.retry if policy is not None else None
    if retry is None or firing.manual:
        return None
    delay = retry.delay(firing.attempt)
    if delay is None:
        return None
    due = failed_at + timedelta(seconds=delay)
    runtime = policy.runtime if policy is not None else None
    detail = {"entry": dict(runtime)} if runtime is not None else {}
    return Deferred(firing.retry(), due, "retry", origin, now, detail)


def attempt_left(run_id: str, policy: FailurePolicy | None) -> bool:
    """Whether a failure of the run ``run_id`` is followed by another attempt under
    ``policy``: False when it is final (no policy, a manual run, or no attempt left)."""
    firing = firing_from_id(run_id)
    retry = policy.retry if policy is not None else None
    return retry is not None and not firing.manual and retry.delay(firing.attempt) is not None


def defer_retry(
    claims: ClaimStore,
    run_id: str,
    policy: FailurePolicy | None,
    status: str,
    *,
    failed_at: datetime,
    origin: str,
    now: datetime,
    metrics: Metrics | None = None,
) -> Deferred | None:
    """Defer the next attempt of the failed run ``run_id`` when its policy leaves one, and say
    so; the deferred firing, or None when the failure is final (the caller then hands it to
    :class:`mini_scheduler.failures.FinalFailures`, the first time it hears it). Raises
    StoreError when it could not be written (the caller's failure is then retried, and writes
    it again). With ``metrics`` (the first time the failure is heard), count it:
    ``RetriesDeferred``, or ``RunsFailedFinal`` when no attempt follows (retries spent, no
    policy, a manual run), also by job (the runs-failed alarm's series)."""
    retry = policy.retry if policy is not None else None
    deferred = next_attempt(run_id, policy, failed_at=failed_at, origin=origin, now=now)
    firing = firing_from_id(run_id)
    if deferred is None:
        if metrics is not None:
            metrics.add(m.RUNS_FAILED_FINAL, dimensions={m.JOB: firing.job})
        if retry is not None and not firing.manual:
            log.error(
                NO_ATTEMPT_LEFT,
                firing.job,
                firing.attempt,
                status,
                firing.firing_id,
                retry.retries,
                extra=log_keys(firing.job, run_id),
            )
        return None
    claims.defer([deferred])
    if metrics is not None:
        metrics.add(m.RETRIES_DEFERRED)
    log.warning(
        RETRY_DUE,
        firing.job,
        firing.attempt,
        status,
        firing.firing_id,
        deferred.firing.attempt,
        retry.retries + 1 if retry else deferred.firing.attempt,
        iso_seconds(deferred.due),
        extra=log_keys(firing.job, run_id, attempt=deferred.firing.attempt),
    )
    return deferred
