"""The recorder closes runs from their completion events.

* A Lambda destination record (``OnSuccess`` / ``OnFailure``): ``requestContext.condition`` is
  ``Success``, ``RetriesExhausted`` or ``EventAgeExceeded``; ``requestPayload`` is what the
  ticker sent, so it names the firing.
* A Step Functions "Execution Status Change" event from EventBridge: ``detail.status`` is
  SUCCEEDED, FAILED, TIMED_OUT or ABORTED, or RUNNING with ``redriveCount`` 1 or more (Step
  Functions redrove the execution: the run is reopened). The execution's input names the firing;
  when Step Functions left the input out (a large one: ``input`` null, ``inputDetails.included``
  false), the execution's name does, unless it was cut (a long job name): then the input is read
  with DescribeExecution.

What an end does to a run that has ended already (a completion after the sweep's TIMED_OUT, the
end of a redriven attempt) is the claim store's rule (:func:`mini_scheduler.claims.base.after_end`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mini_scheduler import metrics as m
from mini_scheduler.claims.base import ClaimStore, Redrive, RunRecord
from mini_scheduler.clock import Clock
from mini_scheduler.errors import EventError
from mini_scheduler.jobs import name_problem
from mini_scheduler.metrics import Metrics, RecordingMetrics
from mini_scheduler.model import (
    RunStatus,
    firing_from_id,
    iso_seconds,
    job_of,
    log_keys,
    parse_instant,
)

log = logging.getLogger("mini_scheduler.recorder")

ExecutionInput = Callable[[str], str]
"""An execution's input, by its ARN (DescribeExecution; see dispatch/stepfunctions.py)."""

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
_REDRIVES_MAX = 1_000_000


@dataclass(frozen=True, slots=True)
class Completion:
    """The end of a run's execution; ``redrive_count`` > 0: of its redriven attempt (which
    began at ``redriven_at``, when the event says)."""

    firing_id: str
    status: RunStatus
    ended_at: datetime | None
    error: str | None
    source: str
    redrive_count: int = 0
    redriven_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Redriven:
    """Step Functions runs the execution again (a RUNNING event with ``redriveCount`` >= 1)."""

    firing_id: str
    count: int
    at: datetime | None


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


def completion_from_event(
    event: Any, execution_input: ExecutionInput | None = None
) -> Completion | Redriven | None:
    """What an event reports: a run's end (Completion), a redrive (Redriven), or None for an
    event that is neither (an execution's first RUNNING, PENDING_REDRIVE). EventError for
    anything else, saying what is wrong. ``execution_input`` reads an execution's input when
    the event left it out and the execution's name does not name the firing."""
    if not isinstance(event, Mapping):
        raise EventError(
            "the recorder takes a Lambda destination record or a Step Functions "
            "status event (a JSON object)"
        )
    if event.get("source") == "aws.states" or "Step Functions" in str(event.get("detail-type")):
        return _from_step_functions(event, execution_input)
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


def _from_step_functions(
    event: Mapping[str, Any], execution_input: ExecutionInput | None
) -> Completion | Redriven | None:
    detail = event.get("detail")
    if not isinstance(detail, Mapping):
        raise EventError("Step Functions event without detail")
    status = str(detail.get("status", ""))
    if status not in _SFN_ENDS and status not in ("RUNNING", "PENDING_REDRIVE"):
        raise EventError(f"unknown Step Functions status {status[:40]!r}")
    count = _redrive_count(detail.get("redriveCount"))
    if status not in _SFN_ENDS and (status != "RUNNING" or count == 0):
        return None
    firing_id = _sfn_firing_id(detail, execution_input)
    redriven_at = _from_millis(detail.get("redriveDate")) if count else None
    if status == "RUNNING":
        return Redriven(firing_id, count, redriven_at or _when(event.get("time")))
    ended = _from_millis(detail.get("stopDate")) or _when(event.get("time"))
    error = None
    if _SFN_ENDS[status] is not RunStatus.SUCCEEDED:
        parts = [str(p) for p in (detail.get("error"), detail.get("cause")) if p]
        error = (": ".join(parts) or status)[:_ERROR_LIMIT]
    return Completion(
        firing_id, _SFN_ENDS[status], ended, error, "stepfunctions", count, redriven_at
    )


def _redrive_count(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _REDRIVES_MAX:
        raise EventError(f"Step Functions event: redriveCount {str(value)[:40]!r} is not a count")
    return value


def _sfn_firing_id(detail: Mapping[str, Any], execution_input: ExecutionInput | None) -> str:
    """The firing an execution runs: from its input, else its name; when the event left the
    input out and the name was cut (a long job name), from the input DescribeExecution reads."""
    raw_input = detail.get("input")
    included = isinstance(raw_input, str) and bool(raw_input)
    firing_id = _input_firing_id(raw_input) if included else None
    if not firing_id:
        firing_id = _firing_id_from_execution_name(str(detail.get("name", "")))
    arn = detail.get("executionArn")
    if not firing_id and not included and execution_input is not None and arn is not None:
        where = f"Step Functions execution {str(arn)[:300]}"
        firing_id = _input_firing_id(execution_input(str(arn)))
        return _firing_id(firing_id, f"{where} (its input, read with DescribeExecution)")
    return _firing_id(firing_id, "Step Functions execution")


def _input_firing_id(text: Any) -> Any:
    try:
        body = json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        return None
    return body.get("firingId") if isinstance(body, Mapping) else None


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


def _redrive(count: int, at: datetime | None, fallback: datetime) -> Redrive | None:
    return Redrive(count, at or fallback) if count else None


class Recorder:
    """Records completion events in the claim store. ``execution_input`` (DescribeExecution)
    finds the firing of a flow whose status event left its input out and whose execution name
    was cut; without it such an event is rejected."""

    def __init__(
        self,
        claims: ClaimStore,
        clock: Clock,
        metrics: Metrics | None = None,
        execution_input: ExecutionInput | None = None,
    ) -> None:
        self.claims = claims
        self.clock = clock
        self.metrics: Metrics = metrics if metrics is not None else RecordingMetrics()
        self.execution_input = execution_input

    def record(self, event: Any) -> dict[str, Any]:
        found = completion_from_event(event, self.execution_input)
        if found is None:
            return {"recorded": False, "reason": "not an end of run"}
        if isinstance(found, Redriven):
            return self._redriven(found)
        return self._ended(found)

    def _ended(self, completion: Completion) -> dict[str, Any]:
        ended = completion.ended_at or self.clock.now()
        count = completion.redrive_count
        redrive = _redrive(count, completion.redriven_at, ended)
        before = self.claims.close(
            completion.firing_id,
            completion.status,
            now=ended,
            error=completion.error,
            redrive=redrive,
        )
        if before is None:
            return self._ignored(completion.firing_id, completion.source, count)
        seen = before.redrives or 0
        late = before.swept and count == seen
        began = redrive.at if redrive and count > seen else before.redriven_at
        took = _millis(began or before.started_at or before.claimed_at or ended, ended)
        self._log_end(before, completion, took, late)
        # Each run counts once, at its first end: a late end was counted as RunsTimedOut, a
        # redriven run at the end it had before its redrive.
        if before.status.open and not before.earlier_ends:
            self.metrics.add(
                {
                    RunStatus.SUCCEEDED: m.RUNS_SUCCEEDED,
                    RunStatus.FAILED: m.RUNS_FAILED,
                    RunStatus.TIMED_OUT: m.RUNS_TIMED_OUT,
                }[completion.status]
            )
        answer: dict[str, Any] = {
            "recorded": True,
            "firingId": completion.firing_id,
            "status": str(completion.status),
            "endedAt": iso_seconds(ended),
            "durationMs": took,
        }
        if count:
            answer["redrive"] = count
        if late and before.timed_out_at is not None:
            answer["timedOutAt"] = iso_seconds(before.timed_out_at)
        return answer

    def _log_end(self, before: RunRecord, completion: Completion, took: int, late: bool) -> None:
        notes = ""
        if completion.redrive_count:
            notes += f" - redrive {completion.redrive_count}"
        if late and before.timed_out_at is not None:
            notes += (
                f" - it had been marked TIMED_OUT at {iso_seconds(before.timed_out_at)}: "
                "the job's timeout is shorter than this run"
            )
        level = logging.ERROR
        if completion.status is RunStatus.SUCCEEDED:
            level = logging.WARNING if late else logging.INFO
        log.log(
            level,
            "Job %s ended %s after %d ms - firing %s%s",
            before.job,
            completion.status,
            took,
            completion.firing_id,
            notes,
            extra=log_keys(before.job, completion.firing_id, error=completion.error)
            if completion.error
            else log_keys(before.job, completion.firing_id),
        )

    def _redriven(self, found: Redriven) -> dict[str, Any]:
        redrive = Redrive(found.count, found.at or self.clock.now())
        before = self.claims.redrive(found.firing_id, redrive)
        if before is None:
            return self._ignored(found.firing_id, "stepfunctions", found.count, redrive=True)
        log.info(
            "Job %s - firing %s redriven by Step Functions (redrive %d): running again %s",
            before.job,
            found.firing_id,
            found.count,
            "(its earlier end was not heard)"
            if before.status.open
            else f"after it ended {before.status}",
            extra=log_keys(before.job, found.firing_id),
        )
        return {
            "recorded": True,
            "firingId": found.firing_id,
            "status": str(RunStatus.DISPATCHED if not before.status.open else before.status),
            "redrive": found.count,
            "redrivenAt": iso_seconds(redrive.at),
        }

    def _ignored(
        self, firing_id: str, source: str, count: int, *, redrive: bool = False
    ) -> dict[str, Any]:
        """The answer for an event that changed nothing, with the reason."""
        what = f"Redrive {count}" if redrive else "Completion"
        known = self.claims.run(firing_id)
        if known is None:
            log.warning(
                "%s for unknown firing %s ignored (%s)",
                what,
                firing_id,
                source,
                extra=log_keys(job_of(firing_id), firing_id),
            )
            return {"recorded": False, "firingId": firing_id, "reason": "unknown firing"}
        seen = known.redrives or 0
        if seen > count or (redrive and seen == count):
            reason = f"the run was redriven {seen} time(s): this event is older"
            if seen == count:
                reason = f"redrive {count} is recorded already"
        elif known.status.open:
            reason = f"the run is {known.status}"
        else:
            reason = f"already ended {known.status}"
        log.info(
            "%s for firing %s ignored - %s",
            what,
            firing_id,
            reason,
            extra=log_keys(known.job, firing_id),
        )
        return {"recorded": False, "firingId": firing_id, "reason": reason}


def _millis(start: datetime, end: datetime) -> int:
    return max(0, int((end - start).total_seconds() * 1000))
