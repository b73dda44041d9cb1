"""The recorder closes runs from their completion events.

* A Lambda destination record (``OnSuccess`` / ``OnFailure``): ``requestContext.condition`` is
  ``Success``, ``RetriesExhausted`` or ``EventAgeExceeded``; ``requestPayload`` is what the
  ticker sent, so it names the firing.
* A Step Functions "Execution Status Change" event from EventBridge: ``detail.status`` is
  SUCCEEDED, FAILED, TIMED_OUT or ABORTED; the execution's input (or, when Step Functions left
  the input out, the execution name) names the firing.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mini_scheduler import metrics as m
from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.clock import Clock
from mini_scheduler.errors import EventError
from mini_scheduler.jobs import name_problem
from mini_scheduler.metrics import Metrics, RecordingMetrics
from mini_scheduler.model import RunStatus, firing_from_id, iso_seconds, job_of, parse_instant

log = logging.getLogger("mini_scheduler.recorder")

_SFN_ENDS = {
    "SUCCEEDED": RunStatus.SUCCEEDED,
    "FAILED": RunStatus.FAILED,
    "ABORTED": RunStatus.FAILED,
    "TIMED_OUT": RunStatus.TIMED_OUT,
}
_LAMBDA_CONDITIONS = {"Success", "RetriesExhausted", "EventAgeExceeded"}
_EXECUTION_NAME = re.compile(
    r"(?P<job>.+)@(?:(?P<at>\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ)"
    r"|manual-(?P<mat>\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z)-(?P<nonce>[0-9a-f]{8}))"
)
_ERROR_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class Completion:
    firing_id: str
    status: RunStatus
    ended_at: datetime | None
    error: str | None
    source: str


def _firing_id_from_execution_name(name: str) -> str | None:
    found = _EXECUTION_NAME.fullmatch(name)
    if not found:
        return None
    if found["at"]:
        day, _, clock = found["at"].partition("T")
        return f"{found['job']}@{day}T{clock.replace('-', ':')}"
    day, _, clock = found["mat"].partition("T")
    return f"{found['job']}@manual-{day}T{clock.replace('-', ':')}-{found['nonce']}"


def _firing_id(candidate: Any, where: str) -> str:
    if not isinstance(candidate, str) or not candidate:
        raise EventError(f"{where} has no firingId: not a firing dispatched by mini-scheduler")
    job = job_of(candidate)
    problem = "job name longer than 64 characters" if len(job) > 64 else name_problem(job)
    if problem:
        raise EventError(
            f"{where}: firingId {candidate[:100]!r} does not name a job ({problem[:120]})"
        )
    try:
        firing_from_id(candidate)
    except ValueError as exc:
        raise EventError(f"{where}: {str(exc)[:200]}") from None
    return candidate


def _lambda_error(response: Any, condition: str) -> str:
    if isinstance(response, Mapping):
        kind = response.get("errorType")
        message = response.get("errorMessage")
        if kind or message:
            return f"{kind or 'Error'}: {message or ''}".strip()[:_ERROR_LIMIT]
    if condition == "EventAgeExceeded":
        return "EventAgeExceeded: the event expired before the function ran"
    return f"{condition}: the function failed"


def completion_from_event(event: Any) -> Completion | None:
    """The completion an event reports; None for an event that is not an end (RUNNING).
    EventError for anything else, saying what is wrong."""
    if not isinstance(event, Mapping):
        raise EventError(
            "the recorder takes a Lambda destination record or a Step Functions "
            "status event (a JSON object)"
        )
    if event.get("source") == "aws.states" or "Step Functions" in str(event.get("detail-type")):
        return _from_step_functions(event)
    context = event.get("requestContext")
    if isinstance(context, Mapping) and "condition" in context:
        return _from_lambda_destination(event, context)
    raise EventError(
        "unknown event: expected a Lambda destination record (requestContext."
        'condition) or a Step Functions "Execution Status Change" event'
    )


def _from_lambda_destination(event: Mapping[str, Any], context: Mapping[str, Any]) -> Completion:
    condition = str(context.get("condition"))
    if condition not in _LAMBDA_CONDITIONS:
        raise EventError(f"unknown Lambda destination condition {condition[:60]!r}")
    request = event.get("requestPayload")
    if not isinstance(request, Mapping):
        raise EventError("Lambda destination record without requestPayload")
    firing_id = _firing_id(request.get("firingId"), "requestPayload")
    response = event.get("responsePayload")
    response_context = event.get("responseContext")
    failed = condition != "Success" or (
        isinstance(response_context, Mapping) and bool(response_context.get("functionError"))
    )
    ended = _when(event.get("timestamp"))
    if failed:
        return Completion(
            firing_id, RunStatus.FAILED, ended, _lambda_error(response, condition), "lambda"
        )
    return Completion(firing_id, RunStatus.SUCCEEDED, ended, None, "lambda")


def _from_step_functions(event: Mapping[str, Any]) -> Completion | None:
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        raise EventError("Step Functions event without detail")
    status = str(detail.get("status", ""))
    if status not in _SFN_ENDS:
        if status in ("RUNNING", "PENDING_REDRIVE"):
            return None
        raise EventError(f"unknown Step Functions status {status[:40]!r}")
    firing_id: Any = None
    raw_input = detail.get("input")
    if isinstance(raw_input, str) and raw_input:
        try:
            body = json.loads(raw_input)
        except ValueError:
            body = None
        if isinstance(body, Mapping):
            firing_id = body.get("firingId")
    if not firing_id:
        firing_id = _firing_id_from_execution_name(str(detail.get("name", "")))
    firing_id = _firing_id(firing_id, "Step Functions execution")
    ended = _from_millis(detail.get("stopDate")) or _when(event.get("time"))
    error = None
    if _SFN_ENDS[status] is not RunStatus.SUCCEEDED:
        parts = [str(p) for p in (detail.get("error"), detail.get("cause")) if p]
        error = (": ".join(parts) or status)[:_ERROR_LIMIT]
    return Completion(firing_id, _SFN_ENDS[status], ended, error, "stepfunctions")


def _from_millis(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _when(value: Any) -> datetime | None:
    if isinstance(value, str) and value:
        try:
            return parse_instant(value)
        except ValueError:
            return None
    return None


class Recorder:
    def __init__(self, claims: ClaimStore, clock: Clock, metrics: Metrics | None = None) -> None:
        self.claims = claims
        self.clock = clock
        self.metrics: Metrics = metrics if metrics is not None else RecordingMetrics()

    def record(self, event: Any) -> dict[str, Any]:
        completion = completion_from_event(event)
        if completion is None:
            return {"recorded": False, "reason": "not an end of run"}
        ended = completion.ended_at or self.clock.now()
        before = self.claims.close(
            completion.firing_id, completion.status, now=ended, error=completion.error
        )
        if before is None:
            known = self.claims.run(completion.firing_id)
            if known is None:
                log.warning(
                    "Completion for unknown firing %s ignored (%s)",
                    completion.firing_id,
                    completion.source,
                )
                return {
                    "recorded": False,
                    "firingId": completion.firing_id,
                    "reason": "unknown firing",
                }
            log.info(
                "Completion for firing %s ignored - the run already ended %s",
                completion.firing_id,
                known.status,
            )
            return {
                "recorded": False,
                "firingId": completion.firing_id,
                "reason": f"already ended {known.status}",
            }
        started = before.started_at or before.claimed_at or ended
        took = max(0, int((ended - started).total_seconds() * 1000))
        level = logging.INFO if completion.status is RunStatus.SUCCEEDED else logging.ERROR
        log.log(
            level,
            "Job %s ended %s after %d ms - firing %s",
            before.job,
            completion.status,
            took,
            completion.firing_id,
            extra={"error": completion.error} if completion.error else None,
        )
        self.metrics.add(
            {
                RunStatus.SUCCEEDED: m.RUNS_SUCCEEDED,
                RunStatus.FAILED: m.RUNS_FAILED,
                RunStatus.TIMED_OUT: m.RUNS_TIMED_OUT,
            }[completion.status]
        )
        return {
            "recorded": True,
            "firingId": completion.firing_id,
            "status": str(completion.status),
            "endedAt": iso_seconds(ended),
            "durationMs": took,
        }
