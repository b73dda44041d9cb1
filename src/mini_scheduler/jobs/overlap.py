"""A job's ``overlap`` policy and the keys that go with it, read (:mod:`.validate` calls these).

``overlap`` says what a firing does while the job's previous run is still open: ``allow`` (it
runs beside it), ``skip`` (it is recorded SKIPPED), ``buffer_one`` (it waits for the open run's
end; at most one waits, a later one is skipped) and ``buffer_all`` (each waits, started one at a
time oldest first; at most ``max_buffered``, the excess skipped) and ``cancel_other`` (the open
run is stopped, recorded FAILED as cancelled by the new firing, which starts). ``max_buffered``
goes with ``buffer_all`` only: on any other policy it is refused, never ignored; ``cancel_other``
goes with a target that can be stopped only (a flow, an ECS task), and is refused with the reason
for any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mini_scheduler.jobs.model import DEFAULT_MAX_BUFFERED, MAX_BUFFERED
from mini_scheduler.jobs.text import describe

__all__ = ["MAX_BUFFERED_KEY", "STOPPABLE", "overlap_problems", "read_max_buffered"]

MAX_BUFFERED_KEY: Final = "max_buffered"
STOPPABLE: Final = ("flow", "ecs")
"""The kinds of target whose run ``cancel_other`` can stop (StopExecution, StopTask)."""
_NOT_STOPPABLE: Final[Mapping[str, str]] = {
    "lambda": "a Lambda function's invocation cannot be stopped once it runs",
    "sqs": "a message sent cannot be taken back (its run ends at its dispatch)",
    "sns": "a message published cannot be taken back (its run ends at its dispatch)",
    "events": "an event put cannot be taken back (its run ends at its dispatch)",
    "https": "a webhook's request cannot be taken back (its run ends with its answer)",
}


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


def overlap_problems(values: Mapping[str, Any], raw: Mapping[Any, Any]) -> list[str]:
    """What is wrong with the entry's ``overlap`` beside its other keys (read as ``values``
    holds them): ``max_buffered`` goes with ``buffer_all`` only, ``cancel_other`` with a target
    that can be stopped only."""
    overlap, target = values.get("overlap"), values.get("service")
    kind = getattr(target, "kind", None)
    if overlap == "cancel_other" and kind is not None and kind not in STOPPABLE:
        return [
            f"overlap cancel_other needs a target whose run can be stopped (flow:// or ecs://): "
            f"{_NOT_STOPPABLE.get(kind, kind)}"
        ]
    if raw.get(MAX_BUFFERED_KEY) is None or overlap in (None, "buffer_all"):
        return []
    why = " (buffer_one keeps one firing waiting)" if overlap == "buffer_one" else ""
    return [
        f"{MAX_BUFFERED_KEY} goes with overlap buffer_all only, not with overlap {overlap}{why}"
    ]
