"""The recorder Lambda: parse a Lambda destination record or a Step Functions status event
(:mod:`.events`), close or reopen the run it names with the recorder, answer."""

from __future__ import annotations

import threading
from typing import Any

from mini_scheduler.aws import Clients
from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.stepfunctions import ExecutionInputs
from mini_scheduler.errors import EventError
from mini_scheduler.handlers._runtime import (
    EmfMetrics,
    error_answer,
    flush,
    logger,
    set_dimensions,
    trim_context_keys,
)
from mini_scheduler.handlers.events.recorder import ExecutionInput, completion_from_event
from mini_scheduler.recorder import Recorder
from mini_scheduler.wiring import build_recorder

_lock = threading.Lock()
_built: tuple[Recorder, ExecutionInput] | None = None
CLOCK: Clock = SystemClock()  # tests replace it with a FixedClock


def _get_recorder() -> tuple[Recorder, ExecutionInput]:
    """The container's recorder, and DescribeExecution for a flow's event that left its input
    out (its Step Functions client made on first use: most containers never need it)."""
    global _built
    with _lock:
        if _built is None:
            settings = Settings.from_environment()
            set_dimensions(Environment=settings.environment_name, Region=settings.region)
            clients = Clients(settings.region, pool=8)
            recorder = build_recorder(settings, clients=clients, metrics=EmfMetrics(), clock=CLOCK)
            _built = recorder, ExecutionInputs(lambda: clients("stepfunctions"))
        return _built


def reset() -> None:
    global _built
    with _lock:
        _built = None


def record_event(
    recorder: Recorder, event: Any, execution_input: ExecutionInput | None = None
) -> dict[str, Any]:
    """What the function does with one event: EventError when it is not one the recorder takes
    (nothing written)."""
    return recorder.record(completion_from_event(event, execution_input))


@logger.inject_lambda_context(clear_state=True)
def handler(event: Any, context: Any) -> dict[str, Any]:
    trim_context_keys()
    try:
        recorder, execution_input = _get_recorder()
        try:
            return record_event(recorder, event, execution_input)
        except EventError as exc:
            logger.warning("Event rejected: %s", exc)
            return error_answer(str(exc))
    finally:
        flush()
