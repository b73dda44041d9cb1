"""What both handlers share: the Powertools logger and metrics, and the per-container state."""

from __future__ import annotations

import logging
import threading
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools import Metrics as PowertoolsMetrics
from aws_lambda_powertools.logging.filters import SuppressFilter
from aws_lambda_powertools.metrics import MetricUnit

NAMESPACE = "MiniScheduler"
PACKAGE_LOGGER = "mini_scheduler"


def route_package_logs(source: Logger, package: str = PACKAGE_LOGGER) -> None:
    """Write every ``package.*`` logger's records through ``source``'s handler, at its level.

    The package's parent logger gets the handler, so a module logger created after this call
    (most are: the core's modules load after the handler's) writes JSON too; its level is the
    Powertools logger's (``POWERTOOLS_LOG_LEVEL``, ``LOG_LEVEL``, Lambda's log level), where the
    Lambda runtime leaves the root logger at WARNING. Records still propagate, as the Powertools
    logger's own do (a handler added to the root later, such as a test's capture, sees them);
    the root handlers that Powertools keeps its own records from (the Lambda runtime's plain-text
    one) keep the package's from too, so nothing is written twice."""
    logger = logging.getLogger(package)
    logger.setLevel(source.log_level)
    if source.registered_handler not in logger.handlers:
        logger.addHandler(source.registered_handler)
    for handler in logging.root.handlers:
        filters = [f for f in handler.filters if isinstance(f, SuppressFilter)]
        if any(f.logger == source.name for f in filters) and not any(
            f.logger == package for f in filters
        ):
            handler.addFilter(SuppressFilter(package))


logger = Logger(service="mini-scheduler")
route_package_logs(logger)

UNLOGGED_CONTEXT_KEYS = ("function_arn", "function_memory_size")
"""Keys of the Lambda context that ``inject_lambda_context`` adds and a line goes without: the
log group names the function, and its memory is its configuration. Each costs about 60 bytes
on every line, and a firing writes two or three lines (make bench, "logs")."""


def trim_context_keys() -> None:
    """Drop :data:`UNLOGGED_CONTEXT_KEYS` from this invocation's lines (call it first in a
    handler ``inject_lambda_context`` wraps: the decorator adds them at each invocation)."""
    logger.remove_keys(list(UNLOGGED_CONTEXT_KEYS))


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
