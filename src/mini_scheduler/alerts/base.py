"""Alerts: the events the scheduler publishes when a run fails for good, or when it pauses a job.

Both are EventBridge events of ``source`` :data:`SOURCE`, their detail one of
:mod:`mini_scheduler.alerts.schema`'s (typed, versioned, with a JSON Schema in
``events/published/``):

* :data:`RUN_FAILED` (``Job Run Failed``): a run's failure is final, no attempt follows it (its
  retries are spent, its job has no ``retry``, or it was a manual run): :class:`JobRunFailed`.
* :data:`JOB_PAUSED` (``Job Paused``): the scheduler paused a job after ``pause_after_failures``
  final failures in a row: :class:`JobPaused`.

Contract: each method returns once the event was accepted (by the bus, or by the local run's
log), and raises AlertError naming where it went and why after its retries. The caller logs and
counts that error: an alert never fails the recording of a run
(:mod:`mini_scheduler.failures`).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Final, Protocol

from mini_scheduler.alerts.schema import JobPaused, JobRunFailed

SOURCE: Final = "mini-scheduler"
RUN_FAILED: Final = "Job Run Failed"
JOB_PAUSED: Final = "Job Paused"


class Alerts(Protocol):
    def run_failed(self, failed: JobRunFailed) -> None:
        """Publish :data:`RUN_FAILED`."""
        ...

    def job_paused(self, paused: JobPaused) -> None:
        """Publish :data:`JOB_PAUSED`."""
        ...


def detail_json(detail: dict[str, Any]) -> str:
    """``detail`` as compact JSON; a number a store read back as a Decimal is a number."""
    return json.dumps(detail, separators=(",", ":"), ensure_ascii=False, default=_plain)


def _plain(value: object) -> object:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return str(value)
