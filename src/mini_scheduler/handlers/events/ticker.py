"""The ticker's events, parsed into what each asks for (see :mod:`mini_scheduler.handlers.events`):
a tick, a manual run, a rerun, the active environment, a pause or resume, a runtime schedule's
action, a backfill and its status. One parser per kind, picked by the event's key.

A tick is parsed here; an operator's event by :mod:`.operator`, imported at the first event that
is not a tick: a tick of cron.yaml's firings never loads it (issue 28, the cold start)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mini_scheduler.errors import EventError
from mini_scheduler.model import parse_instant

if TYPE_CHECKING:
    from mini_scheduler.handlers.events.operator import OperatorRequest
    from mini_scheduler.tick import Shard


@dataclass(frozen=True, slots=True)
class Tick:
    """Run the minute ``at`` (of one shard's jobs, or of all); ``deferred``: only the deferred
    firings due in it, written after its tick read them (a catch-up: mini_scheduler.wake)."""

    at: datetime
    shard: Shard | None = None
    deferred: bool = False


if TYPE_CHECKING:
    TickerRequest = Tick | OperatorRequest


_FIRST_TICK = datetime(1970, 1, 1, tzinfo=UTC)
_LAST_TICK = datetime(2999, 12, 31, 23, 59, tzinfo=UTC)


def _in_range(at: datetime, raw: str) -> datetime:
    if not _FIRST_TICK <= at <= _LAST_TICK:
        raise EventError(f"tick {raw[:60]!r} is outside the years 1970-2999 the scheduler serves")
    return at


def _shard(event: Mapping[str, Any]) -> Shard | None:
    from mini_scheduler.tick import Shard  # here only: the recorder function never loads the tick

    if "shard" not in event and "shards" not in event:
        return None
    index, count = event.get("shard"), event.get("shards")
    if (
        not isinstance(index, int)
        or not isinstance(count, int)
        or isinstance(index, bool)
        or isinstance(count, bool)
        or not 0 <= index < count <= 1024
    ):
        raise EventError("shard and shards must be whole numbers, 0 <= shard < shards")
    return Shard(index, count)


def _catch_up(event: Mapping[str, Any]) -> bool:
    """A tick's ``deferred`` flag: ``true`` for a catch-up, which is no shard's."""
    if "deferred" not in event:
        return False
    if event["deferred"] is not True:
        raise EventError('deferred must be true: {"tick": "<minute>", "deferred": true}')
    if "shard" in event or "shards" in event:
        raise EventError("a catch-up of deferred firings is the whole region's, not a shard's")
    return True


def parse_tick(event: Mapping[str, Any]) -> Tick | None:
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
        return Tick(at, _shard(event), _catch_up(event))
    if event.get("detail-type") == "Scheduled Event":
        raw = event.get("time")
        if not isinstance(raw, str):
            raise EventError("Scheduled Event without a time")
        try:
            return Tick(_in_range(parse_instant(raw), raw))
        except EventError:
            raise
        except ValueError as exc:
            raise EventError(
                f"Scheduled Event time {raw[:60]!r} is not an instant: {exc}"
            ) from None
    return None


def ticker_request(event: Any) -> TickerRequest:
    """What a ticker event asks for."""
    if not isinstance(event, Mapping):
        raise EventError(
            "the ticker takes a JSON object: a tick, a manual run, a rerun, an environment, "
            "pause, resume, schedule or backfill event"
        )
    tick = parse_tick(event)
    if tick is not None:
        return tick
    from mini_scheduler.handlers.events.operator import operator_request

    found = operator_request(event)
    if found is not None:
        return found
    raise EventError(
        'unknown event: expected {"tick": ...}, a Scheduled Event, '
        '{"job": ..., "operator": ...}, {"rerun": ..., "operator": ...}, {"environment": {...}}, '
        '{"pause": ...}, {"resume": ...}, {"schedule": ...}, {"backfill": ...} or '
        '{"backfillStatus": {...}}'
    )
