"""A job's ``overlap`` policy and the keys that go with it, read (:mod:`.validate` calls these).

``overlap`` says what a firing does while the job's previous run is still open: ``allow`` (it
runs beside it), ``skip`` (it is recorded SKIPPED), ``buffer_one`` (it waits for the open run's
end; at most one waits, a later one is skipped) and ``buffer_all`` (each waits, started one at a
time oldest first; at most ``max_buffered``, the excess skipped). ``max_buffered`` goes with
``buffer_all`` only: on any other policy it is refused, never ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mini_scheduler.jobs.model import DEFAULT_MAX_BUFFERED, MAX_BUFFERED
from mini_scheduler.jobs.text import describe

__all__ = ["MAX_BUFFERED_KEY", "buffer_problems", "read_max_buffered"]

MAX_BUFFERED_KEY: Final = "max_buffered"


def read_max_buffered(value: object, reasons: list[str]) -> int | None:
    """``max_buffered``: a whole number from 1 to :data:`MAX_BUFFERED` (None: not set, or a
    reason added)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BUFFERED:
        reasons.append(
            f"{MAX_BUFFERED_KEY} must be a whole number from 1 to {MAX_BUFFERED} (the firings "
            f"that may wait; {DEFAULT_MAX_BUFFERED} when not set), not {describe(value)}"
        )
        return None
    return value


def buffer_problems(values: Mapping[str, Any], raw: Mapping[Any, Any]) -> list[str]:
    """What is wrong with the entry's ``max_buffered`` beside its ``overlap`` (read as
    ``values`` holds them): it goes with ``buffer_all`` only."""
    overlap = values.get("overlap")
    if raw.get(MAX_BUFFERED_KEY) is None or overlap in (None, "buffer_all"):
        return []
    why = " (buffer_one keeps one firing waiting)" if overlap == "buffer_one" else ""
    return [
        f"{MAX_BUFFERED_KEY} goes with overlap buffer_all only, not with overlap {overlap}{why}"
    ]
