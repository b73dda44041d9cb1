"""What one firing costs in requests, capacity units and log bytes, counted on a steady tick.

A tick of N firings runs twice on one table (the first tick, and the recorder closing its runs,
leave the job state items a steady tick updates), then the recorder closes the second tick's
runs from Lambda destination records, one ``record`` per firing as the recorder Lambda would.
Requests are counted with botocore's ``before-call`` event on each session; item sizes are read
back from DynamoDB Local and sized by DynamoDB's documented rules (``jobs.limits.item_size``,
the one the loader uses: strings their UTF-8 length, numbers about one byte per two digits plus
one, maps and lists 3 bytes plus one per element), since a write costs one write request unit
per started KB of the larger of the item before and after it, twice that inside a transaction,
plus the index writes of the ``open-runs`` index (projection ALL): one when an item enters or
leaves it, two when its key (``deadline``) changes.
"""

from __future__ import annotations

import contextlib
import json
import math
import statistics
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer

from benchmarks.rig import FIRST_MINUTE, REGION, Bench, CallLog, Rig, TickRun, cron_file
from mini_scheduler.aws import Clients
from mini_scheduler.config import Settings
from mini_scheduler.handlers.events import completion_from_event
from mini_scheduler.jobs import limits
from mini_scheduler.model import Firing, firing_from_id, iso_millis
from mini_scheduler.wiring import build_recorder

KB = 1024
_PLAIN = TypeDeserializer()


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """The size DynamoDB bills for an item as the low-level client returns it."""
    return limits.item_size({name: _PLAIN.deserialize(value) for name, value in item.items()})


def wru(size: int) -> int:
    """Write request units of one standard write of an item of ``size`` bytes."""
    return max(1, math.ceil(size / KB))


@dataclass(frozen=True)
class Sizes:
    claimed: int  # the run item the claim puts (CLAIMED, in the open-runs index)
    dispatched: int  # after the mark (DISPATCHED)
    ended: int  # after the recorder closed it (SUCCEEDED, out of the index)
    state_started: int  # the job's latest-state item after the mark
    state_ended: int  # ... after the recorder's job end
    watermark: int


@dataclass(frozen=True)
class Units:
    """Write request units per firing, by step; read and write units per tick."""

    claim: int
    mark: int
    close: int
    tick_writes: int
    tick_reads: float

    @property
    def per_firing(self) -> int:
        return self.claim + self.mark + self.close


def units(sizes: Sizes) -> Units:
    state = max(sizes.state_started, sizes.state_ended)
    # claim: PutItem of the run item, which enters the open-runs index
    claim = wru(sizes.claimed) + wru(sizes.claimed)
    # mark: TransactWriteItems (2x) of the run update and the job-state update; the run's
    # deadline (the index's sort key) changes: the index deletes one entry and puts another
    mark = 2 * wru(max(sizes.claimed, sizes.dispatched)) + 2 * wru(state)
    mark += wru(sizes.claimed) + wru(sizes.dispatched)
    # close (the recorder): UpdateItem of the run, which leaves the index; UpdateItem job end
    close = wru(max(sizes.dispatched, sizes.ended)) + wru(sizes.dispatched) + wru(state)
    # a tick: the watermark UpdateItem; the control Query and the environment GetItem are
    # strongly consistent (1 RRU each, under 4 KB), the sweep's index Query eventually (0.5)
    return Units(claim, mark, close, wru(sizes.watermark), 1 + 1 + 0.5)


@dataclass(frozen=True)
class Accounting:
    firings: int
    tick: TickRun
    sizes: Sizes
    units: Units
    recorder_calls: dict[str, float]  # per firing
    recorder_wall: float  # median seconds per record (one recorder invocation)
    recorder_cpu: float  # mean CPU seconds per record
    recorder_log_bytes: float  # per firing: its JSON lines
    recorder_emf_bytes: float  # per firing: the EMF blob each invocation flushes

    @property
    def ticker_log_bytes(self) -> float:
        """Per firing: the ticker's JSON lines and EMF values."""
        return (self.tick.log_bytes + self.tick.emf_bytes) / self.firings


def _destination(firing_id: str, when: str) -> dict[str, Any]:
    """A Lambda destination record (OnSuccess) for a firing's asynchronous invocation."""
    firing = firing_from_id(firing_id)
    return {
        "version": "1.0",
        "timestamp": when,
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": f"arn:aws:lambda:{REGION}:123456789012:function:bench-target:$LATEST",
            "condition": "Success",
            "approximateInvokeCount": 1,
        },
        "requestPayload": {
            "job": firing.job,
            "firingId": firing_id,
            "scheduledTime": firing.scheduled_time,
            "origin": f"{REGION}/prod",
            "manual": False,
            "parameters": {"region": "east"},
        },
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
        "responsePayload": None,
    }


def run(rig: Rig, firings: int = 100, workers: int = 64) -> Accounting:
    from mini_scheduler.handlers import _runtime as runtime

    cron = cron_file(firings)
    claimed: list[dict[str, Any]] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        if not claimed:
            claimed.append(json.loads(json.dumps(params["Item"])))

    ticker_session = boto3.session.Session()
    ticker_session.events.register("before-parameter-build.dynamodb.PutItem", capture)
    bench: Bench = rig.bench(cron, workers=workers, session=ticker_session)
    session = boto3.session.Session()
    calls = CallLog()
    calls.watch(session)
    settings = Settings(state_table=bench.table, active_environment_store="dynamodb", region=REGION)
    recorder = build_recorder(
        settings,
        clients=Clients(REGION, session=session, pool=8),
        clock=bench.clock,
        metrics=rig.metrics,
    )

    def close_all(minute_index: int) -> tuple[list[float], list[float], int, int]:
        minute = FIRST_MINUTE + timedelta(minutes=minute_index)
        when = iso_millis(minute + timedelta(seconds=5))
        walls: list[float] = []
        cpus: list[float] = []
        rig.logs.take()
        rig.emf.take()
        for job in cron.jobs:
            event = _destination(Firing(job.name, minute).id, when)
            with contextlib.redirect_stdout(rig.emf):
                cpu, started = time.process_time(), time.perf_counter()
                answer = recorder.record(completion_from_event(event))
                walls.append(time.perf_counter() - started)
                cpus.append(time.process_time() - cpu)
                runtime.flush()  # the recorder handler flushes its metrics every invocation
            if not answer.get("recorded"):
                raise AssertionError(f"the recorder did not close {event}: {answer}")
        return walls, cpus, rig.logs.take()[0], rig.emf.take()[0]

    def get(key: dict[str, Any]) -> dict[str, Any]:
        item: dict[str, Any] = rig.admin.get_item(
            TableName=bench.table, Key=key, ConsistentRead=True
        )["Item"]
        return item

    rig.tick(bench, FIRST_MINUTE)
    close_all(0)
    second = FIRST_MINUTE + timedelta(minutes=1)
    claimed.clear()
    tick = rig.tick(bench, second)
    sample = Firing(cron.jobs[0].name, second)
    run_key = {"pk": {"S": f"RUN#{sample.job}"}, "sk": {"S": sample.sort_key}}
    state_key = {"pk": {"S": f"JOB#{sample.job}"}, "sk": {"S": "STATE"}}
    dispatched, state_started = get(run_key), get(state_key)
    calls.reset()
    walls, cpus, log_bytes, emf_bytes = close_all(1)
    ended, state_ended = get(run_key), get(state_key)
    watermark = get({"pk": {"S": "CONTROL"}, "sk": {"S": "WATERMARK#us-east-1/prod"}})
    rig.drop_table(bench.table)
    sizes = Sizes(
        claimed=item_size(claimed[0]),
        dispatched=item_size(dispatched),
        ended=item_size(ended),
        state_started=item_size(state_started),
        state_ended=item_size(state_ended),
        watermark=item_size(watermark),
    )
    n = len(cron.jobs)
    return Accounting(
        firings=n,
        tick=tick,
        sizes=sizes,
        units=units(sizes),
        recorder_calls={k: v / n for k, v in sorted(calls.calls.items())},
        recorder_wall=statistics.median(walls),
        recorder_cpu=statistics.fmean(cpus),
        recorder_log_bytes=log_bytes / n,
        recorder_emf_bytes=emf_bytes / n,
    )
