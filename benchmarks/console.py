"""The console's refresh: the AWS requests of one read of the jobs list (``GET /api/schedule``,
what the page reads every 10 seconds) for ``jobs`` jobs in two regions, on moto.

Both regions have a state table; us-east-1 is active and ran every job's last firing (claimed,
dispatched, ended), us-west-2 stands by (its watermark moved, no run of its own), as a regional
deployment is between failovers. The requests are counted with botocore's ``before-call`` event,
every operation, on each region's own session, beside the same reads made as they were before
(a job state per job and region). Target (issue 28): at most 10 whatever the number of jobs;
a region's last runs take one ``BatchGetItem`` per 100 runs named (a job names one or two).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws

from benchmarks.table import Row, ratio
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore, create_state_table
from mini_scheduler.claims.dynamodb_table import run_item, write_batches
from mini_scheduler.claims.records import JobStart
from mini_scheduler.clock import FixedClock
from mini_scheduler.console.lastruns import recent_firings
from mini_scheduler.console.service import ConsoleService
from mini_scheduler.console.sites import Site
from mini_scheduler.jobs import CronFile, Job, load
from mini_scheduler.model import Firing, RunStatus
from mini_scheduler.operator import Operator

TARGET = 10  # requests a refresh, whatever the number of jobs
JOBS = 50
ACTIVE, STANDBY = ("us-east-1", "prod"), ("us-west-2", "DR")
TABLE = "mini-scheduler-state"
NOW = datetime(2026, 11, 30, 14, 1, 5, tzinfo=UTC)  # after the tick of 14:00
WATERMARK = datetime(2026, 11, 30, 14, 1, tzinfo=UTC)  # the end of the window last handled
STATEMENTS = ("0 * * * * ?", "*/15 * * * * ?", "0 0 * * * ?", "0 30 9 * * ?", "0 0/5 * * * ?")


@dataclass(frozen=True)
class Refresh:
    """One refresh's requests by operation, and what it answered."""

    jobs: int
    calls: Counter[str]
    answer: dict[str, Any]

    @property
    def requests(self) -> int:
        return sum(self.calls.values())


@dataclass
class TwoRegions:
    """The console over two regions' state tables on moto: its service, each region's store
    (by region), the counter every request goes to, and the clock."""

    service: ConsoleService
    stores: dict[str, DynamoDBClaimStore]
    calls: Counter[str]
    clock: FixedClock
    clients: dict[str, Any]

    def refresh(self) -> Refresh:
        """One read of the jobs list, and its requests."""
        self.calls.clear()
        answer = self.service.jobs()
        return Refresh(len(answer["jobs"]), Counter(self.calls), answer)

    def ended(self, region: str, firings: Sequence[Firing]) -> None:
        """Runs of ``firings`` that started at their instant and succeeded 2 seconds later, as
        the store keeps them, written 25 a request (many runs, quickly: only reads are
        measured)."""
        requests = [
            {
                "PutRequest": {
                    "Item": run_item(
                        firing,
                        {
                            "status": RunStatus.SUCCEEDED,
                            "origin": f"{region}/prod",
                            "claimed_at": firing.scheduled,
                            "started_at": firing.scheduled,
                            "ended_at": firing.scheduled + timedelta(seconds=2),
                        },
                    )
                }
            }
            for firing in firings
        ]
        write_batches(self.clients[region], TABLE, requests, "BatchWriteItem (runs)", _no_sleep)
        self.calls.clear()


def cron_file(jobs: int) -> CronFile:
    """``jobs`` Lambda jobs, each on one of a few statements (every 15 s to daily)."""
    lines = ["jobs:"]
    for i in range(jobs):
        statement = STATEMENTS[i % len(STATEMENTS)]
        lines.append(f'  - {{name: "job-{i:03d}", cron: "{statement}", service: "target"}}')
    return load("\n".join(lines) + "\n", source=f"console-{jobs}")


def last_firing(job: Job, at: datetime) -> datetime:
    """``job``'s last firing before ``at`` (the watermark: the window ends there, open)."""
    (last,), _ = recent_firings(job, at, 1)
    return last


def ran(
    store: DynamoDBClaimStore,
    job: Job,
    firing: Firing,
    status: RunStatus | None = RunStatus.SUCCEEDED,
    origin: str = "us-east-1/prod",
) -> None:
    """``firing`` claimed, dispatched at its instant and ended (unless ``status`` is None) two
    seconds later, as a tick and the recorder leave it."""
    at = firing.scheduled
    lease = at + timedelta(minutes=2)
    store.watch([firing.id], lease)
    store.claim(firing, now=at, lease_until=lease, origin=origin)
    policy = job.failure_policy
    start = JobStart(job.service, f"{job.statement} @{job.zone}", {"_origin": origin}, policy)
    store.mark_dispatched(firing, now=at, deadline=at + timedelta(minutes=15), start=start)
    if status is not None:
        store.close(firing.id, status, now=at + timedelta(seconds=2), error="boom")


@contextmanager
def _moto_credentials() -> Iterator[None]:
    """moto's fake credentials, set for the measurement only (and the caller's restored)."""
    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    kept = {key: os.environ.get(key) for key in keys}
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    os.environ.pop("AWS_SESSION_TOKEN", None)
    try:
        yield
    finally:
        for key, value in kept.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def two_regions(cron: CronFile, send: Any = None) -> Iterator[TwoRegions]:
    """The console over us-east-1 (prod) and us-west-2 (DR), each with its state table on moto
    (for the block), ``send`` taking their tickers' events (none by default)."""
    calls: Counter[str] = Counter()

    def count(event_name: str, **_: object) -> None:
        calls[event_name.removeprefix("before-call.")] += 1

    clock = FixedClock(NOW)
    with _moto_credentials(), mock_aws():
        sites, stores, clients = [], {}, {}
        for region, environment in (ACTIVE, STANDBY):
            session = boto3.session.Session()
            session.events.register("before-call", count)
            client = session.client("dynamodb", region_name=region)
            create_state_table(client, TABLE)
            store = DynamoDBClaimStore(TABLE, client, sleep=lambda _: None, batched=False)
            operator = Operator(
                cron=lambda: cron,
                claims=store,
                environment=None,
                clock=clock,
                origin=f"{region}/{environment}",
            )
            stores[region], clients[region] = store, client
            where = f"table {TABLE}"
            sites.append(Site(region, environment, operator, send or _no_ticker, where=where))
        calls.clear()
        yield TwoRegions(ConsoleService(sites, clock), stores, calls, clock, clients)


def _no_sleep(seconds: float) -> None:
    """moto leaves no request unprocessed."""


def _no_ticker(event: Any) -> Any:
    raise RuntimeError("the console's refresh sends no event")


@dataclass(frozen=True)
class Measured:
    """The first refresh, the next one, and the same reads done the way they were before issue
    28 (a job state per job and region: a GetItem and a Query each), on the same tables."""

    first: Refresh
    then: Refresh
    before: int

    @property
    def worst(self) -> Refresh:
        return max(self.first, self.then, key=lambda refresh: refresh.requests)


def measure(jobs: int = JOBS) -> Measured:
    """The requests of the console's first refresh of the jobs list, and of the next one, a
    minute on, after another minute was ticked in us-east-1."""
    cron = cron_file(jobs)
    with two_regions(cron) as console:
        console.ended(
            ACTIVE[0], [Firing(job.name, last_firing(job, WATERMARK)) for job in cron.jobs]
        )
        for region, environment in (ACTIVE, STANDBY):
            console.stores[region].advance_watermark(f"{region}/{environment}", WATERMARK)
        first = console.refresh()
        later = WATERMARK + timedelta(minutes=1)
        firings = [Firing(job.name, last_firing(job, later)) for job in cron.jobs]
        console.ended(ACTIVE[0], [firing for firing in firings if firing.scheduled >= WATERMARK])
        for region, environment in (ACTIVE, STANDBY):
            console.stores[region].advance_watermark(f"{region}/{environment}", later)
        console.clock.set(NOW + timedelta(minutes=1))
        then = console.refresh()
        return Measured(first, then, _the_old_way(console, cron))


def _the_old_way(console: TwoRegions, cron: CronFile) -> int:
    """The requests of the reads the list made before: each region's control items and
    runtime schedules, and each job's state in each region."""
    console.calls.clear()
    for site in console.service.sites:
        claims = site.operator.claims
        if claims is not None:
            claims.control(site.scope)
            site.operator.runtime_schedules()
            for job in cron.jobs:
                claims.job_state(job.name)
    return sum(console.calls.values())


def row(measured: Measured | None = None) -> Row:
    """``console refresh, 50 jobs in 2 regions: N requests, target <= 10``: the more of the
    first refresh's and the next one's, beside the same reads the way they were made before."""
    measured = measured or measure()
    worst = measured.worst
    by = ", ".join(f"{k.split('.')[1]} {v}" for k, v in sorted(worst.calls.items()))
    return Row(
        "7 console",
        f"console refresh, {worst.jobs} jobs in 2 regions: AWS requests (first "
        f"{measured.first.requests}, next {measured.then.requests}: {by})",
        f"{worst.requests}",
        f"the reads as before, a job state per job and region: {measured.before}",
        ratio(worst.requests, measured.before, digits=2),
        f"<= {TARGET}",
        worst.requests <= TARGET,
    )


if __name__ == "__main__":
    print(row())
