"""Flow targets (``flow://``): ``StartExecution`` named after the firing.

A standard workflow refuses a second execution under the same name, so a repeated dispatch of
one firing (a takeover after a crash) meets ``ExecutionAlreadyExists``: the firing was already
dispatched, and that is an answer, not an error. Express workflows do not deduplicate names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.errors import DispatchError, describe_aws_error
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
