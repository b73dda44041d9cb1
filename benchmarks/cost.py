"""The cost model: a region's monthly bill for the scheduler, from what this run counted.

Nothing here is a measured price: the prices are us-east-1 list prices, written down with their
source and the date they were taken, and they must be checked before anyone quotes the result.
What the run measured is everything else: requests per tick and per firing (botocore's
``before-call``), write and read units (every item the ticker and the recorder wrote and read
on a steady tick, booked from its size read back: ``benchmarks.accounting``), the tick's wall
and CPU time as its firings grow, the recorder's time per run, and the bytes the handlers log
(JSON lines, EMF metrics). The jobs are ``overlap: allow``. A tick's units are an empty tick's;
a firing's, what a steady tick books beyond them, per firing; an item that lists the firings of
an invocation (a watch item) is sized again for each invocation's firings (split where the
store splits it), and written and read as many times an invocation as the steady tick did.

A month is 730 hours: 43,800 ticks (one a minute). Jobs firing hourly are spread over the hour
(n/60 firings a tick); every minute, all n fire in every tick. Past FANOUT_THRESHOLD a tick fans
out to FANOUT_SHARDS invocations of its own. TICK_LEAD_SECONDS=60 makes every tick that has a
firing due wait for it (the firings at second 0 of the next minute: ~60 s per invocation; each
shard waits too); a tick with nothing due returns at once.

The recorder closes one run an invocation, or as many as the ``BatchSize`` of an SQS event
source the template gives it (``benchmarks.defaults``): its requests, its Lambda platform lines
and the metrics it flushes once an invocation are shared by the runs of a batch; its time is
per run, as measured.

Lambda time is billed on the larger of the measured wall time and the CPU time the tick needs
at the function's share of a vCPU (memory / 1,769 MB): a CPU-bound tick runs slower at 256 MB
than on this machine. The ticker's memory is template.yaml's ``TickerMemorySize``, the
recorder's the ``Globals`` one, and their GB-seconds are priced for the template's
``Architectures`` (arm64: 20% less than x86_64). The CPU time is this machine's (x86_64): a
Graviton core runs this Python code at about the same speed, which the model assumes and this
machine cannot measure. The table's target rows (issue 28) are the cost per million firings
of 10,000 jobs every minute (lead 0), at most $1.00 (EventBridge Scheduler's price per
million), and the bytes logged per firing, at most 400. Not included: the targets' own cost
(the same with either scheduler), the free tiers of Lambda and DynamoDB, CloudWatch alarms
and dashboard (fixed, a few dollars), SSM GetParameter (standard throughput is free; the bench
reads the environment from DynamoDB).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from benchmarks.accounting import Accounting, described
from benchmarks.ledger import rru, wru
from benchmarks.table import Row, dollars
from benchmarks.throughput import VCPU_MB, Results
from mini_scheduler.claims.dynamodb_watch import MAX_ITEM_BYTES

PRICES_TAKEN = (
    "us-east-1 list prices as published in 2025 (DynamoDB on-demand after its 2024-11-01 cut), "
    "written down on 2026-11-30 without internet access"
)
PRICES = {
    # name: (USD, unit, source)
    "lambda_request": (0.20 / 1e6, "per request", "https://aws.amazon.com/lambda/pricing/"),
    "lambda_gb_second": (
        0.0000166667,
        "per GB-second, x86",
        "https://aws.amazon.com/lambda/pricing/",
    ),
    "lambda_gb_second_arm64": (
        0.0000133334,
        "per GB-second, arm64 (Graviton)",
        "https://aws.amazon.com/lambda/pricing/",
    ),
    "dynamodb_wru": (
        0.625 / 1e6,
        "per write request unit, on-demand",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "dynamodb_rru": (
        0.125 / 1e6,
        "per read request unit, on-demand",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "dynamodb_gb_month": (
        0.25,
        "per GB-month stored (Standard table class)",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "scheduler_invocation": (
        1.00 / 1e6,
        "per EventBridge Scheduler invocation after 14M free a month",
        "https://aws.amazon.com/eventbridge/pricing/",
    ),
    "sqs_request": (
        0.40 / 1e6,
        "per SQS request (standard queue, 64 KB chunk), after 1M free a month",
        "https://aws.amazon.com/sqs/pricing/",
    ),
    "logs_gb": (
        0.50,
        "per GB ingested, CloudWatch Logs Standard",
        "https://aws.amazon.com/cloudwatch/pricing/",
    ),
}


def queue_requests(batch: int) -> float:
    """SQS requests per run when the recorder reads a completion queue (``batch`` > 1): the
    destination's SendMessage, and its share of a ReceiveMessage and a DeleteMessageBatch (10
    messages each at most). The event source's idle long polls, a few hundred thousand a month
    whatever the load, are left out. Nothing with no queue (``batch`` 1: an Invoke a run)."""
    return 0.0 if batch <= 1 else 1.0 + 2.0 / min(batch, 10)


SCHEDULER_FREE = 14_000_000  # EventBridge Scheduler invocations free each month (per account)
PER_MILLION_TARGET = 1.00  # issue 28: USD per million firings, all in (EventBridge Scheduler's)
LOG_BYTES_TARGET = 400  # issue 28: bytes logged per firing, ticker and recorder
TARGET_SCENARIO = (10_000, True, 0)  # jobs, every minute, lead: the scenario the target judges
HOURS = 730
TICKS = HOURS * 60
GB = 1024**3
ITEM_OVERHEAD = 100  # bytes DynamoDB adds to each item for storage
# START, END and REPORT lines Lambda writes for every invocation (text format), sized from a
# typical REPORT line at 256 MB: the ticker's; the recorder's only when the template's
# RecorderPlatformLogs is not WARN (benchmarks.defaults).
PLATFORM_LINES = (
    "START RequestId: 0f3c2b1a-1111-2222-3333-444455556666 Version: $LATEST\n"
    "END RequestId: 0f3c2b1a-1111-2222-3333-444455556666\n"
    "REPORT RequestId: 0f3c2b1a-1111-2222-3333-444455556666\tDuration: 41.27 ms\t"
    "Billed Duration: 42 ms\tMemory Size: 256 MB\tMax Memory Used: 98 MB\t\n"
)


def price(name: str) -> float:
    return PRICES[name][0]


@dataclass(frozen=True)
class Scenario:
    jobs: int
    every_minute: bool
    lead: int  # TICK_LEAD_SECONDS

    @property
    def label(self) -> str:
        rhythm = "every minute" if self.every_minute else "hourly"
        return f"{self.jobs:,} jobs {rhythm}, lead {self.lead}"

    @property
    def firings(self) -> float:
        """Firings a month."""
        return self.jobs * HOURS * (60 if self.every_minute else 1)

    @property
    def per_tick(self) -> float:
        return self.jobs if self.every_minute else self.jobs / 60

    @property
    def busy(self) -> float:
        """The share of ticks with at least one firing due (hourly jobs spread over the hour)."""
        return 1.0 if self.every_minute else 1 - (59 / 60) ** self.jobs


SCENARIOS = tuple(
    Scenario(jobs, minute, lead)
    for jobs in (100, 10_000)
    for minute in (False, True)
    for lead in (0, 60)
)


@dataclass(frozen=True)
class Inputs:
    """What the run measured, in the units the model needs."""

    memory_mb: int
    wall_empty: float  # s, a tick with nothing due
    wall_per_firing: float  # s, marginal
    cpu_empty: float
    cpu_per_firing: float
    parent_wall: float  # s, a fan-out parent tick
    parent_cpu: float
    fanout_threshold: int
    shards: int
    tick_requests: int
    firing_requests: float
    wru_per_firing: float
    wru_per_tick: float
    rru_per_tick: float
    run_item_bytes: int  # the run record as it stays for RUN_TTL_DAYS
    ticker_log_bytes_per_firing: float
    tick_log_bytes: float  # an empty tick's lines and EMF
    recorder_wall: float  # s per recorder invocation, measured
    recorder_cpu: float  # CPU s per recorder invocation, measured
    recorder_log_bytes: float  # per run: its JSON lines
    platform_log_bytes: int  # per ticker invocation
    run_ttl_days: int = 30
    recorder_memory_mb: int | None = None  # None: memory_mb
    rru_per_firing: float = 0.0  # the sweep's read of each watched run, and the rest
    watch_fixed_bytes: int = 0  # a watch item beside its firing ids (0 and 0: no watch item)
    watch_bytes_per_firing: float = 0.0
    listing_writes: float = 2  # writes of a watch item an invocation (put, then deleted)
    listing_reads: float = 1  # ... and its reads (the sweep's Query)
    recorder_batch: int = 1  # runs a recorder invocation closes
    recorder_emf_bytes: float = 0.0  # the metrics a recorder invocation flushes
    recorder_platform_bytes: int | None = None  # per run; None: platform_log_bytes
    architecture: str = "x86_64"  # the functions': prices their GB-seconds

    @property
    def gb_second(self) -> float:
        """The price of a GB-second on the functions' architecture."""
        return price(
            "lambda_gb_second_arm64" if self.architecture == "arm64" else "lambda_gb_second"
        )

    @property
    def recorder_platform(self) -> float:
        """Lambda's platform lines per run: its invocation's (0 when RecorderPlatformLogs
        leaves them out), shared by a batch."""
        if self.recorder_platform_bytes is None:
            return self.platform_log_bytes / self.recorder_batch
        return self.recorder_platform_bytes / self.recorder_batch

    @property
    def recorder_logs(self) -> float:
        """Bytes the recorder logs per run: its lines, and its invocation's metrics and
        platform lines shared by a batch."""
        return self.recorder_log_bytes + self.recorder_emf_bytes / self.recorder_batch

    @property
    def log_bytes_per_firing(self) -> float:
        """Bytes logged per firing: the ticker's, and the recorder's with its platform lines."""
        return self.ticker_log_bytes_per_firing + self.recorder_logs + self.recorder_platform

    @property
    def vcpu(self) -> float:
        return self.memory_mb / VCPU_MB

    @property
    def recorder_gb(self) -> float:
        return (self.recorder_memory_mb or self.memory_mb) / 1024

    @property
    def recorder_seconds(self) -> float:
        """Billed seconds of one recorder invocation."""
        vcpu = (self.recorder_memory_mb or self.memory_mb) / VCPU_MB
        return max(self.recorder_wall, self.recorder_cpu / vcpu)

    def watch_units(self, firings: float) -> tuple[int, int]:
        """WRU (put and delete) and RRU (the sweep's Query) of the watch item of an invocation
        dispatching ``firings``."""
        if firings <= 0 or not (self.watch_fixed_bytes or self.watch_bytes_per_firing):
            return 0, 0
        size = self.watch_fixed_bytes + self.watch_bytes_per_firing * firings
        items = math.ceil(size / MAX_ITEM_BYTES)  # the store splits a long list
        writes = round(self.listing_writes * items * wru(math.ceil(size / items)))
        return writes, round(self.listing_reads * rru(size))

    def tick_seconds(self, firings: float) -> float:
        """Billed seconds of one ticker invocation dispatching ``firings``."""
        wall = self.wall_empty + self.wall_per_firing * firings
        cpu = self.cpu_empty + self.cpu_per_firing * firings
        return max(wall, cpu / self.vcpu)


def inputs(
    results: Results,
    accounting: Accounting,
    memory_mb: int,
    recorder_memory_mb: int | None = None,
    recorder_platform_lines: bool = True,
    architecture: str = "x86_64",
    recorder_batch: int = 1,
) -> Inputs:
    empty = results.best(results.empty)
    large = results.best(results.concurrent[results.largest])
    cpu_empty = min(r.cpu for r in results.empty)
    fanned = results.default_fanout
    parent = min(fanned.parent, key=lambda r: r.wall) if fanned else empty
    spec = results.plan.fanout
    per_firing = results.per_firing_calls()
    acc = accounting
    return Inputs(
        memory_mb=memory_mb,
        wall_empty=empty.wall,
        wall_per_firing=max(0.0, large.wall - empty.wall) / large.firings,
        cpu_empty=cpu_empty,
        cpu_per_firing=results.cpu_per_firing(),
        parent_wall=parent.wall,
        parent_cpu=parent.cpu,
        fanout_threshold=spec.threshold if spec else 2000,
        shards=spec.shards if spec else 8,
        tick_requests=sum(empty.calls.values()),
        firing_requests=sum(per_firing.values()),
        wru_per_firing=acc.beyond_tick(write=True),
        wru_per_tick=acc.per_tick(write=True),
        rru_per_tick=acc.per_tick(write=False),
        run_item_bytes=acc.sizes.ended + ITEM_OVERHEAD,
        ticker_log_bytes_per_firing=acc.ticker_log_bytes,
        tick_log_bytes=empty.log_bytes + empty.emf_bytes,
        recorder_wall=acc.recorder_wall,
        recorder_cpu=acc.recorder_cpu,
        recorder_log_bytes=acc.recorder_log_bytes,
        recorder_emf_bytes=acc.recorder_emf_bytes,
        recorder_batch=recorder_batch,
        platform_log_bytes=len(PLATFORM_LINES.encode()),
        recorder_platform_bytes=None if recorder_platform_lines else 0,
        architecture=architecture,
        recorder_memory_mb=recorder_memory_mb,
        rru_per_firing=acc.beyond_tick(write=False),
        watch_fixed_bytes=acc.sizes.watch_fixed,
        watch_bytes_per_firing=acc.sizes.watch_per_firing,
        listing_writes=acc.listing(write=True),
        listing_reads=acc.listing(write=False),
    )


@dataclass(frozen=True)
class Bill:
    scenario: Scenario
    ticker: float  # Lambda: requests and GB-seconds of the ticks (and shards)
    recorder: float  # Lambda: one invocation per run, or per batch of runs
    dynamodb: float  # writes, reads, storage of RUN_TTL_DAYS of runs
    logs: float
    schedule: float  # the ticker's own EventBridge Scheduler schedule
    eventbridge: float  # the alternative: one EventBridge Scheduler schedule per job
    invocations: float  # ticker invocations a month
    gb_seconds: float

    @property
    def total(self) -> float:
        return self.ticker + self.recorder + self.dynamodb + self.logs + self.schedule

    @property
    def per_million(self) -> float:
        """USD per million firings, all in."""
        return self.total / (self.scenario.firings / 1e6)


def bill(s: Scenario, i: Inputs) -> Bill:
    gb = i.memory_mb / 1024
    fans_out = s.per_tick > i.fanout_threshold
    wait = float(s.lead) * s.busy  # each invocation with a firing due waits for it
    if fans_out:
        share = s.per_tick / i.shards
        per_tick = max(i.parent_wall, i.parent_cpu / i.vcpu) + i.shards * (
            i.tick_seconds(share) + wait
        )
        invocations = TICKS * (1 + i.shards)
        dispatching, per_invocation = i.shards, share
    else:
        per_tick = i.tick_seconds(s.per_tick) + wait
        invocations = TICKS
        dispatching, per_invocation = 1, s.per_tick / s.busy  # firings of a busy tick
    watch_writes, watch_reads = i.watch_units(per_invocation)
    watched = TICKS * s.busy * dispatching  # invocations that write a watch item
    gb_seconds = TICKS * per_tick * gb
    ticker = invocations * price("lambda_request") + gb_seconds * i.gb_second
    recorder = s.firings * (
        price("lambda_request") / i.recorder_batch
        + i.recorder_seconds * i.recorder_gb * i.gb_second
        + queue_requests(i.recorder_batch) * price("sqs_request")
    )
    writes = s.firings * i.wru_per_firing + TICKS * i.wru_per_tick + watched * watch_writes
    reads = TICKS * i.rru_per_tick + s.firings * i.rru_per_firing + watched * watch_reads
    stored = s.firings / (HOURS / 24) * i.run_ttl_days * i.run_item_bytes / GB
    dynamodb = (
        writes * price("dynamodb_wru")
        + reads * price("dynamodb_rru")
        + stored * price("dynamodb_gb_month")
    )
    log_bytes = (
        s.firings * i.log_bytes_per_firing
        + TICKS * i.tick_log_bytes
        + invocations * i.platform_log_bytes
    )
    logs = log_bytes / GB * price("logs_gb")
    schedule = max(0.0, TICKS - SCHEDULER_FREE) * price("scheduler_invocation")
    eventbridge = max(0.0, s.firings - SCHEDULER_FREE) * price("scheduler_invocation")
    return Bill(s, ticker, recorder, dynamodb, logs, schedule, eventbridge, invocations, gb_seconds)


def bills(i: Inputs) -> list[Bill]:
    return [bill(s, i) for s in SCENARIOS]


def rows(i: Inputs) -> list[Row]:
    out = []
    for b in bills(i):
        ratio = f"{b.total / b.eventbridge:.1f}x" if b.eventbridge > 0 else "- (EB free tier)"
        out.append(
            Row(
                "5 cost",
                f"$/month/region, {b.scenario.label} ({b.scenario.firings / 1e6:,.2f}M firings)",
                dollars(b.total),
                f"EventBridge Scheduler: {dollars(b.eventbridge)}",
                ratio,
            )
        )
    return [*out, per_million_row(i), log_row(i)]


def per_million_row(i: Inputs) -> Row:
    """Issue 28's target: the cost per million firings of 10,000 jobs every minute."""
    target = next(b for b in bills(i) if _key(b.scenario) == TARGET_SCENARIO)
    eventbridge = price("scheduler_invocation") * 1e6
    return Row(
        "5 cost",
        f"$ per million firings, all in, {target.scenario.label}",
        dollars(target.per_million),
        f"EventBridge Scheduler: {dollars(eventbridge)} per million",
        f"{target.per_million / eventbridge:.2f}x",
        f"<= {dollars(PER_MILLION_TARGET)}",
        target.per_million <= PER_MILLION_TARGET,
    )


def log_row(i: Inputs) -> Row:
    batch = f", {i.recorder_batch} runs an invocation" if i.recorder_batch > 1 else ""
    return Row(
        "5 cost",
        f"log bytes per firing, ticker (its lines, a share of the tick's) and recorder{batch}",
        f"{i.log_bytes_per_firing:.0f} B",
        f"ticker {i.ticker_log_bytes_per_firing:.0f} + recorder {i.recorder_logs:.0f} + its "
        f"platform lines {i.recorder_platform:.0f}",
        "",
        f"<= {LOG_BYTES_TARGET} B",
        i.log_bytes_per_firing <= LOG_BYTES_TARGET,
    )


def _key(s: Scenario) -> tuple[int, bool, int]:
    return s.jobs, s.every_minute, s.lead


def accounting_line(accounting: Accounting) -> str:
    """The booked writes of an ``overlap: allow`` firing, by partition and operation."""
    return described(accounting.breakdown(write=True))


def model_lines(i: Inputs, accounting: Accounting) -> list[str]:
    """The cost model's inputs and breakdown, for docs/performance-and-cost.md to quote."""
    sizes = accounting.sizes
    recorder_mb = i.recorder_memory_mb or i.memory_mb
    watch = "read back" if sizes.watch_read_back else "modelled: the store wrote none yet"
    lines = [
        f"Cost model (us-east-1, 730 h/month, {i.architecture}; ticker at {i.memory_mb} MB = "
        f"{i.vcpu:.3f} vCPU, recorder at {recorder_mb} MB; {PRICES_TAKEN}: check them "
        "before quoting):",
        f"  per tick (an empty one): {i.tick_requests} requests, {i.wru_per_tick:g} WRU + "
        f"{i.rru_per_tick:g} RRU, {i.wall_empty * 1000:.0f} ms wall / "
        f"{i.cpu_empty * 1000:.0f} ms CPU, {i.tick_log_bytes:.0f} B of logs; per invocation "
        f"that dispatches k firings, a watch item of {sizes.watch_fixed} + "
        f"{sizes.watch_per_firing:.1f} k B ({watch}): {i.listing_writes:g} writes, "
        f"{i.listing_reads:g} reads",
        f"  per firing: {i.firing_requests:.2f} requests on the hot path; "
        f"{i.wru_per_firing:.2f} WRU and {i.rru_per_firing:.2f} RRU beyond an empty tick's "
        f"(booked: {accounting_line(accounting)}); items: claimed {sizes.claimed} B, after "
        f"the tick {sizes.dispatched} B, ended {sizes.ended} B, slot {sizes.slot} B; "
        f"ticker {i.wall_per_firing * 1000:.1f} ms wall / {i.cpu_per_firing * 1000:.1f} ms CPU; "
        f"recorder {i.recorder_seconds * 1000:.0f} ms billed, {i.recorder_batch} run(s) an "
        f"invocation; logs {i.log_bytes_per_firing:.0f} B (ticker "
        f"{i.ticker_log_bytes_per_firing:.0f}, recorder {i.recorder_logs:.0f}, the recorder's "
        f"Lambda platform lines {i.recorder_platform:.0f}; the ticker's "
        f"{i.platform_log_bytes} an invocation); storage {i.run_item_bytes} B for "
        f"{i.run_ttl_days} days",
        "",
        f"  {'scenario':<34} {'ticker':>9} {'recorder':>9} {'DynamoDB':>9} {'logs':>9} "
        f"{'schedule':>9} {'total':>10} {'$/M':>7} | {'EB Scheduler':>12} | "
        f"{f'total @{VCPU_MB} MB':>15}",
    ]
    at_vcpu = bills(dataclasses.replace(i, memory_mb=VCPU_MB, recorder_memory_mb=VCPU_MB))
    lines.extend(
        f"  {b.scenario.label:<34} {dollars(b.ticker):>9} {dollars(b.recorder):>9} "
        f"{dollars(b.dynamodb):>9} {dollars(b.logs):>9} {dollars(b.schedule):>9} "
        f"{dollars(b.total):>10} {dollars(b.per_million):>7} | {dollars(b.eventbridge):>12} | "
        f"{dollars(v.total):>15}"
        for b, v in zip(bills(i), at_vcpu, strict=True)
    )
    lines.append("  prices:")
    lines.extend(
        f"    {name}: ${value:.10g} {unit} ({source})"
        for name, (value, unit, source) in PRICES.items()
    )
    return lines
