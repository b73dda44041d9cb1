"""What one firing costs in requests, request units and log bytes, counted on a steady tick.

A tick of N firings (N ``overlap: allow`` jobs and one ``overlap: skip`` job) runs once a minute
on one table, and after each tick the recorder closes its runs from Lambda destination records,
one ``record`` per firing as the recorder Lambda would (``benchmarks.recording``), until a tick
finds what a steady one finds: the items earlier ticks left, and the watch items of the runs
they claimed due for the sweep (as many minutes as the claim's lease takes). On that last tick
and its closes a :class:`~benchmarks.ledger.Ledger` books every item written and read and its
request units, from the items' sizes read back: whatever the claim store writes (claims, marks
or per-batch records, slots, watch items, watermarks), nothing here says what it should be.
The minute before it times the recorder (the ledger's reads would take its time).

* Write units per firing, "full history": a job's firing costs the writes on the partitions
  named by its job (``RUN#<job>``, ``JOB#<job>``) and its share (1 / (N + 1)) of the writes on
  partitions named by none (the watch items, the watermark); reads likewise.
* The cost model takes what an empty tick (nothing due, its own ledger) books as per tick, and
  per firing what a steady tick books beyond it; writes of items that list firings (watch
  items) it sizes again for each invocation's number of firings.
* The same steady state fanned out (``FANOUT_THRESHOLD`` under N, a few shards): the parent
  tick's and each shard's bookings, for ``benchmarks.scale``.

Requests are counted with botocore's ``before-call`` event on each session. A few items are
read back at known moments too, for the table's and the docs' item sizes: the run as the claim
wrote it (at its ``Invoke``), after the tick, after the close; the ``overlap: skip`` job's slot;
the watermark; a watch item (its bytes beside the firing ids it lists, and per id).
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import boto3

from benchmarks import recording
from benchmarks.ledger import Entry, Ledger, family, item_size, job_of, rru, total, wru
from benchmarks.rig import FIRST_MINUTE, REGION, Bench, CallLog, Rig, TickRun, cron_file, firing_ids
from mini_scheduler.claims.dynamodb_watch import WATCH, watch_item, watched
from mini_scheduler.config import Settings
from mini_scheduler.jobs import CronFile
from mini_scheduler.model import Firing
from mini_scheduler.tick import Shard

__all__ = ["Accounting", "Fanned", "Sizes", "item_size", "rru", "run", "watch_sizes", "wru"]
SKIP_PREFIX = "bench-skip"  # the overlap: skip job of the accounting tick
STEADY = math.ceil(Settings(state_table="bench").claim_lease_seconds / 60) + 1
"""Ticks until one sweeps the watch items of a tick before: the claim's lease, and one."""


@dataclass(frozen=True)
class Sizes:
    """Bytes of the items a firing writes, read back from DynamoDB Local."""

    claimed: int  # the run item as the claim wrote it (read at its Invoke)
    dispatched: int  # after the tick (its mark, where the store marks a run)
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


def watch_sizes(item: Mapping[str, Any]) -> tuple[int, float]:
    """A watch item's bytes beside its firing ids, and per firing id."""
    fixed = item_size({key: value for key, value in item.items() if key not in ("jobs", "firings")})
    return fixed, (item_size(item) - fixed) / max(1, len(watched(item)))


@dataclass(frozen=True)
class Fanned:
    """The steady tick fanned out: the parent's bookings, each shard's, and the closes'."""

    shards: int
    firings: int
    parent: tuple[Entry, ...]
    shard: tuple[tuple[Entry, ...], ...]
    closes: tuple[Entry, ...]


@dataclass(frozen=True)
class Accounting:
    firings: int  # overlap: allow firings of the steady tick
    skip_jobs: frozenset[str]  # its overlap: skip jobs (one)
    allow_jobs: frozenset[str]
    tick: TickRun
    sizes: Sizes
    book: tuple[Entry, ...]  # the steady tick's and its closes' items, written and read
    empty: tuple[Entry, ...]  # an empty tick's (nothing due)
    recorder_calls: dict[str, float]  # per firing
    recorder_wall: float  # median seconds per record (one recorder invocation)
    recorder_cpu: float  # mean CPU seconds per record
    recorder_log_bytes: float  # per firing: its JSON lines
    recorder_emf_bytes: float  # per firing: the EMF blob each invocation flushes
    fanned: Fanned | None = None
    watch_items: int = 0  # watch items the steady tick wrote (0: modelled)

    @property
    def jobs(self) -> frozenset[str]:
        return self.allow_jobs | self.skip_jobs

    @property
    def all_firings(self) -> int:
        return self.firings + len(self.skip_jobs)

    @property
    def ticker_log_bytes(self) -> float:
        """Per firing: the ticker's JSON lines and EMF values."""
        return (self.tick.log_bytes + self.tick.emf_bytes) / max(1, self.tick.firings)

    def shared(self, entry: Entry) -> bool:
        """On a partition no job's key names (the watch items, the control items)."""
        return job_of(entry.pk, self.jobs) is None

    def per_firing(self, write: bool, skip: bool = False) -> float:
        """Units per firing of an ``overlap: allow`` (``skip``) job, full history: those on
        its job's partitions, and its share of the shared ones."""
        jobs = self.skip_jobs if skip else self.allow_jobs
        own = total(self.book, write, lambda e: job_of(e.pk, jobs) is not None) / len(jobs)
        return own + total(self.book, write, self.shared) / self.all_firings

    def breakdown(self, write: bool, skip: bool = False) -> dict[tuple[str, str], float]:
        """:meth:`per_firing` by partition kind and operation."""
        jobs = self.skip_jobs if skip else self.allow_jobs
        out: dict[tuple[str, str], float] = defaultdict(float)
        for e in self.book:
            if e.write is write and (self.shared(e) or job_of(e.pk, jobs) is not None):
                share = self.all_firings if self.shared(e) else len(jobs)
                out[family(e.pk, self.jobs), e.operation] += e.units / share
        return dict(out)

    def per_tick(self, write: bool) -> float:
        """Units of a tick with nothing due."""
        return total(self.empty, write)

    def beyond_tick(self, write: bool) -> float:
        """Units per ``overlap: allow`` firing beyond an empty tick's, less the items that list
        firings (sized apart, per invocation: :meth:`listing`)."""
        allow = self.allow_jobs
        own = total(self.book, write, lambda e: job_of(e.pk, allow) is not None) / self.firings
        rest = total(self.book, write, lambda e: self.shared(e) and not e.listed)
        return own + max(0.0, rest - self.per_tick(write)) / self.all_firings

    def listing(self, write: bool) -> int:
        """Writes (reads) of items that list firings, a steady tick: the watch item put and
        deleted, and read."""
        return sum(1 for e in self.book if e.write is write and e.listed)


def accounting_cron(firings: int) -> CronFile:
    """``firings`` ``overlap: allow`` jobs (the bench's), and one ``overlap: skip`` job."""
    allow, skip = cron_file(firings), cron_file(1, overlap="skip", prefix=SKIP_PREFIX)
    return dataclasses.replace(
        allow, jobs=(*allow.jobs, *skip.jobs), version=f"{allow.version}+{skip.version}"
    )


@dataclass
class _Steady:
    """A bench whose ticker and recorder are booked by one ledger."""

    rig: Rig
    bench: Bench
    ledger: Ledger
    calls: CallLog
    closer: Any
    at_invoke: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    def get(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.rig.admin.get_item(
            TableName=self.bench.table, Key=dict(key), ConsistentRead=True
        ).get("Item")
        return item

    def close(self, minute: datetime) -> recording.Closing:
        return recording.close(
            self.rig, self.closer, sorted(firing_ids(self.bench.cron, minute)), minute
        )


def _steady(
    rig: Rig,
    cron: CronFile,
    workers: int,
    sampled: tuple[Firing, Firing] | None = None,
    **fanout: Any,
) -> _Steady:
    """A bench on a new table, its ticker's and recorder's requests booked by one ledger;
    ``sampled``: the run of the first firing and the slot of the second are read at their
    Invokes (the session's handlers are in place before its clients are made)."""
    table = rig.new_table()
    ledger = Ledger(rig.admin, table)
    ticker_session, recorder_session = boto3.session.Session(), boto3.session.Session()
    ledger.watch(ticker_session)
    ledger.watch(recorder_session)
    at_invoke: dict[str, dict[str, Any] | None] = {}
    if sampled is not None:
        _capture(rig, table, ticker_session, sampled, at_invoke)
    bench = rig.bench(cron, workers=workers, session=ticker_session, table=table, **fanout)
    calls = CallLog()
    calls.watch(recorder_session)
    closer = recording.recorder(rig, bench, recorder_session)
    return _Steady(rig, bench, ledger, calls, closer, at_invoke)


def _sizes(steady: _Steady, sample: Firing, skip: str, watches: list[dict[str, Any]]) -> Sizes:
    from mini_scheduler.claims.dynamodb_table import job_key, run_key

    def found(key: Mapping[str, Any], what: str) -> dict[str, Any]:
        item = steady.get(key)
        if item is None:
            raise AssertionError(f"no {what} at {key} in {steady.bench.table}")
        return item

    claimed = steady.at_invoke.get("claimed")
    if claimed is None:
        raise AssertionError(f"no run of {sample.id} when its Invoke was sent")
    watermark = found(
        {"pk": {"S": "CONTROL"}, "sk": {"S": f"WATERMARK#{REGION}/prod"}}, "watermark"
    )
    if watches:
        fixed, per_id = watch_sizes(watches[0])
    else:
        ids = sorted(Firing(job.name, sample.scheduled).id for job in steady.bench.cron.jobs)
        fixed, per_id = watch_sizes(watch_item(ids, sample.scheduled, timedelta(days=30)))
    slot, released = steady.at_invoke.get("slot"), steady.get(job_key(skip))
    return Sizes(
        claimed=item_size(claimed),
        dispatched=item_size(steady.at_invoke.get("dispatched") or claimed),
        ended=item_size(found(run_key(sample), "closed run")),
        slot_taken=item_size(slot) if slot else 0,
        slot_released=item_size(released) if released else 0,
        watermark=item_size(watermark),
        watch_fixed=fixed,
        watch_per_firing=per_id,
        watch_read_back=bool(watches),
    )


def _watches(steady: _Steady, firing_id: str) -> list[dict[str, Any]]:
    """The watch items that list ``firing_id``."""
    items = steady.rig.admin.query(
        TableName=steady.bench.table,
        KeyConditionExpression="pk = :watch",
        ExpressionAttributeValues={":watch": {"S": WATCH}},
        ConsistentRead=True,
    )["Items"]
    return [item for item in items if firing_id in watched(item)]


def _capture(
    rig: Rig,
    table: str,
    session: boto3.session.Session,
    sampled: tuple[Firing, Firing],
    at_invoke: dict[str, dict[str, Any] | None],
) -> None:
    """At an Invoke the claim is written and the rest of the tick is not: read the run (and
    the slot) as the claim left them."""
    from mini_scheduler.claims.dynamodb_table import job_key, run_key

    sample, skip = sampled

    def get(key: Mapping[str, Any]) -> dict[str, Any] | None:
        item: dict[str, Any] | None = rig.admin.get_item(
            TableName=table, Key=dict(key), ConsistentRead=True
        ).get("Item")
        return item

    def capture(params: dict[str, Any], **_: Any) -> None:
        firing_id = json.loads(params.get("Payload") or b"{}").get("firingId")
        if firing_id == sample.id:
            at_invoke["claimed"] = get(run_key(sample))
        elif firing_id == skip.id:
            at_invoke["slot"] = get(job_key(skip.job))

    session.events.register("before-parameter-build.lambda.Invoke", capture)


def _empty_tick(rig: Rig, workers: int) -> tuple[Entry, ...]:
    """The bookings of a tick with nothing due (the second on its table)."""
    never = cron_file(1, statement="0 0 0 1 1 ? 2099")
    steady = _steady(rig, never, workers)
    rig.tick(steady.bench, FIRST_MINUTE)
    steady.ledger.on = True
    rig.tick(steady.bench, FIRST_MINUTE + timedelta(minutes=1))
    steady.ledger.on = False
    rig.drop_table(steady.bench.table)
    return steady.ledger.take()


def _fanned(rig: Rig, cron: CronFile, workers: int, shards: int) -> Fanned:
    """The steady tick fanned out to ``shards`` (threshold 1), booked tick by tick."""
    steady = _steady(rig, cron, workers, None, fanout=True, fanout_threshold=1, shards=shards)
    parent: tuple[Entry, ...] = ()
    each: list[tuple[Entry, ...]] = []
    for k in range(STEADY):
        minute = FIRST_MINUTE + timedelta(minutes=k)
        steady.ledger.on = k == STEADY - 1
        parent = _take(steady.ledger, rig.tick(steady.bench, minute, expect=set()))
        each = [
            _take(steady.ledger, rig.tick(steady.bench, minute, shard=Shard(index, shards)))
            for index in range(shards)
        ]
        steady.close(minute)
    steady.ledger.on = False
    rig.drop_table(steady.bench.table)
    return Fanned(shards, len(cron.jobs), parent, tuple(each), steady.ledger.take())


def _take(ledger: Ledger, _: TickRun) -> tuple[Entry, ...]:
    return ledger.take()


def run(rig: Rig, firings: int = 100, workers: int = 64, shards: int = 2) -> Accounting:
    from mini_scheduler.claims.dynamodb_table import run_key

    cron = accounting_cron(firings)
    skip_jobs = frozenset(job.name for job in cron.jobs if job.overlap == "skip")
    allow_jobs = frozenset(job.name for job in cron.jobs) - skip_jobs
    last = FIRST_MINUTE + timedelta(minutes=STEADY - 1)
    sample = Firing(sorted(allow_jobs)[0], last)
    steady = _steady(rig, cron, workers, (sample, Firing(sorted(skip_jobs)[0], last)))
    timed = recording.Closing()
    for k in range(STEADY - 1):
        minute = FIRST_MINUTE + timedelta(minutes=k)
        rig.tick(steady.bench, minute)
        steady.calls.reset()
        timed = steady.close(minute)
    recorder_calls = dict(steady.calls.calls)
    steady.ledger.on = True
    tick = rig.tick(steady.bench, last)
    steady.at_invoke["dispatched"] = steady.get(run_key(sample))
    watches = _watches(steady, sample.id)
    steady.close(last)
    steady.ledger.on = False
    book = steady.ledger.take()
    sizes = _sizes(steady, sample, sorted(skip_jobs)[0], watches)
    rig.drop_table(steady.bench.table)
    n = len(cron.jobs)
    return Accounting(
        firings=len(allow_jobs),
        skip_jobs=skip_jobs,
        allow_jobs=allow_jobs,
        tick=tick,
        sizes=sizes,
        book=book,
        empty=_empty_tick(rig, workers),
        recorder_calls={k: v / n for k, v in sorted(recorder_calls.items())},
        recorder_wall=statistics.median(timed.walls),
        recorder_cpu=statistics.fmean(timed.cpus),
        recorder_log_bytes=timed.log_bytes / n,
        recorder_emf_bytes=timed.emf_bytes / n,
        fanned=_fanned(rig, cron, workers, shards) if shards > 1 else None,
        watch_items=len(watches),
    )


def described(units: Mapping[tuple[str, str], float]) -> str:
    """``family: Operation share, ...; family: ...``, largest first, for a row."""
    grouped: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for (fam, operation), share in units.items():
        if share >= 0.005:
            grouped[fam].append((share, operation))
    order = sorted(grouped, key=lambda fam: -sum(share for share, _ in grouped[fam]))
    return "; ".join(
        f"{fam}: "
        + ", ".join(f"{op} {share:.2f}" for share, op in sorted(grouped[fam], reverse=True))
        for fam in order
    )
