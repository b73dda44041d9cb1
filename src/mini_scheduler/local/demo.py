"""What ``make run`` does at start besides ticking: the firings beyond cron.yaml's, so a newcomer
sees each one happen in the log within two minutes. Everything goes through the operator path
(:class:`~mini_scheduler.operator.Operator`), as the CLI's ``schedule`` and ``backfill`` do,
with the operator ``make-run``:

* ``demo-once``: a one-time schedule 20 seconds after the start, on the sample heartbeat;
* ``demo-retry``: a one-time schedule whose first attempt fails on purpose (the heartbeat's
  ``failAttempts``), retried 15 seconds later, when it succeeds;
* ``demo-failure``: one whose every attempt fails: after its retry, the failure is final, and its
  ``Job Run Failed`` event is a line of the log;
* a backfill of the cron file's ``heartbeat`` job over the two minutes before the start, 4
  firings a minute, each payload saying ``"backfill": true``.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any, Final

from mini_scheduler.errors import SchedulerError
from mini_scheduler.local.dispatch import SAMPLE_PREFIX
from mini_scheduler.model import floor_minute, iso_seconds
from mini_scheduler.operator import Operator

log = logging.getLogger("mini_scheduler.local")

OPERATOR: Final = "make-run"
HEARTBEAT: Final = SAMPLE_PREFIX + "heartbeat"
BACKFILLED: Final = "heartbeat"  # the sample cron file's job the demo backfills


def schedules(now: datetime) -> list[dict[str, Any]]:
    """The demo's one-time schedules, seconds after ``now``."""
    start = now.replace(microsecond=0) + timedelta(seconds=1)

    def at(seconds: int) -> str:
        return iso_seconds(start + timedelta(seconds=seconds))

    retry = {"retries": 1, "backoff": 15}
    return [
        {"name": "demo-once", "at": at(20), "service": HEARTBEAT},
        {
            "name": "demo-retry",
            "at": at(30),
            "service": HEARTBEAT,
            "parameters": {"failAttempts": 1},
            "retry": retry,
        },
        {
            "name": "demo-failure",
            "at": at(40),
            "service": HEARTBEAT,
            "parameters": {"failAttempts": 9},
            "retry": retry,
        },
    ]


def start(operator: Operator, now: datetime) -> None:
    """Create the demo's schedules and its backfill; a part that cannot be made is said and
    left out (a cron file without ``heartbeat`` has nothing to backfill)."""
    try:
        operator.create_schedules(schedules(now), OPERATOR)
    except SchedulerError as exc:
        log.warning("Demo schedules not created: %s", exc)
    end = floor_minute(now)
    try:
        operator.backfill(
            BACKFILLED, iso_seconds(end - timedelta(minutes=2)), iso_seconds(end), 4, OPERATOR
        )
    except SchedulerError as exc:
        log.info("Demo backfill left out: %s", exc)
