"""The DynamoDB claim store's reads (a run, a job's history and latest state, many jobs' latest
runs by key, the sweep's due runs, the control items a tick reads) and its control writes
(watermarks, pauses), with the helpers every part of the store shares. The store is
:class:`.dynamodb.DynamoDBClaimStore`; this is the part of it that neither claims nor ends a
run."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims import transitions
from mini_scheduler.claims.base import Control, Latest, Pause, history_cursor, named_firings
from mini_scheduler.claims.dynamodb_marks import marking, resolve
from mini_scheduler.claims.dynamodb_table import (
    RUN,
    code,
    expressions,
    failed,
    get_many,
    instant,
    job_key,
    named,
    plain_item,
    run_from,
    run_key,
    write_retried,
)
from mini_scheduler.claims.dynamodb_watch import Watch
from mini_scheduler.claims.records import JOB_FIELDS, JobState, RunRecord
from mini_scheduler.claims.transitions import Write
from mini_scheduler.errors import StoreError
from mini_scheduler.model import MAX_ATTEMPT, Firing, RunStatus, firing_from_id, iso_millis

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_CONTROL = "CONTROL"
_LATEST_READ = 100  # runs read, newest first, to find a job's latest dispatched one


class DynamoDBReads:
    """The reads and control writes of the claim store on the state table ``table`` (its
    attributes are set by :class:`.dynamodb.DynamoDBClaimStore`)."""

    table: str
    _client: DynamoDBClient
    _ttl: timedelta
    _sleep: Callable[[float], None]
    _watch: Watch

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

    # -- reads -----------------------------------------------------------------------------

    def _runs(
        self, raws: Iterable[Mapping[str, Any]], operation: str, *, consistent: bool = True
    ) -> list[RunRecord]:
        """The run items ``raws`` as records, each as its claim batch's marks say
        (:mod:`.dynamodb_marks`: one BatchGetItem for those not marked on their record)."""
        read = [(raw, run_from(raw)) for raw in raws]
        return resolve(
            self._client, self.table, read, self._sleep, operation, consistent=consistent
        )

    def _run_item(self, firing: Firing) -> dict[str, Any] | None:
        """The firing's run item as stored now (a consistent GetItem), or None."""
        with self._failing_as("GetItem (run)"):
            answer = self._client.get_item(
                TableName=self.table, Key=run_key(firing), ConsistentRead=True
            )
        raw: dict[str, Any] | None = answer.get("Item")
        return raw or None

    def _mark_on_record(self, stored: RunRecord, read: RunRecord) -> None:
        """``read`` marked on its record where its batch's marks item alone says DISPATCHED
        (:func:`.dynamodb_marks.marking`); a run that changed meanwhile is left as it is."""
        write = marking(stored, read)
        if write is not None:
            request = self._run_update(firing_from_id(read.firing_id), write)
            self._update(request, "UpdateItem (mark)", tolerate_condition=True)

    def _query(self, operation: str, **request: Any) -> Iterator[dict[str, Any]]:
        with self._failing_as(operation):
            paginator = self._client.get_paginator("query")
            for page in paginator.paginate(**named({"TableName": self.table, **request})):
                yield from page.get("Items", [])

    def due_runs(
        self, now: datetime, limit: int = 1000, *, settle: bool = False
    ) -> Sequence[RunRecord]:
        due = self._watch.due(now, limit, settle=settle)
        if settle:  # their time-outs follow: conditional on DISPATCHED
            for stored, read in due:
                self._mark_on_record(stored, read)
        return [read for _, read in due]

    def run(self, firing_id: str) -> RunRecord | None:
        raw = self._run_item(firing_from_id(firing_id))
        return self._runs([raw], "BatchGetItem (marks)")[0] if raw else None

    def history(self, job: str, limit: int = 20, before: str | None = None) -> Sequence[RunRecord]:
        # The cursor is a key condition on the sort key, not a filter: the Query starts past it
        # and reads (and is billed for) the page's items only.
        cursor = history_cursor(before)
        keys, values = "#pk = :pk", {":pk": {"S": f"RUN#{job}"}}
        if cursor is not None:
            keys, values[":before"] = f"{keys} AND #sk < :before", {"S": cursor}
        page = self._query(
            "Query (history)",
            KeyConditionExpression=keys,
            ExpressionAttributeValues=values,
            ScanIndexForward=False,
            PaginationConfig={"MaxItems": limit, "PageSize": min(limit, 100)},
        )
        return self._runs(page, "BatchGetItem (history marks)")

    def job_state(self, job: str) -> JobState | None:
        """The job's latest state: its latest run that was dispatched, and its open slot."""
        with self._failing_as("GetItem (job slot)"):
            answer = self._client.get_item(
                TableName=self.table, Key=job_key(job), ConsistentRead=True
            )
        item = plain_item(answer.get("Item") or {})
        slot = item.get(JOB_FIELDS["open_firing"])
        waiting = tuple(sorted(item.get(JOB_FIELDS["waiting"]) or ()))
        # A run started on its record, or marked in its claim batch's item (it keeps the token).
        page = self._query(
            "Query (latest run)",
            KeyConditionExpression="#pk = :pk",
            FilterExpression="attribute_exists(#startedAt) OR attribute_exists(#claimToken)",
            ExpressionAttributeValues={":pk": {"S": f"RUN#{job}"}},
            ScanIndexForward=False,
            ConsistentRead=True,
            PaginationConfig={"MaxItems": _LATEST_READ, "PageSize": 25},
        )
        latest = next(
            (
                run
                for chunk in _pages(page, 25)
                for run in self._runs(chunk, "BatchGetItem (latest marks)")
                if run.started_at is not None
            ),
            None,
        )
        if latest is None:
            return JobState(job, open_firing=slot, waiting=waiting) if slot or waiting else None
        return replace(_state(latest, slot), waiting=waiting)

    def latest_runs(self, named: Mapping[str, Sequence[str]]) -> dict[str, Latest]:
        """The runs named, 100 a consistent ``BatchGetItem`` (the keys left unprocessed asked
        again with back-off), then the next attempt of each failed one its policy retries, a
        round per attempt; each job's newest started one by sort key (its slot unread)."""
        wanted = [firing for firings in named_firings(named).values() for firing in firings]
        found: dict[str, RunRecord] = {}
        while wanted:
            keys = [run_key(firing) for firing in wanted]
            operation = "BatchGetItem (latest runs)"
            raws = get_many(self._client, self.table, operation, keys, self._sleep)
            runs = self._runs(raws, "BatchGetItem (latest marks)")
            found.update((run.firing_id, run) for run in runs)
            wanted = [
                attempt
                for run in runs
                if (attempt := _retried(run)) is not None and attempt.id not in found
            ]
        newest: dict[str, RunRecord] = {}
        for run in found.values():
            kept = newest.get(run.job)
            if run.started_at is not None and (kept is None or run.sort_key > kept.sort_key):
                newest[run.job] = run
        return {
            job: Latest(_state(newest[job]) if job in newest else None, exact=False)
            for job in named
        }

    # -- control ---------------------------------------------------------------------------

    def control(self, scope: str) -> Control:
        watermarks: dict[str, datetime] = {}
        paused: dict[str, Pause] = {}
        resumed: dict[str, Pause] = {}
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
                pause = Pause(
                    job, str(item.get("operator", "")), instant(item.get("at")) or datetime.min
                )
                (resumed if item.get("resumed") else paused)[job] = pause
        return Control(watermarks.get(scope), paused, watermarks, resumed)

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
        item: dict[str, Any] = {**key, "operator": {"S": operator}, "at": {"S": iso_millis(now)}}
        if not paused:
            item["resumed"] = {"BOOL": True}
        with self._failing_as("PutItem (pause)" if paused else "PutItem (resume)"):
            write_retried(self._client, "put_item", self._sleep, TableName=self.table, Item=item)


def _state(latest: RunRecord, slot: str | None = None) -> JobState:
    """The job's latest state from its latest dispatched run (and its open slot)."""
    parameters = dict(latest.parameters or {})
    if latest.origin:
        parameters[transitions.ORIGIN_PARAMETER] = latest.origin
    return JobState(
        latest.job,
        service=latest.service,
        schedule=latest.schedule,
        parameters=parameters,
        start=latest.started_at,
        end=latest.ended_at,
        last_firing_id=latest.firing_id,
        last_status=latest.status,
        open_firing=slot,
    )


def _retried(run: RunRecord) -> Firing | None:
    """The next attempt of a run that failed, when the policy it was dispatched with leaves
    one (:func:`mini_scheduler.retries.attempt_left` decides: never a manual run's)."""
    from mini_scheduler.retries import attempt_left  # the console's read, not a cold start's

    if run.status not in (RunStatus.FAILED, RunStatus.TIMED_OUT):
        return None
    firing = firing_from_id(run.firing_id)
    if firing.attempt >= MAX_ATTEMPT or not attempt_left(run.firing_id, run.policy):
        return None
    return firing.retry()


def _pages(items: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    """``items`` ``size`` at a time, read as they are needed."""
    page: list[dict[str, Any]] = []
    for item in items:
        page.append(item)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page
