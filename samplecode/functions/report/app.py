"""Sample target: the morning report, run at most once per firing.

The scheduler claims and dispatches each firing once, yet a target can still see a firing twice
with the same ``firingId`` (a ticker that died between invoking and recording the dispatch is
taken over, and Lambda may deliver an asynchronous event more than once). This function
deduplicates on ``firingId`` with Powertools' idempotency utility: a second delivery gets the
first one's answer without running the report again.

The event (docs/how-a-tick-works.md, "Dispatch")::

    {"job": "morning-report", "firingId": "morning-report@2026-11-30T14:00:00Z",
     "scheduledTime": "2026-11-30T14:00:00Z", "origin": "us-east-1/prod",
     "manual": false, "parameters": {"region": "east", "recipients": ["ops@example.com"]}}

Its answer goes, through the function's OnSuccess destination, to the scheduler's completion
queue, whose recorder closes the run; an exception goes there through OnFailure, after Lambda's
retries.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()  # POWERTOOLS_SERVICE_NAME names it

# A duplicate can arrive hours later: Lambda keeps retrying an asynchronous event for up to six.
DEDUPLICATE_FOR_SECONDS = 24 * 3600

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]
_lock = threading.Lock()
_handler: Handler | None = None


def report(event: dict[str, Any]) -> dict[str, Any]:
    """The work itself: here, a summary of what the firing asked for."""
    parameters = event.get("parameters") or {}
    recipients = parameters.get("recipients") or []
    logger.info(
        "Morning report for region %s to %d recipients",
        parameters.get("region", "all"),
        len(recipients),
        extra={"firingId": event["firingId"], "manual": event.get("manual", False)},
    )
    return {
        "job": event.get("job"),
        "firingId": event["firingId"],
        "region": parameters.get("region", "all"),
        "recipients": len(recipients),
    }


def _build() -> Handler:
    """The idempotent handler, built on the first event (the DynamoDB client with it)."""
    persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE"])
    config = IdempotencyConfig(
        event_key_jmespath="firingId",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=DEDUPLICATE_FOR_SECONDS,
    )

    @idempotent(config=config, persistence_store=persistence)
    def run_once(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        return report(event)

    return run_once


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    global _handler
    with _lock:
        if _handler is None:
            _handler = _build()
    return _handler(event, context)
