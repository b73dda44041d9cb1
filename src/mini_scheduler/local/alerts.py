"""Alerts in the local run's log: ``make run`` has no bus to publish to, so each event is a line
(``Event Job Run Failed: {...}``), with the detail EventBridge would carry."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mini_scheduler.alerts.base import (
    DEAD_LETTER,
    JOB_PAUSED,
    RUN_FAILED,
    detail_json,
)
from mini_scheduler.alerts.schema import JobPaused, JobRunFailed

log = logging.getLogger("mini_scheduler.events")

EVENT_LINE = "Event %s: %s"


class LogAlerts:
    """Logs each alert as a warning: the event's detail type and its detail as JSON."""

    def run_failed(self, failed: JobRunFailed) -> None:
        log.warning(EVENT_LINE, RUN_FAILED, detail_json(failed.to_detail()))

    def job_paused(self, paused: JobPaused) -> None:
        log.warning(EVENT_LINE, JOB_PAUSED, detail_json(paused.to_detail()))

    def dead_letter(self, queue: str, letter: Mapping[str, Any]) -> None:
        log.warning(EVENT_LINE, f"{DEAD_LETTER} to {queue}", detail_json(dict(letter)))
