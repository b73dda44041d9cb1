"""The ticker Lambda: parse the event (:mod:`.events`), act on it with the ticker, answer."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

from mini_scheduler.aws import account_from_arn
from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import Settings
from mini_scheduler.errors import EventError
from mini_scheduler.handlers._runtime import (
    EmfMetrics,
    error_answer,
    flush,
    logger,
    set_dimensions,
    trim_context_keys,
)
from mini_scheduler.handlers.routing import route
from mini_scheduler.tick import Ticker
from mini_scheduler.wiring import build_ticker

_lock = threading.Lock()
_ticker: Ticker | None = None
CLOCK: Clock = SystemClock()  # tests replace it with a FixedClock


def _get_ticker(context: Any) -> Ticker:
    global _ticker
    with _lock:
        if _ticker is None:
            settings = Settings.from_environment()
            set_dimensions(Environment=settings.environment_name, Region=settings.region)
            account = account_from_arn(getattr(context, "invoked_function_arn", None))
            _ticker = build_ticker(settings, metrics=EmfMetrics(), account=account, clock=CLOCK)
        return _ticker


def reset() -> None:
    """Forget the container's ticker (tests; a new configuration)."""
    global _ticker
    with _lock:
        _ticker = None


TICK_MARGIN = timedelta(seconds=20)
"""What a tick keeps of its invocation's time for the firings already claimed: their dispatch
and mark, retries included. Past the function's timeout less this, no firing is claimed; the
next tick handles what is left under the misfire policies (Ticker.tick)."""


def deadline_of(context: Any, now: datetime) -> datetime | None:
    """When a tick invoked with Lambda ``context`` stops claiming, or None outside Lambda."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return None
    try:
        millis = int(remaining())
    except (TypeError, ValueError):
        return None
    return now + timedelta(milliseconds=millis) - TICK_MARGIN


@logger.inject_lambda_context(clear_state=True)
def handler(event: Any, context: Any) -> dict[str, Any]:
    trim_context_keys()
    try:
        ticker = _get_ticker(context)
        try:
            via = getattr(context, "invoked_function_arn", None)
            return route(ticker, event, deadline_of(context, ticker.clock.now()), via)
        except EventError as exc:
            logger.warning("Event rejected: %s", exc)
            return error_answer(str(exc))
    finally:
        flush()
