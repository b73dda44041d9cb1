"""Flow targets (``flow://``): ``StartExecution`` named after the firing.

A standard workflow refuses a second execution under the same name, so a repeated dispatch of
one firing (a takeover after a crash) meets ``ExecutionAlreadyExists``: the firing was already
dispatched, and that is an answer, not an error. Express workflows do not deduplicate names.

The name is the firing id while it fits Step Functions' 80 characters
(:func:`mini_scheduler.model.execution_name`); a longer one is cut and cannot be read back, so
the recorder reads such an execution's input with DescribeExecution (:class:`ExecutionInputs`)
when its status event leaves the input out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.errors import DispatchError, EventError, StoreError, describe_aws_error
from mini_scheduler.jobs import Target
from mini_scheduler.model import execution_name

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient


class StepFunctionsDispatcher:
    """``account`` and ``region`` turn a state machine name into its ARN (the ticker knows its
    own account from the ARN it was invoked under, so no STS call is needed)."""

    def __init__(
        self, client: SFNClient, *, region: str, account: str, partition: str = "aws"
    ) -> None:
        self._client = client
        self._prefix = f"arn:{partition}:states:{region}:{account}:stateMachine:"

    def state_machine_arn(self, target: Target) -> str:
        return target.name if target.name.startswith("arn:") else self._prefix + target.name

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        arn = self.state_machine_arn(target)
        name = execution_name(firing_id)
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        try:
            answer = self._client.start_execution(stateMachineArn=arn, name=name, input=body)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return f"{arn.replace(':stateMachine:', ':execution:')}:{name} (already started)"
            raise DispatchError(
                f"Step Functions StartExecution {arn} failed - {describe_aws_error(exc)}"
            ) from exc
        except BotoCoreError as exc:
            raise DispatchError(
                f"Step Functions StartExecution {arn} failed - {describe_aws_error(exc)}"
            ) from exc
        return str(answer["executionArn"])

    def stop(self, target: Target, firing_id: str, reason: str) -> str:
        """StopExecution of the firing's execution (its name is the firing's, as dispatch made
        it); one that does not exist (never started) is nothing to stop."""
        arn = self.state_machine_arn(target).replace(":stateMachine:", ":execution:")
        execution = f"{arn}:{execution_name(firing_id)}"
        try:
            self._client.stop_execution(
                executionArn=execution, error="Cancelled", cause=reason[:32768]
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _UNKNOWN_EXECUTION:
                return f"{execution} (not found: nothing to stop)"
            raise DispatchError(
                f"Step Functions StopExecution {execution} failed - {describe_aws_error(exc)}"
            ) from exc
        except BotoCoreError as exc:
            raise DispatchError(
                f"Step Functions StopExecution {execution} failed - {describe_aws_error(exc)}"
            ) from exc
        return execution


_EXECUTION_ARN = re.compile(
    r"arn:aws[a-z-]{0,20}:states:[a-z0-9-]{1,30}:\d{12}:execution:[^\s:]{1,80}:[^\s:]{1,80}"
)
_UNKNOWN_EXECUTION = {"ExecutionDoesNotExist", "InvalidArn"}


class ExecutionInputs:
    """An execution's input, read with DescribeExecution: for the recorder, when a status event
    left the input out (Step Functions does for a large one) and the execution's name was cut.
    ``client`` makes the Step Functions client on first use (most containers never need it).

    A call answers the input, or raises EventError when there is no such execution (nothing to
    retry: the event is rejected) and StoreError when Step Functions cannot answer (throttled,
    unreachable, access denied: the recorder fails and Lambda retries the event)."""

    def __init__(self, client: Callable[[], SFNClient]) -> None:
        self._client = client

    def __call__(self, execution_arn: str) -> str:
        if not _EXECUTION_ARN.fullmatch(execution_arn):
            raise EventError(
                f"Step Functions event: executionArn {execution_arn[:120]!r} is not an "
                "execution's ARN"
            )
        where = f"Step Functions DescribeExecution {execution_arn}"
        try:
            answer = self._client().describe_execution(executionArn=execution_arn)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _UNKNOWN_EXECUTION:
                raise EventError(f"{where}: {describe_aws_error(exc)[:300]}") from None
            raise StoreError(f"{where} failed - {describe_aws_error(exc)}") from exc
        except BotoCoreError as exc:
            raise StoreError(f"{where} failed - {describe_aws_error(exc)}") from exc
        text = answer.get("input")
        return text if isinstance(text, str) else ""
