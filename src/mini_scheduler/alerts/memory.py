"""Alerts kept in memory: for tests, the CLI, and a ticker or recorder built without a bus."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from mini_scheduler.alerts.base import (
    DEAD_LETTER,
    JOB_PAUSED,
    RUN_FAILED,
    detail_json,
)
from mini_scheduler.alerts.schema import JobPaused, JobRunFailed
from mini_scheduler.errors import AlertError


class RecordingAlerts:
    """Keeps each alert as ``(detail type, detail)``, the detail as the bus would get it; with
    ``failing`` set, each one raises AlertError instead (and is not kept)."""

    def __init__(self) -> None:
        self.published: list[tuple[str, dict[str, Any]]] = []
        self.failing = False
        self._lock = threading.Lock()

    def run_failed(self, failed: JobRunFailed) -> None:
        self._keep(RUN_FAILED, detail_json(failed.to_detail()))

    def job_paused(self, paused: JobPaused) -> None:
        self._keep(JOB_PAUSED, detail_json(paused.to_detail()))

    def dead_letter(self, queue: str, letter: Mapping[str, Any]) -> None:
        """Kept as a :data:`DEAD_LETTER` with its ``queue``."""
        self._keep(DEAD_LETTER, detail_json({"queue": queue, **letter}))

    def of(self, detail_type: str) -> list[dict[str, Any]]:
        """The details published of ``detail_type``, oldest first."""
        with self._lock:
            return [detail for kind, detail in self.published if kind == detail_type]

    def _keep(self, detail_type: str, detail: str) -> None:
        if self.failing:
            raise AlertError(f"{detail_type} not kept: the recording alerts are failing")
        with self._lock:
            self.published.append((detail_type, json.loads(detail)))
