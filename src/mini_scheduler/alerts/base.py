"""Alerts: the events the scheduler publishes when a run fails for good, or when it pauses a job.

Both are EventBridge events of ``source`` :data:`SOURCE`, their detail one of
:mod:`mini_scheduler.alerts.schema`'s (typed, versioned, with a JSON Schema in
``events/published/``):

* :data:`RUN_FAILED` (``Job Run Failed``): a run's failure is final, no attempt follows it (its
  retries are spent, its job has no ``retry``, or it was a manual run): :class:`JobRunFailed`.
* :data:`JOB_PAUSED` (``Job Paused``): the scheduler paused a job after ``pause_after_failures``
  final failures in a row: :class:`JobPaused`.

And a job with ``dead_letter: sqs://...`` gets its final failure's :func:`dead_letter` message
on that queue (EventBridge Scheduler's dead-letter queue is the model): the failure's detail
and the firing's parameters, so the firing can be replayed from it.

Contract: each method returns once the event was accepted (by the bus, or by the local run's
log), and raises AlertError naming where it went and why after its retries. The caller logs and
counts that error: an alert never fails the recording of a run
(:mod:`mini_scheduler.failures`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final, Protocol

from mini_scheduler.alerts.schema import JobPaused, JobRunFailed

SOURCE: Final = "mini-scheduler"
RUN_FAILED: Final = "Job Run Failed"
JOB_PAUSED: Final = "Job Paused"
DEAD_LETTER: Final = "Dead Letter"


class Alerts(Protocol):
    def run_failed(self, failed: JobRunFailed) -> None:
        """Publish :data:`RUN_FAILED`."""
        ...

    def job_paused(self, paused: JobPaused) -> None:
        """Publish :data:`JOB_PAUSED`."""
        ...

    def dead_letter(self, queue: str, letter: Mapping[str, Any]) -> None:
        """Send ``letter`` (:func:`dead_letter`) to the job's ``queue`` (``sqs://...``)."""
        ...


def dead_letter(failed: JobRunFailed, parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The message a final failure leaves on its job's dead-letter queue: the failure's detail
    (job, firing, attempt, status, error, service) and the parameters the firing ran with (the
    reserved ``_`` keys left out)."""
    kept = {k: v for k, v in (parameters or {}).items() if not str(k).startswith("_")}
    return {**failed.to_detail(), "parameters": kept}


def detail_json(detail: dict[str, Any]) -> str:
    """``detail`` as compact JSON; a number a store read back as a Decimal is a number."""
    return json.dumps(detail, separators=(",", ":"), ensure_ascii=False, default=_plain)


def _plain(value: object) -> object:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return str(value)
