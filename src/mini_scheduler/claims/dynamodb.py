"""The claim store on one DynamoDB table (the stack's state table).

Items (``pk`` / ``sk``):

* ``RUN#<job>`` / ``<scheduled instant, ms>[#manual-<hex>]``: one run record per firing. The key
  is the firing id, so the claim is a conditional insert; the time-first sort key serves a
  job's history newest first, and its latest run (the job's latest state), with one Query.
* ``JOB#<job>`` / ``STATE``: the job's open slot for ``overlap: skip`` (:mod:`.dynamodb_slots`).
* ``CAP#<key>`` / ``STATE``: a cap's places (``max_running``, a pool: :mod:`.dynamodb_places`).
* ``CONTROL`` / ``WATERMARK#<scope>`` and ``CONTROL`` / ``PAUSE#<job>``: read by a tick in one
  consistent Query.
* ``WATCH`` / ``<instant>#<random>``: the runs the sweep looks at (:mod:`.dynamodb_watch`).
* ``MARKS#<claim token>`` / ``MARKS``: a claim batch's marks (:mod:`.dynamodb_marks`).
* ``DEFER`` / ``<due instant, ms>#<run id>``: the deferred firings (:mod:`.dynamodb_deferred`).

On the hot path a firing of an ``overlap: allow`` job costs two writes of one item each and a
share of a third, no transaction and no index entry: the claim (a PartiQL ``INSERT``, 25 to a
request: :mod:`.dynamodb_batch`), its share of its batch's marks item (one ``BatchWriteItem``
a call: :mod:`.dynamodb_marks`), and the recorder's close (one ``UpdateItem``). An
``overlap: skip`` job's slot adds one write at the claim and one at the end; each cap of a
capped job one more of each (an ``UpdateItem`` per claim: never batched).
A backfill's claim (``over_skipped``) whose ``INSERT`` met an item reads it, as every refused
claim does (its token tells our own insert sent again from a peer's), and where that item is a
SKIPPED record replaces it with one ``PutItem``, conditional on the skip as read: one request
more, for a firing recorded SKIPPED only (PartiQL's ``INSERT`` cannot say "or SKIPPED").

Each write is one of :mod:`.transitions`, made a request by :mod:`.dynamodb_table`. The store is
in parts: its reads and control writes (:mod:`.dynamodb_reads`), its claims and marks
(:mod:`.dynamodb_claims`), and its ends, redrives, time-outs and skips, which are
:class:`.ends.RunEnds`' over the primitives here.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from mini_scheduler.claims.base import BUFFER, Deferred
from mini_scheduler.claims.definitions import KeptInABook
from mini_scheduler.claims.dynamodb_batch import BatchWriter
from mini_scheduler.claims.dynamodb_claims import DynamoDBClaims
from mini_scheduler.claims.dynamodb_deferred import DeferredFirings
from mini_scheduler.claims.dynamodb_marks import Tokens
from mini_scheduler.claims.dynamodb_places import Caps
from mini_scheduler.claims.dynamodb_schedules import ScheduleBook
from mini_scheduler.claims.dynamodb_slots import JobSlots
from mini_scheduler.claims.dynamodb_table import (
    code,
    named,
    run_from,
    run_item,
    write_retried,
)
from mini_scheduler.claims.dynamodb_watch import Watch, minute_after
from mini_scheduler.claims.ends import PlacesInItems, RunEnds
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.claims.transitions import Write
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger("mini_scheduler.claims")

_CONFLICT_ATTEMPTS = 5  # a change decided on a run read again when it changed meanwhile


class DynamoDBClaimStore(PlacesInItems[Caps], RunEnds, KeptInABook, DynamoDBClaims):
    """The claim store on the state table. ``client`` is a boto3 DynamoDB client (made by the
    caller, so tests and emulators choose the endpoint). ``batched=False`` writes claims and
    marks one request each (:mod:`.dynamodb_batch`: for moto, whose PartiQL ignores
    conditions)."""

    _conflict_attempts = _CONFLICT_ATTEMPTS

    def __init__(
        self,
        table: str,
        client: DynamoDBClient,
        *,
        run_ttl_days: int = 30,
        sleep: Callable[[float], None] = time.sleep,
        batched: bool = True,
        transactions: bool = True,
    ) -> None:
        self.table = table
        self.name = f"dynamodb:{table}"
        self._client = client
        self._ttl = timedelta(days=run_ttl_days)
        self._sleep = sleep
        self._writer = BatchWriter(client, table, sleep, batched=batched)
        self._slots = JobSlots(client, table, sleep)
        self._caps = Caps(client, table, sleep)
        self._watch = Watch(client, table, self._ttl, sleep)
        self._tokens = Tokens()
        self._deferred = DeferredFirings(client, table, self._ttl, sleep)
        self._schedules = ScheduleBook(
            client,
            table,
            self._ttl,
            self._deferred,
            sleep,
            transactions=transactions,
            writer=self._writer,
        )

    # -- the primitives of the ends (:mod:`.ends`) -------------------------------------------

    def _expiry(self, now: datetime) -> datetime:
        return now + self._ttl

    def _end_run(self, firing: Firing, write: Write) -> RunRecord | None:
        request = {**self._run_update(firing, write), "ReturnValues": "ALL_OLD"}
        answer = self._update(request, "UpdateItem (close run)", tolerate_condition=True)
        if answer is None:
            return None
        # The run as it was, started when its batch's marks say (the end line's duration).
        raw = answer["Attributes"]
        try:
            return self._runs([raw], "BatchGetItem (marks)", consistent=False)[0]
        except StoreError as exc:  # the end is written: it stands, its start unread
            log.warning(
                "Run %s ended; when it started is unread (its duration counts from its claim): %s",
                firing.id,
                exc,
            )
            return run_from(raw)

    def _read_run(self, firing: Firing) -> RunRecord | None:
        """The run as stored now, as its marks say; a run DISPATCHED by its batch's marks item
        only is marked on its record first, since the change decided on it is conditional on
        the status it reads (:func:`.dynamodb_marks.marking`)."""
        raw = self._run_item(firing)
        if raw is None:
            return None
        (run,) = self._runs([raw], "BatchGetItem (marks)")
        self._mark_on_record(run_from(raw), run)
        return run

    def _rewrite_run(self, firing: Firing, write: Write) -> bool:
        request = self._run_update(firing, write)
        return self._update(request, "UpdateItem (end run)", tolerate_condition=True) is not None

    def _insert_run(self, firing: Firing, run: Mapping[str, Any], operation: str) -> bool:
        """A PutItem of the new run unless its firing has a record: True when written."""
        request = named(
            {
                "TableName": self.table,
                "Item": run_item(firing, run),
                "ConditionExpression": "attribute_not_exists(#pk)",
            }
        )
        with self._failing_as(f"PutItem ({operation})"):
            try:
                write_retried(self._client, "put_item", self._sleep, **request)
            except ClientError as exc:
                if code(exc) != "ConditionalCheckFailedException":
                    raise
                return False
        return True

    def _follow_run(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        """No job state is written at an end (``job_state`` reads the job's latest run); a
        reopened run is watched again instead, which is how the sweep's ``due_runs`` finds
        it (the table indexes no open run)."""
        if after.status.open and not before.status.open and after.deadline is not None:
            self.watch([firing.id], minute_after(after.deadline))

    def _release_slot(self, firing: Firing, release: Write) -> None:
        self._slots.release(firing.job, firing.id)  # ``release``, as JobSlots writes it

    def _take_back_slot(self, firing: Firing, take: Write, after: RunRecord) -> bool:
        return self._slots.take_back(firing.job, firing.id)  # ``take``, as JobSlots writes it

    # -- deferred firings ------------------------------------------------------------------

    def defer(self, deferred: Sequence[Deferred]) -> None:
        self._deferred.add(deferred)

    def due_deferred(self, until: datetime, limit: int = 1000) -> Sequence[Deferred]:
        return self._deferred.due(until, limit)

    def drop_deferred(self, deferred: Sequence[Deferred]) -> None:
        for item in deferred:  # a buffered firing's place first: never one held by nothing
            if item.reason == BUFFER:
                self._slots.leave(item.firing.job, item.firing.id)
        self._deferred.drop(deferred)

    def buffer(self, deferred: Deferred, limit: int) -> bool:
        self._deferred.add([deferred])
        if self._slots.wait(deferred.firing.job, deferred.firing.id, limit):
            return True
        self._deferred.drop([deferred])
        return False

    def pending_deferred(self, reason: str) -> Sequence[Deferred]:
        return self._deferred.pending(reason)


def create_state_table(client: DynamoDBClient, table: str) -> None:
    """Create the state table as template.yaml declares it (for tests and the local run)."""
    client.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
    )
    client.get_waiter("table_exists").wait(
        TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    with contextlib.suppress(ClientError):  # some emulators lack TTL; the attribute is written
        client.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"}
        )
