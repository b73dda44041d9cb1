"""The recorder Lambda: closes runs from Lambda destination and Step Functions status events."""

from __future__ import annotations

import threading
from typing import Any

from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import Settings
from mini_scheduler.errors import EventError
from mini_scheduler.handlers._runtime import EmfMetrics, error_answer, flush, logger, set_dimensions
from mini_scheduler.recorder import Recorder
from mini_scheduler.wiring import build_recorder

_lock = threading.Lock()
_recorder: Recorder | None = None
CLOCK: Clock = SystemClock()  # tests replace it with a FixedClock


def _get_recorder() -> Recorder:
    global _recorder
    with _lock:
        if _recorder is None:
            settings = Settings.from_environment()
            set_dimensions(Environment=settings.environment_name, Region=settings.region)
            _recorder = build_recorder(settings, metrics=EmfMetrics(), clock=CLOCK)
        return _recorder


def reset() -> None:
    global _recorder
    with _lock:
        _recorder = None


@logger.inject_lambda_context(clear_state=True)
def handler(event: Any, context: Any) -> dict[str, Any]:
    try:
        recorder = _get_recorder()
        try:
            return recorder.record(event)
        except EventError as exc:
            logger.warning("Event rejected: %s", exc)
            return error_answer(str(exc))
    finally:
        flush()
