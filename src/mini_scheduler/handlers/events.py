"""Every event the two functions take, parsed into what it asks for; EventError, saying what is
wrong, for one that asks for nothing the function does (nothing is written then).

The ticker's (:func:`ticker_request`): a tick (``{"tick": ...}``, maybe a shard's, or an
EventBridge Scheduled Event), a manual run, a rerun of a past firing, a read or change of the
active environment, a pause or a resume, a runtime schedule's create, list, show or delete, a
backfill and its status. The parser checks the event's shape; the values an operator gives
(the job, the operator, the parameters, the environment's name, a schedule's entry, a window,
a firing id) are checked by the core, as the CLI's are.

The recorder's (:func:`completion_from_event`):

* A Lambda destination record (``OnSuccess`` / ``OnFailure``): ``requestContext.condition`` is
  ``Success``, ``RetriesExhausted`` or ``EventAgeExceeded``; ``requestPayload`` is what the
  ticker sent, so it names the firing.
* A Step Functions "Execution Status Change" event from EventBridge: ``detail.status`` is
  SUCCEEDED, FAILED, TIMED_OUT or ABORTED, or RUNNING with ``redriveCount`` 1 or more (Step
  Functions redrove the execution: the run is reopened). The execution's input names the firing;
  when Step Functions left the input out (a large one: ``input`` null, ``inputDetails.included``
  false), the execution's name does, unless it was cut (a long job name): then the input is read
  with DescribeExecution.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mini_scheduler.errors import EventError
from mini_scheduler.jobs import name_problem
from mini_scheduler.model import RunStatus, attempt_number, firing_from_id, job_of, parse_instant
from mini_scheduler.recorder import Completion, Redriven

if TYPE_CHECKING:
    from mini_scheduler.tick import Shard

# -- the ticker's events ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tick:
    """Run the minute ``at`` (of one shard's jobs, or of all); ``deferred``: only the deferred
    firings due in it, written after its tick read them (a catch-up: mini_scheduler.wake)."""

    at: datetime
    shard: Shard | None = None
    deferred: bool = False


@dataclass(frozen=True, slots=True)
class ManualRun:
    """Run a job now (the values as the event gave them)."""

    job: object
    operator: object
    parameters: object = None


@dataclass(frozen=True, slots=True)
class Rerun:
    """Run a past firing again, as a manual run that names it (the values as given)."""

    firing_id: object
    operator: object
    parameters: object = None


@dataclass(frozen=True, slots=True)
class EnvironmentStatus:
    """Answer the active environment (``{"environment": {}}``)."""


@dataclass(frozen=True, slots=True)
class EnvironmentChange:
    """Make ``active`` the active environment (``force``, with a ``reason``: a name the
    region does not know)."""

    active: object
    operator: object
    force: object = False
    reason: object = None


@dataclass(frozen=True, slots=True)
class PauseChange:
    """Pause a job (``paused``), or resume it."""

    job: object
    paused: bool
    operator: object


SCHEDULE_ACTIONS = ("create", "list", "show", "delete")


@dataclass(frozen=True, slots=True)
class ScheduleRequest:
    """Create runtime schedules, list them, show or delete one."""

    action: str
    name: object = None
    schedules: object = None
    operator: object = None


@dataclass(frozen=True, slots=True)
class BackfillRequest:
    """Backfill a job's firings from ``start`` up to ``end`` at ``rate`` a minute."""

    job: object
    start: object
    end: object
    rate: object
    operator: object


@dataclass(frozen=True, slots=True)
class BackfillStatus:
    """The backfills with firings left (of ``job``, or all)."""

    job: object = None


TickerRequest = (
    Tick
    | ManualRun
    | Rerun
    | EnvironmentStatus
    | EnvironmentChange
    | PauseChange
    | ScheduleRequest
    | BackfillRequest
    | BackfillStatus
)

_SCHEDULE_KEYS = {
    "create": {"schedule", "schedules", "operator"},
    "list": {"schedule"},
    "show": {"schedule", "name"},
    "delete": {"schedule", "name", "operator"},
}

_FIRST_TICK = datetime(1970, 1, 1, tzinfo=UTC)
_LAST_TICK = datetime(2999, 12, 31, 23, 59, tzinfo=UTC)


def _in_range(at: datetime, raw: str) -> datetime:
    if not _FIRST_TICK <= at <= _LAST_TICK:
        raise EventError(f"tick {raw[:60]!r} is outside the years 1970-2999 the scheduler serves")
    return at


def _shard(event: Mapping[str, Any]) -> Shard | None:
    from mini_scheduler.tick import Shard  # here only: the recorder function never loads the tick

    if "shard" not in event and "shards" not in event:
        return None
    index, count = event.get("shard"), event.get("shards")
    if (
        not isinstance(index, int)
        or not isinstance(count, int)
        or isinstance(index, bool)
        or isinstance(count, bool)
        or not 0 <= index < count <= 1024
    ):
        raise EventError("shard and shards must be whole numbers, 0 <= shard < shards")
    return Shard(index, count)


def _catch_up(event: Mapping[str, Any]) -> bool:
    """A tick's ``deferred`` flag: ``true`` for a catch-up, which is no shard's."""
    if "deferred" not in event:
        return False
    if event["deferred"] is not True:
        raise EventError('deferred must be true: {"tick": "<minute>", "deferred": true}')
    if "shard" in event or "shards" in event:
        raise EventError("a catch-up of deferred firings is the whole region's, not a shard's")
    return True


def parse_tick(event: Mapping[str, Any]) -> Tick | None:
    """The minute a tick event names (and its shard), or None when the event is not a tick."""
    if "tick" in event:
        raw = event["tick"]
        if not isinstance(raw, str):
            raise EventError('tick must be an ISO-8601 instant, e.g. "2026-11-30T14:00:00Z"')
        try:
            at = _in_range(parse_instant(raw), raw)
        except EventError:
            raise
        except ValueError as exc:
            raise EventError(
                f"tick {raw[:60]!r} is not an ISO-8601 instant with a zone: {exc}"
            ) from None
        return Tick(at, _shard(event), _catch_up(event))
    if event.get("detail-type") == "Scheduled Event":
        raw = event.get("time")
        if not isinstance(raw, str):
            raise EventError("Scheduled Event without a time")
        try:
            return Tick(_in_range(parse_instant(raw), raw))
        except EventError:
            raise
        except ValueError as exc:
            raise EventError(
                f"Scheduled Event time {raw[:60]!r} is not an instant: {exc}"
            ) from None
    return None


def ticker_request(event: Any) -> TickerRequest:
    """What a ticker event asks for."""
    if not isinstance(event, Mapping):
        raise EventError(
            "the ticker takes a JSON object: a tick, a manual run, a rerun, an environment, "
            "pause, resume, schedule or backfill event"
        )
    tick = parse_tick(event)
    if tick is not None:
        return tick
    if "environment" in event:
        change = event["environment"]
        if not isinstance(change, Mapping):
            raise EventError(
                "environment must be an object: {} to read, "
                '{"active": "DR", "operator": "jane.doe"} to set'
            )
        if not change:
            return EnvironmentStatus()
        unknown = set(change) - {"active", "operator", "force", "reason"}
        if unknown or "active" not in change:
            raise EventError(
                'environment takes "active", "operator", and "force" with "reason" only, got '
                f"{_keys(change)}"
            )
        return EnvironmentChange(
            change["active"],
            change.get("operator"),
            change.get("force", False),
            change.get("reason"),
        )
    if "schedule" in event:
        return _schedule_request(event)
    if "backfill" in event:
        unknown = set(event) - {"backfill", "from", "to", "rate", "operator"}
        if unknown:
            raise EventError(
                f"a backfill takes backfill (the job), from, to, rate and operator; unknown: "
                f"{_keys(unknown)}"
            )
        return BackfillRequest(
            event["backfill"],
            event.get("from"),
            event.get("to"),
            event.get("rate"),
            event.get("operator"),
        )
    if "backfillStatus" in event:
        asked = event["backfillStatus"]
        if not isinstance(asked, Mapping) or set(asked) - {"job"}:
            raise EventError('backfillStatus must be {} (every job) or {"job": "<name>"}')
        return BackfillStatus(asked.get("job"))
    if "pause" in event or "resume" in event:
        paused = "pause" in event
        return PauseChange(event["pause" if paused else "resume"], paused, event.get("operator"))
    if "rerun" in event:
        unknown = set(event) - {"rerun", "operator", "parameters"}
        if unknown:
            raise EventError(
                f"a rerun takes rerun (the firing id), operator and parameters; unknown: "
                f"{_keys(unknown)}"
            )
        return Rerun(event["rerun"], event.get("operator"), event.get("parameters"))
    if "job" in event:
        unknown = set(event) - {"job", "operator", "parameters"}
        if unknown:
            raise EventError(
                f"a manual run takes job, operator and parameters; unknown: {_keys(unknown)}"
            )
        return ManualRun(event["job"], event.get("operator"), event.get("parameters"))
    raise EventError(
        'unknown event: expected {"tick": ...}, a Scheduled Event, '
        '{"job": ..., "operator": ...}, {"rerun": ..., "operator": ...}, {"environment": {...}}, '
        '{"pause": ...}, {"resume": ...}, {"schedule": ...}, {"backfill": ...} or '
        '{"backfillStatus": {...}}'
    )


def _schedule_request(event: Mapping[str, Any]) -> ScheduleRequest:
    action = event["schedule"]
    if action not in SCHEDULE_ACTIONS:
        raise EventError(
            f"schedule must be one of {', '.join(SCHEDULE_ACTIONS)}, not {str(action)[:40]!r}"
        )
    unknown = set(event) - _SCHEDULE_KEYS[action]
    if unknown:
        allowed = ", ".join(sorted(_SCHEDULE_KEYS[action] - {"schedule"})) or "nothing else"
        raise EventError(f"schedule {action} takes {allowed}; unknown: {_keys(unknown)}")
    return ScheduleRequest(action, event.get("name"), event.get("schedules"), event.get("operator"))


def _keys(keys: Any) -> str:
    """The keys an event carried, bounded: at most 8, each cut at 40 characters."""
    names = sorted(str(key)[:40] for key in keys)
    more = f" and {len(names) - 8} more" if len(names) > 8 else ""
    return ", ".join(repr(name) for name in names[:8]) + more


# -- the recorder's events ----------------------------------------------------------------------

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
