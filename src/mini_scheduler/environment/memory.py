"""An in-memory environment store: tests and dry runs (a restart forgets it)."""

from __future__ import annotations

from datetime import datetime

from mini_scheduler.errors import EnvironmentStoreError


class MemoryEnvironmentStore:
    def __init__(self, value: str | None = None) -> None:
        self.name = "memory"
        self.persistent = False
        self.value = value
        self.failing: Exception | None = None  # set to make the store unreadable
        self.reads = 0

    def get(self) -> str | None:
        self.reads += 1
        if self.failing is not None:
            raise EnvironmentStoreError(f"memory store unreadable: {self.failing}")
        return self.value

    def set(self, value: str, *, operator: str, now: datetime) -> None:
        if self.failing is not None:
            raise EnvironmentStoreError(f"memory store refused the write: {self.failing}")
        self.value = value
