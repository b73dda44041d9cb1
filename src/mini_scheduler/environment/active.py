"""Is this region active? Read the store once per tick, keep the last good value, fail closed.

Rules (Mercury's; docs/how-a-tick-works.md, "The active environment"):

* the region is active when its environment name equals the active environment, compared
  without regard to case;
* no value stored yet means ``prod``;
* a store that cannot be read, or holds a value that is not a valid name, leaves the last value
  this container read, with a warning; with none, the tick fails closed (never active on error).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mini_scheduler.config import valid_environment_name
from mini_scheduler.environment.base import EnvironmentStore
from mini_scheduler.errors import EnvironmentStoreError, EventError

DEFAULT_ACTIVE = "prod"
log = logging.getLogger("mini_scheduler.environment")


@dataclass(frozen=True, slots=True)
class Reading:
    """One read of the active environment: ``active`` is None when the tick must fail closed."""

    active: str | None
    error: str | None = None  # why the store could not be read (the last good value, or none)


def same_environment(active: str | None, name: str) -> bool:
    """Whether ``name`` is the active environment (compared without regard to case)."""
    return active is not None and active.casefold() == name.casefold()


class ActiveEnvironment:
    def __init__(self, store: EnvironmentStore, environment_name: str) -> None:
        self.store = store
        self.environment_name = environment_name
        self._last: str | None = None
        self._announced = False
        self._lock = threading.Lock()

    def is_active(self, active: str | None) -> bool:
        return same_environment(active, self.environment_name)

    def read(self) -> Reading:
        """Read the store now; on failure fall back to the last good value, or fail closed."""
        try:
            stored = self.store.get()
            active = DEFAULT_ACTIVE if stored is None else stored.strip()
            if not valid_environment_name(active):
                raise EnvironmentStoreError(
                    f"{self.store.name} holds {str(stored)[:100]!r}, which is not an "
                    "environment name (one word of letters, digits, '-' and '_')"
                )
        except EnvironmentStoreError as exc:
            with self._lock:
                last = self._last
            if last is not None:
                log.warning(
                    "Environment store %s unreadable - keeping the last value read, %s: %s",
                    self.store.name,
                    last,
                    exc,
                )
                return Reading(last, str(exc))
            log.error(
                "Environment store %s unreadable and no value read before - failing closed, "
                "no job runs this minute: %s",
                self.store.name,
                exc,
            )
            return Reading(None, str(exc))
        with self._lock:
            self._last = active
            first = not self._announced
            self._announced = True
        if first:
            self._announce(active, stored is not None)
        return Reading(active)

    def _announce(self, active: str, stored: bool) -> None:
        mode = "active" if self.is_active(active) else "on standby"
        source = (
            f"persisted by {self.store.name}"
            if stored
            else (f"the default, nothing stored yet in {self.store.name}")
        )
        line = "Scheduler environment %s - active environment %s (%s) - this instance is %s"
        if self.store.persistent:
            log.info(line, self.environment_name, active, source, mode)
        else:
            memory_only = line + " - the value lives in memory only"
            log.warning(memory_only, self.environment_name, active, source, mode)

    def status(self, active: str | None) -> dict[str, Any]:
        """Mercury's status: environment, active, mode, persistent, store."""
        return {
            "environment": self.environment_name,
            "active": active,
            "mode": "active" if self.is_active(active) else "standby",
            "persistent": self.store.persistent,
            "store": self.store.name,
        }

    def activate(self, name: str, operator: str, now: datetime) -> dict[str, Any]:
        """Persist ``name`` as the active environment (before anything else), then answer the
        status. A refusal by the store raises and changes nothing."""
        if not isinstance(name, str) or not valid_environment_name(name.strip()):
            raise EventError(
                f"environment.active {str(name)[:100]!r} is not an environment name "
                "(one word of letters, digits, '-' and '_')"
            )
        name = name.strip()
        self.store.set(name, operator=operator, now=now)
        with self._lock:
            self._last = name
        mode = "active" if self.is_active(name) else "on standby"
        log.info(
            "Active environment set to %s by %s - this instance (%s) is %s",
            name,
            operator,
            self.environment_name,
            mode,
        )
        return self.status(name)
