"""The tick benchmarks' rig: AWS's DynamoDB Local, the stub Lambda, and tickers wired to both.

A ticker is built the way the Lambda handler builds it (``wiring.build_ticker`` with
``Clients``), with the handler's Powertools logger and EMF metrics, on a boto3 session of its
own whose ``before-call`` and ``after-call`` events are counted: requests per operation, and
the moment the last ``lambda.Invoke`` answered. boto3 reaches the emulators through
``AWS_ENDPOINT_URL_DYNAMODB`` and ``AWS_ENDPOINT_URL_LAMBDA``, set in this process for the rig's
lifetime only (and restored after). The active environment is an item in the state table
(``ACTIVE_ENVIRONMENT_STORE=dynamodb``), so no SSM is needed.

What the handler would log (JSON lines, EMF blobs) goes to byte counters instead of stdout: the
cost model prices CloudWatch Logs ingestion from them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import os
import threading
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from tests.emulators.dynamodb_local import DynamoDBLocal, make_client

from benchmarks.stub_lambda import StubLambda
from mini_scheduler.aws import Clients
from mini_scheduler.claims.dynamodb import create_state_table
from mini_scheduler.clock import FixedClock
from mini_scheduler.config import Settings
from mini_scheduler.jobs import CronFile, load
from mini_scheduler.metrics import Metrics
from mini_scheduler.model import Firing
from mini_scheduler.tick import Shard, Ticker, TickSummary
from mini_scheduler.wiring import build_ticker

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

REGION = "us-east-1"
ACCOUNT = "123456789012"
TARGET = "bench-target"
TICKER_FUNCTION = "mini-scheduler-prod-ticker"
MEMORY_MB = 256  # template.yaml, Globals.Function.MemorySize (the log lines carry it)
FIRST_MINUTE = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
_CHUNK = 2000  # jobs per cron text: cron.yaml's node limit is per file


def job_names(count: int, shards: int = 8, prefix: str = "bench-job") -> list[str]:
    """``count`` job names. When ``count`` divides by ``shards``, every shard of the fan-out
    (crc32 of the name) holds exactly ``count / shards`` of them."""
    names: list[str] = []
    per_shard = count // shards if count % shards == 0 else count
    held: Counter[int] = Counter()
    index = 0
    while len(names) < count:
        name = f"{prefix}-{index:05d}"
        index += 1
        bucket = zlib.crc32(name.encode()) % shards
        if held[bucket] < per_shard:
            held[bucket] += 1
            names.append(name)
    return names


def cron_file(
    jobs: int,
    statement: str = "0 * * * * ?",
    shards: int = 8,
    *,
    overlap: str = "allow",
    prefix: str = "bench-job",
    service: str = TARGET,
    options: str = "",
) -> CronFile:
    """``jobs`` Lambda jobs, by default firing at second 0 of every minute: a tick of them has
    ``jobs`` due firings, all due at once (nothing to wait for, everything to dispatch). When
    ``jobs`` divides by ``shards``, each shard of the fan-out holds as many. ``overlap``: the
    jobs' (``skip``: a firing takes its job's slot, and waits for the run before to end);
    ``service``: their target (the stub Lambda's function unless told); ``options``: more of each
    job's mapping, in YAML's flow style (``ecs: {container: app}``)."""
    names = job_names(jobs, shards, prefix)
    extra = f", {options}" if options else ""
    loaded: list[CronFile] = []
    for first in range(0, jobs, _CHUNK):
        lines = ["jobs:"]
        lines.extend(
            f'  - {{name: "{name}", cron: "{statement}", service: "{service}", '
            f'overlap: {overlap}, parameters: {{region: "east"}}{extra}}}'
            for name in names[first : first + _CHUNK]
        )
        loaded.append(load("\n".join(lines) + "\n", source=f"bench-{jobs}"))
    if not loaded:
        loaded.append(load("jobs: []\n", source="bench-0"))
    problems = [p for part in loaded for p in part.problems if p.level == "error"]
    if problems:
        raise RuntimeError(f"the benchmark's cron file did not load: {problems[0].message}")
    return dataclasses.replace(
        loaded[0],
        jobs=tuple(job for part in loaded for job in part.jobs),
        version=f"{prefix}-{jobs}-{statement}-{shards}-{overlap}"
        + ("" if service == TARGET else f"-{service}")
        + (f"-{options}" if options else ""),
    )


def firing_ids(cron: CronFile, minute: datetime, shard: Shard | None = None) -> set[str]:
    """The ids of the firings due in ``[minute, minute + 60 s)`` (of one shard's jobs)."""
    end = minute + timedelta(minutes=1)
    return {
        Firing(job.name, at).id
        for job in cron.jobs
        if shard is None or shard.holds(job.name)
        for at in job.expression.firings(minute, end, job.tz)
    }


@contextlib.contextmanager
def environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set (None: unset) environment variables for a while, then put back what was there."""
    saved = {key: os.environ.get(key) for key in values}
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Sink(io.TextIOBase):
    """A text stream that counts what is written to it (UTF-8 bytes, lines) and keeps nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0
        self.lines = 0
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        size = len(text.encode("utf-8", errors="replace"))
        with self._lock:
            self.bytes += size
            self.lines += text.count("\n")
        return len(text)

    def take(self) -> tuple[int, int]:
        """Bytes and lines since the last take."""
        with self._lock:
            taken = (self.bytes, self.lines)
            self.bytes = self.lines = 0
            return taken


@dataclass
class CallLog:
    """What a session sent: requests per ``service.Operation``, and when the last Lambda Invoke
    answered (``time.perf_counter``)."""

    calls: Counter[str] = field(default_factory=Counter)
    last_invoke: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def before(self, event_name: str, **_: Any) -> None:
        operation = event_name.removeprefix("before-call.")
        with self.lock:
            self.calls[operation] += 1

    def after_invoke(self, **_: Any) -> None:
        now = time.perf_counter()
        with self.lock:
            self.last_invoke = max(self.last_invoke, now)

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()
            self.last_invoke = 0.0

    def watch(self, session: boto3.session.Session) -> None:
        session.events.register("before-call", self.before)
        session.events.register("after-call.lambda.Invoke", self.after_invoke)


@dataclass
class Bench:
    """One ticker on one state table."""

    ticker: Ticker
    clock: FixedClock
    log: CallLog
    table: str
    session: boto3.session.Session
    cron: CronFile
    workers: int


@dataclass(frozen=True)
class TickRun:
    """One timed tick. Times from ``time.perf_counter``; ``cpu`` is this process's CPU time
    (all its threads: the ticker's; the stub and DynamoDB Local run in processes of their own)."""

    firings: int  # due firings expected (and checked) this tick
    workers: int
    wall: float  # the tick's start to its return
    to_last_dispatch: float  # the tick's start to the last Invoke's answer (or wall if none)
    cpu: float
    calls: dict[str, int]
    summary: TickSummary
    log_bytes: int
    log_lines: int
    emf_bytes: int
    emf_lines: int
    peak_in_flight: int
    shard_events: int
    dispatched_once: int  # firings the stub saw exactly once
    emulator_cpu: float | None = None  # DynamoDB Local's CPU seconds during the tick


def process_cpu(pid: int | None) -> float | None:
    """CPU seconds (user and system) process ``pid`` has used, from /proc (None elsewhere)."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after the command: state is field 3, utime 14 and stime 15 (proc(5)), in clock ticks
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Rig:
    dynamodb_endpoint: str
    stub: StubLambda
    admin: DynamoDBClient
    logs: Sink
    emf: Sink
    metrics: Metrics
    emulator_pid: int | None = None

    def new_table(self) -> str:
        table = f"bench-{uuid.uuid4().hex[:12]}"
        create_state_table(self.admin, table)
        return table

    def drop_table(self, table: str) -> None:
        with contextlib.suppress(Exception):
            self.admin.delete_table(TableName=table)

    def bench(
        self,
        cron: CronFile,
        *,
        workers: int,
        pool: int | None = None,
        fanout: bool = False,
        fanout_threshold: int = 2000,
        shards: int = 8,
        table: str | None = None,
        session: boto3.session.Session | None = None,
        lease: int | None = None,
    ) -> Bench:
        """A ticker as the handler builds it, on a fresh table, its session's calls counted.
        ``fanout``: the ticker runs as a Lambda function (AWS_LAMBDA_FUNCTION_NAME set), so past
        FANOUT_THRESHOLD it invokes itself once per shard. ``session``: one whose events the
        caller registered on already (boto3 clients copy their session's handlers when made)."""
        table = table or self.new_table()
        settings = Settings(
            state_table=table,
            active_environment_store="dynamodb",
            region=REGION,
            dispatch_workers=workers,
            function_name=TICKER_FUNCTION if fanout else None,
            fanout_threshold=fanout_threshold,
            fanout_shards=shards,
        )
        if lease is not None:  # CLAIM_LEASE_SECONDS: its watch items are due that much later
            settings = dataclasses.replace(settings, claim_lease_seconds=lease)
        session = session or boto3.session.Session()
        log = CallLog()
        log.watch(session)
        clock = FixedClock(FIRST_MINUTE)
        ticker = build_ticker(
            settings,
            clients=Clients(REGION, session=session, pool=pool or workers),
            clock=clock,
            account=ACCOUNT,
            metrics=self.metrics,
            cron=lambda: cron,
        )
        return Bench(ticker, clock, log, table, session, cron, workers)

    def tick(
        self,
        bench: Bench,
        minute: datetime,
        *,
        shard: Shard | None = None,
        expect: set[str] | None = None,
    ) -> TickRun:
        """Run one tick of ``minute`` and check that every expected firing reached the stub
        exactly once (AssertionError otherwise)."""
        from mini_scheduler.handlers import _runtime as runtime

        expected = firing_ids(bench.cron, minute, shard) if expect is None else expect
        bench.clock.set(minute)
        bench.log.reset()
        self.stub.reset()
        self.logs.take()
        self.emf.take()
        with contextlib.redirect_stdout(self.emf):  # Powertools prints EMF blobs to stdout
            emulator = process_cpu(self.emulator_pid)
            cpu = time.process_time()
            started = time.perf_counter()
            summary = bench.ticker.tick(minute, shard)
            ended = time.perf_counter()
            cpu = time.process_time() - cpu
            emulator_after = process_cpu(self.emulator_pid)
            runtime.flush()  # the handler's finally: the invocation's last metrics
        counts = self.stub.counts()
        once = _dispatched_once(counts["firings"], expected, minute, summary)
        log_bytes, log_lines = self.logs.take()
        emf_bytes, emf_lines = self.emf.take()
        last = bench.log.last_invoke
        return TickRun(
            firings=len(expected),
            workers=bench.workers,
            wall=ended - started,
            to_last_dispatch=(last - started) if last else ended - started,
            cpu=cpu,
            calls=dict(bench.log.calls),
            summary=summary,
            log_bytes=log_bytes,
            log_lines=log_lines,
            emf_bytes=emf_bytes,
            emf_lines=emf_lines,
            peak_in_flight=int(counts["peakInFlight"]),
            shard_events=len(counts["shards"]),
            dispatched_once=once,
            emulator_cpu=(
                emulator_after - emulator
                if emulator is not None and emulator_after is not None
                else None
            ),
        )


def _dispatched_once(
    seen: Mapping[str, int], expected: set[str], minute: datetime, summary: TickSummary
) -> int:
    """The expected firings the stub saw exactly once; AssertionError unless all, and no other."""
    once = sum(1 for fid in expected if seen.get(fid) == 1)
    twice = sorted(fid for fid, n in seen.items() if n != 1)
    stray = sorted(set(seen) - expected)
    if once != len(expected) or twice or stray:
        raise AssertionError(
            f"tick {minute:%H:%M} dispatched {once} of {len(expected)} firings exactly once; "
            f"more than once: {twice[:5]}; not due: {stray[:5]}; summary {summary.to_json()}"
        )
    return once


@contextlib.contextmanager
def _handler_logging(logs: Sink) -> Iterator[Metrics]:
    """The ticker handler's Powertools logger (JSON lines with the Lambda context keys that
    ``inject_lambda_context`` appends, less those the handlers drop) and EMF metrics, its
    output counted by ``logs``."""
    from mini_scheduler.handlers import _runtime as runtime

    handlers = [
        handler
        for name in ("mini_scheduler", runtime.logger.name)
        for handler in logging.getLogger(name).handlers
        if isinstance(handler, logging.StreamHandler)
    ]
    streams = [(handler, handler.setStream(logs)) for handler in set(handlers)]
    context = {
        "cold_start": False,
        "function_name": TICKER_FUNCTION,
        "function_memory_size": MEMORY_MB,
        "function_arn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{TICKER_FUNCTION}",
        "function_request_id": str(uuid.uuid4()),
    }
    for key in runtime.UNLOGGED_CONTEXT_KEYS:  # as the handlers drop them (trim_context_keys)
        context.pop(key)
    runtime.logger.append_keys(**context)
    metrics = runtime.powertools_metrics
    dimensions = dict(metrics.default_dimensions)
    runtime.set_dimensions(Environment="prod", Region=REGION)
    try:
        yield runtime.EmfMetrics()
    finally:  # leave the process's Powertools as it was
        metrics.clear_metrics()
        metrics.clear_default_dimensions()
        if dimensions:
            metrics.set_default_dimensions(**dimensions)
        runtime.logger.remove_keys(list(context))
        for handler, stream in streams:
            if stream is not None:
                handler.setStream(stream)


@contextlib.contextmanager
def rig(latency: float) -> Iterator[Rig]:
    """DynamoDB Local and the stub Lambda, this process's AWS variables pointing at them, and
    the handler's logging counted instead of printed."""
    with DynamoDBLocal() as dynamodb, StubLambda(latency) as stub:
        values: dict[str, str | None] = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_ENDPOINT_URL": None,
            "AWS_PROFILE": None,
            "AWS_ENDPOINT_URL_DYNAMODB": dynamodb.endpoint,
            "AWS_ENDPOINT_URL_LAMBDA": stub.endpoint,
            # As in Lambda: Powertools adds the trace id to every log line.
            "_X_AMZN_TRACE_ID": "Root=1-6750a1b2-0123456789abcdef01234567;"
            "Parent=0123456789abcdef;Sampled=0;Lineage=1:0123abcd:0",
        }
        logs, emf = Sink(), Sink()
        with environment(values), _handler_logging(logs) as metrics:
            admin = make_client(dynamodb.endpoint)
            try:
                yield Rig(dynamodb.endpoint, stub, admin, logs, emf, metrics, dynamodb.pid)
            finally:
                admin.close()
