"""SNS targets (``sns://<topic name or ARN>``): a message per firing, its body the payload's
compact JSON, with the ``firingId`` and ``job`` attributes. The topic accepting the message is
the run's end (:class:`Ended`, ``sns:<topic>:<MessageId>``).

A name becomes the topic's ARN in the ticker's account and region. SNS publishes only to a topic
of the caller's region, so a topic ARN of another region is refused before anything is sent.

On a FIFO topic (``.fifo``) the job's name is the message's group and the firing id its
deduplication id: a firing published again within SNS's five minutes (an answer lost on its way
back, a takeover) is accepted and not delivered again. A standard topic has no such id: a
firing published again after a lost answer is delivered twice. The scheduler's claim still makes
one dispatch attempt a firing; a standard topic's at-least-once delivery is the service's, and
its subscribers must be idempotent (the firing id is in the body and the attributes).

Batches go in PublishBatch requests of at most 10 messages and ``request_limit`` bytes (bodies
and attributes: SNS holds a request to the topic's ``MaximumMessageSize``, 256 KiB unless the
topic raised it, up to 1 MiB); a failed entry whose fault is not the sender's is published again
(:mod:`.batching`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from mini_scheduler.dispatch.base import Answer, Ended
from mini_scheduler.dispatch.batching import (
    MESSAGES_A_REQUEST,
    aws_call,
    ended,
    message_fields,
    send_messages,
)
from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target

REQUEST_LIMIT: Final = 262_144
"""A topic's default ``MaximumMessageSize``, which also bounds a PublishBatch's messages."""

_ARN_REGION = re.compile(r"arn:[a-z-]+:sns:(?P<region>[a-z0-9-]+):")


class SnsDispatcher:
    """``client``: a boto3 SNS client of the ticker's region; ``account``, ``region`` and
    ``partition`` turn a topic's name into its ARN; ``request_limit``: the bytes a PublishBatch
    may carry (raise it to 1 MiB when every topic's ``MaximumMessageSize`` is); ``sleep`` waits
    before a failed entry is published again."""

    batch_size = MESSAGES_A_REQUEST

    def __init__(
        self,
        client: Any,
        *,
        region: str,
        account: str,
        partition: str = "aws",
        request_limit: int = REQUEST_LIMIT,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._region = region
        self._prefix = f"arn:{partition}:sns:{region}:{account}:"
        self._limit = request_limit
        self._sleep = sleep

    def topic_arn(self, target: Target) -> str:
        """The topic's ARN; DispatchError for a topic of another region."""
        if not target.name.startswith("arn:"):
            return self._prefix + target.name
        found = _ARN_REGION.match(target.name)
        region = found["region"] if found else self._region
        if region != self._region:
            raise DispatchError(
                f"SNS topic {target.name} is in {region}: the topic must be in the ticker's "
                f"region ({self._region})"
            )
        return target.name

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer:
        arn = self.topic_arn(target)
        fields, _ = message_fields("Message", firing_id, payload, fifo=arn.endswith(".fifo"))
        answer = aws_call(
            f"SNS Publish {arn}", lambda: self._client.publish(TopicArn=arn, **fields)
        )
        return Ended(f"sns:{target.name}:{answer['MessageId']}")

    def dispatch_batch(
        self, target: Target, firings: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[Answer | DispatchError]:
        try:
            arn = self.topic_arn(target)
        except DispatchError as exc:
            return [exc] * len(firings)
        answers = send_messages(
            firings,
            lambda entries: self._client.publish_batch(
                TopicArn=arn, PublishBatchRequestEntries=entries
            ),
            body_key="Message",
            fifo=arn.endswith(".fifo"),
            where=f"SNS PublishBatch {arn}",
            limit=self._limit,
            sleep=self._sleep,
        )
        return ended("sns", target.name, answers)
