"""An operator's events to the ticker, parsed into what each asks for (see
:mod:`mini_scheduler.handlers.events`): a manual run, a rerun, the active environment, a pause or
resume, a runtime schedule's action, a backfill and its status. One parser per kind, picked by
the event's key.

:func:`.ticker.ticker_request` imports this module at the first event that is not a tick, so a
tick of cron.yaml's firings never loads it (issue 28, the cold start)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mini_scheduler.errors import EventError


@dataclass(frozen=True, slots=True)
class ManualRun:
    """Run a job now (the values as the event gave them)."""

    job: object
    operator: object
    parameters: object = None


@dataclass(frozen=True, slots=True)
class Rerun:
    """Run a past firing again, as a manual run that names it (the values as given)."""

    firing_id: object
    operator: object
    parameters: object = None


@dataclass(frozen=True, slots=True)
class EnvironmentStatus:
    """Answer the active environment (``{"environment": {}}``)."""


@dataclass(frozen=True, slots=True)
class EnvironmentChange:
    """Make ``active`` the active environment (``force``, with a ``reason``: a name the
    region does not know)."""

    active: object
    operator: object
    force: object = False
    reason: object = None


@dataclass(frozen=True, slots=True)
class PauseChange:
    """Pause a job (``paused``), or resume it."""

    job: object
    paused: bool
    operator: object


SCHEDULE_ACTIONS = ("create", "list", "show", "delete")


@dataclass(frozen=True, slots=True)
class ScheduleRequest:
    """Create runtime schedules, list them, show or delete one."""

    action: str
    name: object = None
    schedules: object = None
    operator: object = None


@dataclass(frozen=True, slots=True)
class BackfillRequest:
    """Backfill a job's firings from ``start`` up to ``end`` at ``rate`` a minute."""

    job: object
    start: object
    end: object
    rate: object
    operator: object


@dataclass(frozen=True, slots=True)
class BackfillStatus:
    """The backfills with firings left (of ``job``, or all)."""

    job: object = None


OperatorRequest = (
    ManualRun
    | Rerun
    | EnvironmentStatus
    | EnvironmentChange
    | PauseChange
    | ScheduleRequest
    | BackfillRequest
    | BackfillStatus
)

_SCHEDULE_KEYS = {
    "create": {"schedule", "schedules", "operator"},
    "list": {"schedule"},
    "show": {"schedule", "name"},
    "delete": {"schedule", "name", "operator"},
}


def operator_request(event: Mapping[str, Any]) -> OperatorRequest | None:
    """What an operator's event asks for, or None when no key of ``event`` names one."""
    for keys, parse in _PARSERS:
        if any(key in event for key in keys):
            return parse(event)
    return None


def _environment(event: Mapping[str, Any]) -> EnvironmentStatus | EnvironmentChange:
    change = event["environment"]
    if not isinstance(change, Mapping):
        raise EventError(
            "environment must be an object: {} to read, "
            '{"active": "DR", "operator": "jane.doe"} to set'
        )
    if not change:
        return EnvironmentStatus()
    unknown = set(change) - {"active", "operator", "force", "reason"}
    if unknown or "active" not in change:
        raise EventError(
            'environment takes "active", "operator", and "force" with "reason" only, got '
            f"{_keys(change)}"
        )
    return EnvironmentChange(
        change["active"],
        change.get("operator"),
        change.get("force", False),
        change.get("reason"),
    )


def _schedule_request(event: Mapping[str, Any]) -> ScheduleRequest:
    action = event["schedule"]
    if action not in SCHEDULE_ACTIONS:
        raise EventError(
            f"schedule must be one of {', '.join(SCHEDULE_ACTIONS)}, not {str(action)[:40]!r}"
        )
    unknown = set(event) - _SCHEDULE_KEYS[action]
    if unknown:
        allowed = ", ".join(sorted(_SCHEDULE_KEYS[action] - {"schedule"})) or "nothing else"
        raise EventError(f"schedule {action} takes {allowed}; unknown: {_keys(unknown)}")
    return ScheduleRequest(action, event.get("name"), event.get("schedules"), event.get("operator"))


def _backfill(event: Mapping[str, Any]) -> BackfillRequest:
    unknown = set(event) - {"backfill", "from", "to", "rate", "operator"}
    if unknown:
        raise EventError(
            f"a backfill takes backfill (the job), from, to, rate and operator; unknown: "
            f"{_keys(unknown)}"
        )
    return BackfillRequest(
        event["backfill"],
        event.get("from"),
        event.get("to"),
        event.get("rate"),
        event.get("operator"),
    )


def _backfill_status(event: Mapping[str, Any]) -> BackfillStatus:
    asked = event["backfillStatus"]
    if not isinstance(asked, Mapping) or set(asked) - {"job"}:
        raise EventError('backfillStatus must be {} (every job) or {"job": "<name>"}')
    return BackfillStatus(asked.get("job"))


def _pause(event: Mapping[str, Any]) -> PauseChange:
    paused = "pause" in event
    return PauseChange(event["pause" if paused else "resume"], paused, event.get("operator"))


def _rerun(event: Mapping[str, Any]) -> Rerun:
    unknown = set(event) - {"rerun", "operator", "parameters"}
    if unknown:
        raise EventError(
            f"a rerun takes rerun (the firing id), operator and parameters; unknown: "
            f"{_keys(unknown)}"
        )
    return Rerun(event["rerun"], event.get("operator"), event.get("parameters"))


def _manual_run(event: Mapping[str, Any]) -> ManualRun:
    unknown = set(event) - {"job", "operator", "parameters"}
    if unknown:
        raise EventError(
            f"a manual run takes job, operator and parameters; unknown: {_keys(unknown)}"
        )
    return ManualRun(event["job"], event.get("operator"), event.get("parameters"))


_PARSERS: tuple[tuple[tuple[str, ...], Callable[[Mapping[str, Any]], OperatorRequest]], ...] = (
    (("environment",), _environment),
    (("schedule",), _schedule_request),
    (("backfill",), _backfill),
    (("backfillStatus",), _backfill_status),
    (("pause", "resume"), _pause),
    (("rerun",), _rerun),
    (("job",), _manual_run),
)
"""The event's first key found here, in this order, picks its parser (a tick's come first)."""


def _keys(keys: Any) -> str:
    """The keys an event carried, bounded: at most 8, each cut at 40 characters."""
    names = sorted(str(key)[:40] for key in keys)
    more = f" and {len(names) - 8} more" if len(names) > 8 else ""
    return ", ".join(repr(name) for name in names[:8]) + more
