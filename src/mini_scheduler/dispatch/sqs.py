"""SQS targets (``sqs://<queue name, URL or ARN>``): a message per firing, its body the
payload's compact JSON, with the ``firingId`` and ``job`` attributes. The queue accepting the
message is the run's end (:class:`Ended`, ``sqs:<queue>:<MessageId>``).

A name becomes its URL with GetQueueUrl, once a name; an ARN with GetQueueUrl under the ARN's
account; a URL is used as written. SQS answers a request at its region's endpoint only, so a
queue of another region than the ticker's is refused before anything is sent.

On a FIFO queue (``.fifo``) the job's name is the message's group and the firing id its
deduplication id: a firing sent again within SQS's five minutes (an answer lost on its way back,
a takeover) is accepted and dropped by SQS itself. A standard queue has no such id: a firing
sent again after a lost answer is delivered twice. The scheduler's claim still makes one
dispatch attempt a firing; a standard queue's at-least-once delivery is the service's, and its
consumer must be idempotent (the firing id is in the body and the attributes).

Batches go in SendMessageBatch requests of at most 10 messages and :data:`REQUEST_LIMIT` bytes;
a failed entry whose fault is not the sender's is sent again (:mod:`.batching`).
"""

from __future__ import annotations

import re
import threading
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

REQUEST_LIMIT: Final = 1_048_576
"""The most bytes of messages a SendMessageBatch takes, and a message too (1 MiB since 2025)."""

_ARN = re.compile(r"arn:[a-z-]+:sqs:(?P<region>[a-z0-9-]+):(?P<account>[0-9]{12}):(?P<name>.+)")
_URL = re.compile(r"https://sqs\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/[0-9]{12}/.+")


class SqsDispatcher:
    """``client``: a boto3 SQS client of the ticker's region; ``sleep`` waits before a failed
    entry is sent again (a test's is instant)."""

    batch_size = MESSAGES_A_REQUEST

    def __init__(self, client: Any, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._sleep = sleep
        self._region = str(client.meta.region_name)
        self._urls: dict[str, str] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def queue_url(self, target: Target) -> str:
        """The queue's URL, asked of SQS once a name (a thread asking while another does waits
        for its answer); DispatchError when SQS cannot say it."""
        name = target.name
        with self._lock:
            url = self._urls.get(name)
            if url is not None:
                return url
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            with self._lock:
                url = self._urls.get(name)
            if url is None:
                url = self._resolve(name)
                with self._lock:
                    self._urls[name] = url
        return url

    def _resolve(self, name: str) -> str:
        where = f"SQS GetQueueUrl {name}"
        arn = _ARN.fullmatch(name)
        url = _URL.fullmatch(name)
        region = arn["region"] if arn else url["region"] if url else self._region
        if region != self._region:
            raise DispatchError(
                f"SQS queue {name} is in {region}: the queue must be in the ticker's region "
                f"({self._region})"
            )
        if url:
            return name
        if arn:
            answer = aws_call(
                where,
                lambda: self._client.get_queue_url(
                    QueueName=arn["name"], QueueOwnerAWSAccountId=arn["account"]
                ),
            )
        else:
            answer = aws_call(where, lambda: self._client.get_queue_url(QueueName=name))
        return str(answer["QueueUrl"])

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer:
        url = self.queue_url(target)
        fields, _ = message_fields(
            "MessageBody", firing_id, payload, fifo=target.name.endswith(".fifo")
        )
        answer = aws_call(
            f"SQS SendMessage {target.name}",
            lambda: self._client.send_message(QueueUrl=url, **fields),
        )
        return Ended(f"sqs:{target.name}:{answer['MessageId']}")

    def dispatch_batch(
        self, target: Target, firings: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[Answer | DispatchError]:
        try:
            url = self.queue_url(target)
        except DispatchError as exc:
            return [exc] * len(firings)
        answers = send_messages(
            firings,
            lambda entries: self._client.send_message_batch(QueueUrl=url, Entries=entries),
            body_key="MessageBody",
            fifo=target.name.endswith(".fifo"),
            where=f"SQS SendMessageBatch {target.name}",
            limit=REQUEST_LIMIT,
            sleep=self._sleep,
        )
        return ended("sqs", target.name, answers)
