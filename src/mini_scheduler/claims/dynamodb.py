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

from mini_scheduler.claims.base import (
    TIMED_OUT_ERROR,
    ClaimResult,
    Control,
    JobStart,
    JobState,
    Pause,
    Redrive,
    RunRecord,
    after_end,
    after_redrive,
    changed_fields,
    job_state_from,
    log_slot_held,
    run_record_from,
)
from mini_scheduler.errors import StoreError, describe_aws_error
from mini_scheduler.model import (
    Firing,
    RunStatus,
    firing_from_id,
    iso_millis,
    iso_seconds,
    parse_instant,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger("mini_scheduler.claims")

OPEN_INDEX = "open-runs"
_OPEN = "OPEN"
_CONTROL = "CONTROL"
_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()
_CONFLICT_ATTEMPTS = 5
_OPEN_STATUSES = (RunStatus.CLAIMED, RunStatus.DISPATCHED)


def _run_key(firing: Firing) -> dict[str, Any]:
    return {"pk": {"S": f"RUN#{firing.job}"}, "sk": {"S": firing.sort_key}}


def _job_key(job: str) -> dict[str, Any]:
    return {"pk": {"S": f"JOB#{job}"}, "sk": {"S": "STATE"}}


def _value(value: Any) -> dict[str, Any]:
    """A DynamoDB attribute value; floats travel as Decimals, as DynamoDB needs."""
    if isinstance(value, (float, dict, list)):
        value = json.loads(json.dumps(value), parse_float=Decimal)
    return dict(_SERIALIZER.serialize(value))


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


def _stored(value: Any) -> Any:
    """A changed field as the table keeps it: times as ISO strings with milliseconds."""
    if isinstance(value, datetime):
        return iso_millis(value)
    if isinstance(value, list):
        return [{k: _stored(v) for k, v in end.items()} for end in value]
    return value


def _record(raw: Mapping[str, Any]) -> RunRecord:
    item = _item(raw)
    return run_record_from(str(item["firingId"]), item, _instant)


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

    def _put_new(self, operation: str, item: dict[str, Any]) -> dict[str, Any] | None:
        """Put ``item`` unless an item with its key exists: None when written, else the item
        found (DynamoDB returns it with the refusal; the SDK may have written it itself, on an
        attempt whose answer was lost)."""
        request = _named(
            {
                "TableName": self.table,
                "Item": item,
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
                found: dict[str, Any] = dict(exc.response.get("Item") or {})  # type: ignore[call-overload]
                return found
        return None

    def _expires(self, now: datetime) -> dict[str, Any]:
        return {"N": str(int((now + self._ttl).timestamp()))}

    def _run_item(
        self, firing: Firing, status: RunStatus, now: datetime, origin: str, **extra: Any
    ) -> dict[str, Any]:
        item: dict[str, Any] = {
            **_run_key(firing),
            "firingId": {"S": firing.id},
            "job": {"S": firing.job},
            "scheduledTime": {"S": firing.scheduled_time},
            "status": {"S": str(status)},
            "origin": {"S": origin},
            "expiresAt": self._expires(now),
        }
        if firing.manual:
            item["manual"] = {"BOOL": True}
            item["parameters"] = _value(dict(firing.parameters))
        if firing.operator:
            item["operator"] = {"S": firing.operator}
        for key, value in extra.items():
            if value is not None:
                item[key] = _value(value)
        return item

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
        item = self._run_item(
            firing,
            RunStatus.CLAIMED,
            now,
            origin,
            claimedAt=iso_millis(now),
            deadline=iso_millis(lease_until),
            openPk=_OPEN,
            exclusive=exclusive or None,
            claimToken=token,
        )
        if not exclusive:
            old = self._put_new("PutItem (claim)", item)
            if old is None:
                return ClaimResult.WON
            # The SDK retries a put whose answer was lost; the retry then meets our own first
            # write. The token tells our claim from a peer's.
            holder = old.get("claimToken", {}).get("S")
            return ClaimResult.WON if holder == token else ClaimResult.LOST
        slot = _named(
            {
                "TableName": self.table,
                "Key": _job_key(firing.job),
                "UpdateExpression": "SET #openFiring = :fid, #job = :job",
                "ConditionExpression": "attribute_not_exists(#openFiring) OR #openFiring = :fid",
                "ExpressionAttributeValues": {":fid": {"S": firing.id}, ":job": {"S": firing.job}},
            }
        )
        put = _named(
            {
                "TableName": self.table,
                "Item": item,
                "ConditionExpression": "attribute_not_exists(#pk)",
            }
        )
        for attempt in range(_CONFLICT_ATTEMPTS):
            try:
                self._write("transact_write_items", TransactItems=[{"Put": put}, {"Update": slot}])
            except ClientError as exc:
                reasons = _reasons(exc)
                if _code(exc) != "TransactionCanceledException" or len(reasons) != 2:
                    raise self._fail("TransactWriteItems (exclusive claim)", exc) from exc
                if reasons[0] == "ConditionalCheckFailed":
                    return ClaimResult.LOST
                if reasons[1] == "ConditionalCheckFailed":
                    return ClaimResult.OVERLAP
                if attempt + 1 == _CONFLICT_ATTEMPTS:
                    raise self._fail("TransactWriteItems (exclusive claim)", exc) from exc
                self._sleep(0.05 * 2**attempt)
            except BotoCoreError as exc:
                raise self._fail("TransactWriteItems (exclusive claim)", exc) from exc
            else:
                return ClaimResult.WON
        raise AssertionError("unreachable")

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        if run.claimed_at is None:
            return False
        firing = firing_from_id(run.firing_id)
        request = _named(
            {
                "TableName": self.table,
                "Key": _run_key(firing),
                "UpdateExpression": (
                    "SET #claimedAt = :now, #deadline = :lease, #origin = :origin "
                    "ADD #takeovers :one"
                ),
                "ConditionExpression": "#status = :claimed AND #claimedAt = :seen",
                "ExpressionAttributeValues": {
                    ":now": {"S": iso_millis(now)},
                    ":lease": {"S": iso_millis(lease_until)},
                    ":origin": {"S": origin},
                    ":one": {"N": "1"},
                    ":claimed": {"S": str(RunStatus.CLAIMED)},
                    ":seen": {"S": iso_millis(run.claimed_at)},
                },
            }
        )
        return self._update(request, "UpdateItem (take over)", tolerate_condition=True) is not None

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        run = _named(
            {
                "TableName": self.table,
                "Key": _run_key(firing),
                "UpdateExpression": (
                    "SET #status = :dispatched, #startedAt = :now, #deadline = :deadline"
                ),
                "ConditionExpression": "#status = :claimed",
                "ExpressionAttributeValues": {
                    ":dispatched": {"S": str(RunStatus.DISPATCHED)},
                    ":claimed": {"S": str(RunStatus.CLAIMED)},
                    ":now": {"S": iso_millis(now)},
                    ":deadline": {"S": iso_millis(deadline)},
                },
            }
        )
        state = self._start_update(firing, now, start)
        for attempt in range(_CONFLICT_ATTEMPTS):
            try:
                self._write(
                    "transact_write_items",
                    TransactItems=[{"Update": run}, {"Update": state}],
                )
                return
            except ClientError as exc:
                reasons = _reasons(exc)
                if _code(exc) == "TransactionCanceledException" and reasons[:1] == [
                    "ConditionalCheckFailed"
                ]:
                    # The run closed (a very fast target) or was taken over before we marked
                    # it: leave the run as it is; a closed run's start and end go to the
                    # job's latest state (a taken-over run is marked by its new claimer).
                    run_now = self.run(firing.id)
                    if run_now is not None and not run_now.status.open:
                        self._update(
                            self._start_update(firing, now, start, ended=run_now),
                            "UpdateItem (job start)",
                        )
                    return
                if _code(exc) != "TransactionCanceledException" or (
                    attempt + 1 == _CONFLICT_ATTEMPTS
                ):
                    # The dispatch happened: the run record must say so, or a takeover would
                    # dispatch it again. Mark the run alone; the job's latest state misses
                    # this start.
                    log.warning(
                        "Job %s - firing %s: the job's latest state was not updated "
                        "(%s); marking the run alone",
                        firing.job,
                        firing.id,
                        describe_aws_error(exc),
                    )
                    self._update(run, "UpdateItem (mark dispatched)", tolerate_condition=True)
                    return
                self._sleep(0.05 * 2**attempt)
            except BotoCoreError as exc:
                raise self._fail("TransactWriteItems (mark dispatched)", exc) from exc

    def _start_update(
        self, firing: Firing, now: datetime, start: JobStart, ended: RunRecord | None = None
    ) -> dict[str, Any]:
        """The job's latest state at a dispatch; with ``ended``, of a run whose completion
        arrived before the dispatch was marked (its end and status, not DISPATCHED)."""
        values: dict[str, Any] = {
            ":job": {"S": firing.job},
            ":service": {"S": start.service},
            ":schedule": {"S": start.schedule},
            ":parameters": _value(dict(start.parameters)),
            ":now": {"S": iso_millis(now)},
            ":fid": {"S": firing.id},
            ":status": {"S": str(ended.status if ended else RunStatus.DISPATCHED)},
        }
        update = (
            "SET #job = :job, #service = :service, #schedule = :schedule, "
            "#parameters = :parameters, #start = :now, #lastFiringId = :fid, #lastStatus = :status"
        )
        if ended is not None and ended.ended_at is not None:
            update += ", #end = :end"
            values[":end"] = {"S": iso_millis(ended.ended_at)}
        else:
            update += " REMOVE #end"
        return _named(
            {
                "TableName": self.table,
                "Key": _job_key(firing.job),
                "UpdateExpression": update,
                "ExpressionAttributeValues": values,
            }
        )

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

    # -- ends ------------------------------------------------------------------------------

    def _finish(
        self,
        firing: Firing,
        status: RunStatus,
        now: datetime,
        error: str | None,
        condition: str,
        values: Mapping[str, Any],
        extra: Mapping[str, Any] | None = None,
    ) -> RunRecord | None:
        """An open run's end in one conditional write (its deadline stays), then the job's
        state and slot; the run as it was before, or None when ``condition`` failed."""
        sets = {"status": str(status), "endedAt": iso_millis(now), **(extra or {})}
        if error is not None:
            sets["error"] = error[:4000]
        attribute_values: dict[str, Any] = {f":{k}": _value(v) for k, v in sets.items()}
        answer = self._update(
            _named(
                {
                    "TableName": self.table,
                    "Key": _run_key(firing),
                    "UpdateExpression": "SET "
                    + ", ".join(f"#{k} = :{k}" for k in sets)
                    + " REMOVE #openPk",
                    "ConditionExpression": condition,
                    "ExpressionAttributeValues": {**attribute_values, **values},
                    "ReturnValues": "ALL_OLD",
                }
            ),
            "UpdateItem (close run)",
            tolerate_condition=True,
        )
        if answer is None:
            return None
        before = _record(answer["Attributes"])
        after = replace(
            before, status=status, ended_at=now, error=error if error is not None else before.error
        )
        self._follow(firing, before, after)
        return before

    def _change(
        self, firing: Firing, decide: Callable[[RunRecord], RunRecord | None]
    ) -> RunRecord | None:
        """Read the run, write ``decide``'s answer conditionally on the run being as read (its
        status, end and redrive count: every change moves one of them), and follow it in the
        job's state and slot. A run changed meanwhile is read again. The run as it was before,
        or None (unknown, or nothing to change)."""
        for _ in range(_CONFLICT_ATTEMPTS):
            before = self.run(firing.id)
            after = decide(before) if before is not None else None
            if before is None or after is None:
                return None
            if self._write_change(firing, before, after):
                self._follow(firing, before, after)
                return before
        return None

    def _write_change(self, firing: Firing, before: RunRecord, after: RunRecord) -> bool:
        sets: dict[str, Any] = {}
        removes: list[str] = []
        for name, value in changed_fields(before, after).items():
            if value is None:
                removes.append(name)
            else:
                sets[name] = _stored(value)
        if after.status.open and not before.status.open:
            sets["openPk"] = _OPEN
        elif before.status.open and not after.status.open:
            removes.append("openPk")
        values: dict[str, Any] = {f":{k}": _value(v) for k, v in sets.items()}
        values[":seenStatus"] = {"S": str(before.status)}
        condition = ["#status = :seenStatus"]
        for name, seen in (
            ("endedAt", iso_millis(before.ended_at) if before.ended_at else None),
            ("redrives", before.redrives),
        ):
            if seen is None:
                condition.append(f"attribute_not_exists(#{name})")
            else:
                values[f":seen{name}"] = _value(seen)
                condition.append(f"#{name} = :seen{name}")
        update = " ".join(
            part
            for part in (
                "SET " + ", ".join(f"#{k} = :{k}" for k in sets) if sets else "",
                "REMOVE " + ", ".join(f"#{k}" for k in removes) if removes else "",
            )
            if part
        )
        request = {
            "TableName": self.table,
            "Key": _run_key(firing),
            "UpdateExpression": update,
            "ConditionExpression": " AND ".join(condition),
            "ExpressionAttributeValues": values,
        }
        return (
            self._update(_named(request), "UpdateItem (end run)", tolerate_condition=True)
            is not None
        )

    def _follow(self, firing: Firing, before: RunRecord, after: RunRecord) -> None:
        """The job's latest state follows its last firing's run; an exclusive run's end
        releases the job's slot if it holds it, and its reopening takes the slot if it is
        free (every write conditional: never another run's slot or state)."""
        values: dict[str, Any] = {
            ":status": {"S": str(after.status)},
            ":fid": {"S": firing.id},
        }
        if after.ended_at is not None:
            update = "SET #end = :end, #lastStatus = :status"
            values[":end"] = {"S": iso_millis(after.ended_at)}
        else:
            update = "SET #lastStatus = :status REMOVE #end"
        self._update(
            _named(
                {
                    "TableName": self.table,
                    "Key": _job_key(firing.job),
                    "UpdateExpression": update,
                    "ConditionExpression": "#lastFiringId = :fid",
                    "ExpressionAttributeValues": values,
                }
            ),
            "UpdateItem (job end)",
            tolerate_condition=True,
        )
        if not before.exclusive or after.status.open == before.status.open:
            return
        if after.status.open:
            slot = (
                "SET #openFiring = :fid",
                "attribute_not_exists(#openFiring) OR #openFiring = :fid",
            )
        else:
            slot = ("REMOVE #openFiring", "#openFiring = :fid")
        taken = self._update(
            _named(
                {
                    "TableName": self.table,
                    "Key": _job_key(firing.job),
                    "UpdateExpression": slot[0],
                    "ConditionExpression": slot[1],
                    "ExpressionAttributeValues": {":fid": {"S": firing.id}},
                }
            ),
            "UpdateItem (take job)" if after.status.open else "UpdateItem (release job)",
            tolerate_condition=True,
        )
        if after.status.open and taken is None:
            log_slot_held(firing.job, firing.id)

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        self._finish(
            firing,
            RunStatus.FAILED,
            now,
            error,
            "#status IN (:c, :d)",
            {":c": {"S": str(RunStatus.CLAIMED)}, ":d": {"S": str(RunStatus.DISPATCHED)}},
        )

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
            before = self._finish(
                firing,
                status,
                now,
                error,
                "#status IN (:c, :d) AND attribute_not_exists(#redrives)",
                {
                    ":c": {"S": str(RunStatus.CLAIMED)},
                    ":d": {"S": str(RunStatus.DISPATCHED)},
                },
            )
            if before is not None:
                return before
        return self._change(
            firing, lambda run: after_end(run, status, now=now, error=error, redrive=redrive)
        )

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        return self._change(firing_from_id(firing_id), lambda run: after_redrive(run, redrive))

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        firing = firing_from_id(run.firing_id)
        done = self._finish(
            firing,
            RunStatus.TIMED_OUT,
            now,
            TIMED_OUT_ERROR,
            "#status = :d AND #deadline <= :now",
            {":d": {"S": str(RunStatus.DISPATCHED)}, ":now": {"S": iso_millis(now)}},
            extra={"timedOutAt": iso_millis(now)},
        )
        return done is not None

    # -- skips -----------------------------------------------------------------------------

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        item = self._run_item(
            firing, RunStatus.SKIPPED, now, origin, reason=reason, endedAt=iso_millis(now)
        )
        return self._put_new("PutItem (skip)", item) is None

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
        item = self._run_item(
            firing,
            RunStatus.SKIPPED,
            now,
            origin,
            reason=reason,
            endedAt=iso_millis(now),
            skippedUntil=iso_seconds(last),
            skippedCount=count,
        )
        return self._put_new("PutItem (skipped range)", item) is None

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
            if record.status in _OPEN_STATUSES:
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
