"""Alerts: the events the scheduler publishes when a run fails for good, or when it pauses a job.

Both are EventBridge events of ``source`` :data:`SOURCE`:

* :data:`RUN_FAILED` (``Job Run Failed``): a run's failure is final, no attempt follows it (its
  retries are spent, its job has no ``retry``, or it was a manual run). The detail is the run
  record (:meth:`~mini_scheduler.claims.records.RunRecord.to_json`), ``attempt`` included.
* :data:`JOB_PAUSED` (``Job Paused``): the scheduler paused a job after ``pause_after_failures``
  final failures in a row (:class:`JobPaused`).

Contract: each method returns once the event was accepted (by the bus, or by the local run's
log), and raises AlertError naming where it went and why after its retries. The caller logs and
counts that error: an alert never fails the recording of a run
(:mod:`mini_scheduler.failures`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Final, Protocol

from mini_scheduler.claims.records import RunRecord
from mini_scheduler.model import iso_seconds

SOURCE: Final = "mini-scheduler"
RUN_FAILED: Final = "Job Run Failed"
JOB_PAUSED: Final = "Job Paused"
PAUSED_BY: Final = "mini-scheduler"
"""The operator a pause after failures is recorded with (``status`` and the history show it)."""

DETAIL_LIMIT: Final = 200_000
"""The most bytes of detail an event carries: EventBridge takes 256 KB an event, all included.
A run record larger than that (its parameters near Lambda's own 256 KB) goes without them."""


@dataclass(frozen=True, slots=True)
class JobPaused:
    """The scheduler paused ``job`` at ``at``: ``failures`` final failures in a row, the last
    one of firing ``firing_id``; ``origin`` is the region and environment that paused it."""

    job: str
    failures: int
    firing_id: str
    origin: str
    at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "failures": self.failures,
            "firingId": self.firing_id,
            "origin": self.origin,
            "operator": PAUSED_BY,
            "pausedAt": iso_seconds(self.at),
        }


class Alerts(Protocol):
    def run_failed(self, run: RunRecord) -> None:
        """Publish :data:`RUN_FAILED` with the ended run's record."""
        ...

    def job_paused(self, paused: JobPaused) -> None:
        """Publish :data:`JOB_PAUSED`."""
        ...


def run_failed_detail(run: RunRecord) -> str:
    """The detail of a :data:`RUN_FAILED` event as JSON: the run record, with its ``attempt``
    (1 too), without its parameters when it would pass :data:`DETAIL_LIMIT` bytes."""
    detail = run.to_json()
    detail.setdefault("attempt", run.attempt)
    text = detail_json(detail)
    if len(text.encode()) <= DETAIL_LIMIT:
        return text
    detail.pop("parameters", None)
    detail["parametersOmitted"] = True
    return detail_json(detail)


def detail_json(detail: dict[str, Any]) -> str:
    """``detail`` as compact JSON; a number a store read back as a Decimal is a number."""
    return json.dumps(detail, separators=(",", ":"), ensure_ascii=False, default=_plain)


def _plain(value: object) -> object:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return str(value)
