"""A job's ``retry`` key, read: how many attempts follow a failed run, and the backoff between
them (the bounds are :data:`.model.RETRY_BOUNDS`; defaults fill what the entry leaves out)."""

from __future__ import annotations

from typing import Any, Final

from mini_scheduler.jobs.model import (
    DEFAULT_BACKOFF,
    DEFAULT_FACTOR,
    DEFAULT_MAX_BACKOFF,
    MAX_BACKOFF,
    MAX_FACTOR,
    MAX_RETRIES,
    RETRY_BOUNDS,
    Retry,
    in_retry_bounds,
)
from mini_scheduler.jobs.text import describe, words
from mini_scheduler.jobs.unknown import unknown_key

__all__ = ["read_retry"]

_RETRY_KEYS: Final = tuple(RETRY_BOUNDS)
_RETRY_DEFAULTS: Final[dict[str, int | float]] = {
    "backoff": DEFAULT_BACKOFF,
    "factor": DEFAULT_FACTOR,
    "max_backoff": DEFAULT_MAX_BACKOFF,
}
_RETRY_RULES: Final = {
    "retries": f"a whole number from 1 to {MAX_RETRIES}",
    "backoff": f"a whole number of seconds from 0 to {MAX_BACKOFF}",
    "factor": f"a number from 1 to {MAX_FACTOR}",
    "max_backoff": f"a whole number of seconds from 0 to {MAX_BACKOFF}",
}


def read_retry(value: object, label: str, reasons: list[str], notes: list[str]) -> Retry | None:
    """The retry policy; None for no retry (or a reason added to ``reasons``; an unknown key
    is a note)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        reasons.append(f"retry must be a mapping of {words(_RETRY_KEYS)}, not {describe(value)}")
        return None
    notes.extend(
        unknown_key(label, key, _RETRY_KEYS, prefix="retry.")
        for key in value
        if key not in RETRY_BOUNDS
    )
    found: dict[str, Any] = {}
    for key, rule in _RETRY_RULES.items():
        item = value.get(key)
        if item is None and key == "retries":
            reasons.append(
                f"missing retry.retries (the attempts after the first, 1 to {MAX_RETRIES})"
            )
        elif item is None:
            found[key] = _RETRY_DEFAULTS[key]
        elif in_retry_bounds(item, key):
            found[key] = item
        else:
            reasons.append(f"retry.{key} must be {rule}, not {describe(item)}")
    if len(found) < len(_RETRY_RULES):
        return None
    if found["max_backoff"] < found["backoff"]:
        given = "the default " if value.get("max_backoff") is None else ""
        reasons.append(
            f"retry.max_backoff must be at least retry.backoff ({found['backoff']}), not "
            f"{given}{found['max_backoff']}"
        )
        return None
    return Retry(found["retries"], found["backoff"], float(found["factor"]), found["max_backoff"])
