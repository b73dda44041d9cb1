"""A job's view (``GET /api/schedule/{name}``) says its overlap policy in full: ``buffer_all``'s
``max_buffered`` (its default when not set), and how many of its firings wait now for its open
run's end in each region (the job state's waiting set); a region that cannot be read is named."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from mini_scheduler.claims.base import BUFFER, Deferred
from mini_scheduler.console.app import create_app
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs.model import DEFAULT_MAX_BUFFERED
from mini_scheduler.model import Firing
from tests.unit.console import test_api
from tests.unit.console.test_api import TOKEN
from tests.unit.tick.harness import at, rig

CRON = """
pools: {exports: 2}
jobs:
  - name: "queue"
    cron: "0 * * * * ?"
    service: "queue-fn"
    overlap: "buffer_all"
    max_buffered: 3
  - name: "drain"
    cron: "0 * * * * ?"
    service: "drain-fn"
    overlap: "buffer_all"
  - name: "solo"
    cron: "0 * * * * ?"
    service: "solo-fn"
    overlap: "buffer_one"
  - name: "plain"
    cron: "0 * * * * ?"
    service: "plain-fn"
  - name: "capped"
    cron: "0 * * * * ?"
    service: "capped-fn"
    overlap: "skip"
    max_running: 3
    pool: "exports"
"""


class Regions(test_api.Regions):
    """The console test's two regions, on jobs that buffer."""

    def __init__(self) -> None:
        self.east = rig(CRON, region="us-east-1", environment="prod")
        self.west = rig(CRON, region="us-west-2", environment="DR")
        self.sent = []


@pytest.fixture
def regions() -> Regions:
    return Regions()


@pytest.fixture
def client(regions: Regions) -> Iterator[TestClient]:
    app = create_app(regions.service(), token=TOKEN, title="test")
    with TestClient(app, base_url="http://127.0.0.1:8765", raise_server_exceptions=False) as c:
        yield c


def wait(r: test_api.Rig, job: str, minutes: int, limit: int) -> None:
    """``minutes`` firings of ``job`` kept waiting in ``r``'s store (as a tick buffers them)."""
    for minute in range(1, minutes + 1):
        firing = Firing(job, at("2026-11-30T14:00:00Z") + timedelta(minutes=minute))
        kept = Deferred(firing, firing.scheduled, BUFFER, "us-east-1/prod", r.clock.now())
        assert r.claims.buffer(kept, limit)


def test_buffer_all_says_its_max_buffered_and_the_firings_waiting_in_each_region(
    regions: Regions, client: TestClient
) -> None:
    wait(regions.east, "queue", 2, 3)
    wait(regions.west, "queue", 1, 3)
    job = client.get("/api/schedule/queue").json()
    assert (job["overlap"], job["maxBuffered"], job["waiting"]) == ("buffer_all", 3, 3)
    assert job["waitingIn"] == [
        {"region": "us-east-1", "count": 2, "running": {}, "error": None},
        {"region": "us-west-2", "count": 1, "running": {}, "error": None},
    ]
    drain = client.get("/api/schedule/drain").json()
    assert (drain["maxBuffered"], drain["waiting"]) == (DEFAULT_MAX_BUFFERED, 0)


@pytest.mark.parametrize("name", ["solo", "plain"])
def test_another_policy_has_no_max_buffered_and_says_what_waits(
    regions: Regions, client: TestClient, name: str
) -> None:
    if name == "solo":
        wait(regions.east, "solo", 1, 1)
    job = client.get(f"/api/schedule/{name}").json()
    expected = {"solo": ("buffer_one", 1), "plain": ("allow", 0)}[name]
    assert (job["overlap"], job["waiting"]) == expected
    assert job["maxBuffered"] is None


def test_a_region_whose_job_state_cannot_be_read_is_named(
    regions: Regions, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    wait(regions.east, "queue", 2, 3)

    def fail(job: str) -> None:
        raise StoreError("GetItem (job state) failed - timed out")

    monkeypatch.setattr(regions.west.claims, "job_state", fail)
    job = client.get("/api/schedule/queue").json()
    assert job["waiting"] == 2
    assert job["waitingIn"][0] == {"region": "us-east-1", "count": 2, "running": {}, "error": None}
    assert job["waitingIn"][1]["region"] == "us-west-2"
    assert "timed out" in job["waitingIn"][1]["error"]
    monkeypatch.setattr(regions.east.claims, "job_state", fail)
    assert client.get("/api/schedule/queue").json()["waiting"] is None


def test_a_capped_job_says_its_caps_and_the_places_taken_in_each_region(
    regions: Regions, client: TestClient
) -> None:
    regions.east.tick("2026-11-30T14:00:00Z")
    regions.east.tick("2026-11-30T14:01:00Z")
    job = client.get("/api/schedule/capped").json()
    assert (job["maxRunning"], job["pool"]) == (3, {"name": "exports", "size": 2})
    east, west = job["waitingIn"]
    assert east["running"] == {"job:capped": 2, "pool:exports": 2}
    assert west["running"] == {"job:capped": 0, "pool:exports": 0}
    plain = client.get("/api/schedule/plain").json()
    assert (plain["maxRunning"], plain["pool"]) == (1, None)
