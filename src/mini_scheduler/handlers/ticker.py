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
from mini_scheduler.handlers.events import (
    BackfillRequest,
    BackfillStatus,
    EnvironmentChange,
    EnvironmentStatus,
    PauseChange,
    Rerun,
    ScheduleRequest,
    Tick,
    ticker_request,
)
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


def route(ticker: Ticker, event: Any, deadline: datetime | None = None) -> dict[str, Any]:
    """Act on one event; EventError for an event that cannot be acted on (nothing written).
    ``deadline``: when a tick stops claiming firings (see :func:`deadline_of`)."""
    request = ticker_request(event)
    if isinstance(request, Tick):  # the ticker refuses a tick from the future (EventError)
        return ticker.tick(request.at, request.shard, deadline=deadline).to_json()
    if isinstance(request, EnvironmentStatus):
        return ticker.environment_status()
    if isinstance(request, EnvironmentChange):
        return ticker.set_environment(
            request.active, request.operator, request.force, request.reason
        )
    if isinstance(request, PauseChange):
        return ticker.set_paused(request.job, request.paused, request.operator)
    if isinstance(request, ScheduleRequest):
        return _schedule(ticker, request)
    if isinstance(request, BackfillRequest):
        return ticker.operator.backfill(
            request.job, request.start, request.end, request.rate, request.operator
        )
    if isinstance(request, BackfillStatus):
        return ticker.operator.backfill_status(request.job)
    if isinstance(request, Rerun):
        return ticker.operator.rerun(request.firing_id, request.operator, request.parameters)
    return ticker.run_manual(request.job, request.operator, request.parameters)


def _schedule(ticker: Ticker, request: ScheduleRequest) -> dict[str, Any]:
    operator = ticker.operator
    if request.action == "create":
        return operator.create_schedules(request.schedules, request.operator)
    if request.action == "list":
        return operator.list_schedules()
    if request.action == "show":
        return operator.show_schedule(request.name)
    return operator.delete_schedule(request.name, request.operator)


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
            return route(ticker, event, deadline_of(context, ticker.clock.now()))
        except EventError as exc:
            logger.warning("Event rejected: %s", exc)
            return error_answer(str(exc))
    finally:
        flush()
