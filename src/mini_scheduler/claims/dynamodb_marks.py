"""A claim batch's marks in one item: what a DynamoDB store writes where a mark per run cost a
write unit each (issue 28, point 3).

A run claimed with where it goes (:attr:`.base.ClaimRequest.start`: the claim writes the job's
service, schedule, parameters and policy, which a mark wrote before) needs its mark to say two
things only: that its target took it (when), and its deadline (the job's timeout). The marks of
one claim batch are therefore one item, written in one ``BatchWriteItem`` with the other
batches' marks of the call:

* ``MARKS#<claim token>`` / ``MARKS``: ``at``, when the marks were written (the runs'
  ``started_at``), ``runs``, each run's deadline as milliseconds after ``at``, grouped by what
  follows the job's name in its id (``{"2026-11-30T14:01:00Z": {"report": 3600000}}``: a
  batch's runs share a few instants, so a run costs its job's name and a number), and
  ``expiresAt``, as its runs'.

A run record keeps its batch's claim token (``claimToken``), so every read of a run that has no
``startedAt`` of its own resolves it against its batch's marks item (one ``BatchGetItem`` for a
page of runs): a CLAIMED run found there is DISPATCHED, started at ``at``, until its deadline;
an ended one started at ``at``. A run the marks do not name was never marked (its dispatch
failed, or its claimer died before the mark: the sweep takes it over past its lease).

The item of a claim token is written once: the store remembers the tokens of the batches it
claimed, and which of them it has written; a mark whose batch's item was written already (or
failed: a second write would replace the first), or whose claim this store did not make (a
take-over by another ticker), is written on its run as before (:func:`.transitions.marked`).
So is a mark that is also the run's end (a queue took the message). A run still open when the
sweep finds past its deadline, or that a redrive changes, is marked on its record first
(:func:`marking`), so that the change's condition reads DISPATCHED on the run itself.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from mini_scheduler.claims import transitions
from mini_scheduler.claims.base import MarkRequest
from mini_scheduler.claims.dynamodb_table import RUN, get_many, instant, write_batches
from mini_scheduler.claims.records import RunRecord
from mini_scheduler.claims.writes import Write
from mini_scheduler.errors import StoreError
from mini_scheduler.instants import iso_millis
from mini_scheduler.model import RunStatus

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

MARKS = "MARKS"
_REMEMBERED = 10_000
"""Claim batches whose tokens a store remembers (a tick's marks are written within the tick)."""
_RESOLVED = frozenset(
    {RunStatus.CLAIMED, RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.TIMED_OUT}
)


def marks_key(token: str) -> dict[str, Any]:
    return {"pk": {"S": f"{MARKS}#{token}"}, "sk": {"S": MARKS}}


def marks_item(
    marks: Sequence[MarkRequest], token: str, now: datetime, expires: datetime
) -> dict[str, Any]:
    """The marks item of one claim batch's ``marks``, written at ``now``."""
    runs: dict[str, dict[str, Any]] = {}
    for mark in marks:
        job, _, rest = mark.firing.id.rpartition("@")
        millis = round((mark.deadline - now).total_seconds() * 1000)
        runs.setdefault(rest, {})[job] = {"N": str(millis)}
    return {
        **marks_key(token),
        "at": {"S": iso_millis(now)},
        "runs": {"M": {rest: {"M": jobs} for rest, jobs in runs.items()}},
        "expiresAt": {"N": str(int(expires.timestamp()))},
    }


class Tokens:
    """The claim tokens of the batches a store claimed, by run id, and those whose marks item
    it has written (or tried to): :meth:`take` answers a mark's token once, and never for a
    batch whose item was asked for already."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_run: OrderedDict[str, str] = OrderedDict()
        self._written: OrderedDict[str, None] = OrderedDict()

    def claimed(self, run_ids: Iterable[str], token: str) -> None:
        with self._lock:
            for run_id in run_ids:
                self._by_run[run_id] = token
            while len(self._by_run) > _REMEMBERED * 25:
                self._by_run.popitem(last=False)

    def take(
        self, marks: Sequence[MarkRequest]
    ) -> tuple[dict[str, list[MarkRequest]], list[MarkRequest]]:
        """``marks`` as those each batch's item carries (by token) and those written on their
        runs: a mark that ends its run, one whose claim this store did not make, one whose
        batch's item was asked for by an earlier call."""
        grouped: dict[str, list[MarkRequest]] = {}
        alone: list[MarkRequest] = []
        with self._lock:
            for mark in marks:
                token = self._by_run.pop(mark.firing.id, None)
                if mark.ended is not None or token is None or token in self._written:
                    alone.append(mark)
                else:
                    grouped.setdefault(token, []).append(mark)
            for token in grouped:
                self._written[token] = None
            while len(self._written) > _REMEMBERED:
                self._written.popitem(last=False)
        return grouped, alone


def write_marks(
    client: DynamoDBClient,
    table: str,
    grouped: Mapping[str, Sequence[MarkRequest]],
    *,
    now: datetime,
    ttl: timedelta,
    sleep: Callable[[float], None],
) -> dict[str, StoreError | None]:
    """Each batch's marks item, 25 a ``BatchWriteItem``: by token, None where written, else the
    StoreError its marks answer (the caller writes them on their runs when tried again)."""
    requests = [
        {"PutRequest": {"Item": marks_item(marks, token, now, now + ttl)}}
        for token, marks in grouped.items()
    ]
    try:
        left = write_batches(client, table, requests, "BatchWriteItem (marks)", sleep)
    except StoreError as exc:
        return dict.fromkeys(grouped, exc)
    unwritten = {request["PutRequest"]["Item"]["pk"]["S"] for request in left}
    error = StoreError(f"DynamoDB BatchWriteItem (marks) on table {table} left items unwritten")
    return {token: error if marks_key(token)["pk"]["S"] in unwritten else None for token in grouped}


def _unresolved(raw: Mapping[str, Any]) -> str | None:
    """The claim token to resolve ``raw`` (a run item) by: one with a token and no start."""
    if RUN["started_at"] in raw:
        return None
    token = raw.get(RUN["claim_token"], {}).get("S")
    status = raw.get(RUN["status"], {}).get("S")
    return token if token and status in _RESOLVED else None


def resolve(
    client: DynamoDBClient,
    table: str,
    runs: Sequence[tuple[Mapping[str, Any], RunRecord]],
    sleep: Callable[[float], None],
    operation: str,
    *,
    consistent: bool = True,
) -> list[RunRecord]:
    """``runs`` (each an item as read and its record) as their marks say: a run its batch's
    marks item names is started at the item's ``at`` (a CLAIMED one DISPATCHED until its
    deadline); one BatchGetItem for every batch the page's runs come from (``consistent``:
    strongly consistent reads; a marks item is written before its runs are read, but a very
    fast target's end may come first: the run is then read as its record says)."""
    tokens = [_unresolved(raw) for raw, _ in runs]
    wanted = [marks_key(token) for token in dict.fromkeys(tokens) if token is not None]
    if not wanted:
        return [run for _, run in runs]
    found = {
        str(item["pk"]["S"]).removeprefix(f"{MARKS}#"): item
        for item in get_many(client, table, operation, wanted, sleep, consistent=consistent)
    }
    resolved: list[RunRecord] = []
    for (_, run), token in zip(runs, tokens, strict=True):
        item = found.get(token) if token is not None else None
        resolved.append(marked(run, item) if item is not None else run)
    return resolved


def marked(run: RunRecord, item: Mapping[str, Any]) -> RunRecord:
    """``run`` as its batch's marks ``item`` says (itself where the item does not name it)."""
    job, _, rest = run.firing_id.rpartition("@")
    millis = item.get("runs", {}).get("M", {}).get(rest, {}).get("M", {}).get(job, {}).get("N")
    if millis is None:
        return run
    at = instant(item["at"]["S"])
    if at is None:
        return run
    if run.status is not RunStatus.CLAIMED:
        return replace(run, started_at=at)
    deadline = at + timedelta(milliseconds=int(millis))
    return replace(run, status=RunStatus.DISPATCHED, started_at=at, deadline=deadline)


def marking(stored: RunRecord, read: RunRecord) -> Write | None:
    """The mark to write on the record of ``read`` (``stored`` as its marks item says) where it
    is DISPATCHED by that item only: a change conditional on its status (the sweep's time-out,
    a redrive) must read DISPATCHED on the run itself. None: nothing to write."""
    if stored.status is not RunStatus.CLAIMED or read.status is not RunStatus.DISPATCHED:
        return None
    if read.started_at is None or read.deadline is None:
        return None
    return transitions.dispatched(now=read.started_at, deadline=read.deadline)
