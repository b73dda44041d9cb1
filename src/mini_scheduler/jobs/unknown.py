"""The warning for a key of cron.yaml that nobody reads, with the key it most likely meant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from mini_scheduler.jobs.text import printable

__all__ = ["unknown_key"]

_LIKELY: Final = {
    "schedule": "cron",
    "statement": "cron",
    "expression": "cron",
    "zone": "timezone",
    "tz": "timezone",
    "time_zone": "timezone",
    "time-zone": "timezone",
    "function": "service",
    "target": "service",
    "lambda": "service",
    "flow": "service",
    "params": "parameters",
    "payload": "parameters",
    "disabled": "enabled",
    "retries": "retry",
    "attempts": "retries",
    "max_attempts": "retries",
    "max_retries": "retries",
    "delay": "backoff",
    "interval": "backoff",
    "multiplier": "factor",
    "max_delay": "max_backoff",
    "max_interval": "max_backoff",
    "pause_after": "pause_after_failures",
    "max_failures": "pause_after_failures",
    "max_consecutive_failures": "pause_after_failures",
}


def unknown_key(label: str, key: object, known: Sequence[str], prefix: str = "") -> str:
    """The warning for a key nobody reads, with the key it most likely meant; ``prefix`` is
    the path of the mapping that holds it (``retry.``)."""
    guess = _suggest(key, known)
    shown = printable(key, 40) if isinstance(key, str) else repr(key)[:40]
    if guess:
        return f"{label} key {prefix}{shown} ignored - did you mean {prefix}{guess}?"
    keys = ", ".join(prefix + name for name in known)
    return f"{label} key {prefix}{shown} ignored - the keys are {keys}"


def _suggest(key: object, known: Sequence[str]) -> str | None:
    if not isinstance(key, str):
        return None
    lowered = key.lower()
    if lowered in _LIKELY and _LIKELY[lowered] in known:
        return _LIKELY[lowered]
    if lowered in known:
        return lowered
    import difflib  # here only: a key that is wrong, never a valid cron.yaml's load

    close = difflib.get_close_matches(lowered, known, n=1, cutoff=0.6)
    return close[0] if close else None
