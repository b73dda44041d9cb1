"""What both handlers share: the Powertools logger and metrics, and the per-container state."""

from __future__ import annotations

import threading
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools import Metrics as PowertoolsMetrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit

NAMESPACE = "MiniScheduler"
logger = Logger(service="mini-scheduler")
copy_config_to_registered_loggers(source_logger=logger, include={"mini_scheduler"})
powertools_metrics = PowertoolsMetrics(namespace=NAMESPACE, service="mini-scheduler")

_UNITS = {
    "Count": MetricUnit.Count,
    "Seconds": MetricUnit.Seconds,
    "Milliseconds": MetricUnit.Milliseconds,
}


class EmfMetrics:
    """The core's Metrics, written as CloudWatch embedded metrics by Powertools (thread-safe:
    dispatch threads add metrics concurrently)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, name: str, value: float = 1, unit: str = "Count") -> None:
        with self._lock:
            powertools_metrics.add_metric(
                name=name, unit=_UNITS.get(unit, MetricUnit.Count), value=value
            )


def set_dimensions(**dimensions: str) -> None:
    powertools_metrics.set_default_dimensions(**dimensions)


def flush() -> None:
    """Write the invocation's metrics (an invocation that added none writes nothing)."""
    if powertools_metrics.metric_set:
        powertools_metrics.flush_metrics()


def error_answer(message: str, **extra: Any) -> dict[str, Any]:
    return {"status": "rejected", "error": message, **extra}
