"""EventBridge targets (``events://<bus name or ARN>``): an event per firing on the bus, from
``Source`` ``mini-scheduler`` with ``DetailType`` ``Scheduled Job Firing``, its ``Detail`` the
payload's compact JSON. The bus accepting the event is the run's end (:class:`Ended`,
``events:<bus>:<EventId>``); the bus is named as cron.yaml writes it.

PutEvents answers 200 whatever became of each entry: an entry with an ``ErrorCode`` (and any
without an ``EventId``) is a failed dispatch, never a success. Only the failures EventBridge
calls retryable (``ThrottlingException``, ``InternalFailure``) are put again (:mod:`.batching`).

EventBridge has no deduplication id: a firing put again after a lost answer (a timeout whose
request did arrive, a takeover) is delivered twice. The scheduler's claim still makes one
dispatch attempt a firing; the rules' targets must be idempotent (the firing id is in the
detail).

Batches go in PutEvents requests of at most 10 entries whose sizes add up to at most
:data:`REQUEST_LIMIT`, an entry's size counted as EventBridge counts it (its ``Source``,
``DetailType``, ``Detail`` and ``Resources`` in UTF-8; no ``Time`` is sent).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from mini_scheduler.dispatch.base import Answer
from mini_scheduler.dispatch.batching import (
    MESSAGES_A_REQUEST,
    Entry,
    Failure,
    Reply,
    aws_call,
    compact_json,
    ended,
    send_batch,
    utf8_size,
)
from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target

SOURCE: Final = "mini-scheduler"
DETAIL_TYPE: Final = "Scheduled Job Firing"
REQUEST_LIMIT: Final = 1_000_000
"""PutEvents' total entry size must be under 1 MB (since January 2026; 256 KB before). Read
as 1,000,000 bytes, the smaller of its two readings."""
RETRYABLE: Final = frozenset({"ThrottlingException", "InternalFailure"})
"""The entry error codes EventBridge documents as retryable."""


class EventBridgeDispatcher:
    """``client``: a boto3 EventBridge (``events``) client of the ticker's region; ``sleep``
    waits before a failed entry is put again."""

    batch_size = MESSAGES_A_REQUEST

    def __init__(self, client: Any, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self._client = client
        self._sleep = sleep

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer:
        (answer,) = self.dispatch_batch(target, [(firing_id, payload)])
        if isinstance(answer, DispatchError):
            raise answer
        return answer

    def dispatch_batch(
        self, target: Target, firings: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[Answer | DispatchError]:
        entries = [
            _entry(target, index, firing_id, payload)
            for index, (firing_id, payload) in enumerate(firings)
        ]
        where = f"EventBridge PutEvents {target.name}"

        def send(group: Sequence[Entry]) -> Reply:
            answer = aws_call(
                where, lambda: self._client.put_events(Entries=[e.fields for e in group])
            )
            return _reply(group, answer)

        answers = send_batch(
            entries,
            send,
            where=where,
            most=MESSAGES_A_REQUEST,
            limit=REQUEST_LIMIT,
            sleep=self._sleep,
        )
        return ended("events", target.name, answers)


def _entry(target: Target, index: int, firing_id: str, payload: Mapping[str, Any]) -> Entry:
    detail = compact_json(payload)
    fields = {
        "Source": SOURCE,
        "DetailType": DETAIL_TYPE,
        "Detail": detail,
        "EventBusName": target.name,
        "Resources": [],
    }
    return Entry(index, firing_id, fields, utf8_size(SOURCE, DETAIL_TYPE, detail))


def _reply(group: Sequence[Entry], answer: Mapping[str, Any]) -> Reply:
    """PutEvents' result entries, in the request's order: an ``EventId``, or the entry's
    ``ErrorCode`` (retryable or not); an entry with neither failed too."""
    reply: dict[int, str | Failure] = {}
    for entry, result in zip(group, answer.get("Entries", []), strict=False):
        code = result.get("ErrorCode")
        event_id = result.get("EventId")
        if code is None and event_id:
            reply[entry.index] = str(event_id)
        else:
            code = str(code or "NoEventId")
            message = str(result.get("ErrorMessage") or "no event id in the answer")
            reply[entry.index] = Failure(code, message, retryable=code in RETRYABLE)
    return reply
