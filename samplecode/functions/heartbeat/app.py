"""Sample target: a heartbeat every 15 seconds, and the worker step of the sample cleanup flow.

It logs the firing and answers it; its OnSuccess destination hands the answer to the
scheduler's completion queue, whose recorder closes the run. Nothing here needs to run exactly once.

To see a retry, or a final failure and its event, give it ``failAttempts`` (a parameter): it
fails every attempt up to that one, e.g. ``{"failAttempts": 1}`` fails the first and succeeds on
the second (``make run`` schedules both at start).
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

logger = logging.getLogger()
logger.setLevel(os.environ.get("LOG_LEVEL", "INFO"))


class FailedOnPurpose(RuntimeError):
    """The attempt its ``failAttempts`` parameter asked to fail."""


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    line = {
        "message": "Heartbeat",
        "job": event.get("job"),
        "firingId": event.get("firingId"),
        "attempt": event.get("attempt", 1),
        "origin": event.get("origin"),
    }
    if event.get("backfill"):
        line["backfill"] = True
    if event.get("plannedTime"):  # a job's jitter or window started it after its own instant
        line |= {"scheduledTime": event.get("scheduledTime"), "plannedTime": event["plannedTime"]}
    logger.info("%s", json.dumps(line))
    fail = (event.get("parameters") or {}).get("failAttempts", 0)
    attempt = event.get("attempt", 1)
    if isinstance(fail, int) and isinstance(attempt, int) and attempt <= fail:
        raise FailedOnPurpose(f"attempt {attempt} fails on purpose (failAttempts {fail})")
    return {"ok": True, "job": event.get("job"), "firingId": event.get("firingId")}
