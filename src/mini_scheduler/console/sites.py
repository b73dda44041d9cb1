"""One region as the console reaches it: the operator path over the region's stores, and how an
operator's event reaches the region's ticker (a manual run is dispatched there, as ``mini-scheduler
run`` does, or in process under ``make run``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from mini_scheduler.clock import Clock
from mini_scheduler.jobs import CronFile
from mini_scheduler.operator import Operator

Send = Callable[[Mapping[str, Any]], Any]
"""An operator's event (``{"job", "operator", "parameters"}`` or ``{"rerun", ...}``) to the
region's ticker: its answer, or an error naming why it was refused."""


@dataclass(frozen=True, slots=True)
class Site:
    """A region: its name, its stack's environment name (None when unknown), the operator path
    over its stores, and its ticker. ``where`` says what it reads, for the page (a table name, a
    parameter name: never a credential or a connection string)."""

    region: str
    environment_name: str | None
    operator: Operator
    send: Send
    where: str = ""

    @property
    def scope(self) -> str:
        """The claim store's control scope of this region's ticker."""
        return f"{self.region}/{self.environment_name or 'prod'}"


class CachedCron:
    """A cron file read at most once every ``ttl`` (a deployed stack's is in its ticker's
    package: reading it downloads the package). An error is not kept: the next call reads
    again."""

    def __init__(self, load: Callable[[], CronFile], clock: Clock, ttl: float = 300.0) -> None:
        self._load = load
        self._clock = clock
        self._ttl = timedelta(seconds=ttl)
        self._kept: tuple[datetime, CronFile] | None = None
        self._lock = threading.Lock()

    def __call__(self) -> CronFile:
        with self._lock:
            now = self._clock.now()
            if self._kept is None or now - self._kept[0] >= self._ttl:
                self._kept = (now, self._load())
            return self._kept[1]
