"""Dispatchers for the local scheduler: targets run on this machine, and their ends are reported.

moto runs no Lambda code without Docker, so :class:`LocalDispatcher` runs a Lambda target's
Python ``handler(event, context)`` itself, on a worker thread, and hands the recorder what
Lambda's destinations would: a ``Success`` record with the answer, or a ``RetriesExhausted`` one
with ``errorType`` and ``errorMessage`` when the handler raised (no retries here). Sample
functions are found by name: ``mini-scheduler-sample-<x>`` is ``<functions>/<x>/app.py``; any
other function, or a sample without its file, gets a built-in handler that logs the event.

:class:`LocalFlowDispatcher` starts a flow with the real Step Functions dispatcher (on moto), then
watches the execution and, since nothing sends status events, builds the "Execution Status
Change" event itself once the execution has ended.

Both wait until the ticker has marked the firing dispatched before they report its end (a
completion that overtakes the mark would leave the job's latest state saying DISPATCHED), and
both take their instants from the injected clock.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.clock import Clock
from mini_scheduler.dispatch.base import Answer, Dispatchers, Ended
from mini_scheduler.errors import DispatchError, describe_aws_error
from mini_scheduler.jobs import Target
from mini_scheduler.local.follow import Followers
from mini_scheduler.model import execution_name, iso_millis, iso_seconds

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

    from mini_scheduler.dispatch.base import Dispatcher

__all__ = [
    "SAMPLE_PREFIX",
    "FunctionContext",
    "LocalDispatcher",
    "LocalFlowDispatcher",
    "adopt_region",
    "function_name",
    "in_region",
    "lambda_destination_record",
    "region_tag",
    "step_functions_status_event",
]

log = logging.getLogger("mini_scheduler.local")

SAMPLE_PREFIX: Final = "mini-scheduler-sample-"
FUNCTION_THREAD: Final = "fn:"  # worker threads are named fn:<function> while a handler runs
_FLOW_ENDS: Final = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})

Handler = Callable[[dict[str, Any], Any], Any]
Completion = Callable[[dict[str, Any]], object]
"""Hands a completion event (a Lambda destination record, a Step Functions status event) to the
recorder."""
BeforeCompletion = Callable[[str], None]
"""Called with the firing id before its completion is reported: waits until it is marked."""


class _RegionTag(threading.local):
    region: str | None = None


_TAG: Final = _RegionTag()


def region_tag() -> str | None:
    """The region the current thread works for, which its log lines name when the local run
    has several; None: no region's."""
    return _TAG.region


def _tag_thread(region: str) -> None:
    _TAG.region = region


def adopt_region(region: str) -> None:
    """The current thread works for ``region`` unless it already works for one: how the
    ticker's own worker threads (a pool per tick, started where this package cannot name them)
    come to be tagged, when they first reach the region's clock or dispatcher. The main
    thread is tagged only for a while (:func:`in_region`): it serves every region."""
    if _TAG.region is None and threading.current_thread() is not threading.main_thread():
        _TAG.region = region


@contextlib.contextmanager
def in_region(region: str) -> Iterator[None]:
    """The current thread works for ``region`` until the block ends."""
    previous = _TAG.region
    _TAG.region = region
    try:
        yield
    finally:
        _TAG.region = previous


def function_name(name: str) -> str:
    """The bare function name of a Lambda target: ``name``, ``name:alias`` or an ARN."""
    if ":function:" in name:
        name = name.split(":function:", 1)[1]
    return name.split(":", 1)[0]


@dataclass(frozen=True, slots=True)
class FunctionContext:
    """The Lambda context a handler receives (what Powertools' Logger and idempotency read)."""

    function_name: str
    invoked_function_arn: str
    aws_request_id: str
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 128
    log_group_name: str = ""
    log_stream_name: str = "local"
    identity: Any = None
    client_context: Any = None
    deadline_ms: float = 900_000

    def get_remaining_time_in_millis(self) -> int:
        return int(self.deadline_ms)


def lambda_destination_record(
    *,
    function_arn: str,
    request_id: str,
    payload: Mapping[str, Any],
    answer: Any,
    error: BaseException | None,
    at: datetime,
) -> dict[str, Any]:
    """What a Lambda destination delivers after an asynchronous invoke (OnSuccess/OnFailure)."""
    record: dict[str, Any] = {
        "version": "1.0",
        "timestamp": iso_millis(at),
        "requestContext": {
            "requestId": request_id,
            "functionArn": f"{function_arn}:$LATEST",
            "condition": "Success" if error is None else "RetriesExhausted",
            "approximateInvokeCount": 1,
        },
        "requestPayload": dict(payload),
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
    }
    if error is None:
        record["responsePayload"] = answer
    else:
        record["responseContext"]["functionError"] = "Unhandled"
        record["responsePayload"] = {
            "errorType": type(error).__name__,
            "errorMessage": str(error),
            "requestId": request_id,
        }
    return record


def step_functions_status_event(
    description: Mapping[str, Any],
    *,
    region: str,
    account: str,
    started: datetime,
    at: datetime,
) -> dict[str, Any]:
    """The EventBridge "Step Functions Execution Status Change" event for an ended execution
    (``description`` is DescribeExecution's answer)."""
    arn = str(description["executionArn"])
    millis = int(at.timestamp() * 1000)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Step Functions Execution Status Change",
        "source": "aws.states",
        "account": account,
        "time": iso_seconds(at),
        "region": region,
        "resources": [arn],
        "detail": {
            "executionArn": arn,
            "stateMachineArn": description.get("stateMachineArn"),
            "name": description.get("name"),
            "status": description.get("status"),
            "startDate": min(int(started.timestamp() * 1000), millis),
            "stopDate": millis,
            "input": description.get("input"),
            "output": description.get("output"),
            "error": description.get("error"),
            "cause": description.get("cause"),
        },
    }


def _built_in(function: str, reason: str) -> Handler:
    """The stand-in for a function without code here: it logs the event and answers it."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        log.info(
            "Function %s has no code here (%s) - its event: %s",
            function,
            reason,
            json.dumps(event, separators=(",", ":")),
        )
        return {"ok": True, "firingId": event.get("firingId"), "stand-in": True}

    return handler


class LocalDispatcher:
    """Runs Lambda targets in this process, each on a worker thread, and reports their ends.

    ``functions`` is the folder of sample functions (``<x>/app.py`` for
    ``mini-scheduler-sample-<x>``). ``console`` (optional) is where the scheduler logs: the
    Powertools loggers a sample creates write there too, in its format.
    """

    def __init__(
        self,
        functions: Path,
        *,
        on_complete: Completion,
        clock: Clock,
        region: str,
        account: str,
        before_complete: BeforeCompletion | None = None,
        console: logging.StreamHandler[Any] | None = None,
        workers: int = 8,
    ) -> None:
        self.functions = functions
        self._on_complete = on_complete
        self._before = before_complete
        self._clock = clock
        self._region = region
        self._account = account
        self._console = console
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()
        self._runs = Followers(
            "lambda", workers=workers, initializer=_tag_thread, initargs=(region,)
        )

    # -- finding the code --------------------------------------------------------------------

    def source(self, function: str) -> Path | None:
        """The ``app.py`` that runs ``function`` here, or None (the built-in stand-in)."""
        if not function.startswith(SAMPLE_PREFIX):
            return None
        path = self.functions / function.removeprefix(SAMPLE_PREFIX) / "app.py"
        return path if path.is_file() else None

    def handler(self, function: str) -> Handler:
        with self._lock:
            found = self._handlers.get(function)
            if found is None:
                found = self._handlers[function] = self._load(function)
            return found

    def _load(self, function: str) -> Handler:
        path = self.source(function)
        if path is None:
            reason = (
                f"no {self.functions / function.removeprefix(SAMPLE_PREFIX) / 'app.py'}"
                if function.startswith(SAMPLE_PREFIX)
                else f"not a {SAMPLE_PREFIX}<name> function"
            )
            return _built_in(function, reason)
        module_name = "mini_scheduler_local_" + function.replace("-", "_")
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            return _built_in(function, f"{path} cannot be loaded")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            log.error("Function %s: %s failed to load: %s", function, path, exc)
            return _failing(exc)
        found = getattr(module, "handler", None)
        if not callable(found):
            return _failing(AttributeError(f"{path} has no handler(event, context)"))
        self._adopt_loggers(module)
        log.info("Function %s runs %s in this process", function, path)
        handler: Handler = found
        return handler

    def _adopt_loggers(self, module: ModuleType) -> None:
        """The module's Powertools loggers write to the console in its one-line format (the
        formatter keeps the Powertools interface, which the Logger calls: keys, clear_state)."""
        if self._console is None or self._console.formatter is None:
            return
        loggers = [
            value
            for value in vars(module).values()
            if type(value).__module__.startswith("aws_lambda_powertools.logging")
        ]
        if not loggers:
            return
        from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

        console = self._console.formatter

        class OneLine(LambdaPowertoolsFormatter):
            def format(self, record: logging.LogRecord) -> str:
                return console.format(record)

        for value in loggers:
            handler = getattr(value, "registered_handler", None)
            if isinstance(handler, logging.StreamHandler):
                handler.setFormatter(OneLine())
                handler.setStream(self._console.stream)

    # -- dispatching ---------------------------------------------------------------------------

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        adopt_region(self._region)
        function = function_name(target.name)
        request_id = str(uuid.uuid4())
        body = json.loads(json.dumps(dict(payload)))  # what Lambda would deserialise
        if not self._runs.follow(self._invoke, function, request_id, firing_id, body):
            raise DispatchError(f"Lambda Invoke {function} refused - the scheduler is stopping")
        return f"local:{function}:{request_id}"

    def _invoke(
        self, function: str, request_id: str, firing_id: str, payload: dict[str, Any]
    ) -> None:
        thread = threading.current_thread()
        name = thread.name
        thread.name = FUNCTION_THREAD + function
        arn = f"arn:aws:lambda:{self._region}:{self._account}:function:{function}"
        context = FunctionContext(function, arn, request_id)
        answer: Any = None
        error: BaseException | None = None
        try:
            answer = self.handler(function)(payload, context)
            json.dumps(answer)  # an answer Lambda cannot serialise fails the invoke
        except Exception as exc:
            error = exc
            log.warning("Function %s raised %s: %s", function, type(exc).__name__, exc)
        finally:
            thread.name = name
        if self._before is not None:
            self._before(firing_id)
        record = lambda_destination_record(
            function_arn=arn,
            request_id=request_id,
            payload=payload,
            answer=answer,
            error=error,
            at=self._clock.now(),
        )
        try:
            self._on_complete(record)
        except Exception as exc:
            log.error("Completion of firing %s not recorded: %s", firing_id, exc)

    def pending(self) -> int:
        return self._runs.pending()

    def close(self) -> None:
        """Finish the handlers that started; drop those still queued."""
        self._runs.close()


def _failing(error: Exception) -> Handler:
    def handler(event: dict[str, Any], context: Any) -> Any:
        raise error

    return handler


class LocalFlowDispatcher:
    """Starts flows through ``inner`` (the Step Functions dispatcher, on moto) and reports each
    execution's end as a status-change event, at most ``wait`` seconds after it started; an
    execution still running then is left open (the ticker's sweep times it out)."""

    def __init__(
        self,
        inner: Dispatcher,
        client: SFNClient,
        *,
        on_complete: Completion,
        clock: Clock,
        region: str,
        account: str,
        before_complete: BeforeCompletion | None = None,
        wait: float = 30.0,
        poll: float = 0.05,
    ) -> None:
        self._inner = inner
        self._client = client
        self._on_complete = on_complete
        self._before = before_complete
        self._clock = clock
        self._region = region
        self._account = account
        self._wait = wait
        self._poll = poll
        self._watches = Followers("flow", initializer=_tag_thread, initargs=(region,))
        self._closing = self._watches.closing

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer:
        adopt_region(self._region)
        reference = self._inner.dispatch(target, firing_id, payload)
        if isinstance(reference, Ended) or reference.endswith("(already started)"):
            return reference  # nothing to watch: not a flow's, or watched since its start
        arn = reference.split(" ", 1)[0]
        if not self._watches.follow(self._watch, arn, firing_id, self._clock.now()):
            log.warning("Flow execution %s started while stopping: its end is not watched", arn)
        return reference

    def stop(self, target: Target, firing_id: str, reason: str) -> str:
        """``overlap: cancel_other``: the execution stopped by ``inner`` (its watch then sees
        it ABORTED and reports that end, which changes nothing: the run has ended)."""
        adopt_region(self._region)
        return Dispatchers({target.kind: self._inner}).stop(target, firing_id, reason)

    def pending(self) -> int:
        return self._watches.pending()

    def _watch(self, arn: str, firing_id: str, started: datetime) -> None:
        waited = 0.0
        description: Mapping[str, Any] | None = None
        while waited <= self._wait and not self._closing.is_set():
            try:
                description = self._client.describe_execution(executionArn=arn)
            except (ClientError, BotoCoreError) as exc:
                log.error("Flow execution %s cannot be read: %s", arn, describe_aws_error(exc))
                return
            if str(description.get("status")) in _FLOW_ENDS:
                break
            self._closing.wait(self._poll)
            waited += self._poll
        else:
            if not self._closing.is_set():
                log.warning(
                    "Flow execution %s still running after %.0f s - firing %s stays open "
                    "until its timeout",
                    execution_name(firing_id),
                    self._wait,
                    firing_id,
                )
            return
        if description is None:
            return
        if self._before is not None:
            self._before(firing_id)
        event = step_functions_status_event(
            description,
            region=self._region,
            account=self._account,
            started=started,
            at=self._clock.now(),
        )
        try:
            self._on_complete(event)
        except Exception as exc:
            log.error("Completion of firing %s not recorded: %s", firing_id, exc)

    def close(self) -> None:
        """Stop watching: executions that have not ended stay open."""
        self._watches.close()
