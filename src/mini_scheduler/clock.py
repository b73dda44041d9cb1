"""The clock is injected: the core never reads the time or sleeps by itself."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Where the scheduler's notion of "now" comes from, and how it waits."""

    def now(self) -> datetime:
        """The current instant, an aware UTC datetime."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait that long (a fixed clock advances instead)."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FixedClock:
    """A clock for tests and dry runs: it only moves when told to, or when slept on."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._now = start.astimezone(UTC)
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self._now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if seconds > 0:
            self._now += timedelta(seconds=seconds)

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)

    def set(self, instant: datetime) -> None:
        if instant.tzinfo is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._now = instant.astimezone(UTC)
