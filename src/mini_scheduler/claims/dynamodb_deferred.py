"""Deferred firings on DynamoDB (:class:`~mini_scheduler.claims.base.Deferred`): firings due at
an instant no cron statement's next time gives (a retry), kept in the state table until a tick
has claimed them.

* ``DEFER`` / ``<due instant, ms>#<run id>``: ``reason``, ``origin``, ``writtenAt`` (ISO, ms),
  ``detail`` (the reason's detail as compact JSON, when it has one) and ``expiresAt`` (the TTL:
  the due instant plus the store's run TTL, as a watch item's). The
  key says the run's id and its due instant: neither is stored again (:func:`deferred_from`
  reads them from it; the instant has a fixed form without ``#``, the run id may hold one).

A deferred firing is written with ``BatchWriteItem`` (25 a request; the same key written again
is the same item), read by the tick with one consistent Query on the sort key (``sk <
<until>``: one request when none is due, however many wait for later; an item due at ``until``
itself, ``<until>#...``, sorts after it and is not due yet), and deleted with
``BatchWriteItem`` once its claim has an answer. A runtime schedule's firing is replaced by its
next one with its definition (:mod:`.dynamodb_schedules`). An operator's listing of one reason
(:meth:`pending`: retries, backfills) reads the whole partition with a filter on the reason:
never a tick's cost.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims.base import Deferred, deferred_firing
from mini_scheduler.claims.dynamodb_table import conditional, failed, named, write_batches
from mini_scheduler.errors import StoreError
from mini_scheduler.model import iso_millis, parse_instant

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DEFER = "DEFER"
_PAGE = 1000  # items a Query page reads at most


class DeferredFirings:
    """The deferred firings of ``table``; ``ttl`` is how long an item outlives its due instant."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        ttl: timedelta,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._table = table
        self._ttl = ttl
        self._sleep = sleep

    def add(self, deferred: Sequence[Deferred]) -> None:
        """Write each one (a key given twice is written once: a batch refuses two requests on
        one key). Raises StoreError when any is left unwritten."""
        items: dict[str, dict[str, Any]] = {}
        for item in deferred:
            items.setdefault(item.key, deferred_item(item, self._ttl))
        requests = [{"PutRequest": {"Item": item}} for item in items.values()]
        self._write(requests, "BatchWriteItem (defer)")

    def due(self, until: datetime, limit: int) -> list[Deferred]:
        """Those due before ``until``, oldest first, at most ``limit``."""
        if limit <= 0:
            return []
        return [deferred_from(item) for item in self._due_items(until, limit)]

    def _due_items(self, until: datetime, limit: int) -> Iterator[dict[str, Any]]:
        request = named(
            {
                "TableName": self._table,
                "KeyConditionExpression": "#pk = :defer AND #sk < :until",
                "ExpressionAttributeValues": {
                    ":defer": {"S": DEFER},
                    ":until": {"S": iso_millis(until)},
                },
                "ConsistentRead": True,
                "PaginationConfig": {"MaxItems": limit, "PageSize": min(limit, _PAGE)},
            }
        )
        try:
            for page in self._client.get_paginator("query").paginate(**request):
                yield from page.get("Items", [])
        except (ClientError, BotoCoreError) as exc:
            raise failed(self._table, "Query (deferred)", exc) from exc

    def pending(self, reason: str) -> list[Deferred]:
        """Every one stored for ``reason``, oldest due first (reads the partition)."""
        request = named(
            {
                "TableName": self._table,
                "KeyConditionExpression": "#pk = :defer",
                "FilterExpression": "#reason = :reason",
                "ExpressionAttributeValues": {
                    ":defer": {"S": DEFER},
                    ":reason": {"S": reason},
                },
                "ConsistentRead": True,
            }
        )
        try:
            pages = self._client.get_paginator("query").paginate(**request)
            return [deferred_from(item) for page in pages for item in page.get("Items", [])]
        except (ClientError, BotoCoreError) as exc:
            raise failed(self._table, "Query (pending deferred)", exc) from exc

    def drop(self, deferred: Sequence[Deferred]) -> None:
        """Delete them (one already gone is no error). Raises StoreError when any is left."""
        keys = dict.fromkeys(item.key for item in deferred)
        requests = [{"DeleteRequest": {"Key": deferred_key(key)}} for key in keys]
        self._write(requests, "BatchWriteItem (drop deferred)")

    def mark_step(self, item: Deferred, step: str) -> bool:
        """Mark ``item`` with ``step`` on the condition that it is still stored and marked with
        no other: False when it is gone, or another step marked it."""
        request = named(
            {
                "TableName": self._table,
                "Key": deferred_key(item.key),
                "UpdateExpression": "SET #step = :step",
                "ConditionExpression": "attribute_exists(#pk) AND "
                "(attribute_not_exists(#step) OR #step = :step)",
                "ExpressionAttributeValues": {":step": {"S": step}},
            }
        )
        return self._conditional("update_item", "UpdateItem (deferred step)", request)

    def take(self, item: Deferred) -> bool:
        """Delete ``item`` on the condition that it is still stored: False when it was gone
        already (another tick answered it)."""
        request = {
            "TableName": self._table,
            "Key": deferred_key(item.key),
            "ConditionExpression": "attribute_exists(pk)",
        }
        return self._conditional("delete_item", "DeleteItem (deferred)", request)

    def _conditional(self, operation: str, what: str, request: dict[str, Any]) -> bool:
        table = self._table
        return conditional(self._client, operation, self._sleep, table, what, **request) is not None

    def _write(self, requests: Sequence[Mapping[str, Any]], operation: str) -> None:
        left = write_batches(self._client, self._table, requests, operation, self._sleep)
        if left:
            raise StoreError(
                f"DynamoDB {operation} on table {self._table} left {len(left)} of "
                f"{len(requests)} items unprocessed after retries"
            )


def deferred_key(key: str) -> dict[str, Any]:
    """The item's key for a :attr:`.Deferred.key`."""
    return {"pk": {"S": DEFER}, "sk": {"S": key}}


def deferred_item(deferred: Deferred, ttl: timedelta) -> dict[str, Any]:
    """The item of ``deferred``: its key, and what the key does not say."""
    item = {
        **deferred_key(deferred.key),
        "reason": {"S": deferred.reason},
        "origin": {"S": deferred.origin},
        "writtenAt": {"S": iso_millis(deferred.written_at)},
        "expiresAt": {"N": str(int((deferred.due + ttl).timestamp()))},
    }
    if deferred.detail:
        item["detail"] = {"S": json.dumps(deferred.detail, separators=(",", ":"))}
    return item


def deferred_from(item: Mapping[str, Any]) -> Deferred:
    """The deferred firing an item keeps (ValueError when its key is not a deferred firing's)."""
    due, sep, run_id = str(item["sk"]["S"]).partition("#")
    if not sep:
        raise ValueError(f"{due[:100]!r} is not a deferred firing's key (<due>#<run id>)")
    reason = item["reason"]["S"]
    detail = json.loads(item["detail"]["S"]) if "detail" in item else {}
    return Deferred(
        firing=deferred_firing(run_id, reason, detail),
        due=parse_instant(due),
        reason=reason,
        origin=item["origin"]["S"],
        written_at=parse_instant(item["writtenAt"]["S"]),
        detail=detail,
    )
