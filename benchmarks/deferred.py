"""Section 6: firings beyond cron.yaml's at scale (issue 14, part 5), on DynamoDB Local.

* A tick with nothing due, on a table where ``pending`` one-time schedules wait for next year,
  beside the same tick on a table with none: the requests of each (botocore's ``before-call``,
  every operation). The deferred firings' query is one request however many wait: the target is
  no request more than the empty table's, which is one more than before deferred firings.
* ``created`` runtime schedules made in one request through the operator path (as the ticker's
  ``schedule`` event does): its requests by operation. Target: ``created / 25`` batched writes
  of the first firings (``BatchWriteItem``) and as many of the definitions (conditional PartiQL
  ``INSERT``s), plus the reads that check the names.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from benchmarks.rig import FIRST_MINUTE, Bench, Rig, cron_file
from benchmarks.table import Row, ratio, seconds
from mini_scheduler.claims.base import SCHEDULE
from mini_scheduler.schedule_entry import schedule_job
from mini_scheduler.schedules import deferred_of

BATCH = 25  # BatchWriteItem's items a request
_FILL = 5_000  # deferred firings written a defer call while filling the table


_BATCHED = ("BatchWriteItem", "BatchExecuteStatement")


@dataclass(frozen=True)
class Results:
    pending: int
    empty_calls: dict[str, int]  # the tick on a table with no deferred firing
    pending_calls: dict[str, int]  # the same tick with ``pending`` waiting for next year
    created: int
    create_calls: dict[str, int]
    create_wall: float
    fill_wall: float

    @property
    def batch_writes(self) -> int:
        """The first firings' ``BatchWriteItem``s and the definitions' ``BatchExecuteStatement``s
        (conditional ``INSERT``s: a name is taken once)."""
        return sum(self.create_calls.get(f"dynamodb.{op}", 0) for op in _BATCHED)

    @property
    def alone(self) -> int:
        """Definitions written one at a time: a ``PutItem`` each (a name over its tombstone)."""
        return self.create_calls.get("dynamodb.PutItem", 0)

    @property
    def reads(self) -> int:
        written = {f"dynamodb.{op}" for op in (*_BATCHED, "PutItem")}
        return sum(v for k, v in self.create_calls.items() if k not in written)


def _never(rig: Rig, workers: int) -> Bench:
    return rig.bench(cron_file(1, statement="0 0 0 1 1 ? 2099"), workers=workers)


def _fill(bench: Bench, pending: int) -> None:
    """``pending`` one-time schedules due next year, written straight to the store (their
    creation is measured apart)."""
    now = FIRST_MINUTE
    claims = bench.ticker.operator.claims
    assert claims is not None  # nosec B101 # the bench's ticker has its store
    for start in range(0, pending, _FILL):
        items = []
        for i in range(start, min(start + _FILL, pending)):
            at = now + timedelta(days=365, seconds=i)
            entry = {"name": f"once-{i:06d}", "at": at.strftime("%Y-%m-%dT%H:%M:%SZ")}
            entry["service"] = "bench-target"
            job = schedule_job(entry)
            detail = {"entry": entry, "operator": "bench", "createdAt": "2026-11-30T14:00:00Z"}
            items.append(deferred_of(job, at, detail=detail, origin="bench", now=now))
        claims.defer(items)


def run(
    rig: Rig,
    *,
    pending: int,
    created: int,
    workers: int,
    progress: Callable[[str], None],
) -> Results:
    progress("deferred firings: an empty tick on a table with none pending")
    bench = _never(rig, workers)
    rig.tick(bench, FIRST_MINUTE, expect=set())  # the region's first tick: its watermark
    empty = rig.tick(bench, FIRST_MINUTE + timedelta(minutes=1), expect=set())
    rig.drop_table(bench.table)

    progress(f"deferred firings: {pending:,} one-time schedules pending, then the same tick")
    bench = _never(rig, workers)
    started = time.perf_counter()
    _fill(bench, pending)
    fill_wall = time.perf_counter() - started
    rig.tick(bench, FIRST_MINUTE, expect=set())
    loaded = rig.tick(bench, FIRST_MINUTE + timedelta(minutes=1), expect=set())
    claims = bench.ticker.operator.claims
    assert claims is not None and not claims.due_deferred(FIRST_MINUTE + timedelta(days=1))
    rig.drop_table(bench.table)

    progress(f"deferred firings: {created:,} runtime schedules created in one request")
    bench = _never(rig, workers)
    bench.clock.set(FIRST_MINUTE)
    entries = [
        {"name": f"made-{i:05d}", "cron": "0 0 9 ? * MON-FRI", "service": "bench-target"}
        for i in range(created)
    ]
    bench.log.reset()
    started = time.perf_counter()
    answer = bench.ticker.operator.create_schedules(entries, "bench")
    create_wall = time.perf_counter() - started
    calls = dict(bench.log.calls)
    stored = bench.ticker.operator.claims.pending_deferred(SCHEDULE)  # type: ignore[union-attr]
    if len(answer["created"]) != created or len(stored) != created:
        raise AssertionError(f"created {len(answer['created'])}, stored {len(stored)} of {created}")
    rig.drop_table(bench.table)
    return Results(pending, empty.calls, loaded.calls, created, calls, create_wall, fill_wall)


def _calls(calls: dict[str, int]) -> str:
    return ", ".join(f"{k.split('.')[1]} {v}" for k, v in sorted(calls.items()))


def rows(results: Results) -> list[Row]:
    empty, loaded = sum(results.empty_calls.values()), sum(results.pending_calls.values())
    budget = 2 * math.ceil(results.created / BATCH)  # the first firings, the definitions
    return [
        Row(
            "6 deferred",
            f"requests of a tick with nothing due, {results.pending:,} one-time schedules "
            f"pending ({_calls(results.pending_calls)})",
            f"{loaded}",
            f"none pending: {empty} (before deferred firings: {empty - 1})",
            ratio(loaded, empty, digits=2),
            f"<= {empty} (+1 on before)",
            loaded <= empty,
        ),
        Row(
            "6 deferred",
            f"  writing them: {results.pending:,} items, {math.ceil(results.pending / BATCH):,} "
            "batched writes",
            seconds(results.fill_wall),
            "DynamoDB Local on this machine",
        ),
        Row(
            "6 deferred",
            f"batched writes creating {results.created:,} runtime schedules in one request "
            f"({_calls(results.create_calls)})",
            f"{results.batch_writes}",
            f"firings and definitions, {results.created:,} / {BATCH} each: {budget}",
            ratio(results.batch_writes, budget, digits=2),
            f"<= {budget}, plus reads",
            results.batch_writes <= budget,
        ),
        Row(
            "6 deferred",
            "  definitions written alone (a PutItem each: a name over its tombstone), and its "
            f"wall time {seconds(results.create_wall)}",
            f"{results.alone:,}",
            f"before they were batched: {results.created:,}",
        ),
        Row(
            "6 deferred",
            "  its reads (the names checked against the schedules stored)",
            f"{results.reads}",
            "one Query page per 1 MB stored",
        ),
    ]
