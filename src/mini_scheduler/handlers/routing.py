"""What the ticker does with each event it is sent (a tick, an operator's action), apart from
the Lambda handler: ``make run``'s console sends its operators' events here too, without the
handler's logging set-up."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from mini_scheduler.handlers.events.ticker import (
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

if TYPE_CHECKING:
    from mini_scheduler.tick import Ticker


def route(ticker: Ticker, event: Any, deadline: datetime | None = None) -> dict[str, Any]:
    """Act on one event; EventError for an event that cannot be acted on (nothing written).
    ``deadline``: when a tick stops claiming firings (see :func:`deadline_of`)."""
    request = ticker_request(event)
    if isinstance(request, Tick):  # the ticker refuses a tick from the future (EventError)
        if request.deferred:
            return ticker.catch_up(request.at, deadline=deadline).to_json()
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
