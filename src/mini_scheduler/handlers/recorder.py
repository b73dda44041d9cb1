"""The recorder Lambda: parse a Lambda destination record or a Step Functions status event
(:mod:`.events`), close or reopen the run it names with the recorder, answer.

The completions come in batches from the completion queue (an SQS event source mapping): each
message's body is one of those events, recorded one after another; the answer names the
messages whose completion could not be written (a store that failed), so that only those come
back after the queue's visibility timeout (``ReportBatchItemFailures``). A completion sent to
the function itself (a destination that still names the recorder, ``aws lambda invoke``) is
recorded alone, as before. The invocation's counts (RunsSucceeded...) ride in its last end's
log line (handlers/_runtime.py carry_metrics)."""

from __future__ import annotations

import threading
from typing import Any

from mini_scheduler.aws import Clients
from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.stepfunctions import ExecutionInputs
from mini_scheduler.errors import EventError, StoreError
from mini_scheduler.handlers._runtime import (
    EmfMetrics,
    carry_metrics,
    error_answer,
    flush,
    logger,
    set_dimensions,
    trim_context_keys,
)
from mini_scheduler.handlers.events.recorder import (
    ExecutionInput,
    Message,
    completion_from_event,
    queued_messages,
)
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


def record_batch(
    recorder: Recorder, messages: list[Message], execution_input: ExecutionInput | None = None
) -> dict[str, Any]:
    """Record each message's completion; the partial batch response: the messages to deliver
    again. A message the recorder cannot take is rejected, not delivered again (it would fail
    the same way every time); one whose write failed comes back, and recording it again is
    harmless (a run closes once: the store's writes are conditional)."""
    failed: list[dict[str, str]] = []
    for index, message in enumerate(messages, 1):
        if index == len(messages):
            carry_metrics()  # the last end's line carries the batch's counts
        try:
            if isinstance(message.event, EventError):
                _rejected(message, message.event)
            else:
                record_event(recorder, message.event, execution_input)
        except EventError as exc:
            _rejected(message, exc)
        except StoreError as exc:
            logger.error(_NOT_RECORDED, message.message_id, exc)
            failed.append({"itemIdentifier": message.message_id})
        except Exception as exc:  # one message's bug must not send its batch back whole
            logger.exception(_NOT_RECORDED, message.message_id, exc)
            failed.append({"itemIdentifier": message.message_id})
    return {"batchItemFailures": failed}


def _rejected(message: Message, error: EventError) -> None:
    logger.warning("Event rejected: SQS message %s: %s", message.message_id, error)


_NOT_RECORDED = "Completion in SQS message %s not recorded - the queue delivers it again: %s"


@logger.inject_lambda_context(clear_state=True)
def handler(event: Any, context: Any) -> dict[str, Any]:
    trim_context_keys()
    try:
        recorder, execution_input = _get_recorder()
        messages = queued_messages(event)
        if messages is not None:
            return record_batch(recorder, messages, execution_input)
        carry_metrics()
        try:
            return record_event(recorder, event, execution_input)
        except EventError as exc:
            logger.warning("Event rejected: %s", exc)
            return error_answer(str(exc))
    finally:
        flush()
