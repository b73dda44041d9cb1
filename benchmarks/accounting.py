"""What one firing costs in requests, capacity units and log bytes, counted on a steady tick.

A tick of N firings (N ``overlap: allow`` jobs and one ``overlap: skip`` job, whose slot item is
sized apart) runs twice on one table (the first tick, and the recorder closing its runs, leave
the items a steady tick updates), then the recorder closes the second tick's runs from Lambda
destination records, one ``record`` per firing as the recorder Lambda would. Requests are
counted with botocore's ``before-call`` event on each session; item sizes are read back from
DynamoDB Local (the run as the claim wrote it at the moment of its ``Invoke``, before its mark;
then after the mark, and after the close) and sized by DynamoDB's documented rules
(``jobs.limits.item_size``, the one the loader uses: strings their UTF-8 length, numbers about
one byte per two digits plus one, maps and lists 3 bytes plus one per element).

The write model is the claim store's hot path at the floor (src/mini_scheduler/claims/
dynamodb.py): a write costs one write request unit per started KB of the larger of
the item before and after it, and no write is in a transaction or moves an index entry:

* claim: a PartiQL ``INSERT`` of the run (``BatchExecuteStatement``, 25 a request): wru(claimed);
* mark: a PartiQL ``UPDATE`` of the run in a batch: wru(max(claimed, dispatched)), no job-state
  write (a job's latest state is its latest run);
* close (the recorder): one ``UpdateItem`` of the run: wru(max(dispatched, ended));
* ``overlap: skip`` adds a conditional ``UpdateItem`` of the job's slot (``JOB#<job>`` /
  ``STATE``) at the claim and one at the close: 2 x wru(slot);
* per tick: the watermark ``UpdateItem``, and one watch item (``WATCH`` / ``<instant>#<token>``,
  the tick's firing ids grouped by instant) put, then deleted by a later sweep (a delete costs
  the item's size): 2 x wru(watch), shown as its share per firing too. The watch item is read
  back when the store wrote one, else modelled (the ids, the key, the TTL) and said so;
* reads: the sweep reads the watched runs (``BatchGetItem``, eventually consistent: half an RRU
  per started 4 KB of each run) and the due watch items (a consistent ``Query``); a tick also
  reads the control items and the active environment (consistent, one RRU each under 4 KB).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import statistics
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

import boto3
from boto3.dynamodb.types import TypeDeserializer

from benchmarks.rig import FIRST_MINUTE, REGION, TARGET, Bench, CallLog, Rig, TickRun, cron_file
from mini_scheduler.aws import Clients
from mini_scheduler.claims.dynamodb_watch import watch_item, watched
from mini_scheduler.config import Settings
from mini_scheduler.handlers.events.recorder import completion_from_event
from mini_scheduler.jobs import CronFile, limits, load
from mini_scheduler.model import Firing, firing_from_id, iso_millis
from mini_scheduler.wiring import build_recorder

KB = 1024
READ_UNIT = 4 * KB
SKIP_JOB = "bench-skip-job"  # the one overlap: skip job of the accounting tick
_PLAIN = TypeDeserializer()


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """The size DynamoDB bills for an item as the low-level client returns it."""
    plain = {name: _PLAIN.deserialize(cast(Any, value)) for name, value in item.items()}
    return limits.item_size(plain)


def wru(size: int) -> int:
    """Write request units of one standard write of an item of ``size`` bytes."""
    return max(1, math.ceil(size / KB))


def rru(size: float) -> int:
    """Read request units of one strongly consistent read of ``size`` bytes."""
    return max(1, math.ceil(size / READ_UNIT))


@dataclass(frozen=True)
class Sizes:
    """Bytes of the items a firing writes, read back from DynamoDB Local."""

    claimed: int  # the run item as the claim wrote it (read at its Invoke)
    dispatched: int  # after the mark (DISPATCHED)
    ended: int  # after the recorder closed it (SUCCEEDED)
    slot_taken: int  # overlap: skip: the job's slot item (JOB#<job>/STATE) at its Invoke
    slot_released: int  # ... after the recorder's close (0: no item)
    watermark: int
    watch_fixed: int  # a watch item's bytes beside its firing ids (keys, TTL, the empty list)
    watch_per_firing: float  # bytes one firing id adds to it
    watch_read_back: bool = True  # False: the store wrote no watch item; it is modelled

    @property
    def slot(self) -> int:
        return max(self.slot_taken, self.slot_released)

    def watch(self, firings: float) -> int:
        """Bytes of the watch item of a tick of ``firings``."""
        return math.ceil(self.watch_fixed + self.watch_per_firing * firings)


@dataclass(frozen=True)
class Units:
    """Write request units per firing, by step; units per tick, and the watch's."""

    claim: int
    mark: int
    close: int
    slot: int  # overlap: skip only: the slot taken at the claim, released at the close
    tick_writes: int  # the watermark
    tick_reads: float  # the control Query and the environment GetItem
    reads_per_firing: float  # the sweep's BatchGetItem of the watched run
    sizes: Sizes

    @property
    def per_firing(self) -> int:
        """An ``overlap: allow`` job's: claim + mark + close."""
        return self.claim + self.mark + self.close

    @property
    def per_firing_skip(self) -> int:
        """An ``overlap: skip`` job's: the same and its slot's two writes."""
        return self.per_firing + self.slot

    def watch_writes(self, firings: float) -> int:
        """The watch item of a tick of ``firings``: put, and deleted by a later sweep."""
        return 2 * wru(self.sizes.watch(firings)) if firings > 0 else 0

    def watch_reads(self, firings: float) -> int:
        """The sweep's consistent Query that reads the watch item back."""
        return rru(self.sizes.watch(firings)) if firings > 0 else 0


def units(sizes: Sizes) -> Units:
    return Units(
        claim=wru(sizes.claimed),  # the INSERT (batched)
        mark=wru(max(sizes.claimed, sizes.dispatched)),  # the UPDATE (batched), nothing else
        close=wru(max(sizes.dispatched, sizes.ended)),  # the recorder's UpdateItem
        slot=2 * wru(sizes.slot),  # take at the claim, release at the close
        tick_writes=wru(sizes.watermark),
        tick_reads=1 + 1,  # control Query and environment GetItem, consistent, under 4 KB
        reads_per_firing=rru(max(sizes.dispatched, sizes.ended)) / 2,  # eventually consistent
        sizes=sizes,
    )


def modelled_watch(firing_ids: list[str], at: Any, lease: timedelta) -> dict[str, Any]:
    """A watch item as the claim store writes it, for a store that wrote none yet."""
    return watch_item(firing_ids, at + lease, timedelta(days=30))


def watch_sizes(item: Mapping[str, Any]) -> tuple[int, float]:
    """A watch item's bytes beside its firing ids, and per firing id."""
    fixed = item_size({key: value for key, value in item.items() if key not in ("jobs", "firings")})
    return fixed, (item_size(item) - fixed) / max(1, len(watched(item)))


@dataclass(frozen=True)
class Accounting:
    firings: int  # overlap: allow firings closed by the recorder (the tick had one more)
    tick: TickRun
    sizes: Sizes
    units: Units
    watch_items: int  # watch items the accounting tick wrote (0: modelled)
    recorder_calls: dict[str, float]  # per firing
    recorder_wall: float  # median seconds per record (one recorder invocation)
    recorder_cpu: float  # mean CPU seconds per record
    recorder_log_bytes: float  # per firing: its JSON lines
    recorder_emf_bytes: float  # per firing: the EMF blob each invocation flushes

    @property
    def ticker_log_bytes(self) -> float:
        """Per firing: the ticker's JSON lines and EMF values."""
        return (self.tick.log_bytes + self.tick.emf_bytes) / max(1, self.tick.firings)


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


def accounting_cron(firings: int) -> CronFile:
    """``firings`` ``overlap: allow`` jobs (the bench's), and :data:`SKIP_JOB`, every minute."""
    cron = cron_file(firings)
    skip = load(
        f'jobs:\n  - {{name: "{SKIP_JOB}", cron: "0 * * * * ?", service: "{TARGET}", '
        'overlap: skip, parameters: {region: "east"}}\n',
        source="bench-skip",
    )
    if not skip.jobs:
        raise RuntimeError(f"the overlap: skip job did not load: {skip.problems}")
    return dataclasses.replace(
        cron, jobs=(*cron.jobs, *skip.jobs), version=f"{cron.version}+{SKIP_JOB}"
    )


def run(rig: Rig, firings: int = 100, workers: int = 64) -> Accounting:
    from mini_scheduler.claims.dynamodb_table import job_key, run_key
    from mini_scheduler.handlers import _runtime as runtime

    cron = accounting_cron(firings)
    allow = [job for job in cron.jobs if job.name != SKIP_JOB]
    skip = [job for job in cron.jobs if job.name == SKIP_JOB]
    second = FIRST_MINUTE + timedelta(minutes=1)
    sample, exclusive = Firing(allow[0].name, second), Firing(SKIP_JOB, second)
    at_invoke: dict[str, dict[str, Any] | None] = {}

    def get(key: Mapping[str, Any]) -> dict[str, Any] | None:
        item: dict[str, Any] | None = rig.admin.get_item(
            TableName=bench.table, Key=dict(key), ConsistentRead=True
        ).get("Item")
        return item

    def capture(params: dict[str, Any], **_: Any) -> None:
        """At an Invoke the claim is written and the mark is not: read the run (and the
        slot) as the claim left them."""
        firing_id = json.loads(params.get("Payload") or b"{}").get("firingId")
        if firing_id == sample.id:
            at_invoke["claimed"] = get(run_key(sample))
        elif firing_id == exclusive.id:
            at_invoke["slot"] = get(job_key(SKIP_JOB))

    ticker_session = boto3.session.Session()
    ticker_session.events.register("before-parameter-build.lambda.Invoke", capture)
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

    def close(jobs: list[Any], minute_index: int) -> tuple[list[float], list[float], int, int]:
        minute = FIRST_MINUTE + timedelta(minutes=minute_index)
        when = iso_millis(minute + timedelta(seconds=5))
        walls: list[float] = []
        cpus: list[float] = []
        rig.logs.take()
        rig.emf.take()
        for job in jobs:
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

    def found(key: Mapping[str, Any], what: str) -> dict[str, Any]:
        item = get(key)
        if item is None:
            raise AssertionError(f"no {what} at {key} in {bench.table}")
        return item

    rig.tick(bench, FIRST_MINUTE)
    close(list(cron.jobs), 0)
    tick = rig.tick(bench, second)
    claimed = at_invoke.get("claimed")
    if claimed is None:
        raise AssertionError(f"no run of {sample.id} when its Invoke was sent")
    dispatched = found(run_key(sample), "dispatched run")
    watches = [
        item
        for item in rig.admin.query(
            TableName=bench.table,
            KeyConditionExpression="pk = :watch",
            ExpressionAttributeValues={":watch": {"S": "WATCH"}},
            ConsistentRead=True,
        )["Items"]
        if sample.id in watched(item)
    ]
    calls.reset()
    walls, cpus, log_bytes, emf_bytes = close(allow, 1)
    recorder_calls = dict(calls.calls)
    close(skip, 1)
    ended = found(run_key(sample), "closed run")
    released = get(job_key(SKIP_JOB))
    watermark = found(
        {"pk": {"S": "CONTROL"}, "sk": {"S": f"WATERMARK#{REGION}/prod"}}, "watermark"
    )
    rig.drop_table(bench.table)
    n = len(allow)
    if watches:
        fixed, per_id = watch_sizes(watches[0])
    else:
        ids = sorted(Firing(job.name, second).id for job in cron.jobs)
        fixed, per_id = watch_sizes(
            modelled_watch(ids, second, timedelta(seconds=settings.claim_lease_seconds))
        )
    slot = at_invoke.get("slot")
    sizes = Sizes(
        claimed=item_size(claimed),
        dispatched=item_size(dispatched),
        ended=item_size(ended),
        slot_taken=item_size(slot) if slot else 0,
        slot_released=item_size(released) if released else 0,
        watermark=item_size(watermark),
        watch_fixed=fixed,
        watch_per_firing=per_id,
        watch_read_back=bool(watches),
    )
    return Accounting(
        firings=n,
        tick=tick,
        sizes=sizes,
        units=units(sizes),
        watch_items=len(watches),
        recorder_calls={k: v / n for k, v in sorted(recorder_calls.items())},
        recorder_wall=statistics.median(walls),
        recorder_cpu=statistics.fmean(cpus),
        recorder_log_bytes=log_bytes / n,
        recorder_emf_bytes=emf_bytes / n,
    )
