"""What the ticker does with each event it is sent (a tick, an operator's action), apart from
the Lambda handler: ``make run``'s console sends its operators' events here too, without the
handler's logging set-up."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mini_scheduler.errors import EventError
from mini_scheduler.handlers.events.ticker import Tick, ticker_request

if TYPE_CHECKING:
    from mini_scheduler.handlers.events.operator import OperatorRequest, ScheduleRequest
    from mini_scheduler.operator import Operator
    from mini_scheduler.tick import Ticker


ASKING_KEYS = ("reason", "identity")
"""What every operator event may carry besides its own keys: the operator's reason and the
caller's identity as it tells it (both go to the action's audit record)."""


def split_asking(event: Any) -> tuple[Any, dict[str, Any]]:
    """``event`` without :data:`ASKING_KEYS`, and those keys' values."""
    if not isinstance(event, Mapping) or not any(key in event for key in ASKING_KEYS):
        return event, {}
    rest = {k: v for k, v in event.items() if k not in ASKING_KEYS}
    return rest, {k: event[k] for k in ASKING_KEYS if k in event}


def route(
    ticker: Ticker, event: Any, deadline: datetime | None = None, via: str | None = None
) -> dict[str, Any]:
    """Act on one event; EventError for an event that cannot be acted on (nothing written).
    ``deadline``: when a tick stops claiming firings (see :func:`deadline_of`); ``via``: who
    writes an operator action's audit record (the function's ARN, from its context)."""
    event, asking = split_asking(event)
    request = ticker_request(event)
    if isinstance(request, Tick):  # the ticker refuses a tick from the future (EventError)
        if asking:
            raise EventError("a tick takes no reason nor identity: they are an operator's")
        if request.deferred:
            return ticker.catch_up(request.at, deadline=deadline).to_json()
        return ticker.tick(request.at, request.shard, deadline=deadline).to_json()
    operator = ticker.operator.asked(asking.get("reason"), asking.get("identity"), via)
    return _act(operator, request)


def _act(operator: Operator, request: OperatorRequest) -> dict[str, Any]:
    """An operator's request, done. Its classes are imported here: a tick never loads them."""
    from mini_scheduler.handlers.events.operator import (
        BackfillRequest,
        BackfillStatus,
        EnvironmentChange,
        EnvironmentStatus,
        PauseChange,
        Rerun,
        ScheduleRequest,
    )

    if isinstance(request, EnvironmentStatus):
        return operator.environment_status()
    if isinstance(request, EnvironmentChange):
        return operator.set_environment(
            request.active, request.operator, request.force, request.reason
        )
    if isinstance(request, PauseChange):
        return operator.set_paused(request.job, request.paused, request.operator)
    if isinstance(request, ScheduleRequest):
        return _schedule(operator, request)
    if isinstance(request, BackfillRequest):
        return operator.backfill(
            request.job, request.start, request.end, request.rate, request.operator
        )
    if isinstance(request, BackfillStatus):
        return operator.backfill_status(request.job)
    if isinstance(request, Rerun):
        return operator.rerun(request.firing_id, request.operator, request.parameters)
    return operator.run_now(request.job, request.operator, request.parameters)


def _schedule(operator: Operator, request: ScheduleRequest) -> dict[str, Any]:
    if request.action == "create":
        return operator.create_schedules(request.schedules, request.operator)
    if request.action == "list":
        return operator.list_schedules()
    if request.action == "show":
        return operator.show_schedule(request.name)
    return operator.delete_schedule(request.name, request.operator)
