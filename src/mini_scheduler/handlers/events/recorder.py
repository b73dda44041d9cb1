"""The recorder's events, parsed into the run's end or redrive each reports (see
:mod:`mini_scheduler.handlers.events`): a Lambda destination record, a Step Functions
"Execution Status Change" event, or an "ECS Task State Change" event of a task the ticker
started, each alone or as the body of a message of the completion queue (an SQS batch,
:func:`queued_messages`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mini_scheduler.dispatch.ecs import FIRING_VARIABLE, STARTED_BY_PREFIX
from mini_scheduler.errors import EventError, one_line
from mini_scheduler.jobs import name_problem
from mini_scheduler.model import RunStatus, attempt_number, firing_from_id, job_of, parse_instant
from mini_scheduler.recorder import Completion, Redriven

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
    r"(?:-(?P<attempt>[1-9][0-9]?))?"  # a retry's run: ``#<attempt>`` with # replaced
)
_ERROR_LIMIT = 2000
_REDRIVES_MAX = 1_000_000


@dataclass(frozen=True, slots=True)
class Message:
    """One message of an SQS batch: its id (what a partial batch response names) and its body,
    the destination record or EventBridge event the queue was sent, or EventError when the body
    is not a JSON object."""

    message_id: str
    event: Any


def queued_messages(event: Any) -> list[Message] | None:
    """The messages of an SQS batch (the completion queue's event source mapping), or None for
    an event that is not one (a completion sent to the function itself)."""
    if not isinstance(event, Mapping):
        return None
    records = event.get("Records")
    if not isinstance(records, list) or not records:
        return None
    if not all(isinstance(r, Mapping) and r.get("eventSource") == "aws:sqs" for r in records):
        return None
    return [_message(record) for record in records]


def _message(record: Mapping[str, Any]) -> Message:
    message_id = str(record.get("messageId") or "")
    body = record.get("body")
    try:
        parsed = json.loads(body) if isinstance(body, str) else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, Mapping):
        parsed = EventError(
            f"SQS message {message_id[:80]}: its body is not a JSON object (a Lambda "
            "destination record or a Step Functions status event)"
        )
    return Message(message_id, parsed)


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
    if event.get("source") == "aws.ecs":
        return _from_ecs(event)
    context = event.get("requestContext")
    if isinstance(context, Mapping) and "condition" in context:
        return _from_lambda_destination(event, context)
    raise EventError(
        "unknown event: expected a Lambda destination record (requestContext."
        'condition), a Step Functions "Execution Status Change" or an "ECS Task State Change" '
        "event"
    )


def _firing_id_from_execution_name(name: str) -> str | None:
    found = _EXECUTION_NAME.fullmatch(name)
    if not found:
        return None
    suffix = f"#{found['attempt']}" if found["attempt"] else ""
    if found["at"]:
        day, _, clock = found["at"].partition("T")
        return f"{found['job']}@{day}T{clock.replace('-', ':')}{suffix}"
    day, _, clock = found["mat"].partition("T")
    return f"{found['job']}@manual-{day}T{clock.replace('-', ':')}-{found['nonce']}{suffix}"


def _run_id(body: Mapping[str, Any], where: str) -> str:
    """The run a payload names: its ``firingId``, and ``#<attempt>`` from attempt 2 on (a
    payload without ``attempt``, from before retries, is a first attempt)."""
    firing_id = _firing_id(body.get("firingId"), where)
    raw = body.get("attempt", 1)
    attempt = attempt_number(raw)
    if attempt is None:
        raise EventError(f"{where}: attempt {str(raw)[:40]!r} is not a whole number from 1 to 99")
    if "#" in firing_id:
        raise EventError(f"{where}: firingId {firing_id[:100]!r} names an attempt: it must not")
    return firing_id if attempt == 1 else f"{firing_id}#{attempt}"


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


def _from_lambda_destination(event: Mapping[str, Any], context: Mapping[str, Any]) -> Completion:
    condition = str(context.get("condition"))
    if condition not in _LAMBDA_CONDITIONS:
        raise EventError(f"unknown Lambda destination condition {condition[:60]!r}")
    request = event.get("requestPayload")
    if not isinstance(request, Mapping):
        raise EventError("Lambda destination record without requestPayload")
    firing_id = _run_id(request, "requestPayload")
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
    body = _input_body(raw_input) if included else None
    if body is not None:
        return _run_id(body, "Step Functions execution")
    firing_id = _firing_id_from_execution_name(str(detail.get("name", "")))
    arn = detail.get("executionArn")
    if not firing_id and not included and execution_input is not None and arn is not None:
        where = f"Step Functions execution {str(arn)[:300]}"
        read = _input_body(execution_input(str(arn))) or {}
        return _run_id(read, f"{where} (its input, read with DescribeExecution)")
    return _firing_id(firing_id, "Step Functions execution")


def _input_body(text: Any) -> Mapping[str, Any] | None:
    """An execution's input, when it is a JSON object with a firingId."""
    try:
        body = json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        return None
    return body if isinstance(body, Mapping) and body.get("firingId") else None


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


_ECS_TASK_EVENT = "ECS Task State Change"
_ECS_ERROR_LIMIT = 500


def _from_ecs(event: Mapping[str, Any]) -> Completion | None:
    """A task's STOPPED event closes its run, if the ticker started it (its ``startedBy``);
    None for any other ECS event (a task starting, another's task, a container instance's)."""
    detail = event.get("detail")
    if event.get("detail-type") != _ECS_TASK_EVENT:
        return None
    if not isinstance(detail, Mapping):
        raise EventError("ECS task event without detail")
    started = detail.get("startedBy")
    if detail.get("lastStatus") != "STOPPED" or not str(started).startswith(STARTED_BY_PREFIX):
        return None
    task = str(detail.get("taskArn") or "a task")[:200]
    firing_id = _firing_id(_ecs_run_id(detail), f"ECS task {task}")
    ended = _when(detail.get("stoppedAt")) or _when(event.get("time"))
    error = _ecs_failure(detail)
    status = RunStatus.SUCCEEDED if error is None else RunStatus.FAILED
    return Completion(firing_id, status, ended, error, "ecs")


def _ecs_run_id(detail: Mapping[str, Any]) -> Any:
    """The run id the dispatcher gave the task's overridden container (None: none)."""
    return _ecs_job_container(detail)[1]


def _ecs_job_container(detail: Mapping[str, Any]) -> tuple[Any, Any]:
    """The overridden container's name and the run id it was given ((None, None): none)."""
    overrides = detail.get("overrides")
    containers = overrides.get("containerOverrides") if isinstance(overrides, Mapping) else None
    for container in containers if isinstance(containers, list) else []:
        variables = container.get("environment") if isinstance(container, Mapping) else None
        for variable in variables if isinstance(variables, list) else []:
            if isinstance(variable, Mapping) and variable.get("name") == FIRING_VARIABLE:
                return container.get("name"), variable.get("value")
    return None, None


def _ecs_failure(detail: Mapping[str, Any]) -> str | None:
    """None when the job's container (the one given the firing) exited 0, or, when the event
    does not name it, every container that says how it ended exited 0 (one at least); else
    what went wrong: the stop code, the reason, each container's exit code or reason. A
    sidecar stopped with the task (exit 137, 143) does not fail the job's run."""
    raw = detail.get("containers")
    containers = [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []
    name = _ecs_job_container(detail)[0]
    job = [c for c in containers if name is not None and c.get("name") == name]
    if job and detail.get("stopCode") != "TaskFailedToStart" and job[0].get("exitCode") == 0:
        return None
    ends = []
    failed = detail.get("stopCode") == "TaskFailedToStart"
    exited_zero = False
    for container in containers:
        code, reason = container.get("exitCode"), container.get("reason")
        if code is None and not reason:
            continue
        failed = failed or code != 0
        exited_zero = exited_zero or code == 0
        said = f"exit {code}" if code is not None else "no exit code"
        ends.append(f"{container.get('name', '?')} {said}" + (f" ({reason})" if reason else ""))
    if exited_zero and not failed:
        return None
    parts = [str(p) for p in (detail.get("stopCode"), detail.get("stoppedReason")) if p]
    text = ": ".join(parts) or "the task stopped"
    if ends:
        text += "; " + ", ".join(ends)
    return one_line(text, _ECS_ERROR_LIMIT)
