"""The tick's log lines: what a plan decided, said before any write, and the texts the
executor logs its writes with (the dry run shows them as the tick would log them)."""

from __future__ import annotations

import logging

from mini_scheduler.model import iso_seconds, log_keys
from mini_scheduler.tick.plan import TickPlan

log = logging.getLogger("mini_scheduler.ticker")

STANDBY_DETAIL_LIMIT = 20  # more standby lines than this in one tick: one summary line

DISPATCHED = "Job %s dispatched to %s - firing %s"
SKIPPED_OVERLAP = "Job %s skipped - its previous run has not ended (overlap: skip) - firing %s"
SKIPPED = "Job %s skipped - firing %s (%s)"
SKIPPED_RANGE = "Job %s skipped %d firings from %s to %s (%s)"
TAKEN_OVER = "Job %s - firing %s taken over: its claim was not dispatched within the lease"
NOT_DISPATCHED = "Job %s not dispatched - firing %s: %s"
SCHEDULE_DELETED = (
    "Runtime schedule %s was deleted during this tick - its next firing %s is not written here"
)
SCHEDULE_MOVED_ON = (
    "Runtime schedule %s was moved on by another tick of this minute - its next firing %s was "
    "written there"
)


def log_decisions(plan: TickPlan) -> None:
    """The log lines of what ``plan`` decided before any write: paused and standby jobs,
    misfires and their policy, deferred starts (the dry run shows them too)."""
    for left in plan.left_alone:
        if left.pause is not None:
            log.info(
                "Job %s skipped - paused by %s (%d firings)",
                left.job.name,
                left.pause.operator,
                left.firings,
                extra=log_keys(left.job.name),
            )
    _log_standby(plan)
    for missed in plan.missed:
        log.warning(
            "Job %s missed %d firings from %s - misfire %s: running %d, skipping %d",
            missed.job.name,
            missed.count,
            iso_seconds(missed.first),
            missed.job.misfire,
            missed.runs,
            missed.skipped,
            extra=log_keys(missed.job.name),
        )
    for d in plan.dispatches:
        if d.delay:
            log.info(
                "Defer execution of %s for %d seconds",
                d.job.name,
                d.delay,
                extra=log_keys(d.job.name, d.firing.id),
            )


def _log_standby(plan: TickPlan) -> None:
    standby = [left for left in plan.left_alone if left.pause is None]
    text = "Standby: job %s skipped - the active environment is %s, this instance is %s"
    detail = log.debug if len(standby) > STANDBY_DETAIL_LIMIT else log.info
    for left in standby:
        detail(
            text,
            left.job.name,
            plan.active_environment,
            plan.environment,
            extra=log_keys(left.job.name),
        )
    if len(standby) > STANDBY_DETAIL_LIMIT:
        log.info(
            "Standby: %d jobs skipped - the active environment is %s, this instance is %s",
            len(standby),
            plan.active_environment,
            plan.environment,
        )
