"""Metrics the core emits; the handlers send them to CloudWatch through Powertools (EMF)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping
from typing import Protocol


class Metrics(Protocol):
    def add(
        self,
        name: str,
        value: float = 1,
        unit: str = "Count",
        *,
        dimensions: Mapping[str, str] | None = None,
    ) -> None:
        """Add ``value`` to the metric ``name`` (under the handler's default dimensions); with
        ``dimensions``, to a second series too, under the defaults and those (``RunsFailedFinal``
        by :data:`JOB`: each job a CloudWatch metric of its own, so keep such values few)."""
        ...


Dimensions = tuple[tuple[str, str], ...]


class RecordingMetrics:
    """Keeps the totals: for tests, the CLI's dry runs and the local scheduler. ``by`` keeps
    the values added with dimensions, by name and dimensions (sorted pairs)."""

    def __init__(self) -> None:
        self.totals: defaultdict[str, float] = defaultdict(float)
        self.by: defaultdict[tuple[str, Dimensions], float] = defaultdict(float)
        self._lock = threading.Lock()

    def add(
        self,
        name: str,
        value: float = 1,
        unit: str = "Count",
        *,
        dimensions: Mapping[str, str] | None = None,
    ) -> None:
        with self._lock:
            self.totals[name] += value
            if dimensions:
                self.by[(name, tuple(sorted(dimensions.items())))] += value


# Metric names (one place, so the template's alarms and dashboard match the code).
FIRINGS_CLAIMED = "FiringsClaimed"
FIRINGS_DISPATCHED = "FiringsDispatched"
FIRINGS_SKIPPED = "FiringsSkipped"  # with the reason in the name below
DISPATCH_ERRORS = "DispatchErrors"
CLAIM_ERRORS = "ClaimErrors"
FIRINGS_HELD = "FiringsHeld"  # left to the next tick: this one ran out of time
RUNS_SUCCEEDED = "RunsSucceeded"
RUNS_FAILED = "RunsFailed"
RUNS_TIMED_OUT = "RunsTimedOut"
RETRIES_DEFERRED = "RetriesDeferred"  # a failed run's next attempt, deferred
RUNS_FAILED_FINAL = "RunsFailedFinal"  # a failure no attempt follows (retries spent, or none)
JOB = "Job"  # RunsFailedFinal's second series is by job: the runs-failed alarm names the job
JOBS_PAUSED = "JobsPaused"  # paused by the scheduler: pause_after_failures final failures in a row
ALERTS_UNPUBLISHED = "AlertsUnpublished"  # a Job Run Failed or Job Paused event not published
# Each tick: 1 when the active environment it read is a name it does not know (no stack has
# it, so no region is active), 0 when known; none when the store gave no name (fail closed).
ACTIVE_ENVIRONMENT_UNKNOWN = "ActiveEnvironmentUnknown"
TICK_LAG = "TickLagSeconds"
TICKS = "Ticks"
REGIONS_NOT_IN_STEP = "RegionsNotInStep"  # each active tick with peers: those not brought in step
CRON_ENTRIES_SKIPPED = "CronEntriesSkipped"  # each tick: the cron file's entries that did not load


def skipped(reason: str) -> str:
    """``FiringsSkipped<Reason>``: e.g. FiringsSkippedStandby, FiringsSkippedLostClaim."""
    return FIRINGS_SKIPPED + "".join(part.capitalize() for part in reason.split("_"))
