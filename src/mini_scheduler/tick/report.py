"""What a tick did: the counts its executor keeps, and the summary the tick answers."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mini_scheduler.claims.base import Deferred
from mini_scheduler.model import iso_seconds


@dataclass
class Tally:
    """The executor's counts; thread-safe (firings are claimed and dispatched concurrently)."""

    claimed: int = 0
    dispatched: int = 0
    misfired: int = 0
    errors: int = 0
    taken_over: int = 0
    timed_out: int = 0
    waiting: int = 0  # firings kept waiting for their job's open run (overlap: buffer_*)
    cancelled: int = 0  # open runs stopped by a later firing (overlap: cancel_other)
    skipped: Counter[str] = field(default_factory=Counter)
    held_at: list[datetime] = field(default_factory=list)  # firings neither claimed nor recorded
    answered: list[Deferred] = field(default_factory=list)  # deferred firings whose claim answered
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, value: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + value)

    def skip(self, reason: str, value: int = 1) -> None:
        with self.lock:
            self.skipped[reason] += value

    def hold(self, moment: datetime) -> None:
        with self.lock:
            self.held_at.append(moment)

    def answer(self, deferred: Deferred) -> None:
        with self.lock:
            self.answered.append(deferred)

    def to_json(self) -> dict[str, Any]:
        return {
            "claimed": self.claimed,
            "dispatched": self.dispatched,
            "skipped": dict(sorted(self.skipped.items())),
            "misfired": self.misfired,
            "errors": self.errors,
            "takenOver": self.taken_over,
            "timedOut": self.timed_out,
            "held": len(self.held_at),  # left to the next tick: not claimed, nothing recorded
        } | {name: value for name, value in self._policies().items() if value}

    def _policies(self) -> dict[str, int]:
        """The overlap policies' counts, said only when not zero (a tick without them answers
        what it always did)."""
        return {"waiting": self.waiting, "cancelled": self.cancelled}


@dataclass(frozen=True, slots=True)
class TickSummary:
    minute: datetime
    environment: str
    active_environment: str | None
    mode: str
    counts: dict[str, Any]
    window: tuple[datetime, datetime]
    note: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "minute": iso_seconds(self.minute),
            "environment": self.environment,
            "activeEnvironment": self.active_environment,
            "mode": self.mode,
            "counts": self.counts,
            "window": [iso_seconds(self.window[0]), iso_seconds(self.window[1])],
        }
        if self.note:
            out["note"] = self.note
        if self.error:
            out["error"] = self.error
        return out
