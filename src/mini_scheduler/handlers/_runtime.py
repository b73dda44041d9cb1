"""What both handlers share: the Powertools logger and metrics, and the per-container state."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools import Metrics as PowertoolsMetrics
from aws_lambda_powertools.logging.filters import SuppressFilter
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from mini_scheduler.model import FIRING_LINE

NAMESPACE = "MiniScheduler"
PACKAGE_LOGGER = "mini_scheduler"


def route_package_logs(source: Logger, package: str = PACKAGE_LOGGER) -> None:
    """Write every ``package.*`` logger's records through ``source``'s handler, at its level.

    The package's parent logger gets the handler, so a module logger created after this call
    (most are: the core's modules load after the handler's) writes JSON too; its level is the
    Powertools logger's (:func:`log_level`), where the Lambda runtime leaves the root logger at
    WARNING. Records still propagate, as the Powertools
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


def log_level(env: Mapping[str, str] = os.environ) -> str:
    """The level the handlers log at: ``POWERTOOLS_LOG_LEVEL``, else ``LOG_LEVEL`` (the
    template's ``LogLevel``), else INFO.

    Lambda's own application log level (``AWS_LAMBDA_LOG_LEVEL``, set when a function logs in
    Lambda's JSON format) is not it: Powertools would put it first, and the template keeps it at
    INFO whatever ``LogLevel`` says, because Lambda files a line without a ``level`` key, such as
    an embedded metric, under INFO and would drop the metrics above it."""
    return (env.get("POWERTOOLS_LOG_LEVEL") or env.get("LOG_LEVEL") or "INFO").upper()


logger = Logger(
    service="mini-scheduler",
    # Keys Powertools adds to every line that tell nothing here: the line of code (each message
    # is found by its text), and the X-Ray trace id (the functions are not traced). The
    # timestamp in RFC 3339 (UTC, milliseconds, Z), the form Lambda's JSON log format reads;
    # time.strftime's, which Powertools fills %F of with the record's milliseconds.
    location=None,
    xray_trace_id=None,
    datefmt="%Y-%m-%dT%H:%M:%S.%FZ",
    utc=True,
)
UNLOGGED_KEYS = ("service",)
"""Powertools' own keys a line goes without: ``service``, the same name on every line of a
function's own log group (its metrics keep it: a dimension of each)."""
logger.remove_keys(list(UNLOGGED_KEYS))
logging.getLogger(logger.name).setLevel(log_level())
route_package_logs(logger)

UNLOGGED_CONTEXT_KEYS = ("function_arn", "function_memory_size", "function_name")
"""Keys of the Lambda context that ``inject_lambda_context`` adds and a line goes without: the
log group names the function, and its memory is its configuration. Each costs 40 to 70 bytes
on every line, and a firing writes two lines (make bench, "logs")."""


FIRING_LINE_LEAVES_OUT = ("function_request_id", "cold_start")
"""The invocation's keys, which a firing's own line (model.FIRING_LINE: a dispatch, a run's end,
one for each firing) goes without: the invocation's other lines and Lambda's REPORT line say
them, and a tick of 1,000 firings would repeat them 1,000 times."""


class FiringLines(logging.Filter):
    """On the handler the package and the Powertools logger write through: a firing's own line
    without :data:`FIRING_LINE_LEAVES_OUT` (Powertools leaves a key out whose value is None), and,
    when :func:`carry_metrics` asked for it, with the invocation's counts embedded (EMF reads a
    metric document, ``_aws`` and its values, in any JSON log line): no line of their own."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.__dict__.pop(FIRING_LINE, False):
            for key in FIRING_LINE_LEAVES_OUT:
                setattr(record, key, None)
            record.__dict__.update(_carried())
        return True


def lambda_stamps_lines(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the function logs in Lambda's text format (the ticker's), where each line is
    stored as written and stamped by Lambda (``@timestamp``, to the millisecond): a line's own
    ``timestamp`` would only repeat it. In Lambda's JSON format (the recorder's) Lambda reads
    the line's ``timestamp``, and adds one to a line without."""
    return env.get("AWS_LAMBDA_LOG_FORMAT", "").upper() != "JSON"


def trim_context_keys() -> None:
    """Drop :data:`UNLOGGED_CONTEXT_KEYS` and :data:`UNLOGGED_KEYS` from this invocation's lines,
    and ``timestamp`` where :func:`lambda_stamps_lines` (call it first in a handler
    ``inject_lambda_context`` wraps: the decorator adds them at each invocation, the others again
    with its state cleared)."""
    stamped = ["timestamp"] if lambda_stamps_lines() else []
    logger.remove_keys([*UNLOGGED_CONTEXT_KEYS, *UNLOGGED_KEYS, *stamped])


if not any(isinstance(f, FiringLines) for f in logger.registered_handler.filters):
    logger.registered_handler.addFilter(FiringLines())

powertools_metrics = PowertoolsMetrics(namespace=NAMESPACE, service="mini-scheduler")

_UNITS = {
    "Count": MetricUnit.Count,
    "Seconds": MetricUnit.Seconds,
    "Milliseconds": MetricUnit.Milliseconds,
}


_lock = threading.Lock()
_counts: dict[str, float] = {}  # Count metrics added since the last flush, summed
_by: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}  # those with dimensions too
_carry = [False]  # carry_metrics asked: the next firing's line carries the counts


class EmfMetrics:
    """The core's Metrics, written as CloudWatch embedded metrics by Powertools (thread-safe:
    dispatch threads add metrics concurrently).

    A count is summed until :func:`flush` and written as one value: a tick of 1,000 firings
    writes ``FiringsDispatched`` once, not 1,000 values (and a new metric object at each
    hundredth, EMF's limit). Every alarm and graph reads counts as ``Sum``, which this keeps;
    other units keep each value (their averages and maximums need them). A count added with
    ``dimensions`` is written a second time, summed the same way, as a metric object of its
    own under the default dimensions and those."""

    def add(
        self,
        name: str,
        value: float = 1,
        unit: str = "Count",
        *,
        dimensions: Mapping[str, str] | None = None,
    ) -> None:
        with _lock:
            if unit == "Count":
                _counts[name] = _counts.get(name, 0) + value
                if dimensions:
                    key = (name, tuple(sorted(dimensions.items())))
                    _by[key] = _by.get(key, 0) + value
            else:
                powertools_metrics.add_metric(
                    name=name, unit=_UNITS.get(unit, MetricUnit.Count), value=value
                )


def carry_metrics() -> None:
    """The next firing's own line (a run's end) carries the counts added until it is written,
    instead of a line of their own at :func:`flush`. The recorder asks before its invocation's
    last completion, whose end is most often such a line; when it is not (a failure, a duplicate,
    a line below LOG_LEVEL), the counts are written at the flush as before."""
    with _lock:
        _carry[0] = True


def _carried() -> dict[str, Any]:
    """The counts as an EMF document, once :func:`carry_metrics` asked (then forgotten)."""
    with _lock:
        if not _carry[0] or not _counts or is_metrics_disabled():
            return {}
        _carry[0] = False
        for name, value in _counts.items():
            powertools_metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
        _counts.clear()
        document: dict[str, Any] = dict(powertools_metrics.serialize_metric_set())
        powertools_metrics.clear_metrics()
        return document


def set_dimensions(**dimensions: str) -> None:
    powertools_metrics.set_default_dimensions(**dimensions)


def flush() -> None:
    """Write the invocation's metrics (an invocation that added none writes nothing)."""
    with _lock:
        _carry[0] = False
        for name, value in _counts.items():
            powertools_metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
        _counts.clear()
        defaults = {
            **powertools_metrics.default_dimensions,
            "service": str(powertools_metrics.service),
        }
        for (name, dimensions), value in _by.items():  # a metric object each: its own set
            with single_metric(
                name=name,
                unit=MetricUnit.Count,
                value=value,
                namespace=powertools_metrics.namespace,
                default_dimensions=defaults,
            ) as metric:
                for key, dimension in dimensions:
                    metric.add_dimension(name=key, value=dimension)
        _by.clear()
        if powertools_metrics.metric_set:
            powertools_metrics.flush_metrics()


def error_answer(message: str, **extra: Any) -> dict[str, Any]:
    return {"status": "rejected", "error": message, **extra}
