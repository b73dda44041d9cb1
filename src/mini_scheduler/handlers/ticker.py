"""The ticker Lambda: ticks from the schedule, manual runs, environment and pause events."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import Settings
from mini_scheduler.errors import EventError
from mini_scheduler.handlers._runtime import EmfMetrics, error_answer, flush, logger, set_dimensions
from mini_scheduler.model import parse_instant
from mini_scheduler.ticker import Shard, Ticker
from mini_scheduler.wiring import account_from_arn, build_ticker

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


def parse_tick(event: Mapping[str, Any]) -> tuple[datetime, Shard | None] | None:
    """The minute a tick event names (and its shard), or None when the event is not a tick."""
    if "tick" in event:
        raw = event["tick"]
        if not isinstance(raw, str):
            raise EventError('tick must be an ISO-8601 instant, e.g. "2026-11-30T14:00:00Z"')
        try:
            at = parse_instant(raw)
        except ValueError as exc:
            raise EventError(
                f"tick {raw[:60]!r} is not an ISO-8601 instant with a zone: {exc}"
            ) from None
        shard = None
        if "shard" in event or "shards" in event:
            index, count = event.get("shard"), event.get("shards")
            if (
                not isinstance(index, int)
                or not isinstance(count, int)
                or isinstance(index, bool)
                or isinstance(count, bool)
                or not 0 <= index < count <= 1024
            ):
                raise EventError("shard and shards must be whole numbers, 0 <= shard < shards")
            shard = Shard(index, count)
        return at, shard
    if event.get("detail-type") == "Scheduled Event":
        raw = event.get("time")
        if not isinstance(raw, str):
            raise EventError("Scheduled Event without a time")
        try:
            return parse_instant(raw), None
        except ValueError as exc:
            raise EventError(
                f"Scheduled Event time {raw[:60]!r} is not an instant: {exc}"
            ) from None
    return None


def route(ticker: Ticker, event: Any) -> dict[str, Any]:
    """Act on one event; EventError for an event that cannot be acted on (nothing written)."""
    if not isinstance(event, Mapping):
        raise EventError(
            "the ticker takes a JSON object: a tick, a manual run, an environment, "
            "pause or resume event"
        )
    tick = parse_tick(event)
    if tick is not None:
        return ticker.tick(*tick).to_json()
    if "environment" in event:
        change = event["environment"]
        if not isinstance(change, Mapping):
            raise EventError(
                "environment must be an object: {} to read, "
                '{"active": "DR", "operator": "jane.doe"} to set'
            )
        if not change:
            return ticker.environment_status()
        unknown = set(change) - {"active", "operator"}
        if unknown or "active" not in change:
            raise EventError(
                f'environment takes "active" and "operator" only, got {sorted(map(str, change))}'
            )
        return ticker.set_environment(change["active"], change.get("operator"))
    if "pause" in event or "resume" in event:
        paused = "pause" in event
        return ticker.set_paused(
            event["pause" if paused else "resume"], paused, event.get("operator")
        )
    if "job" in event:
        unknown = set(event) - {"job", "operator", "parameters"}
        if unknown:
            raise EventError(
                f"a manual run takes job, operator and parameters; unknown: "
                f"{sorted(map(str, unknown))}"
            )
        return ticker.run_manual(event["job"], event.get("operator"), event.get("parameters"))
    raise EventError(
        'unknown event: expected {"tick": ...}, a Scheduled Event, '
        '{"job": ..., "operator": ...}, {"environment": {...}}, '
        '{"pause": ...} or {"resume": ...}'
    )


@logger.inject_lambda_context(clear_state=True)
def handler(event: Any, context: Any) -> dict[str, Any]:
    try:
        ticker = _get_ticker(context)
        try:
            return route(ticker, event)
        except EventError as exc:
            logger.warning("Event rejected: %s", exc)
            return error_answer(str(exc))
    finally:
        flush()
