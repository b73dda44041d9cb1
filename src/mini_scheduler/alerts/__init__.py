"""Alerts: the events published when a run fails for good or a job is paused (one module a
backend; the local run's is :mod:`mini_scheduler.local.alerts`)."""

from mini_scheduler.alerts.base import (
    JOB_PAUSED,
    RUN_FAILED,
    SOURCE,
    Alerts,
)
from mini_scheduler.alerts.memory import RecordingAlerts
from mini_scheduler.alerts.schema import PAUSED_BY, JobPaused, JobRunFailed

__all__ = [
    "JOB_PAUSED",
    "PAUSED_BY",
    "RUN_FAILED",
    "SOURCE",
    "Alerts",
    "JobPaused",
    "JobRunFailed",
    "RecordingAlerts",
]
