"""Waking the ticker for deferred firings due in a minute whose tick may have read them already.

A tick reads the deferred firings due in its window once, at its start. One written after
that and due in the same window (a retry ten seconds after a failure, a one-time schedule made
for twenty seconds from now, a backfill's first firings due now) would wait for the next
minute's tick, up to a minute late. So whoever writes one (the recorder, the ticker's own
dispatch failures, an operator's schedule or backfill) wakes the ticker: an asynchronous
``{"tick": "<minute>", "deferred": true}``, which dispatches the deferred firings due in that
minute and written since it began (the others are its tick's), and the firings waiting for a
run's end, at their second (:meth:`mini_scheduler.tick.Ticker.catch_up`). Each is claimed by its
firing id like any firing, so the catch-up and the next tick never run one twice. A wake that
cannot be sent changes nothing but the latency: the next tick runs them, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from mini_scheduler.clock import Clock
from mini_scheduler.errors import SchedulerError
from mini_scheduler.model import floor_minute, iso_seconds

log = logging.getLogger("mini_scheduler.ticker")

Wake = Callable[[Sequence[datetime]], None]
"""Told the due instants of deferred firings just written; wakes the ticker when needed."""


def catch_up_minute(dues: Sequence[datetime], now: datetime, lead_seconds: int) -> datetime | None:
    """The minute whose tick may have read the deferred firings before these were written:
    ``now``'s, when one is due before its window's end (``lead_seconds`` after the minute's
    end); None when every one is due later (a later tick reads it in time)."""
    minute = floor_minute(now)
    end = minute + timedelta(seconds=lead_seconds + 60)
    return minute if any(due < end for due in dues) else None


def waker(send: Callable[[dict[str, Any]], None], clock: Clock, lead_seconds: int) -> Wake:
    """A :data:`Wake` that sends the catch-up event with ``send`` (an asynchronous invoke of the
    ticker function, or ``make run``'s own thread)."""

    def wake(dues: Sequence[datetime]) -> None:
        minute = catch_up_minute(dues, clock.now(), lead_seconds)
        if minute is None:
            return
        try:
            send({"tick": iso_seconds(minute), "deferred": True})
        except SchedulerError as exc:
            log.warning(
                "Ticker not woken for the deferred firings due in minute %s (the next tick runs "
                "them): %s",
                iso_seconds(minute),
                exc,
            )

    return wake
