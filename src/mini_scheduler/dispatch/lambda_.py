"""Lambda targets: an asynchronous ``Invoke`` (``InvocationType=Event``)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.errors import DispatchError, describe_aws_error
from mini_scheduler.jobs import Target

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


def finish_invoke(answer: Mapping[str, Any]) -> None:
    """Read an ``Invoke`` answer's payload to its end (empty for ``InvocationType=Event``).

    botocore hands the payload over unread, and until it is read the answer's connection does not
    go back to the client's pool: every ``Invoke`` would open a connection of its own (on AWS a TLS
    handshake, several milliseconds of the ticker's CPU) and leave the old one to the garbage
    collector. The request was accepted already; a failure to read the empty rest is not one."""
    payload = answer.get("Payload")
    if payload is None:
        return
    try:
        payload.read()
    except Exception:  # the Invoke is accepted whatever happens to its empty rest
        with contextlib.suppress(Exception):
            payload.close()


class LambdaDispatcher:
    def __init__(self, client: LambdaClient) -> None:
        self._client = client

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        try:
            answer = self._client.invoke(
                FunctionName=target.name, InvocationType="Event", Payload=body
            )
        except (ClientError, BotoCoreError) as exc:
            raise DispatchError(
                f"Lambda Invoke {target.name} failed - {describe_aws_error(exc)}"
            ) from exc
        finish_invoke(answer)
        status = answer.get("StatusCode")
        if status != 202:
            raise DispatchError(f"Lambda Invoke {target.name} answered status {status}, not 202")
        request_id = answer.get("ResponseMetadata", {}).get("RequestId", "")
        return f"lambda:{target.name}:{request_id}" if request_id else f"lambda:{target.name}"
