"""The ticker Lambda: ticks from the schedule, manual runs, environment and pause events."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from mini_scheduler.aws import account_from_arn
from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import Settings
from mini_scheduler.errors import EventError
from mini_scheduler.handlers._runtime import EmfMetrics, error_answer, flush, logger, set_dimensions
from mini_scheduler.model import iso_seconds, parse_instant
from mini_scheduler.ticker import Shard, Ticker
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


_FIRST_TICK = datetime(1970, 1, 1, tzinfo=UTC)
_LAST_TICK = datetime(2999, 12, 31, 23, 59, tzinfo=UTC)
MAX_TICK_AHEAD = timedelta(minutes=5)
"""How far a tick's minute may be ahead of the clock. A schedule's tick arrives at its minute,
give or take the clock skew between machines; a tick from further ahead would move the watermark
past minutes that have not come, and nothing would fire until they had."""


def _in_range(at: datetime, raw: str) -> datetime:
    if not _FIRST_TICK <= at <= _LAST_TICK:
        raise EventError(f"tick {raw[:60]!r} is outside the years 1970-2999 the scheduler serves")
    return at


def parse_tick(event: Mapping[str, Any]) -> tuple[datetime, Shard | None] | None:
    """The minute a tick event names (and its shard), or None when the event is not a tick."""
    if "tick" in event:
        raw = event["tick"]
        if not isinstance(raw, str):
            raise EventError('tick must be an ISO-8601 instant, e.g. "2026-11-30T14:00:00Z"')
        try:
            at = _in_range(parse_instant(raw), raw)
        except EventError:
            raise
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
            return _in_range(parse_instant(raw), raw), None
        except EventError:
            raise
        except ValueError as exc:
            raise EventError(
                f"Scheduled Event time {raw[:60]!r} is not an instant: {exc}"
            ) from None
    return None


def route(ticker: Ticker, event: Any, deadline: datetime | None = None) -> dict[str, Any]:
    """Act on one event; EventError for an event that cannot be acted on (nothing written).
    ``deadline``: when a tick stops claiming firings (see :func:`deadline_of`)."""
    if not isinstance(event, Mapping):
        raise EventError(
            "the ticker takes a JSON object: a tick, a manual run, an environment, "
            "pause or resume event"
        )
    tick = parse_tick(event)
    if tick is not None:
        at, shard = tick
        now = ticker.clock.now()
        if at - now > MAX_TICK_AHEAD:
            raise EventError(
                f"tick {iso_seconds(at)} is {_ahead(at - now)} ahead of this Lambda's clock "
                f"({iso_seconds(now)}): a tick runs the minute that is starting, so one from "
                "the future would mark minutes handled before they come"
            )
        return ticker.tick(at, shard, deadline=deadline).to_json()
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
            raise EventError(f'environment takes "active" and "operator" only, got {_keys(change)}')
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
                f"a manual run takes job, operator and parameters; unknown: {_keys(unknown)}"
            )
        return ticker.run_manual(event["job"], event.get("operator"), event.get("parameters"))
    raise EventError(
        'unknown event: expected {"tick": ...}, a Scheduled Event, '
        '{"job": ..., "operator": ...}, {"environment": {...}}, '
        '{"pause": ...} or {"resume": ...}'
    )


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


def _keys(keys: Any) -> str:
    """The keys an event carried, bounded: at most 8, each cut at 40 characters."""
    names = sorted(str(key)[:40] for key in keys)
    more = f" and {len(names) - 8} more" if len(names) > 8 else ""
    return ", ".join(repr(name) for name in names[:8]) + more


def _ahead(gap: timedelta) -> str:
    minutes = int(gap.total_seconds() // 60)
    return f"{minutes} minutes" if minutes < 1440 else f"{minutes // 1440} days"


@logger.inject_lambda_context(clear_state=True)
def handler(event: Any, context: Any) -> dict[str, Any]:
    try:
        ticker = _get_ticker(context)
        try:
            return route(ticker, event, deadline_of(context, ticker.clock.now()))
        except EventError as exc:
            logger.warning("Event rejected: %s", exc)
            return error_answer(str(exc))
    finally:
        flush()
