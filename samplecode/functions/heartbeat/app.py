"""Sample target: a heartbeat every 15 seconds, and the worker step of the sample cleanup flow.

It logs the firing and answers it; its OnSuccess destination hands the answer to the
scheduler's recorder, which closes the run. Nothing here needs to run exactly once.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

logger = logging.getLogger()
logger.setLevel(os.environ.get("LOG_LEVEL", "INFO"))


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    logger.info(
        "%s",
        json.dumps(
            {
                "message": "Heartbeat",
                "job": event.get("job"),
                "firingId": event.get("firingId"),
                "origin": event.get("origin"),
            }
        ),
    )
    return {"ok": True, "job": event.get("job"), "firingId": event.get("firingId")}
