"""The claim store on one DynamoDB table (the stack's state table).

Items (``pk`` / ``sk``):

* ``RUN#<job>`` / ``<scheduled instant, ms>[#manual-<hex>]``: one run record per firing. The key
  is the firing id, so the claim is a ``PutItem`` conditional on ``attribute_not_exists(pk)``;
  the time-first sort key serves a job's history newest first with one Query.
* ``JOB#<job>`` / ``STATE``: the job's latest state (seed 000), and its open slot for
  ``overlap: skip``.
* ``CONTROL`` / ``WATERMARK#<scope>`` and ``CONTROL`` / ``PAUSE#<job>``: read by a tick in one
  consistent Query.

Open runs carry ``openPk = "OPEN"`` and a ``deadline``; the sparse index ``open-runs`` on them
is the sweep's one Query a tick.

Each write is one of :mod:`.transitions`, made a request by :mod:`.dynamodb_table`.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims import transitions
from mini_scheduler.claims.base import ClaimResult, Control, Pause
from mini_scheduler.claims.dynamodb_table import (
    OPEN,
    REFUSED,
    RUN,
    code,
    expressions,
    instant,
    job_key,
    named,
    plain_item,
    run_from,
    run_item,
    run_key,
    transact,
    write_retried,
)
from mini_scheduler.claims.records import (
    JOB_FIELDS,
    JobStart,
    JobState,
    Redrive,
    RunRecord,
    job_state_from,
)
from mini_scheduler.claims.transitions import Write
from mini_scheduler.errors import StoreError, describe_aws_error
from mini_scheduler.model import Firing, RunStatus, firing_from_id, iso_millis

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger("mini_scheduler.claims")

OPEN_INDEX = "open-runs"
_CONTROL = "CONTROL"
_CONFLICT_ATTEMPTS = 5  # a change decided on a run read again when it changed meanwhile


class DynamoDBClaimStore:
    """The claim store on the state table. ``client`` is a boto3 DynamoDB client (made by the
    caller, so tests and emulators choose the endpoint)."""

    def __init__(
        self,
        table: str,
        client: DynamoDBClient,
        *,
        run_ttl_days: int = 30,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.table = table
        self.name = f"dynamodb:{table}"
        self._client = client
        self._ttl = timedelta(days=run_ttl_days)
        self._sleep = sleep

    # -- helpers ---------------------------------------------------------------------------

    def _fail(self, operation: str, exc: Exception) -> StoreError:
        return StoreError(
            f"DynamoDB {operation} on table {self.table} failed - {describe_aws_error(exc)}"
        )

    @contextlib.contextmanager
    def _failing_as(self, operation: str) -> Iterator[None]:
        """An AWS error inside becomes a StoreError naming ``operation`` and the table."""
        try:
            yield
        except (ClientError, BotoCoreError) as exc:
            raise self._fail(operation, exc) from exc

    def _put_new(
        self, operation: str, firing: Firing, run: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Put a new run unless its firing has a record: None when written, else the item
        found (DynamoDB returns it with the refusal; the SDK may have written it itself, on an
        attempt whose answer was lost)."""
        request = named(
            {
                "TableName": self.table,
                "Item": run_item(firing, run),
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        )
        with self._failing_as(operation):
            try:
                write_retried(self._client, "put_item", self._sleep, **request)
            except ClientError as exc:
                if code(exc) != "ConditionalCheckFailedException":
                    raise
                found: dict[str, Any] = dict(exc.response.get("Item") or {})  # type: ignore[call-overload]
                return found
        return None

    def _run_update(self, firing: Firing, write: Write) -> dict[str, Any]:
        key = run_key(firing)
        return named({"TableName": self.table, "Key": key, **expressions(write, RUN)})

    def _job_update(self, job: str, write: Write, *, creates: bool = False) -> dict[str, Any]:
        """An update of the job's state item; one that ``creates`` it names the job in it."""
        if creates:
            write = replace(write, sets={"job": job, **write.sets})
        key = job_key(job)
        return named({"TableName": self.table, "Key": key, **expressions(write, JOB_FIELDS)})

    def _update(
        self, request: Mapping[str, Any], operation: str, *, tolerate_condition: bool = False
    ) -> dict[str, Any] | None:
        """UpdateItem: its answer; None when ``tolerate_condition`` and the condition failed."""
        with self._failing_as(operation):
            try:
                answer: dict[str, Any] = write_retried(
                    self._client, "update_item", self._sleep, **request
                )
            except ClientError as exc:
                if tolerate_condition and code(exc) == "ConditionalCheckFailedException":
                    return None
                raise
        return answer

    # -- claims ----------------------------------------------------------------------------

    def claim(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
        exclusive: bool = False,
    ) -> ClaimResult:
        token = uuid.uuid4().hex
        run = transitions.claimed(
            firing,
            now=now,
            lease_until=lease_until,
            origin=origin,
            exclusive=exclusive,
            expires_at=now + self._ttl,
            token=token,
        )
        if not exclusive:
            old = self._put_new("PutItem (claim)", firing, run)
            if old is None:
                return ClaimResult.WON
            # The SDK retries a put whose answer was lost; the retry then meets our own first
            # write. The token tells our claim from a peer's.
            holder = old.get(RUN["claim_token"], {}).get("S")
            return ClaimResult.WON if holder == token else ClaimResult.LOST
        put = named(
            {
                "TableName": self.table,
                "Item": run_item(firing, run),
                "ConditionExpression": "attribute_not_exists(#pk)",
            }
        )
        slot = self._job_update(firing.job, transitions.take_slot(firing.id), creates=True)
        try:
            refused = transact(self._client, [{"Put": put}, {"Update": slot}], self._sleep)
        except (ClientError, BotoCoreError) as exc:
            raise self._fail("TransactWriteItems (exclusive claim)", exc) from exc
        if not refused:
            return ClaimResult.WON
        return ClaimResult.LOST if refused[0] == REFUSED else ClaimResult.OVERLAP

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        write = transitions.taken_over(run, now=now, lease_until=lease_until, origin=origin)
        if write is None:
            return False
        request = self._run_update(firing_from_id(run.firing_id), write)
        return self._update(request, "UpdateItem (take over)", tolerate_condition=True) is not None

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        run = self._run_update(firing, transitions.dispatched(now=now, deadline=deadline))
        started = transitions.job_started(firing, now=now, start=start, ended=None)
        try:
            state = self._job_update(firing.job, started, creates=True)
            refused = transact(self._client, [{"Update": run}, {"Update": state}], self._sleep)
        except BotoCoreError as exc:
            raise self._fail("TransactWriteItems (mark dispatched)", exc) from exc
        except ClientError as exc:
            # The dispatch happened: the run record must say so, or a takeover would dispatch
            # it again. Mark the run alone; the job's latest state misses this start.
            log.warning(
                "Job %s - firing %s: the job's latest state was not updated (%s); marking the "
                "run alone",
                firing.job,
                firing.id,
                describe_aws_error(exc),
            )
            self._update(run, "UpdateItem (mark dispatched)", tolerate_condition=True)
            return
        if refused:
            # The run closed (a very fast target) or was taken over before we marked it: leave
            # the run as it is; a closed run's start and end go to the job's latest state (a
            # taken-over run is marked by its new claimer).
            run_now = self.run(firing.id)
            if run_now is not None and not run_now.status.open:
                started = transitions.job_started(firing, now=now, start=start, ended=run_now)
                self._update(
                    self._job_update(firing.job, started, creates=True), "UpdateItem (job start)"
                )

    # -- ends ------------------------------------------------------------------------------

    def _finish(self, firing: Firing, write: Write) -> RunRecord | None:
        """An open run's end in one conditional write, then the job's state and slot; the run
        as it was before, or None when the write's condition failed."""
        request = {**self._run_update(firing, write), "ReturnValues": "ALL_OLD"}
        answer = self._update(request, "UpdateItem (close run)", tolerate_condition=True)
        if answer is None:
            return None
        before = run_from(answer["Attributes"])
        self._follow(firing, before, transitions.applied(before, write))
        return before

    def _change(
        self, firing: Firing, decide: Callable[[RunRecord], RunRecord | None]
    ) -> RunRecord | None:
        """``decide``'s change of the run as read (read again when it changed meanwhile),
        followed in the job's state and slot: the run as it was before, or None."""

        def write(change: Write) -> bool:
            request = self._run_update(firing, change)
            return (
                self._update(request, "UpdateItem (end run)", tolerate_condition=True) is not None
            )

        done = transitions.change_run(
            lambda: self.run(firing.id), write, decide, _CONFLICT_ATTEMPTS
        )
        if done is None:
            return None
        self._follow(firing, *done)
        return done[0]

    def _follow(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        """The job's latest state follows the run, and an exclusive run's slot its end or its
        reopening (every write conditional: never another run's slot or state)."""
        self._update(
            self._job_update(firing.job, transitions.job_follows(firing.id, after)),
            "UpdateItem (job end)",
            tolerate_condition=True,
        )
        slot = transitions.slot_follows(firing.id, before, after)
        if slot is None:
            return
        taken = self._update(
            self._job_update(firing.job, slot),
            "UpdateItem (take job)" if after.status.open else "UpdateItem (release job)",
            tolerate_condition=True,
        )
        if after.status.open and taken is None:
            transitions.log_slot_held(firing.job, firing.id)

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        self._finish(firing, transitions.failed(now=now, error=error))

    def close(
        self,
        firing_id: str,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None = None,
        redrive: Redrive | None = None,
    ) -> RunRecord | None:
        firing = firing_from_id(firing_id)
        if redrive is None:
            # The usual end: an open run never redriven, in one conditional write.
            before = self._finish(firing, transitions.ended(status, now=now, error=error))
            if before is not None:
                return before
        return self._change(
            firing,
            lambda run: transitions.after_end(run, status, now=now, error=error, redrive=redrive),
        )

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        return self._change(
            firing_from_id(firing_id), lambda run: transitions.after_redrive(run, redrive)
        )

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        return (
            self._finish(firing_from_id(run.firing_id), transitions.timed_out(now=now)) is not None
        )

    # -- skips -----------------------------------------------------------------------------

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        run = transitions.skipped(
            firing, now=now, reason=reason, origin=origin, expires_at=now + self._ttl
        )
        return self._put_new("PutItem (skip)", firing, run) is None

    def record_skipped_range(
        self,
        job: str,
        first: datetime,
        last: datetime,
        count: int,
        *,
        now: datetime,
        reason: str,
        origin: str,
    ) -> bool:
        firing = Firing(job, first)
        run = transitions.skipped(
            firing,
            now=now,
            reason=reason,
            origin=origin,
            expires_at=now + self._ttl,
            until=last,
            count=count,
        )
        return self._put_new("PutItem (skipped range)", firing, run) is None

    # -- reads -----------------------------------------------------------------------------

    def _query(self, operation: str, **request: Any) -> Iterator[dict[str, Any]]:
        with self._failing_as(operation):
            paginator = self._client.get_paginator("query")
            for page in paginator.paginate(**named({"TableName": self.table, **request})):
                yield from page.get("Items", [])

    def due_runs(self, now: datetime, limit: int = 1000) -> Sequence[RunRecord]:
        found: list[RunRecord] = []
        for raw in self._query(
            "Query (open runs)",
            IndexName=OPEN_INDEX,
            KeyConditionExpression="#openPk = :open AND #deadline <= :now",
            ExpressionAttributeValues={":open": {"S": OPEN}, ":now": {"S": iso_millis(now)}},
            PaginationConfig={"MaxItems": limit},
        ):
            record = run_from(raw)
            if record.status.open:
                found.append(record)
        return found

    def run(self, firing_id: str) -> RunRecord | None:
        firing = firing_from_id(firing_id)
        with self._failing_as("GetItem (run)"):
            answer = self._client.get_item(
                TableName=self.table, Key=run_key(firing), ConsistentRead=True
            )
        raw = answer.get("Item")
        return run_from(raw) if raw else None

    def history(self, job: str, limit: int = 20) -> Sequence[RunRecord]:
        return [
            run_from(raw)
            for raw in self._query(
                "Query (history)",
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeValues={":pk": {"S": f"RUN#{job}"}},
                ScanIndexForward=False,
                PaginationConfig={"MaxItems": limit, "PageSize": min(limit, 100)},
            )
        ]

    def job_state(self, job: str) -> JobState | None:
        with self._failing_as("GetItem (job state)"):
            answer = self._client.get_item(
                TableName=self.table, Key=job_key(job), ConsistentRead=True
            )
        raw = answer.get("Item")
        if not raw:
            return None
        return job_state_from(job, plain_item(raw), instant)

    # -- control ---------------------------------------------------------------------------

    def control(self, scope: str) -> Control:
        watermarks: dict[str, datetime] = {}
        paused: dict[str, Pause] = {}
        for raw in self._query(
            "Query (control)",
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeValues={":pk": {"S": _CONTROL}},
            ConsistentRead=True,
        ):
            item = plain_item(raw)
            key = str(item["sk"])
            if key.startswith("WATERMARK#"):
                mark = instant(item.get("watermark"))
                if mark is not None:
                    watermarks[key.removeprefix("WATERMARK#")] = mark
            elif key.startswith("PAUSE#"):
                job = key.removeprefix("PAUSE#")
                paused[job] = Pause(
                    job, str(item.get("operator", "")), instant(item.get("at")) or datetime.min
                )
        return Control(watermarks.get(scope), paused, watermarks)

    def advance_watermark(self, scope: str, to: datetime) -> None:
        self._update(
            named(
                {
                    "TableName": self.table,
                    "Key": {"pk": {"S": _CONTROL}, "sk": {"S": f"WATERMARK#{scope}"}},
                    "UpdateExpression": "SET #watermark = :to",
                    "ConditionExpression": "attribute_not_exists(#watermark) OR #watermark < :to",
                    "ExpressionAttributeValues": {":to": {"S": iso_millis(to)}},
                }
            ),
            "UpdateItem (watermark)",
            tolerate_condition=True,
        )

    def set_paused(self, job: str, paused: bool, *, operator: str, now: datetime) -> None:
        key = {"pk": {"S": _CONTROL}, "sk": {"S": f"PAUSE#{job}"}}
        with self._failing_as("PutItem (pause)" if paused else "DeleteItem (resume)"):
            if paused:
                write_retried(
                    self._client,
                    "put_item",
                    self._sleep,
                    TableName=self.table,
                    Item={**key, "operator": {"S": operator}, "at": {"S": iso_millis(now)}},
                )
            else:
                write_retried(
                    self._client, "delete_item", self._sleep, TableName=self.table, Key=key
                )


def create_state_table(client: DynamoDBClient, table: str) -> None:
    """Create the state table as template.yaml declares it (for tests and the local run)."""
    client.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "openPk", "AttributeType": "S"},
            {"AttributeName": "deadline", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": OPEN_INDEX,
                "KeySchema": [
                    {"AttributeName": "openPk", "KeyType": "HASH"},
                    {"AttributeName": "deadline", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    client.get_waiter("table_exists").wait(
        TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
    )
    with contextlib.suppress(ClientError):  # some emulators lack TTL; the attribute is written
        client.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"}
        )
