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

The run's fields are :mod:`.records`' (times as ISO strings with milliseconds, ``expiresAt`` in
epoch seconds for the TTL); each write is one of :mod:`.transitions`, made an UpdateItem's
expressions by :func:`_expressions`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims.base import ClaimResult, Control, Pause
from mini_scheduler.claims.records import (
    JOB_FIELDS,
    RUN_FIELDS,
    JobStart,
    JobState,
    Redrive,
    RunRecord,
    job_state_from,
    run_record_from,
    stored_ends,
)
from mini_scheduler.claims.transitions import (
    Expect,
    Write,
    after_end,
    after_redrive,
    applied,
    change_run,
    claimed,
    dispatched,
    ended,
    failed,
    job_follows,
    job_started,
    log_slot_held,
    skipped,
    slot_follows,
    take_slot,
    taken_over,
    timed_out,
)
from mini_scheduler.errors import StoreError, describe_aws_error
from mini_scheduler.model import Firing, RunStatus, firing_from_id, iso_millis, parse_instant

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger("mini_scheduler.claims")

OPEN_INDEX = "open-runs"
_OPEN = "OPEN"
_CONTROL = "CONTROL"
_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()
_CONFLICT_ATTEMPTS = 5
_REFUSED = "ConditionalCheckFailed"
_RUN: Mapping[str, str] = {**RUN_FIELDS, "open": "openPk"}  # the open-runs index's key


def _run_key(firing: Firing) -> dict[str, Any]:
    return {"pk": {"S": f"RUN#{firing.job}"}, "sk": {"S": firing.sort_key}}


def _job_key(job: str) -> dict[str, Any]:
    return {"pk": {"S": f"JOB#{job}"}, "sk": {"S": "STATE"}}


def _value(value: Any) -> dict[str, Any]:
    """A DynamoDB attribute value; floats travel as Decimals, as DynamoDB needs."""
    if isinstance(value, (float, dict, list)):
        value = json.loads(json.dumps(value), parse_float=Decimal)
    return dict(_SERIALIZER.serialize(value))


def _encode(field: str, value: Any) -> dict[str, Any]:
    """A logical field's value as the table keeps it: times as ISO strings with milliseconds,
    the TTL in epoch seconds, the open marker as the index's key."""
    if field == "open":
        return {"S": _OPEN}
    if field == "expires_at":
        return {"N": str(int(value.timestamp()))}
    if isinstance(value, datetime):
        return {"S": iso_millis(value)}
    if isinstance(value, RunStatus):
        return {"S": str(value)}
    if isinstance(value, tuple):  # earlier ends
        return _value(stored_ends(value, iso_millis))
    return _value(value)


def _plain(value: Any) -> Any:
    """A deserialised value with Decimals back as ints or floats."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, set, frozenset)):
        return [_plain(v) for v in value]
    return value


def _item(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _plain(_DESERIALIZER.deserialize(v)) for k, v in raw.items()}


def _instant(value: Any) -> datetime | None:
    return parse_instant(value) if isinstance(value, str) and value else None


def _record(raw: Mapping[str, Any]) -> RunRecord:
    return run_record_from(_item(raw), _instant, _RUN)


def _expressions(write: Write, names: Mapping[str, str]) -> dict[str, Any]:
    """``write`` as an UpdateItem's expressions and values (every attribute a ``#name``)."""
    values: dict[str, Any] = {}
    clauses: dict[str, list[str]] = {"SET": [], "REMOVE": [], "ADD": []}
    for field, value in write.sets.items():
        name = names[field]
        if value is None:
            clauses["REMOVE"].append(f"#{name}")
        else:
            clauses["SET"].append(f"#{name} = :{name}")
            values[f":{name}"] = _encode(field, value)
    for field, count in write.adds.items():
        name = names[field]
        clauses["ADD"].append(f"#{name} :{name}")
        values[f":{name}"] = _value(count)
    request: dict[str, Any] = {
        "UpdateExpression": " ".join(
            f"{verb} {', '.join(parts)}" for verb, parts in clauses.items() if parts
        )
    }
    condition = _condition(write.expect, names, values)
    if condition:
        request["ConditionExpression"] = condition
    if values:
        request["ExpressionAttributeValues"] = values
    return request


def _condition(expect: Expect, names: Mapping[str, str], values: dict[str, Any]) -> str:
    """``expect`` as a ConditionExpression, its values added to ``values``."""
    parts: list[str] = []
    for field, allowed in expect.one_of.items():
        name = names[field]
        was = f":was{_title(name)}"
        present = [value for value in allowed if value is not None]
        options = [f"attribute_not_exists(#{name})"] if len(present) < len(allowed) else []
        if len(present) == 1:
            values[was] = _encode(field, present[0])
            options.append(f"#{name} = {was}")
        elif present:
            keys = [f"{was}{i}" for i in range(len(present))]
            values.update(zip(keys, (_encode(field, value) for value in present), strict=True))
            options.append(f"#{name} IN ({', '.join(keys)})")
        parts.append(options[0] if len(options) == 1 else f"({' OR '.join(options)})")
    for field, bound in expect.at_most.items():
        name = names[field]
        values[f":max{_title(name)}"] = _encode(field, bound)
        parts.append(f"#{name} <= :max{_title(name)}")
    return " AND ".join(parts)


def _title(name: str) -> str:
    return name[:1].upper() + name[1:]


_NAME = re.compile(r"#([A-Za-z][A-Za-z0-9]*)")
_EXPRESSIONS = ("UpdateExpression", "ConditionExpression", "KeyConditionExpression")


def _named(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` with ``#attr`` in its expressions mapped to ``attr``: every attribute goes
    through a name placeholder, so DynamoDB's reserved words (status, parameters, end...) never
    break an expression."""
    names: dict[str, str] = {}
    for key in _EXPRESSIONS:
        for word in _NAME.findall(str(request.get(key, ""))):
            names[f"#{word}"] = word
    if names:
        request["ExpressionAttributeNames"] = names
    else:
        request.pop("ExpressionAttributeNames", None)
    return request


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _reasons(exc: ClientError) -> list[str]:
    reasons = exc.response.get("CancellationReasons") or []
    return [str(r.get("Code", "None")) for r in reasons]


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

    def _write(self, operation: str, **request: Any) -> Any:
        """A write, retried when a multi-Region strongly consistent global table answers
        ReplicatedWriteConflictException (a concurrent write to the same item in another region:
        the outcome is not known yet, so it must not be read as a lost claim). Other errors are
        the SDK's to retry."""
        call = getattr(self._client, operation)
        for attempt in range(_CONFLICT_ATTEMPTS):
            try:
                return call(**request)
            except ClientError as exc:
                if (
                    _code(exc) != "ReplicatedWriteConflictException"
                    or attempt + 1 == _CONFLICT_ATTEMPTS
                ):
                    raise
                self._sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")

    def _transact(self, items: list[dict[str, Any]]) -> list[str]:
        """TransactWriteItems, tried again while a conflict cancels it: [] when written, else
        the cancellation reasons when a condition failed. Any other refusal (or a conflict on
        every attempt) raises its ClientError."""
        for attempt in range(_CONFLICT_ATTEMPTS):
            try:
                self._write("transact_write_items", TransactItems=items)
            except ClientError as exc:
                reasons = _reasons(exc)
                if _code(exc) != "TransactionCanceledException" or len(reasons) != len(items):
                    raise
                if _REFUSED in reasons:
                    return reasons
                if attempt + 1 == _CONFLICT_ATTEMPTS:
                    raise
                self._sleep(0.05 * 2**attempt)
            else:
                return []
        raise AssertionError("unreachable")

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

    def _put_new(self, operation: str, firing: Firing, run: Mapping[str, Any]) -> Any:
        """Put a new run unless its firing has a record: None when written, else the item
        found (DynamoDB returns it with the refusal; the SDK may have written it itself, on an
        attempt whose answer was lost)."""
        request = _named(
            {
                "TableName": self.table,
                "Item": self._run_item(firing, run),
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        )
        with self._failing_as(operation):
            try:
                self._write("put_item", **request)
            except ClientError as exc:
                if _code(exc) != "ConditionalCheckFailedException":
                    raise
                return dict(exc.response.get("Item") or {})  # type: ignore[call-overload]
        return None

    @staticmethod
    def _run_item(firing: Firing, run: Mapping[str, Any]) -> dict[str, Any]:
        return {**_run_key(firing), **{_RUN[k]: _encode(k, v) for k, v in run.items()}}

    def _run_update(self, firing: Firing, write: Write) -> dict[str, Any]:
        key = _run_key(firing)
        return _named({"TableName": self.table, "Key": key, **_expressions(write, _RUN)})

    def _job_update(self, job: str, write: Write, *, creates: bool = False) -> dict[str, Any]:
        """An update of the job's state item; one that ``creates`` it names the job in it."""
        if creates:
            write = replace(write, sets={"job": job, **write.sets})
        key = _job_key(job)
        return _named({"TableName": self.table, "Key": key, **_expressions(write, JOB_FIELDS)})

    def _update(
        self, request: Mapping[str, Any], operation: str, *, tolerate_condition: bool = False
    ) -> dict[str, Any] | None:
        """UpdateItem: its answer; None when ``tolerate_condition`` and the condition failed."""
        with self._failing_as(operation):
            try:
                answer: dict[str, Any] = self._write("update_item", **request)
            except ClientError as exc:
                if tolerate_condition and _code(exc) == "ConditionalCheckFailedException":
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
        run = claimed(
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
            holder = old.get(_RUN["claim_token"], {}).get("S")
            return ClaimResult.WON if holder == token else ClaimResult.LOST
        put = _named(
            {
                "TableName": self.table,
                "Item": self._run_item(firing, run),
                "ConditionExpression": "attribute_not_exists(#pk)",
            }
        )
        slot = self._job_update(firing.job, take_slot(firing.id), creates=True)
        try:
            refused = self._transact([{"Put": put}, {"Update": slot}])
        except (ClientError, BotoCoreError) as exc:
            raise self._fail("TransactWriteItems (exclusive claim)", exc) from exc
        if not refused:
            return ClaimResult.WON
        return ClaimResult.LOST if refused[0] == _REFUSED else ClaimResult.OVERLAP

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        write = taken_over(run, now=now, lease_until=lease_until, origin=origin)
        if write is None:
            return False
        request = self._run_update(firing_from_id(run.firing_id), write)
        return self._update(request, "UpdateItem (take over)", tolerate_condition=True) is not None

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        run = self._run_update(firing, dispatched(now=now, deadline=deadline))
        started = job_started(firing, now=now, start=start, ended=None)
        try:
            refused = self._transact(
                [{"Update": run}, {"Update": self._job_update(firing.job, started, creates=True)}]
            )
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
                started = job_started(firing, now=now, start=start, ended=run_now)
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
        before = _record(answer["Attributes"])
        self._follow(firing, before, applied(before, write))
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

        done = change_run(lambda: self.run(firing.id), write, decide, _CONFLICT_ATTEMPTS)
        if done is None:
            return None
        self._follow(firing, *done)
        return done[0]

    def _follow(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        """The job's latest state follows the run, and an exclusive run's slot its end or its
        reopening (every write conditional: never another run's slot or state)."""
        self._update(
            self._job_update(firing.job, job_follows(firing.id, after)),
            "UpdateItem (job end)",
            tolerate_condition=True,
        )
        slot = slot_follows(firing.id, before, after)
        if slot is None:
            return
        taken = self._update(
            self._job_update(firing.job, slot),
            "UpdateItem (take job)" if after.status.open else "UpdateItem (release job)",
            tolerate_condition=True,
        )
        if after.status.open and taken is None:
            log_slot_held(firing.job, firing.id)

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        self._finish(firing, failed(now=now, error=error))

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
            before = self._finish(firing, ended(status, now=now, error=error))
            if before is not None:
                return before
        return self._change(
            firing, lambda run: after_end(run, status, now=now, error=error, redrive=redrive)
        )

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        return self._change(firing_from_id(firing_id), lambda run: after_redrive(run, redrive))

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        return self._finish(firing_from_id(run.firing_id), timed_out(now=now)) is not None

    # -- skips -----------------------------------------------------------------------------

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        run = skipped(firing, now=now, reason=reason, origin=origin, expires_at=now + self._ttl)
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
        run = skipped(
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
            for page in paginator.paginate(**_named({"TableName": self.table, **request})):
                yield from page.get("Items", [])

    def due_runs(self, now: datetime, limit: int = 1000) -> Sequence[RunRecord]:
        found: list[RunRecord] = []
        for raw in self._query(
            "Query (open runs)",
            IndexName=OPEN_INDEX,
            KeyConditionExpression="#openPk = :open AND #deadline <= :now",
            ExpressionAttributeValues={":open": {"S": _OPEN}, ":now": {"S": iso_millis(now)}},
            PaginationConfig={"MaxItems": limit},
        ):
            record = _record(raw)
            if record.status.open:
                found.append(record)
        return found

    def run(self, firing_id: str) -> RunRecord | None:
        firing = firing_from_id(firing_id)
        with self._failing_as("GetItem (run)"):
            answer = self._client.get_item(
                TableName=self.table, Key=_run_key(firing), ConsistentRead=True
            )
        raw = answer.get("Item")
        return _record(raw) if raw else None

    def history(self, job: str, limit: int = 20) -> Sequence[RunRecord]:
        return [
            _record(raw)
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
                TableName=self.table, Key=_job_key(job), ConsistentRead=True
            )
        raw = answer.get("Item")
        if not raw:
            return None
        return job_state_from(job, _item(raw), _instant)

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
            item = _item(raw)
            key = str(item["sk"])
            if key.startswith("WATERMARK#"):
                mark = _instant(item.get("watermark"))
                if mark is not None:
                    watermarks[key.removeprefix("WATERMARK#")] = mark
            elif key.startswith("PAUSE#"):
                job = key.removeprefix("PAUSE#")
                paused[job] = Pause(
                    job, str(item.get("operator", "")), _instant(item.get("at")) or datetime.min
                )
        return Control(watermarks.get(scope), paused, watermarks)

    def advance_watermark(self, scope: str, to: datetime) -> None:
        self._update(
            _named(
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
                self._write(
                    "put_item",
                    TableName=self.table,
                    Item={**key, "operator": {"S": operator}, "at": {"S": iso_millis(now)}},
                )
            else:
                self._write("delete_item", TableName=self.table, Key=key)


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
