"""The console's jobs list over two regions' DynamoDB state tables (moto): the AWS requests of a
refresh, counted with botocore's ``before-call`` event (at most 10 whatever the number of jobs),
and the last run each job shows, right where a read by key alone cannot tell it (a job that
never ran, a paused one, a retry, a run in the standby region, the console's own run now), and
the one it cannot see (a manual run made elsewhere: docs/console.md)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from benchmarks import console as bench
from benchmarks.console import ACTIVE, STANDBY, WATERMARK, TwoRegions, last_firing, ran, two_regions

from mini_scheduler.jobs import load
from mini_scheduler.model import Firing, RunStatus

pytest.importorskip("fastapi")

EAST, WEST = ACTIVE[0], STANDBY[0]
CRON = load(
    """
jobs:
  - {name: "minutely", cron: "0 * * * * ?", service: "fn"}
  - {name: "daily", cron: "0 30 9 * * ?", service: "fn"}
  - {name: "retried", cron: "0 * * * * ?", service: "fn", retry: {retries: 2, backoff: 5}}
  - {name: "never", cron: "0 15 * * * ?", service: "fn"}
  - {name: "paused", cron: "0 * * * * ?", service: "fn"}
""",
    source="test.yaml",
)
JOBS = {job.name: job for job in CRON.jobs}


def handled(console: TwoRegions, until: datetime) -> None:
    """Both regions' ticks handled their firings before ``until``; the clock just after."""
    for region, environment in (ACTIVE, STANDBY):
        console.stores[region].advance_watermark(f"{region}/{environment}", until)
    console.clock.set(until + timedelta(seconds=5))


def fire(console: TwoRegions, region: str, job: str, at: datetime, **kwargs: Any) -> Firing:
    firing = Firing(job, at)
    ran(console.stores[region], JOBS[job], firing, **kwargs)
    return firing


def last(console: TwoRegions) -> dict[str, tuple[str, str, str] | None]:
    """Each job's last run as the list shows it: (firing, status, region)."""
    shown = console.refresh().answer["jobs"]
    return {
        job["name"]: (run["firingId"], run["status"], run["region"])
        if (run := job["lastRun"])
        else None
        for job in shown
    }


@pytest.fixture
def console() -> Iterator[TwoRegions]:
    sent: list[Any] = []

    def send(event: Any) -> Any:  # the active region's ticker runs it at once
        sent.append(event)
        at = console_.clock.now()
        manual = Firing.manual_run(event["job"], at, event["operator"], {})
        ran(console_.stores[EAST], JOBS[event["job"]], manual)
        return {"job": event["job"], "firingId": manual.id, "status": "DISPATCHED"}

    with two_regions(CRON, send) as console_:
        yield console_


def test_a_refresh_of_50_jobs_in_two_regions_is_at_most_10_requests() -> None:
    measured = bench.measure(50)
    for refresh in (measured.first, measured.then):
        assert refresh.requests <= bench.TARGET, refresh.calls
        assert refresh.calls["dynamodb.BatchGetItem"] == 2  # one a region: the 50 jobs' runs
        assert "dynamodb.GetItem" not in refresh.calls
    assert measured.before == 204  # a GetItem and a Query per job and region, and 4
    row = bench.row(measured)  # make bench's
    assert row.section == "7 console" and row.met and row.target == "<= 10"
    assert row.value == str(measured.worst.requests)
    cron = bench.cron_file(50)
    for refresh, until in (
        (measured.first, WATERMARK),
        (measured.then, WATERMARK + timedelta(minutes=1)),
    ):
        shown = {job["name"]: job["lastRun"] for job in refresh.answer["jobs"]}
        for job in cron.jobs:
            expected = Firing(job.name, last_firing(job, until)).id
            assert shown[job.name] is not None and shown[job.name]["firingId"] == expected
            assert shown[job.name]["region"] == EAST and shown[job.name]["status"] == "SUCCEEDED"


def test_past_100_jobs_a_region_reads_100_runs_a_request() -> None:
    measured = bench.measure(150)
    assert measured.first.calls["dynamodb.BatchGetItem"] == 4  # ceil(150 / 100) a region
    assert measured.first.requests == 8


def test_a_job_no_read_by_key_settles_is_read_in_full_once(console: TwoRegions) -> None:
    """A job that never ran, and a paused one (its last firings have no run): each is read in
    full (a GetItem and a Query) in each region the first time only."""
    t = WATERMARK - timedelta(minutes=10)
    fire(console, EAST, "paused", t)  # its last run, before it was paused
    for job in ("minutely", "retried"):
        fire(console, EAST, job, last_firing(JOBS[job], WATERMARK))
    fire(console, EAST, "daily", last_firing(JOBS["daily"], WATERMARK))
    handled(console, WATERMARK)
    first = console.refresh()
    assert first.calls["dynamodb.Query"] == 4 + 2 * 2  # control and schedules; 2 jobs x 2 regions
    shown = {job["name"]: job["lastRun"] for job in first.answer["jobs"]}
    assert shown["never"] is None
    assert shown["paused"]["firingId"] == f"paused@{t:%Y-%m-%dT%H:%M:%SZ}"
    handled(console, WATERMARK + timedelta(minutes=1))
    for job in ("minutely", "retried"):
        fire(console, EAST, job, WATERMARK)
    again = console.refresh()
    assert again.requests == 6, again.calls  # control, schedules, one BatchGetItem a region
    assert last(console)["paused"] == (f"paused@{t:%Y-%m-%dT%H:%M:%SZ}", "SUCCEEDED", EAST)
    assert last(console)["minutely"] == (
        f"minutely@{WATERMARK:%Y-%m-%dT%H:%M:%SZ}",
        "SUCCEEDED",
        EAST,
    )


def test_a_failed_runs_retry_is_the_last_run(console: TwoRegions) -> None:
    head = last_firing(JOBS["retried"], WATERMARK)
    failed = fire(console, EAST, "retried", head, status=RunStatus.FAILED)
    handled(console, WATERMARK)
    assert last(console)["retried"] == (failed.id, "FAILED", EAST)
    ran(console.stores[EAST], JOBS["retried"], failed.retry(), status=None)
    assert last(console)["retried"] == (failed.retry().id, "DISPATCHED", EAST)


def test_the_standby_regions_run_shows_when_it_is_the_newest(console: TwoRegions) -> None:
    """Before a failover us-west-2 was active: its runs are the last ones until us-east-1 runs
    the job; then the newer one shows, whichever region ran it."""
    before = WATERMARK - timedelta(minutes=3)
    fire(console, WEST, "minutely", before, origin="us-west-2/DR")
    handled(console, WATERMARK)
    assert last(console)["minutely"] == (f"minutely@{before:%Y-%m-%dT%H:%M:%SZ}", "SUCCEEDED", WEST)
    fire(console, EAST, "minutely", WATERMARK)
    handled(console, WATERMARK + timedelta(minutes=1))
    assert last(console)["minutely"] == (
        f"minutely@{WATERMARK:%Y-%m-%dT%H:%M:%SZ}",
        "SUCCEEDED",
        EAST,
    )
    assert console.refresh().requests == 6


def test_the_consoles_own_run_now_is_the_last_run_a_manual_run_made_elsewhere_is_not(
    console: TwoRegions,
) -> None:
    head = last_firing(JOBS["daily"], WATERMARK)
    fire(console, EAST, "daily", head)
    handled(console, WATERMARK)
    assert last(console)["daily"] == (f"daily@{head:%Y-%m-%dT%H:%M:%SZ}", "SUCCEEDED", EAST)
    answer = console.service.run_now("daily", "jane.doe")
    assert last(console)["daily"] == (answer["firingId"], "SUCCEEDED", EAST)
    # The CLI's run now: the store has it, the history shows it; the list, reading by key, not
    elsewhere = Firing.manual_run("minutely", console.clock.now(), "joe", {})
    fire(console, EAST, "minutely", WATERMARK - timedelta(minutes=1))
    ran(console.stores[EAST], JOBS["minutely"], elsewhere)
    assert last(console)["minutely"][0] != elsewhere.id  # type: ignore[index]
    history = console.service.history("minutely")["runs"]
    assert history[0]["firingId"] == elsewhere.id
