"""Runtime schedules' definitions on DynamoDB (:mod:`.definitions`), in the state table.

* ``SCHEDULE`` / ``<name>``: ``generation``, ``entry`` (compact JSON), ``operator``,
  ``createdAt``, ``nextFiring`` (ISO, ms; absent once none is left), and on a tombstone
  ``deletedAt``, ``deletedBy`` and ``expiresAt`` (the TTL: the store's run TTL after the
  delete).

``create`` is one ``PutItem`` on the condition that no live definition has the name;
``create_many`` writes 25 to a request, each a PartiQL ``INSERT`` (:mod:`.dynamodb_batch`),
refused where the name has an item, live or a tombstone: each so refused is a ``create`` of
its own, which writes over a tombstone (a name made again). ``get``
one consistent ``GetItem``, ``live`` one consistent ``Query`` of the partition (tombstones
filtered out; ``every`` keeps them), ``put`` (a definition another region's store holds, carried
here) one ``PutItem`` on the condition that the stored one is still the one read, ``retire``
one ``UpdateItem`` on the condition that the definition is live with the generation the caller
read, answering it as it was. ``advance`` moves a schedule's firing
on in one ``TransactWriteItems``: the answered firing deleted on condition that it is still
stored, its next one put, and the definition written on the condition of
:func:`.definitions.moves` (a tombstone or another generation refuses it). Its token makes a
send the SDK repeats (a lost answer) the same transaction, not a refused second one; it is
drawn for each step, since DynamoDB answers a token it saw in the last ten minutes with that
transaction's success whatever has changed since (a second tick's late step must be refused).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims.base import Deferred
from mini_scheduler.claims.definitions import carried, generation_of
from mini_scheduler.claims.dynamodb_batch import BATCH_SIZE, BatchWriter, Insert, Outcome
from mini_scheduler.claims.dynamodb_deferred import DeferredFirings, deferred_item, deferred_key
from mini_scheduler.claims.dynamodb_table import conditional, failed, named, write_retried
from mini_scheduler.claims.records import Definition
from mini_scheduler.errors import StoreError
from mini_scheduler.model import iso_millis, parse_instant

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SCHEDULE = "SCHEDULE"
_ATTEMPTS = 5  # sends of a transaction cancelled by a conflicting one
_LIVE = "#generation = :generation AND attribute_not_exists(#deletedAt)"
_MOVES = f"attribute_not_exists(#pk) OR ({_LIVE})"


class ScheduleBook:
    """The definitions of ``table``; ``ttl`` is how long a tombstone is kept."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        ttl: timedelta,
        deferred: DeferredFirings,
        sleep: Callable[[float], None] = time.sleep,
        *,
        transactions: bool = True,
        writer: BatchWriter | None = None,
    ) -> None:
        self._client = client
        self._table = table
        self._ttl = ttl
        self._writer = writer or BatchWriter(client, table, sleep)
        self._deferred = deferred
        self._sleep = sleep
        self._transactions = transactions  # False: a global table in MRSC mode refuses them

    def create(self, definition: Definition) -> bool:
        request = named(
            {
                "TableName": self._table,
                "Item": definition_item(definition, self._ttl),
                "ConditionExpression": "attribute_not_exists(#pk) OR attribute_exists(#deletedAt)",
            }
        )
        return self._write("put_item", "PutItem (create schedule)", request) is not None

    def create_many(self, definitions: Sequence[Definition]) -> list[bool | StoreError]:
        answers: list[bool | StoreError] = []
        for start in range(0, len(definitions), BATCH_SIZE):
            chunk = definitions[start : start + BATCH_SIZE]
            inserts = [Insert(definition_item(d, self._ttl)) for d in chunk]
            written: list[Outcome]
            try:
                written = self._writer.write(inserts)
            except StoreError as exc:  # the request failed whole: its writes are unknown
                written = [exc] * len(chunk)
            answers += [self._again(d, w) for d, w in zip(chunk, written, strict=True)]
        return answers

    def _again(self, definition: Definition, written: Outcome) -> bool | StoreError:
        """A batched write's answer; one refused because the name has an item is made on
        its own, on ``create``'s condition (a tombstone gives way, a live one does not)."""
        if written is not False:
            return written
        try:
            return self.create(definition)
        except StoreError as exc:
            return exc

    def get(self, name: str) -> Definition | None:
        try:
            answer = self._client.get_item(
                TableName=self._table, Key=definition_key(name), ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise failed(self._table, "GetItem (schedule)", exc) from exc
        item = answer.get("Item")
        return definition_from(item) if item else None

    def live(self) -> list[Definition]:
        return self._query({"FilterExpression": "attribute_not_exists(#deletedAt)"})

    def every(self) -> list[Definition]:
        return self._query({})

    def put(self, definition: Definition, over: Definition | None) -> bool:
        request = named(
            {
                "TableName": self._table,
                "Item": definition_item(definition, self._ttl),
                **_unchanged(over),
            }
        )
        return self._write("put_item", "PutItem (carry schedule)", request) is not None

    def _query(self, more: Mapping[str, Any]) -> list[Definition]:
        request = named(
            {
                "TableName": self._table,
                "KeyConditionExpression": "#pk = :schedule",
                "ExpressionAttributeValues": {":schedule": {"S": SCHEDULE}},
                "ConsistentRead": True,
                **more,
            }
        )
        try:
            pages = self._client.get_paginator("query").paginate(**request)
            return [definition_from(item) for page in pages for item in page.get("Items", [])]
        except (ClientError, BotoCoreError) as exc:
            raise failed(self._table, "Query (schedules)", exc) from exc

    def retire(
        self, name: str, generation: str, *, operator: str, now: datetime
    ) -> Definition | None:
        request = named(
            {
                "TableName": self._table,
                "Key": definition_key(name),
                "UpdateExpression": "SET #deletedAt = :at, #deletedBy = :by, #expiresAt = :expires",
                "ConditionExpression": _LIVE,
                "ExpressionAttributeValues": {
                    ":at": {"S": iso_millis(now)},
                    ":by": {"S": operator},
                    ":expires": {"N": str(int((now + self._ttl).timestamp()))},
                    ":generation": {"S": generation},
                },
                "ReturnValues": "ALL_OLD",
            }
        )
        answer = self._write("update_item", "UpdateItem (delete schedule)", request)
        return definition_from(answer["Attributes"]) if answer is not None else None

    def advance(self, done: Deferred, following: Deferred | None) -> bool:
        if not self._transactions:
            return self._advance_in_steps(done, following)
        written = carried(done, following)  # not read: the condition below decides
        items: list[Any] = [
            {
                "Delete": {
                    "TableName": self._table,
                    "Key": deferred_key(done.key),
                    "ConditionExpression": "attribute_exists(pk)",
                }
            },
            {
                "Put": named(
                    {
                        "TableName": self._table,
                        "Item": definition_item(written, self._ttl),
                        "ConditionExpression": _MOVES,
                        "ExpressionAttributeValues": {":generation": {"S": generation_of(done)}},
                    }
                )
            },
        ]
        if following is not None:
            items.append(
                {"Put": {"TableName": self._table, "Item": deferred_item(following, self._ttl)}}
            )
        refused = self._transact(items, str(uuid.uuid4()))
        if refused == 1:  # the schedule deleted (or made again): the answered firing goes
            self._deferred.drop([done])
        return refused is None

    def _advance_in_steps(self, done: Deferred, following: Deferred | None) -> bool:
        """``advance`` on a table that takes no transaction (a global table in multi-Region
        strong consistency mode), in conditional steps. First the answered firing is marked
        with the step (its next firing's key) on the condition that it is still stored and
        marked with no other step: a late step, or one after a delete, stops there with
        nothing written; ticks making the same step go on together, each write the same. Then
        the next firing in, then the definition on the condition of
        :func:`.definitions.moves` (refused: the schedule was deleted or made again meanwhile,
        and the next firing goes out again), then the answered firing out; the tick that
        removes it answers True. A crash between two steps leaves the answered firing, marked:
        read again, its claim LOST, the same step made again. Never the schedule lost, nor
        brought back."""
        step = following.key if following is not None else "end"
        if not self._deferred.mark_step(done, step):
            return False
        if following is not None:
            self._deferred.add([following])
        request = named(
            {
                "TableName": self._table,
                "Item": definition_item(carried(done, following), self._ttl),
                "ConditionExpression": _MOVES,
                "ExpressionAttributeValues": {":generation": {"S": generation_of(done)}},
            }
        )
        if self._write("put_item", "PutItem (advance schedule)", request) is None:
            self._deferred.drop([done, *([following] if following is not None else [])])
            return False
        return self._deferred.take(done)

    def _write(self, operation: str, what: str, request: dict[str, Any]) -> Any:
        """A conditional write's answer; None when its condition refused it."""
        return conditional(self._client, operation, self._sleep, self._table, what, **request)

    def _transact(self, items: Sequence[Any], token: str) -> int | None:
        """Send the transaction: None when written, else the index of the item whose condition
        refused it."""
        for attempt in range(_ATTEMPTS):
            try:
                write_retried(
                    self._client,
                    "transact_write_items",
                    self._sleep,
                    ClientRequestToken=token,
                    TransactItems=list(items),
                )
                return None
            except ClientError as exc:
                reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
                if "ConditionalCheckFailed" in reasons:
                    return reasons.index("ConditionalCheckFailed")
                if "TransactionConflict" not in reasons or attempt + 1 == _ATTEMPTS:
                    raise failed(self._table, "TransactWriteItems (advance schedule)", exc) from exc
            except BotoCoreError as exc:
                raise failed(self._table, "TransactWriteItems (advance schedule)", exc) from exc
            self._sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")


def _unchanged(over: Definition | None) -> dict[str, Any]:
    """The condition that the stored definition is still ``over`` (None: that none is)."""
    if over is None:
        return {"ConditionExpression": "attribute_not_exists(#pk)"}
    stored = definition_item(over, timedelta(0))
    terms, values = ["#generation = :generation"], {":generation": stored["generation"]}
    for name in ("nextFiring", "deletedAt"):
        if name in stored:
            terms.append(f"#{name} = :{name}")
            values[f":{name}"] = stored[name]
        else:
            terms.append(f"attribute_not_exists(#{name})")
    return {"ConditionExpression": " AND ".join(terms), "ExpressionAttributeValues": values}


def definition_key(name: str) -> dict[str, Any]:
    return {"pk": {"S": SCHEDULE}, "sk": {"S": name}}


def definition_item(definition: Definition, ttl: timedelta) -> dict[str, Any]:
    item = {
        **definition_key(definition.name),
        "generation": {"S": definition.generation},
        "entry": {"S": json.dumps(dict(definition.entry), separators=(",", ":"))},
        "operator": {"S": definition.operator},
        "createdAt": {"S": iso_millis(definition.created_at)},
    }
    if definition.next_firing is not None:
        item["nextFiring"] = {"S": iso_millis(definition.next_firing)}
    if definition.deleted_at is not None:
        item["deletedAt"] = {"S": iso_millis(definition.deleted_at)}
        item["expiresAt"] = {"N": str(int((definition.deleted_at + ttl).timestamp()))}
    if definition.deleted_by is not None:
        item["deletedBy"] = {"S": definition.deleted_by}
    return item


def definition_from(item: Mapping[str, Any]) -> Definition:
    def text(name: str) -> str | None:
        value = item.get(name)
        return str(value["S"]) if value else None

    def instant(name: str) -> datetime | None:
        value = text(name)
        return parse_instant(value) if value else None

    created = instant("createdAt")
    if created is None:
        raise ValueError(f"schedule {text('sk')!r} has no createdAt")
    return Definition(
        name=str(text("sk")),
        generation=text("generation") or "",
        entry=json.loads(text("entry") or "{}"),
        operator=text("operator") or "",
        created_at=created,
        next_firing=instant("nextFiring"),
        deleted_at=instant("deletedAt"),
        deleted_by=text("deletedBy"),
    )
