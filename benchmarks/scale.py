"""Section 8: a million firings a minute on paper, from what this run measured.

1,000,000 firings a minute is 16,667 a second. Nothing here runs at that rate; the bench takes
this run's figures there and checks them against Lambda's and DynamoDB's limits:

* Shards: at most 10 s of the ticker's CPU an invocation ("defaults that hold",
  ``benchmarks.budget``), at the CPU per firing of this run's largest tick, gives the firings a
  shard can take, at the template's ``TickerMemorySize`` and at 1,769 MB (one vCPU); the shards
  that takes, against ``FanoutShards``' ``MaxValue``. The parent tick is taken to 1,000,000
  jobs: its expansion (the measured parent's CPU beyond an empty tick's and its shard invokes)
  in proportion to its jobs, and an Invoke (the floor's CPU per call) per shard at that rate.
* Partitions: the partition keys are the claim store's own, as this run's ledger booked them
  (``benchmarks.accounting``: a steady tick fanned out to a few shards, the parent's and each
  shard's requests, and the recorder's closes; item by item, with the units their sizes cost).
  A partition named by a job (``RUN#<job>``, ``JOB#<job>``) takes the units one firing of its job
  costs there, at most once a second (the most a cron statement fires); every other partition
  is the stack's one (``WATCH``, ``CONTROL``): the parent's units once a minute, each shard's
  once per shard, the closes' per firing; except a kind with a part of its own in each key
  (``MARKS#<claim token>``: an item a claim batch), judged by the most one item took. An item
  that lists firings (a watch item) is sized
  again for a shard's firings (split where the store splits it, ``MAX_ITEM_BYTES``); a Query of
  another shared partition reads its items as the shards leave them (one watermark each).
  Each partition's units a second, spread over the minute, against DynamoDB's limits of 1,000
  write and 3,000 read units a second per partition; the largest item against its 400 KB. The
  partitions' writes of a minute all fall at the tick's start: the rows say what a second
  would be if they all fell in one.
* The table: its units a second against an on-demand table's default quota, 40,000 write and
  40,000 read request units a second (a quota AWS raises on request).
* The cost per million firings at that rate (``benchmarks.cost``, the shards as above), beside
  EventBridge Scheduler's $1.00.

The partitions are judged at 1,769 MB's shards, the fewer: at the template's memory a shard
takes a seventh as many firings (its own row).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from benchmarks import cost
from benchmarks.accounting import Accounting, Fanned
from benchmarks.budget import Capacity
from benchmarks.ledger import Entry, family, job_of, rru, wru
from benchmarks.table import Row, dollars, ratio, seconds
from benchmarks.throughput import CPU_BUDGET, VCPU_MB
from mini_scheduler.claims.dynamodb_watch import MAX_ITEM_BYTES

RATE = 1_000_000  # firings a minute
WCU = 1_000  # DynamoDB: write units a second, per partition
RCU = 3_000  # ... read units
ITEM_LIMIT = 400 * 1024  # DynamoDB: an item's bytes
TABLE_QUOTA = 40_000  # an on-demand table's default quota, read and write units a second
SECTION = "8 scale"


@dataclass(frozen=True)
class Partition:
    """One kind of partition at :data:`RATE`: its units a second, spread over the minute."""

    family: str
    per_job: bool  # one per job (its rate a job firing every second), else the stack's one
    writes: float  # units a second
    reads: float
    burst: float  # per job: as ``writes``; the stack's: a minute's writes in one second
    per_item: bool = False  # one per item (a claim batch's marks): its units all in a second


def shards(cpu: float, memory_mb: int, budget: float = CPU_BUDGET) -> int:
    """Shards for :data:`RATE` a minute, each within ``budget`` s of CPU at ``memory_mb``."""
    per_shard = budget * (memory_mb / VCPU_MB) / cpu if cpu > 0 else float(RATE)
    return max(1, math.ceil(RATE / max(1.0, math.floor(per_shard))))


def _scaled_item(entry: Entry, per_id: float, factor: float) -> float:
    """An item that lists firings, with ``factor`` times as many."""
    return entry.size + per_id * entry.listed * (factor - 1)


def _write_units(entry: Entry, per_id: float, factor: float) -> float:
    if not entry.listed:
        return entry.units
    size = _scaled_item(entry, per_id, factor)
    items = math.ceil(size / MAX_ITEM_BYTES)  # the store splits a long list
    return items * wru(size / items)


def _shared(acc: Accounting, fanned: Fanned, count: int) -> dict[str, list[float]]:
    """Units a minute on each of the stack's partitions, at ``count`` shards: [writes, reads]."""
    measured = fanned.shards
    factor = (RATE / count) / (fanned.firings / measured)  # a shard's firings, now and then
    per_id = acc.sizes.watch_per_firing
    written: dict[str, set[str]] = defaultdict(set)
    for shard in fanned.shard:
        for e in shard:
            if e.write and not e.listed:
                written[family(e.pk, acc.jobs)].add(e.sk)
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    each = count / measured
    weighted: list[tuple[Iterable[Entry], float, float]] = [
        (fanned.parent, 1.0, each),  # a parent deletes one listing item per shard
        *((entries, each, each) for entries in fanned.shard),
        (fanned.closes, RATE / fanned.firings, RATE / fanned.firings),
    ]
    for entries, weight, listing in weighted:
        for e in entries:
            kind = family(e.pk, acc.jobs)
            if not e.pk or job_of(e.pk, acc.jobs) is not None:
                continue
            if e.write:
                out[kind][0] += (listing if e.listed else weight) * _write_units(e, per_id, factor)
            else:
                more = len(written.get(kind, ())) * (each - 1)
                units = _read_units(e, per_id, factor, each, more)
                out[kind][1] += weight * units
    return out


def _per_job(acc: Accounting) -> dict[str, list[float]]:
    """Units of one firing on each kind of a job's partitions (the larger of an ``allow`` and
    a ``skip`` job's): [writes, reads]."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for jobs in (acc.allow_jobs, acc.skip_jobs):
        mine: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for e in acc.book:
            if job_of(e.pk, jobs) is not None:
                mine[family(e.pk, acc.jobs)][0 if e.write else 1] += e.units / len(jobs)
        for kind, (w, r) in mine.items():
            out[kind] = [max(out[kind][0], w), max(out[kind][1], r)]
    return out


def _per_item(acc: Accounting) -> dict[str, list[float]]:
    """The kinds of partition that hold one item each (a key with a part of its own that
    names no job, as ``MARKS#<claim token>``: the ledger saw more than one), and the most
    units one of them took, all its life: [writes, reads]. Their number grows with the rate,
    not their load."""
    units: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for e in acc.book:
        kind = family(e.pk, acc.jobs)
        if kind.endswith("#…"):
            units[kind].setdefault(e.pk, [0.0, 0.0])[0 if e.write else 1] += e.units
    return {
        kind: [max(u[0] for u in pks.values()), max(u[1] for u in pks.values())]
        for kind, pks in units.items()
        if len(pks) > 1
    }


def partitions(acc: Accounting, count: int) -> list[Partition]:
    """Every kind of partition the ledger saw, at :data:`RATE` and ``count`` shards."""
    out = [Partition(kind, True, w, r, w) for kind, (w, r) in sorted(_per_job(acc).items())]
    items = _per_item(acc)
    out += [Partition(kind, False, w, r, w, per_item=True) for kind, (w, r) in items.items()]
    if acc.fanned is not None:
        out += [
            Partition(kind, False, w / 60, r / 60, w)
            for kind, (w, r) in sorted(_shared(acc, acc.fanned, count).items())
            if kind not in items
        ]
    return out


def table_rate(acc: Accounting, count: int, write: bool) -> float:
    """The table's units a second at :data:`RATE`: each firing's on its job's partitions, and
    the stack's partitions'."""
    allow = acc.allow_jobs
    own = sum(e.units for e in acc.book if e.write is write and job_of(e.pk, allow) is not None)
    shared = _shared(acc, acc.fanned, count) if acc.fanned is not None else {}
    return (own / acc.firings * RATE + sum(v[0 if write else 1] for v in shared.values())) / 60


def largest_item(acc: Accounting, count: int) -> tuple[float, int] | None:
    """The bytes of an invocation's item that lists its firings at ``count`` shards, and the
    items the store splits it into; None when no item lists firings."""
    fanned = acc.fanned
    listing = [e for e in (fanned.shard[0] if fanned else ()) if e.write and e.listed]
    if fanned is None or not listing:
        return None
    factor = (RATE / count) / (fanned.firings / fanned.shards)
    size = max(_scaled_item(e, acc.sizes.watch_per_firing, factor) for e in listing)
    return size, math.ceil(size / MAX_ITEM_BYTES)


def _read_units(e: Entry, per_id: float, factor: float, each: float, more: float) -> float:
    """A read's units with ``each`` times the shards measured: a Query of listing items reads
    every shard's, each ``factor`` times longer; a Query of another of the stack's partitions,
    ``more`` items than it found (those the other shards leave there)."""
    consistency = e.units / rru(e.size)
    if e.listed:
        return consistency * rru(_scaled_item(e, per_id, factor) * each)
    if e.sk or e.items == 0:  # an item read, or a Query that found nothing
        return e.units
    return consistency * rru(e.size / e.items * (e.items + more))


@dataclass(frozen=True)
class Scale:
    capacity: Capacity
    shards_at_template: int
    shards_at_vcpu: int  # at 1,769 MB: the shards the partitions are judged at
    shards_max: int | None  # FanoutShards' MaxValue
    parent_cpu: float  # s of CPU at 1,769 MB of the parent tick of RATE jobs (in proportion)
    partitions: list[Partition]
    item: tuple[float, int] | None  # bytes of a shard's listing item, and its split
    table_writes: float
    table_reads: float
    bill: cost.Bill  # at 1,769 MB
    bill_at_template: cost.Bill


def parent_cpu(c: Capacity, empty: float, shards: int) -> float:
    """CPU seconds at one vCPU of the parent tick of :data:`RATE` jobs that invokes ``shards``:
    an empty tick's, the measured parent's expansion (its CPU beyond an empty tick's and its
    shard invokes) in proportion to its jobs, and an Invoke (the floor's CPU) a shard. The
    invokes follow the shards, not the jobs: 167 at a million, not a hundred times 40."""
    if not c.parent_jobs:
        return 0.0
    invokes = c.invoke_cpu * c.parent_invokes
    expansion = max(0.0, c.parent_cpu - empty - invokes)
    return empty + expansion * RATE / c.parent_jobs + c.invoke_cpu * shards


def measure(acc: Accounting, c: Capacity, inputs: cost.Inputs, shards_max: int | None) -> Scale:
    at_template = shards(c.cpu, c.memory_mb)
    at_vcpu = shards(c.cpu, VCPU_MB)
    scenario = cost.Scenario(RATE, True, 0)

    def bill(memory_mb: int, count: int) -> cost.Bill:
        spread = dataclasses.replace(
            inputs, memory_mb=memory_mb, shards=count, fanout_threshold=RATE // count
        )
        return cost.bill(scenario, spread)

    return Scale(
        capacity=c,
        shards_at_template=at_template,
        shards_at_vcpu=at_vcpu,
        shards_max=shards_max,
        parent_cpu=parent_cpu(c, inputs.cpu_empty, at_vcpu),
        partitions=partitions(acc, at_vcpu),
        item=largest_item(acc, at_vcpu),
        table_writes=table_rate(acc, at_vcpu, write=True),
        table_reads=table_rate(acc, at_vcpu, write=False),
        bill=bill(VCPU_MB, at_vcpu),
        bill_at_template=bill(c.memory_mb, at_template),
    )


def _shard_rows(s: Scale) -> list[Row]:
    c, most = s.capacity, s.shards_max
    out = [
        Row(
            SECTION,
            f"{RATE:,} firings a minute, a second",
            f"{RATE / 60:,.0f}",
            f"a default stack serves {c.serves():,} a minute (2 defaults)",
            ratio(RATE, c.serves()) if c.serves() else "",
        )
    ]
    for memory_mb, count in ((c.memory_mb, s.shards_at_template), (VCPU_MB, s.shards_at_vcpu)):
        per_shard = math.ceil(RATE / count)
        out.append(
            Row(
                SECTION,
                f"  shards at {memory_mb:,} MB, each <= {CPU_BUDGET:g} s of CPU "
                f"({c.cpu * 1000:.2f} ms/firing at 1 vCPU): {per_shard:,} firings a shard",
                f"{count:,}",
                f"FanoutShards at most {most}" if most else "FanoutShards: no most",
                ratio(count, most, digits=2) if most else "",
                f"<= {most} shards" if most else "",
                count <= most if most else None,
            )
        )
    out.append(
        Row(
            SECTION,
            f"  the parent tick of {RATE:,} jobs at {VCPU_MB:,} MB: CPU (its expansion in "
            f"proportion to the {c.parent_jobs:,} measured, an Invoke a shard: {s.shards_at_vcpu})",
            seconds(s.parent_cpu),
            f"the budget: {CPU_BUDGET:g} s of CPU",
            ratio(s.parent_cpu, CPU_BUDGET, digits=2),
            f"<= {CPU_BUDGET:g} s",
            s.parent_cpu <= CPU_BUDGET,
        )
    )
    return out


def _partition_rows(s: Scale) -> list[Row]:
    out = []
    at = f"{s.shards_at_vcpu:,} shards"
    for p in s.partitions:
        scope = "one per job, a job firing every second" if p.per_job else f"the stack's, {at}"
        if p.per_item:
            scope = "one per item, its units all in one second at most"
        for units, limit, what in ((p.writes, WCU, "write"), (p.reads, RCU, "read")):
            if units <= 0:
                continue
            burst = f"a minute's in one second: {p.burst:,.0f}" if what == "write" else ""
            out.append(
                Row(
                    SECTION,
                    f"  partition {p.family} ({scope}): {what} units a second",
                    f"{units:,.1f}" if units >= 1 else f"{units:.3f}",
                    burst
                    if not (p.per_job or p.per_item) and burst
                    else f"the limit: {limit:,} a partition",
                    ratio(units, limit, digits=2),
                    f"<= {limit:,}",
                    units <= limit,
                )
            )
    if s.item is not None:
        size, split = s.item
        out.append(
            Row(
                SECTION,
                f"  a shard's item listing its {math.ceil(RATE / s.shards_at_vcpu):,} firings "
                f"(the store splits past {MAX_ITEM_BYTES:,} B: {split} item(s))",
                f"{size:,.0f} B",
                f"DynamoDB's item limit: {ITEM_LIMIT:,} B",
                ratio(size / split, ITEM_LIMIT, digits=2),
                f"<= {ITEM_LIMIT:,} B an item",
                size / split <= ITEM_LIMIT,
            )
        )
    return out


def rows(s: Scale) -> list[Row]:
    out = _shard_rows(s) + _partition_rows(s)
    for units, what in ((s.table_writes, "write"), (s.table_reads, "read")):
        out.append(
            Row(
                SECTION,
                f"  the table's {what} units a second (on-demand)",
                f"{units:,.0f}",
                f"an on-demand table's default quota: {TABLE_QUOTA:,} (raised on request)",
                ratio(units, TABLE_QUOTA, digits=2),
                f"<= {TABLE_QUOTA:,}",
                units <= TABLE_QUOTA,
            )
        )
    eventbridge = cost.price("scheduler_invocation") * 1e6
    out.append(
        Row(
            SECTION,
            f"  $ per million firings, all in, at {VCPU_MB:,} MB and {s.shards_at_vcpu:,} shards",
            dollars(s.bill.per_million),
            f"EventBridge Scheduler: {dollars(eventbridge)}; at {s.capacity.memory_mb} MB and "
            f"{s.shards_at_template:,} shards: {dollars(s.bill_at_template.per_million)}",
            f"{s.bill.per_million / eventbridge:.1f}x",
            f"<= {dollars(cost.PER_MILLION_TARGET)}",
            s.bill.per_million <= cost.PER_MILLION_TARGET,
        )
    )
    return out
