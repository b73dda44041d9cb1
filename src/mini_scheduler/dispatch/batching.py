"""What the batched dispatchers (SQS, SNS, EventBridge) share: a batch's firings cut into
requests that respect the service's count and size limits, and a request's failed entries sent
again, alone, while the service calls their failure passing.

A batch request answers 200 with a verdict per entry. An entry that failed for a passing cause
(throttled, an internal failure: the service says which) is sent again with the others of its
kind, after a short backoff, up to :data:`ATTEMPTS` requests; any other failed entry answers its
DispatchError at once. A request that raises (throttled after the SDK's retries, unreachable)
answers its DispatchError for every entry it carried, and nothing of it is sent again here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.dispatch.base import Answer, Ended
from mini_scheduler.errors import DispatchError, describe_aws_error
from mini_scheduler.model import job_of

T = TypeVar("T")

ATTEMPTS: Final = 3
"""The most requests one entry goes in: the first and two for its passing failures."""
BACKOFF: Final = 0.05
"""Seconds before the second request of failed entries; doubled before the third."""
MESSAGES_A_REQUEST: Final = 10
"""The most entries a SendMessageBatch, a PublishBatch or a PutEvents takes."""
MAX_DEDUPLICATION_ID: Final = 128
"""The longest ``MessageDeduplicationId`` SQS and SNS take."""


def compact_json(payload: Mapping[str, Any]) -> str:
    """The payload as every dispatcher encodes it (as the Lambda dispatcher does)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def utf8_size(*texts: str) -> int:
    return sum(len(text.encode()) for text in texts)


@dataclass(frozen=True, slots=True)
class Entry:
    """One firing as a batch request carries it. ``index``: its place in the caller's batch
    (unique, so it is also the entry's ``Id`` where the request asks one); ``fields``: the
    request entry without its ``Id``; ``size``: the bytes it counts for in the request's limit."""

    index: int
    firing_id: str
    fields: Mapping[str, Any]
    size: int


@dataclass(frozen=True, slots=True)
class Failure:
    """An entry the service failed: its code and message, and whether it may be sent again."""

    code: str
    message: str
    retryable: bool


Reply = Mapping[int, str | Failure]
"""A request's verdicts by entry index: the message's id, or why it failed."""
Send = Callable[[Sequence[Entry]], Reply]
"""One request of the entries (raising DispatchError when the request itself failed)."""


def aws_call(where: str, call: Callable[[], T]) -> T:
    """``call``'s answer, or a DispatchError naming ``where`` and the cause."""
    try:
        return call()
    except (ClientError, BotoCoreError) as exc:
        raise DispatchError(f"{where} failed - {describe_aws_error(exc)}") from exc


def deduplication_id(firing_id: str) -> str:
    """The firing id (a resent firing is then dropped by SQS or SNS itself); past 128
    characters, the sha256 hex of it."""
    if len(firing_id) <= MAX_DEDUPLICATION_ID:
        return firing_id
    return hashlib.sha256(firing_id.encode()).hexdigest()


def message_fields(
    body_key: str, firing_id: str, payload: Mapping[str, Any], *, fifo: bool
) -> tuple[dict[str, Any], int]:
    """An SQS message's or an SNS message's fields for a firing (the body under ``body_key``,
    the ``firingId`` and ``job`` attributes, and on a FIFO queue or topic the job as its group
    and the firing as its deduplication id) and the bytes it counts for: the body and the
    attributes' names, types and values, as both services count a message's size."""
    body = compact_json(payload)
    job = job_of(firing_id) or firing_id
    attributes = {
        name: {"DataType": "String", "StringValue": value}
        for name, value in (("firingId", firing_id), ("job", job))
    }
    fields: dict[str, Any] = {body_key: body, "MessageAttributes": attributes}
    if fifo:
        fields["MessageGroupId"] = job
        fields["MessageDeduplicationId"] = deduplication_id(firing_id)
    size = utf8_size(body) + sum(
        utf8_size(name, value["DataType"], value["StringValue"])
        for name, value in attributes.items()
    )
    return fields, size


def batch_reply(answer: Mapping[str, Any]) -> Reply:
    """A SendMessageBatch's or PublishBatch's verdicts: ``Successful`` entries' message ids,
    and ``Failed`` entries, sent again only when the fault is not the sender's."""
    reply: dict[int, str | Failure] = {
        int(done["Id"]): str(done["MessageId"]) for done in answer.get("Successful", [])
    }
    for failed in answer.get("Failed", []):
        reply[int(failed["Id"])] = Failure(
            str(failed.get("Code", "")),
            str(failed.get("Message", "")),
            retryable=not failed.get("SenderFault", True),
        )
    return reply


def batch_entries(entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """Request entries, each with its index as its ``Id``."""
    return [{"Id": str(entry.index), **entry.fields} for entry in entries]


def ended(
    kind: str, where: str, answers: Sequence[str | DispatchError]
) -> list[Answer | DispatchError]:
    """Message ids as the runs' ends (``{kind}:{where}:{id}``); errors as they are."""
    return [
        Ended(f"{kind}:{where}:{answer}") if isinstance(answer, str) else answer
        for answer in answers
    ]


def requests(entries: Sequence[Entry], most: int, limit: int) -> Iterator[list[Entry]]:
    """``entries`` cut in order into requests of at most ``most`` entries whose sizes add up to
    at most ``limit`` bytes. An entry over ``limit`` goes alone: the service judges it."""
    group: list[Entry] = []
    total = 0
    for entry in entries:
        if group and (len(group) == most or total + entry.size > limit):
            yield group
            group, total = [], 0
        group.append(entry)
        total += entry.size
    if group:
        yield group


def send_batch(
    entries: Sequence[Entry],
    send: Send,
    *,
    where: str,
    most: int,
    limit: int,
    sleep: Callable[[float], None],
) -> list[str | DispatchError]:
    """Each of ``entries`` sent in as few requests as ``most`` and ``limit`` allow: a message
    id or a DispatchError (naming ``where``, the firing and the cause) per entry, in order."""
    answers: dict[int, str | DispatchError] = {}
    for group in requests(entries, most, limit):
        answers.update(_send_with_retries(group, send, where=where, sleep=sleep))
    return [answers[entry.index] for entry in entries]


def send_messages(
    firings: Sequence[tuple[str, Mapping[str, Any]]],
    request: Callable[[list[dict[str, Any]]], Mapping[str, Any]],
    *,
    body_key: str,
    fifo: bool,
    where: str,
    limit: int,
    sleep: Callable[[float], None],
) -> list[str | DispatchError]:
    """SQS's or SNS's batch: ``firings`` as messages (:func:`message_fields`) in requests of
    at most :data:`MESSAGES_A_REQUEST` messages and ``limit`` bytes, each made by ``request``
    (the boto3 call, given the request's entries)."""
    entries = [
        Entry(index, firing_id, *message_fields(body_key, firing_id, payload, fifo=fifo))
        for index, (firing_id, payload) in enumerate(firings)
    ]

    def send(group: Sequence[Entry]) -> Reply:
        return batch_reply(aws_call(where, lambda: request(batch_entries(group))))

    return send_batch(entries, send, where=where, most=MESSAGES_A_REQUEST, limit=limit, sleep=sleep)


def _send_with_retries(
    group: Sequence[Entry], send: Send, *, where: str, sleep: Callable[[float], None]
) -> dict[int, str | DispatchError]:
    answers: dict[int, str | DispatchError] = {}
    pending = list(group)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            reply = send(pending)
        except DispatchError as exc:
            answers.update((entry.index, exc) for entry in pending)
            return answers
        again: list[Entry] = []
        for entry in pending:
            verdict = reply.get(entry.index) or Failure("NoVerdict", "no answer for it", False)
            if isinstance(verdict, str):
                answers[entry.index] = verdict
            elif verdict.retryable and attempt < ATTEMPTS:
                again.append(entry)
            else:
                answers[entry.index] = _failed(where, entry, verdict, attempt)
        if not again:
            return answers
        sleep(BACKOFF * 2 ** (attempt - 1))
        pending = again
    return answers


def _failed(where: str, entry: Entry, failure: Failure, attempts: int) -> DispatchError:
    tries = f" (after {attempts} attempts)" if failure.retryable else ""
    return DispatchError(
        f"{where} failed for {entry.firing_id}{tries} - {failure.code}: {failure.message}"
    )
