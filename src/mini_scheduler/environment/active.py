"""Is this region active? Read the store once per tick, keep the last good value, fail closed.

Rules (Mercury's; docs/how-a-tick-works.md, "The active environment"):

* the region is active when its environment name equals the active environment, compared
  without regard to case;
* no value stored yet means ``prod``;
* a store that cannot be read, or holds a value that is not a valid name, leaves the last value
  this container read, with a warning; with none, the tick fails closed (never active on error).

The names it knows are this region's own and the deployment's list (KNOWN_ENVIRONMENTS): a
name outside them is one no stack has, so no region is active. ``activate`` refuses such a
name unless forced with a reason; ``knows`` is what each tick reports as a metric.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mini_scheduler.config import DEFAULT_KNOWN, valid_environment_name
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


_REASON_MAX = 200


def check_reason(reason: Any) -> str:
    """A forced change's reason: required, one line of at most 200 characters."""
    if not isinstance(reason, str) or not reason.strip():
        raise EventError(
            "a forced change needs a reason: say why the name is not one of the known "
            'environments (e.g. "reason": "DR stack renamed DR2, list not updated yet")'
        )
    text = " ".join(reason.split())
    if len(text) > _REASON_MAX or not text.isprintable():
        raise EventError(f"reason must be one line of at most {_REASON_MAX} printable characters")
    return text


class ActiveEnvironment:
    def __init__(
        self,
        store: EnvironmentStore,
        environment_name: str,
        known: tuple[str, ...] = DEFAULT_KNOWN,
    ) -> None:
        self.store = store
        self.environment_name = environment_name
        names = [environment_name]
        names += [n for n in known if n.casefold() not in {m.casefold() for m in names}]
        self.known: tuple[str, ...] = tuple(names)  # this region's name first
        self._last: str | None = None
        self._announced = False
        self._warned_unknown: str | None = None
        self._lock = threading.Lock()

    def is_active(self, active: str | None) -> bool:
        return same_environment(active, self.environment_name)

    def knows(self, name: str | None) -> bool:
        """Whether ``name`` is this region's environment or one of the known ones."""
        return any(same_environment(name, known) for known in self.known)

    def _unknown_note(self, name: str) -> str:
        return (
            f"{name} is not a known environment ({', '.join(self.known)}: this region's name "
            "and KNOWN_ENVIRONMENTS) - no stack has it, so no region is active"
        )

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
            warn = not self.knows(active) and self._warned_unknown != active.casefold()
            self._warned_unknown = None if self.knows(active) else active.casefold()
        if first:
            self._announce(active, stored is not None)
        if warn:
            log.warning(
                "Active environment %s read from %s - no job runs in this region: %s",
                active,
                self.store.name,
                self._unknown_note(active),
            )
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
        """Mercury's status: environment, active, mode, persistent, store; and a ``warning``
        when the active name is not a known one."""
        status: dict[str, Any] = {
            "environment": self.environment_name,
            "active": active,
            "mode": "active" if self.is_active(active) else "standby",
            "persistent": self.store.persistent,
            "store": self.store.name,
        }
        if active is not None and not self.knows(active):
            status["warning"] = self._unknown_note(active)
        return status

    def activate(
        self,
        name: str,
        operator: str,
        now: datetime,
        *,
        force: bool = False,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Persist ``name`` as the active environment (before anything else), then answer the
        status. A name this region does not know is refused unless ``force`` with a
        ``reason``; a refusal (here or by the store) raises and changes nothing."""
        if not isinstance(name, str) or not valid_environment_name(name.strip()):
            raise EventError(
                f"environment.active {str(name)[:100]!r} is not an environment name "
                "(one word of letters, digits, '-' and '_')"
            )
        name = name.strip()
        known = self.knows(name)
        if not known and not force:
            raise EventError(
                f"environment.active {name!r} is not a known environment (known: "
                f"{', '.join(self.known)}): no region would be active. Check the name, or "
                'force it with "force": true and a "reason"'
            )
        if force:
            reason = check_reason(reason)
        self.store.set(name, operator=operator, now=now)
        with self._lock:
            self._last = name
        mode = "active" if self.is_active(name) else "on standby"
        if force:
            log.warning(
                "Active environment set to %s by %s, forced: %s - this instance (%s) is %s%s",
                name,
                operator,
                reason,
                self.environment_name,
                mode,
                "" if known else f"; {self._unknown_note(name)}",
            )
        else:
            log.info(
                "Active environment set to %s by %s - this instance (%s) is %s",
                name,
                operator,
                self.environment_name,
                mode,
            )
        status = self.status(name)
        if force:
            status |= {"forced": True, "reason": reason}
        return status
