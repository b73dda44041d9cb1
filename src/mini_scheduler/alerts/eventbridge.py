"""Alerts as EventBridge events (PutEvents), on the bus ``EVENT_BUS_NAME`` names."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.alerts.base import (
    JOB_PAUSED,
    RUN_FAILED,
    SOURCE,
    detail_json,
)
from mini_scheduler.alerts.schema import JobPaused, JobRunFailed
from mini_scheduler.errors import AlertError, describe_aws_error

ATTEMPTS: Final = 3
"""Tries of an entry EventBridge answered as failed (``FailedEntryCount``: throttled, an
internal failure). A request that failed outright was retried by the SDK already."""


class EventBridgeAlerts:
    """Publishes each alert as one PutEvents entry on ``bus`` (a name or an ARN). ``client``
    makes the ``events`` client, on the first alert: most invocations never publish one."""

    def __init__(
        self,
        bus: str,
        client: Callable[[], Any],
        *,
        sleep: Callable[[float], None] = time.sleep,
        letters: Callable[[str, Mapping[str, Any]], None] | None = None,
    ) -> None:
        self.bus = bus
        self._client = client
        self._sleep = sleep
        self._letters = letters  # sends a dead letter to its queue (SQS)

    def run_failed(self, failed: JobRunFailed) -> None:
        self._put(RUN_FAILED, detail_json(failed.to_detail()))

    def job_paused(self, paused: JobPaused) -> None:
        self._put(JOB_PAUSED, detail_json(paused.to_detail()))

    def dead_letter(self, queue: str, letter: Mapping[str, Any]) -> None:
        if self._letters is None:
            raise AlertError(f"dead letter to {queue} not sent: this build sends none")
        self._letters(queue, letter)

    def _put(self, detail_type: str, detail: str) -> None:
        entry = {
            "Source": SOURCE,
            "DetailType": detail_type,
            "Detail": detail,
            "EventBusName": self.bus,
        }
        why = ""
        for attempt in range(ATTEMPTS):
            if attempt:
                self._sleep(0.2 * 2 ** (attempt - 1))
            try:
                answer = self._client().put_events(Entries=[entry])
            except (ClientError, BotoCoreError) as exc:
                raise AlertError(
                    f"EventBridge PutEvents ({detail_type}) to bus {self.bus} failed - "
                    f"{describe_aws_error(exc)}"
                ) from exc
            if not answer.get("FailedEntryCount"):
                return
            (failed,) = answer.get("Entries") or [{}]
            why = f"{failed.get('ErrorCode', 'Error')}: {failed.get('ErrorMessage', '')}"
        raise AlertError(
            f"EventBridge PutEvents ({detail_type}) to bus {self.bus} failed {ATTEMPTS} times - "
            f"{why.rstrip(': ')}"
        )
