"""The claim store on one DynamoDB table (the stack's state table).

Items (``pk`` / ``sk``):

* ``RUN#<job>`` / ``<scheduled instant, ms>[#manual-<hex>]``: one run record per firing. The key
  is the firing id, so the claim is a conditional insert; the time-first sort key serves a
  job's history newest first, and its latest run (the job's latest state), with one Query.
* ``JOB#<job>`` / ``STATE``: the job's open slot for ``overlap: skip`` (:mod:`.dynamodb_slots`).
* ``CONTROL`` / ``WATERMARK#<scope>`` and ``CONTROL`` / ``PAUSE#<job>``: read by a tick in one
  consistent Query.
* ``WATCH`` / ``<instant>#<random>``: the runs the sweep looks at (:mod:`.dynamodb_watch`).
* ``DEFER`` / ``<due instant, ms>#<run id>``: the deferred firings (:mod:`.dynamodb_deferred`).
* ``SCHEDULE`` / ``<name>``: the runtime schedules' definitions (:mod:`.dynamodb_schedules`).

On the hot path a firing of an ``overlap: allow`` job costs three writes of one item each, no
transaction and no index entry: the claim (a PartiQL ``INSERT``), the mark (a PartiQL
``UPDATE``), both 25 to a request (:mod:`.dynamodb_batch`), and the recorder's close (one
``UpdateItem``). An ``overlap: skip`` job's slot adds one write at the claim and one at the end.
A backfill's claim (``over_skipped``) whose ``INSERT`` met an item reads it, as every refused
claim does (its token tells our own insert sent again from a peer's), and where that item is a
SKIPPED record replaces it with one ``PutItem``, conditional on the skip as read: one request
more, for a firing recorded SKIPPED only (PartiQL's ``INSERT`` cannot say "or SKIPPED").

Each write is one of :mod:`.transitions`, made a request by :mod:`.dynamodb_table`.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims import transitions
from mini_scheduler.claims.base import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    Control,
    Deferred,
    MarkRequest,
    OneByOne,
    Pause,
    history_cursor,
)
from mini_scheduler.claims.definitions import Definition
from mini_scheduler.claims.dynamodb_batch import BatchWriter, Insert, Update
from mini_scheduler.claims.dynamodb_deferred import DeferredFirings
from mini_scheduler.claims.dynamodb_schedules import ScheduleBook
from mini_scheduler.claims.dynamodb_slots import JobSlots
from mini_scheduler.claims.dynamodb_table import (
    RUN,
    code,
    condition,
    expressions,
    failed,
    get_many,
    instant,
    job_key,
    named,
    plain_item,
    run_from,
    run_item,
    run_key,
    write_retried,
)
from mini_scheduler.claims.dynamodb_watch import Watch, minute_after
from mini_scheduler.claims.records import JOB_FIELDS, JobState, Redrive, RunRecord
from mini_scheduler.claims.transitions import Write
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus, firing_from_id, iso_millis

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger("mini_scheduler.claims")

_CONTROL = "CONTROL"
_CONFLICT_ATTEMPTS = 5  # a change decided on a run read again when it changed meanwhile
_LATEST_READ = 100  # runs read, newest first, to find a job's latest dispatched one


class DynamoDBClaimStore(OneByOne):
    """The claim store on the state table. ``client`` is a boto3 DynamoDB client (made by the
    caller, so tests and emulators choose the endpoint). ``batched=False`` writes claims and
    marks one request each (:mod:`.dynamodb_batch`: for moto, whose PartiQL ignores
    conditions)."""

    def __init__(
        self,
        table: str,
        client: DynamoDBClient,
        *,
        run_ttl_days: int = 30,
        sleep: Callable[[float], None] = time.sleep,
        batched: bool = True,
    ) -> None:
        self.table = table
        self.name = f"dynamodb:{table}"
        self._client = client
        self._ttl = timedelta(days=run_ttl_days)
        self._sleep = sleep
        self._writer = BatchWriter(client, table, sleep, batched=batched)
        self._slots = JobSlots(client, table, sleep)
        self._watch = Watch(client, table, self._ttl, sleep)
        self._deferred = DeferredFirings(client, table, self._ttl, sleep)
        self._schedules = ScheduleBook(client, table, self._ttl, self._deferred, sleep)

    # -- helpers ---------------------------------------------------------------------------

    def _fail(self, operation: str, exc: Exception) -> StoreError:
        return failed(self.table, operation, exc)

    @contextlib.contextmanager
    def _failing_as(self, operation: str) -> Iterator[None]:
        """An AWS error inside becomes a StoreError naming ``operation`` and the table."""
        try:
            yield
        except (ClientError, BotoCoreError) as exc:
            raise self._fail(operation, exc) from exc

    def _put_new(self, operation: str, firing: Firing, run: Mapping[str, Any]) -> bool:
        """Put a new run unless its firing has a record: True when written."""
        request = named(
            {
                "TableName": self.table,
                "Item": run_item(firing, run),
                "ConditionExpression": "attribute_not_exists(#pk)",
            }
        )
        with self._failing_as(operation):
            try:
                write_retried(self._client, "put_item", self._sleep, **request)
            except ClientError as exc:
                if code(exc) != "ConditionalCheckFailedException":
                    raise
                return False
        return True

    def _run_update(self, firing: Firing, write: Write) -> dict[str, Any]:
        key = run_key(firing)
        return named({"TableName": self.table, "Key": key, **expressions(write, RUN)})

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

    def claim_many(
        self,
        claims: Sequence[ClaimRequest],
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
    ) -> list[ClaimOutcome]:
        token = uuid.uuid4().hex
        outcomes: list[ClaimOutcome | None] = [None] * len(claims)
        inserts: list[int] = []
        asked: set[str] = set()
        for i, request in enumerate(claims):
            if request.firing.id in asked:  # the first request for it decides; one token
                outcomes[i] = ClaimResult.LOST  # would read a repeat as our own lost answer
                continue
            asked.add(request.firing.id)
            if request.exclusive:
                try:
                    taken = self._slots.take(
                        request.firing,
                        now=now,
                        lease_until=lease_until,
                        over_skip=request.over_skipped,
                    )
                except StoreError as exc:
                    outcomes[i] = exc
                    continue
                if not taken:
                    # Another run holds the slot; a firing recorded already is LOST all the same.
                    outcomes[i] = self._overlap_or_lost(request)
                    continue
            inserts.append(i)
        items = [
            Insert(
                run_item(
                    claims[i].firing, self._claimed(claims[i], now, lease_until, origin, token)
                )
            )
            for i in inserts
        ]
        try:
            written_all = self._writer.write(items)
        except StoreError as exc:  # the firings refused their slot keep that answer
            written_all = [exc] * len(items)
        refused: list[int] = []
        for i, written in zip(inserts, written_all, strict=True):
            if written is False:
                refused.append(i)
            else:
                outcomes[i] = ClaimResult.WON if written is True else written
        if refused:
            # A peer's claim, or our own: the SDK sends a request again when its answer was
            # lost, and the second send meets the first's items. The token tells them apart.
            try:
                holders = self._holders([claims[i].firing for i in refused])
            except StoreError as exc:
                holders = {}
                for i in refused:
                    outcomes[i] = exc
            for i in refused:
                if outcomes[i] is not None:
                    continue
                holder, held_by = holders.get(claims[i].firing.id, (None, None))
                if held_by == token:
                    outcomes[i] = ClaimResult.WON
                elif holder is not None and transitions.replaces(claims[i].over_skipped, holder):
                    run = self._claimed(claims[i], now, lease_until, origin, token, holder)
                    outcomes[i] = self._claim_over_skip(claims[i].firing, holder, run, token)
                else:
                    outcomes[i] = ClaimResult.LOST
        return [outcome for outcome in outcomes if outcome is not None]

    def _claimed(
        self,
        request: ClaimRequest,
        now: datetime,
        lease_until: datetime,
        origin: str,
        token: str,
        over: RunRecord | None = None,
    ) -> dict[str, Any]:
        return transitions.claimed(
            request.firing,
            now=now,
            lease_until=lease_until,
            origin=origin,
            exclusive=request.exclusive,
            expires_at=now + self._ttl,
            token=token,
            over=over,
        )

    def _claim_over_skip(
        self, firing: Firing, skip: RunRecord, run: Mapping[str, Any], token: str
    ) -> ClaimOutcome:
        """A backfill's claim over ``skip``, the firing's SKIPPED record as read: one PutItem
        of the claimed ``run``, on condition that the firing has no record or still that
        skip. Refused, it is LOST, unless the item it met is its own (an earlier send of
        this request, whose answer was lost)."""
        values: dict[str, Any] = {}
        expected = condition(transitions.over_skip(skip), RUN, values)
        request = named(
            {
                "TableName": self.table,
                "Item": run_item(firing, run),
                "ConditionExpression": f"attribute_not_exists(#pk) OR ({expected})",
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        )
        try:
            write_retried(self._client, "put_item", self._sleep, **request)
        except ClientError as exc:
            if code(exc) != "ConditionalCheckFailedException":
                return self._fail("PutItem (claim over skip)", exc)
            met: Mapping[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            if met is None:  # an endpoint that does not return it with a refusal
                try:
                    met_token = self._holders([firing]).get(firing.id, (None, None))[1]
                except StoreError as error:
                    return error
            else:
                met_token = met.get(RUN["claim_token"], {}).get("S")
            return ClaimResult.WON if met_token == token else ClaimResult.LOST
        except BotoCoreError as exc:
            return self._fail("PutItem (claim over skip)", exc)
        return ClaimResult.WON

    def _overlap_or_lost(self, request: ClaimRequest) -> ClaimOutcome:
        try:
            run = self.run(request.firing.id)
        except StoreError as exc:
            return exc
        if run is None or transitions.replaces(request.over_skipped, run):
            return ClaimResult.OVERLAP
        return ClaimResult.LOST

    def _holders(self, firings: Sequence[Firing]) -> dict[str, tuple[RunRecord, str | None]]:
        """Each firing's record and claim token as stored (consistent reads)."""
        found: dict[str, tuple[RunRecord, str | None]] = {}
        keys = [run_key(firing) for firing in firings]
        for raw in get_many(self._client, self.table, "BatchGetItem (claims)", keys, self._sleep):
            run = run_from(raw)
            found[run.firing_id] = run, raw.get(RUN["claim_token"], {}).get("S")
        return found

    def watch(self, firing_ids: Sequence[str], at: datetime) -> None:
        self._watch.add(firing_ids, at)

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        write = transitions.taken_over(run, now=now, lease_until=lease_until, origin=origin)
        if write is None:
            return False
        request = self._run_update(firing_from_id(run.firing_id), write)
        return self._update(request, "UpdateItem (take over)", tolerate_condition=True) is not None

    def mark_many(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        # A mark refused (the run closed first, a very fast target, or was taken over) leaves
        # the run as it is: the job's latest state is read from its runs.
        updates = [
            Update(
                run_key(mark.firing),
                transitions.dispatched(now=now, deadline=mark.deadline, start=mark.start),
                RUN,
            )
            for mark in marks
        ]
        outcomes = self._writer.write(updates)
        refused = [mark for mark, outcome in zip(marks, outcomes, strict=True) if outcome is False]
        if refused:
            # The run ended before its mark (or was taken over: then this changes nothing).
            late = [
                Update(
                    run_key(mark.firing),
                    transitions.started_after_end(now=now, start=mark.start),
                    RUN,
                )
                for mark in refused
            ]
            self._writer.write(late)
        return [outcome if isinstance(outcome, StoreError) else None for outcome in outcomes]

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
        """An exclusive run's slot follows its end or its reopening (conditional: never
        another run's slot); a reopened run is watched again (the sweep's ``due_runs``)."""
        if after.status.open and not before.status.open and after.deadline is not None:
            self.watch([firing.id], minute_after(after.deadline))
        if transitions.slot_follows(firing.id, before, after) is None:
            return
        if not after.status.open:
            self._slots.release(firing.job, firing.id)
        elif not self._slots.take_back(firing.job, firing.id):
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
        return self._put_new("PutItem (skip)", firing, run)

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
        return self._put_new("PutItem (skipped range)", firing, run)

    # -- reads -----------------------------------------------------------------------------

    def _query(self, operation: str, **request: Any) -> Iterator[dict[str, Any]]:
        with self._failing_as(operation):
            paginator = self._client.get_paginator("query")
            for page in paginator.paginate(**named({"TableName": self.table, **request})):
                yield from page.get("Items", [])

    def due_runs(
        self, now: datetime, limit: int = 1000, *, settle: bool = False
    ) -> Sequence[RunRecord]:
        return self._watch.due(now, limit, settle=settle)

    def run(self, firing_id: str) -> RunRecord | None:
        firing = firing_from_id(firing_id)
        with self._failing_as("GetItem (run)"):
            answer = self._client.get_item(
                TableName=self.table, Key=run_key(firing), ConsistentRead=True
            )
        raw = answer.get("Item")
        return run_from(raw) if raw else None

    def history(self, job: str, limit: int = 20, before: str | None = None) -> Sequence[RunRecord]:
        # The cursor is a key condition on the sort key, not a filter: the Query starts past it
        # and reads (and is billed for) the page's items only.
        cursor = history_cursor(before)
        keys, values = "#pk = :pk", {":pk": {"S": f"RUN#{job}"}}
        if cursor is not None:
            keys, values[":before"] = f"{keys} AND #sk < :before", {"S": cursor}
        return [
            run_from(raw)
            for raw in self._query(
                "Query (history)",
                KeyConditionExpression=keys,
                ExpressionAttributeValues=values,
                ScanIndexForward=False,
                PaginationConfig={"MaxItems": limit, "PageSize": min(limit, 100)},
            )
        ]

    def job_state(self, job: str) -> JobState | None:
        """The job's latest state: its latest run that was dispatched, and its open slot."""
        with self._failing_as("GetItem (job slot)"):
            answer = self._client.get_item(
                TableName=self.table, Key=job_key(job), ConsistentRead=True
            )
        slot = plain_item(answer.get("Item") or {}).get(JOB_FIELDS["open_firing"])
        latest = next(
            (
                run_from(raw)
                for raw in self._query(
                    "Query (latest run)",
                    KeyConditionExpression="#pk = :pk",
                    FilterExpression="attribute_exists(#startedAt)",
                    ExpressionAttributeValues={":pk": {"S": f"RUN#{job}"}},
                    ScanIndexForward=False,
                    ConsistentRead=True,
                    PaginationConfig={"MaxItems": _LATEST_READ, "PageSize": 25},
                )
            ),
            None,
        )
        if latest is None:
            return JobState(job, open_firing=slot) if slot else None
        parameters = dict(latest.parameters or {})
        if latest.origin:
            parameters[transitions.ORIGIN_PARAMETER] = latest.origin
        return JobState(
            job,
            service=latest.service,
            schedule=latest.schedule,
            parameters=parameters,
            start=latest.started_at,
            end=latest.ended_at,
            last_firing_id=latest.firing_id,
            last_status=latest.status,
            open_firing=slot,
        )

    # -- deferred firings ------------------------------------------------------------------

    def defer(self, deferred: Sequence[Deferred]) -> None:
        self._deferred.add(deferred)

    def due_deferred(self, until: datetime, limit: int = 1000) -> Sequence[Deferred]:
        return self._deferred.due(until, limit)

    def drop_deferred(self, deferred: Sequence[Deferred]) -> None:
        self._deferred.drop(deferred)

    def advance_schedule(self, done: Deferred, following: Deferred | None) -> bool:
        return self._schedules.advance(done, following)

    def create_schedule(self, definition: Definition) -> bool:
        return self._schedules.create(definition)

    def schedule(self, name: str) -> Definition | None:
        return self._schedules.get(name)

    def schedules(self) -> Sequence[Definition]:
        return self._schedules.live()

    def delete_schedule(
        self, name: str, generation: str, *, operator: str, now: datetime
    ) -> Definition | None:
        return self._schedules.retire(name, generation, operator=operator, now=now)

    def pending_deferred(self, reason: str) -> Sequence[Deferred]:
        return self._deferred.pending(reason)

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
