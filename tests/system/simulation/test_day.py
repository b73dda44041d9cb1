"""A simulated day: 1,440 ticks in each of two regions, 200 jobs, failovers, faults, a recorder.

The day is Sunday 25 October 2026, when Europe falls back (London 02:00 BST -> 01:00 GMT, Berlin
03:00 CEST -> 02:00 CET, both at 01:00 UTC): jobs in those zones meet a repeated hour. 200 jobs
mix every-15-seconds, every-minute, ranges (one wrapping midnight), hourly, daily, weekday, ``L``,
``W`` and ``#`` statements over nine zones, with every misfire and overlap policy, Lambda and
flow targets and short timeouts (about 80,000 firings). Seeded: the seed is printed, and
``SIM_SEED=<n>`` replays a run exactly.

Two regions, prod (us-east-1) and DR (us-west-2), each with its own claim store and environment
store (memory stores, for speed: exclusivity on a real engine is proved on DynamoDB Local in
tests/system/integration and tests/system/faults). Every 3 hours both stores are switched to the
other region between two ticks. Ticks arrive 0-20 s into their minute (1% up to 50 s; 0.5% twice);
containers are replaced at random (cold: no environment read yet), and once in the day each region
loses SSM for 5-20 minutes, starting with a cold container, so its ticks fail closed and the misfire
policy recovers the minutes. A recorder closes most runs (SUCCEEDED or FAILED) after a random time;
about one run in eight never reports, and the sweep times it out.

Faults model the AWS SDK honestly: every AWS call the stores and dispatchers make is wrapped, and
each attempt meets a throttling or 5xx fault with probability 5%, retried like the SDK
(``aws.client_config``: the attempts botocore makes with it); only a call whose every attempt
fails escapes as the store's or dispatcher's error. On top of that, 0.5% of the claims, skip
records, environment reads and dispatches fail past the retries, to exercise the recovery paths:
the watermark held, misfire policies, failing closed, runs FAILED with the dispatch error. Never
on ``mark_dispatched``: a firing dispatched whose mark fails for good is the one case the design
documents as dispatched twice (docs/guarantees.md, "The guarantee, exactly": the takeover
dispatches it again after the lease), so it is not something this simulation could hold to
"never twice". A fault here strikes before the request reaches AWS; a write applied whose answer
was lost is tested on DynamoDB Local in tests/system/faults/test_dynamodb.py.

The tick's thread pool runs each task as it is submitted (``_InlineExecutor``): the clock
readings and the order of the calls then depend on the seed alone, so a run replays exactly;
concurrency itself is proved on DynamoDB Local.

The check (docs/guarantees.md): in each region, every firing of a minute that one of its
ticks handled while active (the tick's window, and the misfires between its watermark and the
window) ends in exactly one of: dispatched once (then SUCCEEDED, FAILED, TIMED_OUT, or still
DISPATCHED at the end of the day), recorded SKIPPED with its reason (its own record or a skipped
range), or FAILED with the dispatch error. None is dispatched twice in a region; none has no
record. Two things the design leaves to the failover window are counted and explained rather
than failed (docs/fail-over.md, "Both active, or neither"): a firing of the last active
minute before a failover whose claim failed for good, which the region's next tick, now on
standby, passes over (an orphan: no record in either region), and a firing both regions ran
because one of them was working from an environment it could not read at that minute (a stale
value kept by a warm container, or a minute failed closed and recovered by the misfire policy
after the failover).
"""

from __future__ import annotations

import bisect
import heapq
import json
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from mini_scheduler.claims.base import (
    ClaimOutcome,
    ClaimRequest,
    ClaimResult,
    ClaimStore,
    Control,
    Deferred,
    MarkRequest,
)
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.claims.records import JobStart, JobState, Redrive, RunRecord
from mini_scheduler.clock import FixedClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatchers
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.errors import DispatchError, EnvironmentStoreError, StoreError
from mini_scheduler.handlers.events.recorder import completion_from_event
from mini_scheduler.jobs import CronFile, Job, Target, load
from mini_scheduler.jobs.model import Place
from mini_scheduler.metrics import RecordingMetrics
from mini_scheduler.model import Firing, RunStatus, iso_millis, iso_seconds, parse_instant
from mini_scheduler.recorder import Recorder
from mini_scheduler.tick import Ticker, batches
from tests.contract.seams import protocol_methods
from tests.system.faults.injection import sdk_attempts

pytestmark = pytest.mark.slow

DAY = datetime(2026, 10, 25, tzinfo=UTC)
MINUTES = 1440
MINUTE = timedelta(minutes=1)
FAILOVER_EVERY = 180  # minutes
TRANSIENT = 0.05  # each attempt of each AWS call
OUTLASTING = 0.005  # claims, skips, environment reads, dispatches: past every retry
RECYCLE = 0.02  # a tick lands on a new (cold) container
REGIONS = (("us-east-1", "prod"), ("us-west-2", "DR"))
OPEN_STATUSES = (RunStatus.CLAIMED, RunStatus.DISPATCHED)
SKIP_REASONS = {"misfire", "misfire_max", "misfire_grace", "overlap"}

# The statements of the 200 jobs: (statement, jobs, zones to pick from or None for any).
ZONES = (
    "UTC",
    "Europe/London",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Tokyo",
    "Asia/Kolkata",
    "Australia/Sydney",
    "America/St_Johns",
    "Pacific/Chatham",
)
EUROPE = ("Europe/London", "Europe/Berlin")
SHAPES: tuple[tuple[str, int, tuple[str, ...] | None], ...] = (
    ("*/15 * * * * ?", 6, None),  # every 15 s
    ("0 * * * * ?", 24, None),  # every minute
    ("30 * * * * ?", 4, None),
    ("0 */5 * * * ?", 16, None),
    ("0 0/10 * * * ?", 10, None),
    ("0 0/20 * * * ?", 4, None),
    ("0 0-30/10 6-18 * * ?", 8, None),  # ranges with an increment
    ("0 15 22-2 * * ?", 4, None),  # a range of hours wrapping midnight
    ("0 {m} * * * ?", 40, None),  # hourly
    ("0 {m} {h} * * ?", 34, None),  # daily
    ("0 {m} {h} ? * MON-FRI", 12, None),  # weekdays (a Sunday in most zones)
    ("0 {m} {h} ? * SAT-SUN", 8, None),
    ("0 0 12 L-6 * ?", 4, None),  # L: six days before the last of the month, the 25th
    ("0 0 {h} L * ?", 2, None),  # L: the 31st, not today
    ("0 0 8 26W * ?", 4, ("Asia/Tokyo", "Asia/Kolkata", "Australia/Sydney")),  # W: Monday 26
    ("0 15 10 ? * 1#4", 4, None),  # #: the fourth Sunday
    ("0 30 1 * * ?", 6, EUROPE),  # a wall time the clocks repeat in London: fires once
    ("0 0 * * * ?", 6, EUROPE),  # hourly through the repeated hour
    ("0 30 2 * * ?", 4, ("Europe/Berlin",)),  # repeated in Berlin
)


# -- the SDK, modelled ---------------------------------------------------------------------------

CODES = {
    "dynamodb": (
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "InternalServerError",
    ),
    "ssm": ("ThrottlingException", "InternalServerError"),
    "lambda": ("TooManyRequestsException", "ServiceException"),
    "sfn": ("ThrottlingException",),
}


class Sdk:
    """Faults on AWS calls: each attempt fails with probability TRANSIENT and is retried, up to
    ``attempts``; a call on an ``outlasting`` path fails for good with probability OUTLASTING."""

    def __init__(self, rng: random.Random, attempts: int) -> None:
        self.rng = rng
        self.attempts = attempts
        self.retried: Counter[str] = Counter()  # "<service> <code>": attempts that met a fault
        self.outlasted: Counter[str] = Counter()  # operation: calls failed past the retries
        self.calls = 0

    def call(
        self, service: str, operation: str, error: Callable[[str], Exception], *, outlasting: bool
    ) -> None:
        self.calls += 1
        if outlasting and self.rng.random() < OUTLASTING:
            code = self.rng.choice(CODES[service])
            self.outlasted[operation] += 1
            self.retried[f"{service} {code}"] += self.attempts
            raise error(f"{operation} failed after {self.attempts} attempts - {code}")
        for _ in range(self.attempts):
            if self.rng.random() >= TRANSIENT:
                return
            self.retried[f"{service} {self.rng.choice(CODES[service])}"] += 1
        self.outlasted[f"{operation} (unlucky: every retry met a fault)"] += 1
        raise error(f"{operation} failed after {self.attempts} attempts")


class _Runs(dict[tuple[str, str], RunRecord]):
    """The memory store's run records, with an index of the open ones: its sweep scans every
    record, and a day holds 100,000 of them per region."""

    def __init__(self) -> None:
        super().__init__()
        self.open: dict[tuple[str, str], RunRecord] = {}

    def __setitem__(self, key: tuple[str, str], record: RunRecord) -> None:
        super().__setitem__(key, record)
        if record.status in OPEN_STATUSES and record.deadline is not None:
            self.open[key] = record
        else:
            self.open.pop(key, None)


class IndexedClaims(MemoryClaimStore):
    """The memory claim store with its sweep on an index of open runs (same answers)."""

    def __init__(self) -> None:
        super().__init__()
        self._runs: _Runs = _Runs()

    def due_runs(
        self, now: datetime, limit: int = 1000, *, settle: bool = False
    ) -> Sequence[RunRecord]:
        with self._lock:
            self.calls += 1
            due = [r for r in self._runs.open.values() if r.deadline and r.deadline <= now]
        due.sort(key=lambda r: r.deadline or now)
        return due[:limit]

    def records(self) -> dict[str, list[RunRecord]]:
        """Every run record, by job."""
        by_job: dict[str, list[RunRecord]] = {}
        with self._lock:
            for (job, _), record in self._runs.items():
                by_job.setdefault(job, []).append(record)
        return by_job


class SimClaims:
    """A region's claim store behind the SDK model (each method is one DynamoDB request)."""

    def __init__(self, store: IndexedClaims, sdk: Sdk) -> None:
        self.store = store
        self.name = "dynamodb:simulated"
        self._sdk = sdk

    def _call(self, operation: str, *, outlasting: bool = False) -> None:
        self._sdk.call("dynamodb", operation, StoreError, outlasting=outlasting)

    def claim(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
        exclusive: bool = False,
        over_skipped: bool = False,
        places: Sequence[Place] = (),
    ) -> ClaimResult:
        self._call("claim", outlasting=True)
        return self.store.claim(
            firing,
            now=now,
            lease_until=lease_until,
            origin=origin,
            exclusive=exclusive,
            over_skipped=over_skipped,
            places=places,
        )

    def claim_many(
        self,
        claims: Sequence[ClaimRequest],
        *,
        now: datetime,
        lease_until: datetime,
        origin: str,
    ) -> list[ClaimOutcome]:
        self._call("claim batch", outlasting=True)  # one BatchExecuteStatement
        return self.store.claim_many(claims, now=now, lease_until=lease_until, origin=origin)

    def watch(self, firing_ids: Sequence[str], at: datetime) -> None:
        self._call("watch", outlasting=True)
        self.store.watch(firing_ids, at)

    def mark_many(self, marks: Sequence[MarkRequest], *, now: datetime) -> list[StoreError | None]:
        self._call("mark batch")  # never past the retries: see the module's docstring
        return self.store.mark_many(marks, now=now)

    def take_over(
        self, run: RunRecord, *, now: datetime, lease_until: datetime, origin: str
    ) -> bool:
        self._call("take over")
        return self.store.take_over(run, now=now, lease_until=lease_until, origin=origin)

    def mark_dispatched(
        self, firing: Firing, *, now: datetime, deadline: datetime, start: JobStart
    ) -> None:
        self._call("mark dispatched")  # never past the retries: see the module's docstring
        self.store.mark_dispatched(firing, now=now, deadline=deadline, start=start)

    def fail(self, firing: Firing, *, now: datetime, error: str) -> None:
        self._call("fail")
        self.store.fail(firing, now=now, error=error)

    def record_skipped(self, firing: Firing, *, now: datetime, reason: str, origin: str) -> bool:
        self._call("record skipped", outlasting=True)
        return self.store.record_skipped(firing, now=now, reason=reason, origin=origin)

    def record_skipped_range(
        self,
        job: str,
        first: datetime,
        last: datetime,
        count: int,
        *,
        now: datetime,
        reason: str,
        origin: str,
    ) -> bool | None:
        self._call("record skipped range", outlasting=True)
        return self.store.record_skipped_range(
            job, first, last, count, now=now, reason=reason, origin=origin
        )

    def close(
        self,
        firing_id: str,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None = None,
        redrive: Redrive | None = None,
    ) -> RunRecord | None:
        self._call("close")
        return self.store.close(firing_id, status, now=now, error=error, redrive=redrive)

    def redrive(self, firing_id: str, redrive: Redrive) -> RunRecord | None:
        self._call("redrive")
        return self.store.redrive(firing_id, redrive)

    def time_out(self, run: RunRecord, *, now: datetime) -> bool:
        self._call("time out")
        return self.store.time_out(run, now=now)

    def due_runs(
        self, now: datetime, limit: int = 1000, *, settle: bool = False
    ) -> Sequence[RunRecord]:
        self._call("sweep query")
        return self.store.due_runs(now, limit, settle=settle)

    def run(self, firing_id: str) -> RunRecord | None:
        self._call("get run")
        return self.store.run(firing_id)

    def history(self, job: str, limit: int = 20, before: str | None = None) -> Sequence[RunRecord]:
        return self.store.history(job, limit, before)

    def job_state(self, job: str) -> JobState | None:
        return self.store.job_state(job)

    def holders(self, key: str) -> Mapping[str, datetime]:
        self._call("get cap")
        return self.store.holders(key)

    def control(self, scope: str) -> Control:
        self._call("control query")
        return self.store.control(scope)

    def advance_watermark(self, scope: str, to: datetime) -> None:
        self._call("watermark")
        self.store.advance_watermark(scope, to)

    def set_paused(self, job: str, paused: bool, *, operator: str, now: datetime) -> None:
        self.store.set_paused(job, paused, operator=operator, now=now)

    def defer(self, deferred: Sequence[Deferred]) -> None:
        self._call("defer", outlasting=True)  # one BatchWriteItem
        self.store.defer(deferred)

    def due_deferred(self, until: datetime, limit: int = 1000) -> Sequence[Deferred]:
        self._call("due deferred")  # one Query
        return self.store.due_deferred(until, limit)

    def drop_deferred(self, deferred: Sequence[Deferred]) -> None:
        self._call("drop deferred", outlasting=True)  # one BatchWriteItem
        self.store.drop_deferred(deferred)

    def buffer(self, deferred: Deferred, limit: int) -> bool:
        self._call("buffer", outlasting=True)  # a PutItem and an UpdateItem
        return self.store.buffer(deferred, limit)

    def advance_schedule(self, done: Deferred, following: Deferred | None) -> bool:
        self._call("advance schedule", outlasting=True)  # one TransactWriteItems
        return self.store.advance_schedule(done, following)

    def pending_deferred(self, reason: str) -> Sequence[Deferred]:
        self._call("pending deferred")  # one Query
        return self.store.pending_deferred(reason)

    def __getattr__(self, name: str) -> Any:
        """A member of the protocol this class does not model yet: one request, named after
        it, then the store's answer (``tests/contract/test_fakes.py`` asks for every member)."""
        if name.startswith("_") or name not in protocol_methods(ClaimStore):
            raise AttributeError(name)
        method = getattr(self.store, name)

        def requested(*args: Any, **kwargs: Any) -> Any:
            self._call(name.replace("_", " "))
            return method(*args, **kwargs)

        return requested


class SimEnvironmentStore:
    """A region's SSM parameter behind the SDK model; ``outage`` makes every read fail."""

    def __init__(self, sdk: Sdk, value: str) -> None:
        self.name = "ssm:/mini-scheduler/active-environment"
        self.persistent = True
        self.value = value
        self.outage = False
        self.failed = False  # the last read failed
        self._sdk = sdk

    def get(self) -> str | None:
        self.failed = True
        if self.outage:
            self._sdk.outlasted["environment read (SSM outage)"] += 1
            raise EnvironmentStoreError("SSM GetParameter failed - InternalServerError (outage)")
        self._sdk.call("ssm", "environment read", EnvironmentStoreError, outlasting=True)
        self.failed = False
        return self.value

    def set(self, value: str, *, operator: str, now: datetime) -> None:
        self.value = value


@dataclass(order=True)
class Completion:
    at: datetime
    seq: int
    region: int = field(compare=False)
    firing_id: str = field(compare=False)
    event: dict[str, Any] = field(compare=False)
    attempt: int = field(default=1, compare=False)


RECORDER_ATTEMPTS = 3  # Lambda's asynchronous invoke: the first try and two retries


class SimDispatcher:
    """A region's Lambda and Step Functions behind the SDK model: records what the targets
    accepted and schedules each run's completion event (or none: it will time out)."""

    def __init__(self, sdk: Sdk, day: Day, region: int) -> None:
        self._sdk = sdk
        self._day = day
        self._region = region
        self.accepted: Counter[str] = Counter()

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        lambda_target = target.kind == "lambda"
        self._sdk.call(
            "lambda" if lambda_target else "sfn",
            "dispatch",
            DispatchError,
            outlasting=True,
        )
        self.accepted[firing_id] += 1
        self._day.completion(self._region, target, firing_id, dict(payload))
        return f"simulated:{firing_id}"


class _InlineExecutor:
    """The tick's pool, running each task when it is submitted (see the module's docstring)."""

    def __init__(self, max_workers: int | None = None, thread_name_prefix: str = "") -> None:
        pass

    def __enter__(self) -> _InlineExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # the tick reads it with future.result(), as from a pool
            future.set_exception(exc)
        return future


# -- the day ---------------------------------------------------------------------------------


def cron_text(rng: random.Random) -> str:
    jobs: list[dict[str, Any]] = []
    for statement, count, zones in SHAPES:
        for _ in range(count):
            text = statement.format(m=rng.randrange(60), h=rng.randrange(24))
            flow = rng.random() < 0.2
            job: dict[str, Any] = {
                "name": f"job-{len(jobs):03d}",
                "cron": text,
                "timezone": rng.choice(zones or ZONES),
                "service": f"flow://flow-{len(jobs) % 3}" if flow else f"fn-{len(jobs) % 7}",
                "misfire": rng.choice(("fire_now", "fire_all", "skip")),
                "overlap": "skip" if rng.random() < 0.25 else "allow",
                "timeout": rng.choice((60, 120, 300, 900)),
                "parameters": {"n": len(jobs)},
            }
            if len(jobs) % 4 == 1:  # retried: each attempt claimed and dispatched once too
                job["retry"] = {"retries": 2, "backoff": 60, "factor": 2}
            jobs.append(job)
    document = {"jobs": jobs, "misfire.grace": 600, "misfire.max": 20}
    return yaml.safe_dump(document, sort_keys=False)


@dataclass
class TickLog:
    region: int
    minute: datetime
    start: datetime
    end: datetime
    mode: str  # active, standby, closed (failed closed), crashed
    stale: bool  # the environment read failed; the tick went on with the last value
    cold: bool
    before: datetime | None
    after: datetime | None
    counts: dict[str, Any]


@dataclass
class Region:
    index: int
    name: str
    environment: str
    claims: IndexedClaims
    wrapped: SimClaims
    store: SimEnvironmentStore
    clock: FixedClock
    dispatcher: SimDispatcher
    recorder: Recorder
    settings: Settings
    ticker: Ticker | None = None

    @property
    def scope(self) -> str:
        return self.settings.origin


class Day:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.text = cron_text(random.Random(seed))
        self.cron: CronFile = load(self.text, source="simulated-day.yaml")
        assert len(self.cron.jobs) == 200 and not self.cron.skipped
        self.sdk = Sdk(random.Random(seed + 1), sdk_attempts())
        self.outcomes = random.Random(seed + 2)
        self.completions: list[Completion] = []
        self.seq = 0
        self.logs: list[TickLog] = []
        self.cold_starts = 0
        self.duplicate_ticks = 0
        self.crashes: list[str] = []
        self.metrics = RecordingMetrics()
        self.regions = [self._region(i, name, env) for i, (name, env) in enumerate(REGIONS)]

    def _region(self, index: int, name: str, environment: str) -> Region:
        claims = IndexedClaims()
        wrapped = SimClaims(claims, self.sdk)
        clock = FixedClock(DAY)
        settings = Settings(
            state_table="state",
            environment_name=environment,
            region=name,
            dispatch_workers=8,
            fanout_threshold=1_000_000,
        )
        return Region(
            index,
            name,
            environment,
            claims,
            wrapped,
            SimEnvironmentStore(self.sdk, "prod"),
            clock,
            SimDispatcher(self.sdk, self, index),
            Recorder(wrapped, clock, self.metrics),
            settings,
        )

    def container(self, region: Region) -> Ticker:
        """A new container: cold (no environment value read, no cron file held)."""
        self.cold_starts += 1
        dispatcher = region.dispatcher
        region.ticker = Ticker(
            settings=region.settings,
            cron=lambda: self.cron,
            claims=region.wrapped,
            environment=ActiveEnvironment(region.store, region.environment),
            dispatchers=Dispatchers({"lambda": dispatcher, "flow": dispatcher}),
            clock=region.clock,
            metrics=self.metrics,
            rng=random.Random(self.seed + 3),
            retry_sleep=lambda _seconds: None,
        )
        return region.ticker

    # -- the recorder ------------------------------------------------------------------------

    def completion(
        self, region: int, target: Target, firing_id: str, payload: dict[str, Any]
    ) -> None:
        draw = self.outcomes.random()
        if draw < 0.12:
            return  # never reports: the sweep times the run out
        if draw < 0.7:
            seconds = self.outcomes.uniform(1, 50)
        elif draw < 0.92:
            seconds = self.outcomes.uniform(60, 400)
        else:
            seconds = self.outcomes.uniform(400, 1500)
        succeeded = self.outcomes.random() < 0.9
        at = self.regions[region].clock.now() + timedelta(seconds=seconds)
        event = (
            _lambda_event(payload, at, succeeded)
            if target.kind == "lambda"
            else _flow_event(payload, at, succeeded, target.name)
        )
        self.seq += 1
        heapq.heappush(self.completions, Completion(at, self.seq, region, firing_id, event))

    def deliver_completions(self, until: datetime) -> None:
        while self.completions and self.completions[0].at <= until:
            done = heapq.heappop(self.completions)
            found = completion_from_event(done.event)
            try:
                answer = self.regions[done.region].recorder.record(found)
            except StoreError:
                # The recorder's invocation fails; Lambda retries the event (about a minute
                # later, twice) as it does for any asynchronous invoke that raised.
                if done.attempt >= RECORDER_ATTEMPTS:
                    raise
                self.seq += 1
                retry = replace(done, at=done.at + MINUTE, seq=self.seq, attempt=done.attempt + 1)
                heapq.heappush(self.completions, retry)
                continue
            assert answer.get("firingId") == done.firing_id

    # -- ticks ---------------------------------------------------------------------------------

    def run(self) -> None:
        outages = {
            region.index: (
                start := self.rng.randrange(30, MINUTES - 30),
                start + self.rng.randint(5, 20),
            )
            for region in self.regions
        }
        active = "prod"
        for index in range(MINUTES):
            minute = DAY + index * MINUTE
            if index and index % FAILOVER_EVERY == 0:
                active = "DR" if active == "prod" else "prod"
                for region in self.regions:  # both regions, between two ticks
                    region.store.value = active
            order = list(self.regions)
            self.rng.shuffle(order)
            for region in order:
                begin, end = outages[region.index]
                region.store.outage = begin <= index < end
                cold = region.ticker is None or index == begin or self.rng.random() < RECYCLE
                if cold:
                    self.container(region)
                draw = self.rng.random()
                delay = self.rng.uniform(20, 50) if draw < 0.01 else self.rng.uniform(0, 20)
                region.clock.set(max(region.clock.now(), minute + timedelta(seconds=delay)))
                self.tick(region, minute, cold)
                if self.rng.random() < 0.005:  # EventBridge delivers the tick again
                    self.duplicate_ticks += 1
                    region.clock.advance(self.rng.uniform(0, 5))
                    self.tick(region, minute, False)
        self.deliver_completions(DAY + (MINUTES + 1) * MINUTE)

    def tick(self, region: Region, minute: datetime, cold: bool) -> None:
        assert region.ticker is not None
        self.deliver_completions(region.clock.now())
        before = region.claims.control(region.scope).watermark
        region.store.failed = False
        try:
            summary = region.ticker.tick(minute)
        except Exception as exc:  # a tick that raises: Lambda reports the error
            self.crashes.append(f"{region.name} {iso_seconds(minute)}: {exc!r}")
            mode, counts = "crashed", {}
        else:
            counts = summary.counts
            mode = summary.mode
            if summary.active_environment is None:
                mode = "closed"
            elif summary.note and "already handled" in summary.note:
                mode = "handled"
        after = region.claims.control(region.scope).watermark
        self.logs.append(
            TickLog(
                region.index,
                minute,
                minute,
                minute + MINUTE,
                mode,
                region.store.failed and mode in ("active", "standby"),
                cold,
                before,
                after,
                counts,
            )
        )


def _lambda_event(payload: dict[str, Any], at: datetime, succeeded: bool) -> dict[str, Any]:
    event: dict[str, Any] = {
        "version": "1.0",
        "timestamp": iso_millis(at),
        "requestContext": {
            "requestId": "simulated",
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:fn:$LATEST",
            "condition": "Success" if succeeded else "RetriesExhausted",
            "approximateInvokeCount": 1 if succeeded else 3,
        },
        "requestPayload": payload,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST"},
        "responsePayload": {"ok": True},
    }
    if not succeeded:
        event["responseContext"]["functionError"] = "Unhandled"
        event["responsePayload"] = {"errorType": "RuntimeError", "errorMessage": "simulated"}
    return event


def _flow_event(
    payload: dict[str, Any], at: datetime, succeeded: bool, machine: str
) -> dict[str, Any]:
    return {
        "version": "0",
        "detail-type": "Step Functions Execution Status Change",
        "source": "aws.states",
        "time": iso_seconds(at),
        "detail": {
            "name": "simulated",
            "stateMachineArn": f"arn:aws:states:us-east-1:123456789012:stateMachine:{machine}",
            "status": "SUCCEEDED" if succeeded else "FAILED",
            "stopDate": int(at.timestamp() * 1000),
            "input": json.dumps(payload),
            "error": None if succeeded else "States.TaskFailed",
            "cause": None if succeeded else "simulated",
        },
    }


# -- the check ---------------------------------------------------------------------------------


@dataclass
class Ledger:
    """What became of each firing, in one region."""

    expected: int = 0
    dispatched: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)  # the runs' final statuses
    skipped: Counter[str] = field(default_factory=Counter)
    failed_dispatch: int = 0
    duplicates: list[str] = field(default_factory=list)
    retries: int = 0  # attempts 2 and on dispatched
    lost: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    owed: list[str] = field(default_factory=list)  # the watermark still holds for them
    inconsistent: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)


def _intervals(spans: Iterable[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    merged: list[tuple[datetime, datetime]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _inside(moment: datetime, intervals: list[tuple[datetime, datetime]]) -> bool:
    at = bisect.bisect_right(intervals, (moment, datetime.max.replace(tzinfo=UTC))) - 1
    return at >= 0 and intervals[at][0] <= moment < intervals[at][1]


def _firings(jobs: Iterable[Job], start: datetime, end: datetime) -> Iterator[tuple[Job, datetime]]:
    for job in jobs:
        for at in job.expression.firings(start, end, job.tz):
            yield job, at


def check(day: Day) -> tuple[list[Ledger], dict[str, Any]]:
    horizon = (DAY - timedelta(days=1), DAY + timedelta(days=1, minutes=2))
    everything = list(_firings(day.cron.jobs, *horizon))
    ledgers: list[Ledger] = []
    expected_by_region: list[set[str]] = []
    for region in day.regions:
        logs = [log for log in day.logs if log.region == region.index]
        # The minutes this region handled while active: each active tick covers its window and
        # the misfires between its watermark and the window.
        active = _intervals(
            (log.before or log.start, log.end)
            for log in logs
            if log.mode == "active" and (log.before is None or log.before < log.end)
        )
        # The tick that moved the watermark past each instant: the tick that handles it.
        moves = sorted(
            (log.before or log.start, log.after, log)
            for log in logs
            if log.after is not None and (log.before is None or log.after > log.before)
        )
        records: dict[str, RunRecord] = {}
        ranged: dict[str, str] = {}
        by_job = region.claims.records()
        for job in day.cron.jobs:
            for record in by_job.get(job.name, []):
                if record.skipped_until is None:
                    records[record.firing_id] = record
                    continue
                first = parse_instant(record.scheduled_time)
                last = parse_instant(record.skipped_until)
                covered = [
                    f"{job.name}@{iso_seconds(at)}"
                    for at in job.expression.firings(first, last + timedelta(seconds=1), job.tz)
                ]
                assert len(covered) == record.skipped_count, record
                for firing_id in covered:
                    ranged.setdefault(firing_id, str(record.reason))
        accepted = region.dispatcher.accepted
        final = region.claims.control(region.scope).watermark
        ledger = Ledger()
        expected: set[str] = set()
        # A retry's attempts (``<firingId>#<n>``) are deferred firings: each reaches its target
        # once at most, whichever region, recorder or sweep saw the failure.
        ledger.duplicates += [
            run_id for run_id, count in accepted.items() if "#" in run_id and count > 1
        ]
        ledger.retries = sum(1 for run_id in accepted if "#" in run_id)
        for job, at in everything:
            firing_id = f"{job.name}@{iso_seconds(at)}"
            if not _inside(at, active):
                if accepted[firing_id]:
                    ledger.unexpected.append(firing_id)
                continue
            expected.add(firing_id)
            ledger.expected += 1
            count = accepted[firing_id]
            own = records.get(firing_id)
            if count > 1:
                ledger.duplicates.append(firing_id)
            elif count == 1:
                ledger.dispatched += 1
                if own is None or own.status in (RunStatus.SKIPPED, RunStatus.CLAIMED):
                    ledger.inconsistent.append(firing_id)
                else:
                    ledger.outcomes[str(own.status)] += 1
            elif own is not None and own.status is RunStatus.SKIPPED:
                ledger.skipped[str(own.reason)] += 1
            elif own is not None and own.status is RunStatus.FAILED:
                ledger.failed_dispatch += 1
                assert own.error and "dispatch failed after" in own.error, record
            elif own is None and firing_id in ranged:
                ledger.skipped[ranged[firing_id]] += 1
            elif own is None:
                at_move = bisect.bisect_right(moves, (at, datetime.max.replace(tzinfo=UTC))) - 1
                mover = moves[at_move][2] if at_move >= 0 else None
                passed = mover is not None and moves[at_move][0] <= at < moves[at_move][1]
                if passed and mover is not None and mover.mode == "standby":
                    ledger.orphans.append(firing_id)  # see the module's docstring
                elif final is not None and final <= at:
                    ledger.owed.append(firing_id)  # held: the day's last tick could not claim it
                else:
                    ledger.lost.append(firing_id)
            else:
                ledger.inconsistent.append(firing_id)  # claimed, never dispatched
        ledgers.append(ledger)
        expected_by_region.append(expected)

    # Across regions: a firing both ran, and the minutes neither handled while active.
    first_tick: dict[tuple[int, datetime], TickLog] = {}
    for log in day.logs:
        first_tick.setdefault((log.region, log.minute), log)
    both: list[str] = []
    unexplained: list[str] = []
    prod, dr = (region.dispatcher.accepted for region in day.regions)
    for firing_id in set(prod) & set(dr):
        both.append(firing_id)
        base, attempt, _ = firing_id.partition("#")
        if attempt:  # a retry in both regions: each retried its own failure of a firing both ran
            if not (prod[base] and dr[base]):
                unexplained.append(firing_id)
            continue
        minute = parse_instant(firing_id.rpartition("@")[2]).replace(second=0)
        reasons = [
            first_tick.get((region.index, minute)) for region in day.regions
        ]  # the tick of that minute in each region
        if not any(
            log is None or log.stale or log.mode in ("closed", "crashed") for log in reasons
        ):
            unexplained.append(firing_id)
    neither = sum(
        1
        for job, at in everything
        if DAY <= at < DAY + MINUTES * MINUTE
        and all(f"{job.name}@{iso_seconds(at)}" not in e for e in expected_by_region)
    )
    cross = {"both": sorted(both), "unexplained": sorted(unexplained), "neither": neither}
    return ledgers, cross


def report(day: Day, ledgers: list[Ledger], cross: dict[str, Any], seconds: float) -> str:
    total = Ledger()
    for ledger in ledgers:
        total.expected += ledger.expected
        total.dispatched += ledger.dispatched
        total.outcomes.update(ledger.outcomes)
        total.skipped.update(ledger.skipped)
        total.failed_dispatch += ledger.failed_dispatch
        total.retries += ledger.retries
        for name in ("duplicates", "lost", "orphans", "owed", "inconsistent", "unexpected"):
            getattr(total, name).extend(getattr(ledger, name))
    modes = Counter((day.regions[log.region].environment, log.mode) for log in day.logs)
    lines = [
        f"Simulated day {DAY.date()} (Europe falls back at 01:00 UTC): seed {day.seed} "
        f"(replay with SIM_SEED={day.seed}), {seconds:.1f} s",
        f"  jobs 200, ticks {len(day.logs)} ({day.duplicate_ticks} delivered twice), "
        f"cold starts {day.cold_starts}, failovers {MINUTES // FAILOVER_EVERY - 1}",
        "  ticks by mode: " + ", ".join(f"{e} {m} {n}" for (e, m), n in sorted(modes.items())),
        f"  ticks failed closed {sum(1 for log in day.logs if log.mode == 'closed')}, "
        f"went on with the last value read {sum(1 for log in day.logs if log.stale)}, "
        f"crashed {len(day.crashes)}",
        f"  firings expected {total.expected} "
        f"(prod {ledgers[0].expected}, DR {ledgers[1].expected})",
        f"  dispatched once {total.dispatched}: "
        + ", ".join(f"{k} {v}" for k, v in sorted(total.outcomes.items())),
        "  skipped "
        + str(sum(total.skipped.values()))
        + ": "
        + ", ".join(f"{k} {v}" for k, v in sorted(total.skipped.items())),
        f"  failed with a dispatch error {total.failed_dispatch}; retries dispatched "
        f"{total.retries} (attempts 2 and 3 of the 50 jobs with retry)",
        f"  duplicates {len(total.duplicates)}, lost {len(total.lost)}, "
        f"inconsistent {len(total.inconsistent)}, dispatched outside an active minute "
        f"{len(total.unexpected)}, owed to the next day's first tick (watermark held) "
        f"{len(total.owed)}",
        f"  failover window: orphans {len(total.orphans)} (claim failed for good in the last "
        f"active minute, passed over on standby), run in both regions {len(cross['both'])} "
        f"({len(cross['unexplained'])} unexplained), in no region's active minutes "
        f"{cross['neither']}",
        f"  AWS calls {day.sdk.calls}; attempts that met a fault and were retried: "
        + ", ".join(f"{k} {v}" for k, v in sorted(day.sdk.retried.items())),
        "  failed past the retries: "
        + ", ".join(f"{k} {v}" for k, v in sorted(day.sdk.outlasted.items())),
        "  metrics: "
        + ", ".join(
            f"{k} {int(v)}"
            for k, v in sorted(day.metrics.totals.items())
            if k not in ("TickLagSeconds",)
        ),
    ]
    return "\n".join(lines)


@pytest.fixture
def inline_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches, "ThreadPoolExecutor", _InlineExecutor)


def test_a_simulated_day_runs_every_firing_once_and_loses_none(
    inline_pool: None, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="mini_scheduler")  # 100,000 log lines cost
    seed = int(os.environ.get("SIM_SEED") or random.SystemRandom().randrange(2**31))
    started = time.perf_counter()
    day = Day(seed)
    with capsys.disabled():
        print(f"\nSimulated day: seed {seed} (SIM_SEED={seed} replays it)", flush=True)
    try:
        day.run()
    except Exception as exc:  # name the seed, so the day can be replayed
        raise AssertionError(f"seed {seed}: the day stopped: {exc!r}") from exc
    ledgers, cross = check(day)
    text = report(day, ledgers, cross, time.perf_counter() - started)
    with capsys.disabled():
        print(text, flush=True)

    for ledger in ledgers:
        assert ledger.duplicates == [], f"seed {seed}: dispatched twice {ledger.duplicates[:5]}"
        assert ledger.lost == [], f"seed {seed}: lost {ledger.lost[:5]}"
        assert ledger.inconsistent == [], f"seed {seed}: {ledger.inconsistent[:5]}"
        assert ledger.unexpected == [], f"seed {seed}: {ledger.unexpected[:5]}"
        assert set(ledger.skipped) <= SKIP_REASONS, ledger.skipped
    assert cross["unexplained"] == [], f"seed {seed}: run in both regions {cross['unexplained']}"
    failovers = [DAY + k * FAILOVER_EVERY * MINUTE for k in range(1, MINUTES // FAILOVER_EVERY)]
    for ledger in ledgers:  # an orphan belongs to the last active minutes before a failover
        for firing_id in ledger.orphans:
            at = parse_instant(firing_id.rpartition("@")[2])
            assert any(timedelta(0) < f - at <= 25 * MINUTE for f in failovers), firing_id
    assert len(day.logs) >= 2 * MINUTES
    assert day.crashes == [], day.crashes[:3]
    # The repeated hour: 01:30 in London comes twice (BST, then GMT) and fires once, at the
    # first (00:30 UTC); 02:30 in Berlin likewise; an hourly job keeps every UTC hour.
    for job in day.cron.jobs:
        firings = list(job.expression.firings(DAY, DAY + MINUTES * MINUTE, job.tz))
        if (job.statement, job.zone) in (
            ("0 30 1 * * ?", "Europe/London"),
            ("0 30 2 * * ?", "Europe/Berlin"),
        ):
            assert firings == [DAY + 30 * MINUTE], (job.name, firings)
        if job.statement == "0 0 * * * ?":
            assert len(firings) == 24, (job.name, job.zone)
    # The day exercised what it is for.
    assert sum(ledger.expected for ledger in ledgers) > 60_000
    assert all(ledger.expected > 10_000 for ledger in ledgers)  # both regions were active
    assert sum(1 for log in day.logs if log.mode == "closed") > 0  # failing closed, recovered
    assert sum(sum(ledger.skipped.values()) for ledger in ledgers) > 0
    assert sum(ledger.outcomes["TIMED_OUT"] for ledger in ledgers) > 0
