"""The console and ``jitter``/``window`` (issue 30, item 3): a job's next firings, its settings
and the timeline show each firing when it starts, and its own instant beside it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from mini_scheduler.console.app import create_app
from mini_scheduler.console.service import ConsoleService
from mini_scheduler.handlers.routing import route
from mini_scheduler.jobs import load
from mini_scheduler.jobs.spread import planned, planned_after
from tests.unit.tick.harness import at, rig

pytest.importorskip("fastapi")

CRON = """
jobs:
  - name: "export"
    cron: "0 0 9 * * ?"
    timezone: "Europe/Paris"
    service: "export-fn"
    window: 120
  - name: "poll"
    cron: "0 */10 * * * ?"
    service: "poll-fn"
    jitter: 300
  - name: "plain"
    cron: "0 0 * * * ?"
    service: "plain-fn"
"""
NOW = at("2027-03-27T12:00:00Z")


@pytest.fixture
def client() -> Iterator[TestClient]:
    from mini_scheduler.console.sites import Site

    r = rig(CRON, region="us-east-1", environment="prod", start="2027-03-27T12:00:00Z")
    site = Site("us-east-1", "prod", r.ticker.operator, lambda e: route(r.ticker, dict(e)))
    app = create_app(ConsoleService([site], r.clock), token="t", title="test")
    with TestClient(app, base_url="http://127.0.0.1:8765", raise_server_exceptions=False) as c:
        yield c


def iso(moment: object) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")  # type: ignore[attr-defined]


def test_next_firings_are_when_each_starts_with_its_own_instant(client: TestClient) -> None:
    jobs = {job.name: job for job in load(CRON).jobs}
    answer = client.get("/api/schedule/export/next", params={"count": 3}).json()
    expected = planned_after(jobs["export"], NOW, 3)
    assert [(f["scheduled"], f["utc"]) for f in answer["firings"]] == [
        (iso(n), iso(s)) for n, s in expected
    ]
    assert answer["firings"][0]["scheduled"] == "2027-03-28T07:00:00Z"  # 09:00 CEST
    for firing, (nominal, start) in zip(answer["firings"], expected, strict=True):
        assert firing["spreadSeconds"] == (start - nominal).total_seconds() < 7200
        assert firing["local"] == start.astimezone(jobs["export"].tz).isoformat()
    plain = client.get("/api/schedule/plain/next", params={"count": 1}).json()
    assert plain["firings"][0]["utc"] == "2027-03-27T13:00:00Z"
    assert plain["firings"][0].get("scheduled") is None


def test_the_job_s_settings_and_summary_say_its_spread(client: TestClient) -> None:
    detail = client.get("/api/schedule/poll").json()
    assert (detail["jitter"], detail["window"]) == (300, 0)
    poll = load(CRON).jobs[1]
    assert [f["utc"] for f in detail["next"]] == [iso(s) for _, s in planned_after(poll, NOW, 3)]
    listed = client.get("/api/schedule").json()["jobs"]
    assert next(j for j in listed if j["name"] == "poll")["next"] == detail["next"]


def test_the_timeline_marks_each_firing_when_it_starts(client: TestClient) -> None:
    poll = load(CRON).jobs[1]
    timeline = client.get("/api/timeline", params={"hours": 2}).json()
    row = next(r for r in timeline["rows"] if r["job"] == "poll")
    nominals = list(poll.firings(NOW - timedelta(minutes=10), NOW + timedelta(hours=2)))
    starts = [planned(poll, n) for n in nominals]
    assert row["firings"] == [iso(s) for s in starts if NOW <= s < NOW + timedelta(hours=2)]
    assert row["firings"] != [iso(n) for n in nominals if n >= NOW]
