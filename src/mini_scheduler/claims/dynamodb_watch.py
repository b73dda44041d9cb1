"""How the sweep finds open runs on DynamoDB without an index entry that moves with every status.

A secondary index on open runs costs index writes at every claim, mark and close (and moves
its entry when the deadline changes): more than the run's own writes. Instead, before claiming
a tick's firings the ticker writes one *watch* item listing them, due when their lease will
have passed:

* ``WATCH`` / ``<due instant, ms>#<random>``: ``jobs``, the firing ids grouped by their instant
  (``{"2026-11-30T14:01:00Z": ["report", "heartbeat"]}``: a tick's firings share a few instants,
  so a firing costs its job's name and a byte); ``expiresAt``. An item written before the
  grouping lists whole ids in ``firings``, and is read as well (:func:`watched`).

The sweep queries the watch items due by now (one partition, in due order), reads the runs
they list (``BatchGetItem``, 100 a request, eventually consistent, only what says whether a run
is due), and answers the open ones past their deadline, read again whole. Settling (the
tick's sweep, not a dry run) then writes one new watch item per minute for the runs still open
(a run answered as due is looked at again a minute on, so a sweep step that failed is tried
again; one still running at its deadline's minute) and deletes the items it read. Every run
an open run could be is watched from its claim to its end: its claim is watched before it is
written, and every sweep that reads it open watches it again before forgetting the item that
listed it. A run reopened by a redrive is watched again by the store.

A watch item costs its size in write units once when written and once when deleted: about a
job name's bytes a firing, against the 1 KB (and index writes) of a per-run index entry.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims.dynamodb_marks import resolve
from mini_scheduler.claims.dynamodb_table import (
    RUN,
    failed,
    get_many,
    named,
    run_from,
    run_key,
    write_batches,
    write_retried,
)
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.errors import StoreError
from mini_scheduler.model import firing_from_id, iso_millis

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

WATCH = "WATCH"
AGAIN = timedelta(minutes=1)
"""A run the sweep answered as due is looked at again from the next minute on."""
SWEPT = ("pk", "sk", *(RUN[field] for field in ("status", "deadline", "started_at", "claim_token")))
"""What the sweep reads of a run to know whether it is due: its key, its status and deadline,
and what its batch's marks item is found by (:func:`.dynamodb_marks.resolve`)."""
MAX_ITEM_BYTES = 300_000
"""A watch item's firing ids stay under this (DynamoDB's item limit is 400 KB)."""


def minute_after(moment: datetime) -> datetime:
    """The first whole minute at or after ``moment``."""
    floor = moment.replace(second=0, microsecond=0)
    return floor if floor == moment else floor + timedelta(minutes=1)


class Watch:
    """The watch items of ``table``."""

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

    def _fail(self, operation: str, exc: Exception) -> StoreError:
        return failed(self._table, operation, exc)

    def add(self, firing_ids: Sequence[str], at: datetime) -> None:
        """Watch ``firing_ids`` from ``at`` on: one item, or a few when they are many."""
        for chunk in _chunks(list(dict.fromkeys(firing_ids))):
            item = watch_item(chunk, at, self._ttl)
            try:
                write_retried(
                    self._client, "put_item", self._sleep, TableName=self._table, Item=item
                )
            except (ClientError, BotoCoreError) as exc:
                raise self._fail("PutItem (watch)", exc) from exc

    def due(self, now: datetime, limit: int, *, settle: bool) -> list[tuple[RunRecord, RunRecord]]:
        """The watched runs open past their deadline, oldest deadline first (at most
        ``limit``), each as stored and as its batch's marks say (:mod:`.dynamodb_marks`);
        with ``settle``, the watch moves on as the module says. The runs are read with only
        what says whether one is due (:data:`SWEPT`: a sweep reads every run once, most of them
        ended or running), and those due read again whole."""
        items = list(self._due_items(now))
        ids = list(dict.fromkeys(firing_id for item in items for firing_id in watched(item)))
        runs = [run for _, run in self._open(self.read(ids, SWEPT))]
        late = [run.firing_id for run in runs if _late(run, now)]
        due = sorted(
            ((was, run) for was, run in self._open(self.read(late)) if _late(run, now)),
            key=lambda pair: pair[1].deadline or now,
        )
        if settle and items:
            again: dict[datetime, list[str]] = defaultdict(list)
            next_minute = now.replace(second=0, microsecond=0) + AGAIN
            for run in runs:
                deadline = run.deadline
                at = next_minute if deadline is None or deadline <= now else minute_after(deadline)
                again[at].append(run.firing_id)
            for at, firing_ids in sorted(again.items()):
                self.add(firing_ids, at)
            self._delete([{"pk": item["pk"], "sk": item["sk"]} for item in items])
        return due[:limit]

    def _open(
        self, stored: Sequence[tuple[dict[str, Any], RunRecord]]
    ) -> list[tuple[RunRecord, RunRecord]]:
        """The open runs of ``stored``, each as read and as its batch's marks say."""
        kept = [(raw, run) for raw, run in stored if run.status.open]
        runs = resolve(self._client, self._table, kept, self._sleep, "BatchGetItem (marks)")
        return [(was, run) for (_, was), run in zip(kept, runs, strict=True)]

    def _due_items(self, now: datetime) -> Iterator[dict[str, Any]]:
        request = named(
            {
                "TableName": self._table,
                "KeyConditionExpression": "#pk = :watch AND #sk <= :now",
                "ExpressionAttributeValues": {
                    ":watch": {"S": WATCH},
                    ":now": {"S": f"{iso_millis(now)}#~"},
                },
                "ConsistentRead": True,
            }
        )
        try:
            for page in self._client.get_paginator("query").paginate(**request):
                yield from page.get("Items", [])
        except (ClientError, BotoCoreError) as exc:
            raise self._fail("Query (watch)", exc) from exc

    def read(
        self, firing_ids: Sequence[str], attributes: Sequence[str] = ()
    ) -> list[tuple[dict[str, Any], RunRecord]]:
        """The runs of ``firing_ids`` that exist (only their ``attributes`` when named: a record
        with the others unset), 100 a request. Eventually consistent reads
        (half the read units) are enough: the runs were written minutes before, and a read a
        moment stale can only show a run still open that has just ended (its time-out or
        take-over is conditional and changes nothing; it is looked at once more). A run
        reopened by a redrive is watched again by the store that reopens it."""
        keys = [run_key(firing_from_id(firing_id)) for firing_id in firing_ids]
        return [
            (raw, run_from(raw))
            for raw in get_many(
                self._client,
                self._table,
                "BatchGetItem (runs)",
                keys,
                self._sleep,
                consistent=False,
                attributes=attributes,
            )
        ]

    def _delete(self, keys: Sequence[Mapping[str, Any]]) -> None:
        requests = [{"DeleteRequest": {"Key": dict(key)}} for key in keys]
        write_batches(self._client, self._table, requests, "BatchWriteItem (watch)", self._sleep)
        # Items left undeleted are read again by the next sweep: harmless, never lost.


def _late(run: RunRecord, now: datetime) -> bool:
    return run.deadline is not None and run.deadline <= now


def watch_item(firing_ids: Sequence[str], at: datetime, ttl: timedelta) -> dict[str, Any]:
    """The watch item of ``firing_ids``, due at ``at`` (a random suffix keeps two apart)."""
    grouped: dict[str, list[dict[str, str]]] = defaultdict(list)
    for firing_id in firing_ids:
        job, _, instant = firing_id.rpartition("@")
        grouped[instant].append({"S": job})
    return {
        "pk": {"S": WATCH},
        "sk": {"S": f"{iso_millis(at)}#{uuid.uuid4().hex[:12]}"},
        "jobs": {"M": {instant: {"L": jobs} for instant, jobs in grouped.items()}},
        "expiresAt": {"N": str(int((at + ttl).timestamp()))},
    }


def watched(item: Mapping[str, Any]) -> list[str]:
    """The firing ids a watch item lists, in either form."""
    ids = [listed["S"] for listed in item.get("firings", {}).get("L", [])]
    for instant, jobs in item.get("jobs", {}).get("M", {}).items():
        ids.extend(f"{job['S']}@{instant}" for job in jobs.get("L", []))
    return ids


def _chunks(firing_ids: list[str]) -> Iterator[list[str]]:
    chunk: list[str] = []
    size = 0
    for firing_id in firing_ids:
        cost = len(firing_id.encode()) + 1
        if chunk and size + cost > MAX_ITEM_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(firing_id)
        size += cost
    if chunk:
        yield chunk
