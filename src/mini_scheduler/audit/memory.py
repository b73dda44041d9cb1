"""Audit records kept in memory: tests, and a ticker or console built without a log group."""

from __future__ import annotations

import threading
from datetime import datetime

from mini_scheduler.audit.base import READ_LIMIT, AuditRecord, newest_first
from mini_scheduler.errors import AuditError


class MemoryAuditLog:
    """An :class:`~mini_scheduler.audit.base.AuditLog` in a list (each record kept as its
    JSON line, as a log group keeps it, so both read back alike)."""

    name = "memory"

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self.failing: Exception | None = None  # set: every call fails so (tests)

    def _check(self) -> None:
        if self.failing is not None:
            raise AuditError(f"audit trail {self.name} unavailable: {self.failing}")

    def append(self, record: AuditRecord) -> None:
        self._check()
        line = record.to_line()
        with self._lock:
            self._lines.append(line)

    def read(
        self,
        since: datetime,
        until: datetime,
        *,
        job: str | None = None,
        actor: str | None = None,
        limit: int = READ_LIMIT,
    ) -> list[AuditRecord]:
        self._check()
        with self._lock:
            lines = list(self._lines)
        records = [r for r in map(AuditRecord.from_line, lines) if r is not None]
        kept = [r for r in records if since <= r.at < until and r.matches(job=job, actor=actor)]
        return newest_first(kept, limit)
