"""The console's API over two regions of memory stores, each with a real ticker (the tick
harness): seed 000's routes, ours, CSRF, loopback names only, and every error as a message."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from fastapi.testclient import TestClient

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.console.app import CSRF_HEADER, create_app
from mini_scheduler.console.regions import NotFound
from mini_scheduler.console.service import ConsoleService
from mini_scheduler.console.sites import Site
from mini_scheduler.errors import EventError
from mini_scheduler.handlers.routing import route
from mini_scheduler.jobs.model import FailurePolicy, Retry
from mini_scheduler.model import RunStatus
from mini_scheduler.retries import defer_retry
from tests.unit.tick.harness import Rig, at, rig

pytest.importorskip("fastapi")

CRON = """
jobs:
  - name: "report"
    cron: "0 0 9 * * ?"
    timezone: "Europe/Paris"
    service: "report-fn"
    description: "the morning report"
    parameters: {region: "east", _origin: "hidden", _secret: "s3cret"}
  - name: "tick"
    cron: "0 * * * * ?"
    service: "tick-fn"
"""
TOKEN = "test-token"


class Regions:
    """Two regions, prod active in us-east-1 and DR standing by in us-west-2."""

    def __init__(self) -> None:
        self.east = rig(CRON, region="us-east-1", environment="prod")
        self.west = rig(CRON, region="us-west-2", environment="DR")
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def site(self, name: str, r: Rig) -> Site:
        def send(event: Any) -> Any:
            self.sent.append((name, dict(event)))
            return route(r.ticker, dict(event))

        env = "prod" if r is self.east else "DR"
        return Site(name, env, r.ticker.operator, send, where=f"table {name}-state")

    def service(self) -> ConsoleService:
        sites = [self.site("us-east-1", self.east), self.site("us-west-2", self.west)]
        return ConsoleService(sites, self.east.clock)


@pytest.fixture
def regions() -> Regions:
    return Regions()


@pytest.fixture
def client(regions: Regions) -> Iterator[TestClient]:
    app = create_app(regions.service(), token=TOKEN, title="test")
    with TestClient(app, base_url="http://127.0.0.1:8765", raise_server_exceptions=False) as c:
        yield c


def post(client: TestClient, path: str, body: dict[str, Any], **kwargs: Any) -> Any:
    return client.post(path, json=body, headers={CSRF_HEADER: TOKEN}, **kwargs)


def finish(claims: ClaimStore, r: Rig, status: RunStatus = RunStatus.SUCCEEDED) -> None:
    """Close every dispatched run of ``r`` (a completion event each)."""
    for _, firing_id, _, _ in r.dispatcher.calls:
        claims.close(firing_id, status, now=r.clock.now())


# -- reading ----------------------------------------------------------------------------------


def test_every_job_with_words_zone_next_three_firings_and_last_run(
    regions: Regions, client: TestClient
) -> None:
    regions.east.tick("2026-11-30T14:00:00Z")
    finish(regions.east.claims, regions.east)
    answer = client.get("/api/schedule").json()
    assert answer["now"] == "2026-11-30T14:00:00Z"
    report, tick = answer["jobs"]
    assert report["name"] == "report" and report["kind"] == "cron.yaml"
    assert report["words"] == "At 09:00" and report["zone"] == "Europe/Paris"
    assert [f["utc"] for f in report["next"]] == [
        "2026-12-01T08:00:00Z",
        "2026-12-02T08:00:00Z",
        "2026-12-03T08:00:00Z",
    ]
    assert report["next"][0]["local"] == "2026-12-01T09:00:00+01:00"
    assert report["next"][0]["abbreviation"] == "CET"
    assert report["lastRun"] is None and report["paused"] is False
    # the firing at this very second is due, not next
    assert tick["next"][0]["utc"] == "2026-11-30T14:01:00Z"
    assert tick["lastRun"]["status"] == "SUCCEEDED"
    assert tick["lastRun"]["region"] == "us-east-1"
    assert tick["lastRun"]["firingId"] == "tick@2026-11-30T14:00:00Z"


def test_one_job_hides_the_parameters_that_start_with_an_underscore(client: TestClient) -> None:
    answer = client.get("/api/schedule/report").json()
    assert answer["parameters"] == {"region": "east"}
    assert answer["target"] == "report-fn" and answer["misfire"] and answer["overlap"]
    assert "s3cret" not in client.get("/api/schedule/report").text


def test_an_unknown_job_is_404_with_a_message(client: TestClient) -> None:
    answer = client.get("/api/schedule/nope")
    assert answer.status_code == 404
    assert answer.json() == {
        "error": "no cron.yaml job or runtime schedule nope: not in test.yaml, nor a runtime "
        "schedule of us-east-1, us-west-2 (mini-scheduler jobs lists the cron file's jobs, "
        "mini-scheduler schedule list the runtime schedules)"
    }


def test_history_pages_across_both_regions_newest_first_each_run_once(
    regions: Regions, client: TestClient
) -> None:
    for minute in range(5):
        regions.east.tick(f"2026-11-30T14:0{minute}:00Z")
    regions.west.store.set("DR", operator="test", now=regions.west.clock.now())
    for minute in range(5, 8):
        regions.west.tick(f"2026-11-30T14:0{minute}:00Z")
    seen: list[tuple[str, str]] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        page = client.get("/api/schedule/tick/history", params=params).json()
        pages += 1
        seen += [(run["firingId"], run["region"]) for run in page["runs"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert pages == 3
    assert [f for f, _ in seen] == [f"tick@2026-11-30T14:0{m}:00Z" for m in range(7, -1, -1)]
    assert {r for f, r in seen if f.endswith("14:07:00Z")} == {"us-west-2"}
    assert {r for f, r in seen if f.endswith("14:00:00Z")} == {"us-east-1"}


def test_history_limit_and_cursor_are_checked(client: TestClient) -> None:
    assert client.get("/api/schedule/tick/history", params={"limit": 0}).status_code == 422
    answer = client.get("/api/schedule/tick/history", params={"cursor": "x" * 301})
    assert answer.status_code == 422 and "cursor" in answer.json()["error"]


def test_next_firings_and_the_timeline_with_the_zone_s_clock_change(
    regions: Regions, client: TestClient
) -> None:
    regions.east.clock.set(at("2027-03-27T12:00:00Z"))
    upcoming = client.get("/api/schedule/report/next", params={"count": 2}).json()
    assert [f["local"] for f in upcoming["firings"]] == [
        "2027-03-28T09:00:00+02:00",
        "2027-03-29T09:00:00+02:00",
    ]
    timeline = client.get("/api/timeline", params={"hours": 24}).json()
    assert timeline["from"] == "2027-03-27T12:00:00Z" and timeline["to"] == "2027-03-28T12:00:00Z"
    report = next(row for row in timeline["rows"] if row["job"] == "report")
    assert report["firings"] == ["2027-03-28T07:00:00Z"]
    assert report["clockChanges"] == [
        {
            "at": "2027-03-28T01:00:00Z",
            "zone": "Europe/Paris",
            "offsetBefore": 3600,
            "offsetAfter": 7200,
            "text": "Europe/Paris: clocks go forward 1 h",
        }
    ]
    tick = next(row for row in timeline["rows"] if row["job"] == "tick")
    assert len(tick["firings"]) == 1440 and not tick["dense"] and tick["clockChanges"] == []


# -- the environment ---------------------------------------------------------------------------


def test_environment_answers_seed_000_s_status_and_every_region(client: TestClient) -> None:
    answer = client.get("/api/scheduler/environment").json()
    assert {k: answer[k] for k in ("environment", "active", "mode", "persistent", "store")} == {
        "environment": "prod",
        "active": "prod",
        "mode": "active",
        "persistent": False,
        "store": "memory",
    }
    assert [(r["region"], r["mode"]) for r in answer["regions"]] == [
        ("us-east-1", "active"),
        ("us-west-2", "standby"),
    ]
    assert answer["activeRegions"] == ["us-east-1"] and answer["problem"] is None
    assert answer["known"] == ["prod", "DR"]


def test_failover_writes_every_region_and_logs_the_operator(
    regions: Regions, client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        answer = post(client, "/api/scheduler/environment", {"active": "DR", "operator": "jane"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["active"] == "DR" and body["mode"] == "standby"
    assert body["activeRegions"] == ["us-west-2"] and body["failedRegions"] == []
    assert regions.east.store.get() == "DR" and regions.west.store.get() == "DR"
    assert any("Active environment set to DR by jane" in r.getMessage() for r in caplog.records)


def test_failover_to_an_unknown_name_writes_nothing(regions: Regions, client: TestClient) -> None:
    answer = post(client, "/api/scheduler/environment", {"active": "DRR", "operator": "jane"})
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("DRR is not a known environment (known: prod, DR)")
    assert regions.east.store.get() is None and regions.west.store.get() is None
    forced = post(
        client,
        "/api/scheduler/environment",
        {"active": "DRR", "operator": "jane", "force": True, "reason": "drill"},
    )
    assert forced.status_code == 200 and regions.west.store.get() == "DRR"
    assert forced.json()["problem"].startswith("No region is active")


def test_failover_from_a_console_of_one_region_of_two_writes_nothing(regions: Regions) -> None:
    """The CLI's rule (issue 25): a failover that makes DR's region active and leaves prod's
    out (it keeps its value: both could be active) writes nothing; the local console, whose one
    region is every region there is, writes it."""
    west = regions.site("us-west-2", regions.west)
    with pytest.raises(EventError, match=r"no region served is prod's .*nothing was written"):
        ConsoleService([west], regions.west.clock).set_environment("DR", "jane")
    assert regions.west.store.get() is None
    whole = ConsoleService([west], regions.west.clock, whole=True)
    assert whole.set_environment("DR", "jane")["failedRegions"] == []
    assert regions.west.store.get() == "DR"


def test_failover_writes_the_name_as_its_stack_spells_it(regions: Regions) -> None:
    """As ``mini-scheduler failover --to dr`` writes DR (fleet.spelled)."""
    answer = regions.service().set_environment("dr", "jane")
    assert answer["set"] == "DR" and answer["failedRegions"] == []
    assert regions.east.store.get() == "DR" and regions.west.store.get() == "DR"


def test_failover_reads_every_region_back(
    regions: Regions, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A region whose store does not hold the name after the write is a failed region."""
    monkeypatch.setattr(regions.west.store, "get", lambda: "prod")
    answer = post(client, "/api/scheduler/environment", {"active": "DR", "operator": "jane"})
    body = answer.json()
    assert body["failedRegions"] == ["us-west-2"]
    written = {w["region"]: w for w in body["written"]}
    assert written["us-east-1"]["ok"] is True
    assert written["us-west-2"]["error"].endswith("holds 'prod' after the write, not DR")


# -- actions -----------------------------------------------------------------------------------


def test_run_now_goes_to_the_active_region_s_ticker(regions: Regions, client: TestClient) -> None:
    answer = post(client, "/api/schedule/report", {"operator": "jane.doe"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["region"] == "us-east-1" and body["status"] == "DISPATCHED"
    assert body["manual"] is True and body["operator"] == "jane.doe"
    assert regions.sent == [
        ("us-east-1", {"job": "report", "operator": "jane.doe", "parameters": {}})
    ]
    assert regions.east.dispatcher.calls[0][0] == "report-fn"
    post(client, "/api/scheduler/environment", {"active": "DR", "operator": "jane"})
    again = post(client, "/api/schedule/report", {"operator": "jane.doe"}).json()
    assert again["region"] == "us-west-2"


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"operator": "jane doe"}, 400, "must be 1-128 letters"),
        ({"operator": ""}, 400, "operator is required"),
        ({}, 422, "operator: Field required"),
        ({"operator": "jane", "extra": 1}, 422, "extra: Extra inputs are not permitted"),
        ({"operator": "jane", "region": "eu-west-9"}, 400, "region 'eu-west-9' is not one"),
    ],
)
def test_a_bad_run_request_is_refused_with_a_message_and_nothing_runs(
    regions: Regions, client: TestClient, body: dict[str, Any], status: int, message: str
) -> None:
    answer = post(client, "/api/schedule/report", body)
    assert answer.status_code == status
    assert message in answer.json()["error"]
    assert regions.east.dispatcher.calls == [] and regions.west.dispatcher.calls == []


def test_pause_and_resume_in_every_region(regions: Regions, client: TestClient) -> None:
    answer = post(client, "/api/schedule/tick/pause", {"operator": "jane"}).json()
    assert [r["region"] for r in answer["regions"] if r["ok"]] == ["us-east-1", "us-west-2"]
    for r in (regions.east, regions.west):
        assert r.claims.control("x").paused["tick"].operator == "jane"
    listed = client.get("/api/schedule").json()["jobs"][1]
    assert listed["paused"] and listed["pausedIn"] == ["us-east-1", "us-west-2"]
    assert listed["pausedBy"] == ["jane"]
    regions.east.tick("2026-11-30T14:00:00Z")
    assert regions.east.dispatcher.calls == []
    post(client, "/api/schedule/tick/resume", {"operator": "jane"})
    assert not client.get("/api/schedule").json()["jobs"][1]["paused"]


def test_runtime_schedules_and_backfills_in_the_active_region(
    regions: Regions, client: TestClient
) -> None:
    made = post(
        client,
        "/api/schedules",
        {
            "operator": "jane",
            "schedules": [{"name": "once", "at": "2026-11-30T15:00:00Z", "service": "x-fn"}],
        },
    )
    assert made.status_code == 200, made.text
    assert made.json()["region"] == "us-east-1"
    jobs = client.get("/api/schedule").json()["jobs"]
    assert [(j["name"], j["kind"], j["region"]) for j in jobs][-1] == (
        "once",
        "one-time",
        "us-east-1",
    )
    listed = client.get("/api/schedules").json()["regions"]
    assert [len(r["schedules"]) for r in listed] == [1, 0]
    gone = client.request(
        "DELETE", "/api/schedules/once", json={"operator": "jane"}, headers={CSRF_HEADER: TOKEN}
    )
    assert gone.status_code == 200 and gone.json()["deleted"]["name"] == "once"
    started = post(
        client,
        "/api/schedule/tick/backfill",
        {"from": "2026-11-30T13:00:00Z", "to": "2026-11-30T13:05:00Z", "operator": "jane"},
    )
    assert started.status_code == 200, started.text
    status = client.get("/api/backfills").json()["regions"][0]["backfills"]
    assert status and status[0]["job"] == "tick"


def test_a_job_s_pending_retries_in_every_region_soonest_first(
    regions: Regions, client: TestClient
) -> None:
    policy = FailurePolicy(Retry(2, 60, 1, 3600))
    now = at("2026-11-30T14:00:00Z")
    for r, run_id, failed in [
        (regions.west, "tick@2026-11-30T13:58:00Z", "2026-11-30T13:59:30Z"),
        (regions.east, "tick@2026-11-30T13:59:00Z#2", "2026-11-30T14:00:10Z"),
        (regions.east, "report@2026-11-30T08:00:00Z", "2026-11-30T13:00:00Z"),
    ]:
        defer_retry(r.claims, run_id, policy, "FAILED", failed_at=at(failed), origin="x", now=now)
    answer = client.get("/api/schedule/tick/retries")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "job": "tick",
        "retries": [
            {
                "firingId": "tick@2026-11-30T13:58:00Z",
                "runId": "tick@2026-11-30T13:58:00Z#2",
                "attempt": 2,
                "due": "2026-11-30T14:00:30Z",
                "region": "us-west-2",
                "writtenAt": "2026-11-30T14:00:00Z",
            },
            {
                "firingId": "tick@2026-11-30T13:59:00Z",
                "runId": "tick@2026-11-30T13:59:00Z#3",
                "attempt": 3,
                "due": "2026-11-30T14:01:10Z",
                "region": "us-east-1",
                "writtenAt": "2026-11-30T14:00:00Z",
            },
        ],
        "unread": [],
    }
    assert [r["runId"] for r in client.get("/api/schedule/report/retries").json()["retries"]] == [
        "report@2026-11-30T08:00:00Z#2"
    ]
    # the tick that dispatches east's retry leaves none of it waiting
    regions.east.tick("2026-11-30T14:02:00Z")
    assert "tick@2026-11-30T13:59:00Z#3" in regions.east.dispatcher.firing_ids
    waiting = client.get("/api/schedule/tick/retries").json()["retries"]
    assert [(r["runId"], r["region"]) for r in waiting] == [
        ("tick@2026-11-30T13:58:00Z#2", "us-west-2")
    ]


def test_pending_retries_of_an_unknown_job_or_an_unreadable_region(
    regions: Regions, client: TestClient
) -> None:
    missing = client.get("/api/schedule/nope/retries")
    assert missing.status_code == 404 and "schedule nope:" in missing.json()["error"]

    def refuse(reason: str) -> Any:
        if reason != "retry":
            return []
        error = {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}
        raise ClientError(error, "Query")  # type: ignore[arg-type]

    regions.west.ticker.operator.claims.pending_deferred = refuse  # type: ignore[method-assign, union-attr]
    answer = client.get("/api/schedule/tick/retries")
    assert answer.status_code == 200, answer.text
    assert answer.json()["retries"] == []
    [unread] = answer.json()["unread"]
    assert unread["region"] == "us-west-2" and "AccessDeniedException" in unread["error"]


AT = "2026-11-30T15:00:00Z"
ONCE = {"name": "x", "at": AT, "service": "x-fn"}


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"operator": "bad name", "schedules": [ONCE]}, "operator"),
        ({"operator": "j", "schedules": [ONCE | {"name": "tick"}]}, "name tick is a job of"),
        ({"operator": "j", "schedules": [ONCE | {"at": "2026-11-29T15:00:00Z"}]}, "not in the"),
        ({"operator": "j", "schedules": [{"name": "x", "service": "x-fn"}]}, "missing cron"),
        ({"operator": "j", "schedules": [ONCE], "region": "eu-west-9"}, "region 'eu-west-9'"),
        ({"operator": "j", "schedules": [ONCE, {"name": "y", "service": "y"}]}, "entry 2"),
    ],
    ids=["operator", "cron-yaml-name", "past", "no-when", "region", "one-bad-of-two"],
)  # fmt: skip
def test_a_refused_schedule_names_what_is_wrong_and_creates_nothing(
    client: TestClient, body: dict[str, Any], said: str
) -> None:
    answer = post(client, "/api/schedules", body)
    assert answer.status_code == 400, answer.text
    assert said in answer.json()["error"]
    assert [r["schedules"] for r in client.get("/api/schedules").json()["regions"]] == [[], []]


def test_a_schedule_is_deleted_from_the_region_that_holds_it(client: TestClient) -> None:
    def delete(name: str, body: dict[str, Any]) -> Any:
        return client.request(
            "DELETE", f"/api/schedules/{name}", json=body, headers={CSRF_HEADER: TOKEN}
        )

    def held() -> list[list[str]]:
        listed = client.get("/api/schedules").json()["regions"]
        return [[s["name"] for s in r["schedules"]] for r in listed]

    for region, name in (("us-west-2", "x"), ("us-east-1", "y"), ("us-west-2", "y")):
        body = {"operator": "j", "schedules": [ONCE | {"name": name}], "region": region}
        assert post(client, "/api/schedules", body).status_code == 200
    assert held() == [["y"], ["x", "y"]]
    missing = delete("nope", {"operator": "j"})
    assert missing.status_code == 404
    assert missing.json() == {"error": "no runtime schedule 'nope' in us-east-1, us-west-2"}
    bad = delete("x", {"operator": "a b"})
    assert bad.status_code == 400 and "operator 'a b'" in bad.json()["error"]
    twice = delete("y", {"operator": "j"})
    assert twice.status_code == 400
    assert "is in us-east-1, us-west-2" in twice.json()["error"]
    assert held() == [["y"], ["x", "y"]]
    # no region named: the one that holds it, not the active one
    gone = delete("x", {"operator": "j"})
    assert gone.status_code == 200 and gone.json()["region"] == "us-west-2"
    gone = delete("y", {"operator": "j", "region": "us-west-2"})
    assert gone.status_code == 200 and gone.json()["region"] == "us-west-2"
    assert held() == [["y"], []]


WINDOW = {"from": "2026-11-30T13:00:00Z", "to": "2026-11-30T13:05:00Z", "operator": "j"}


@pytest.mark.parametrize(
    ("job", "body", "status", "said"),
    [
        ("tick", WINDOW | {"operator": "a b"}, 400, "operator 'a b'"),
        ("tick", WINDOW | {"to": "2026-12-30T13:05:00Z"}, 400, "2026-12-30T13:05:00Z is in the"),
        ("tick", WINDOW | {"from": "yesterday"}, 400, "from 'yesterday' is not an instant"),
        ("tick", WINDOW | {"rate": 0}, 400, "rate must be"),
        ("tick", {"from": "2026-11-30T13:00:00Z", "operator": "j"}, 422, "to: Field required"),
        ("nope", WINDOW, 404, "no cron.yaml job or runtime schedule nope:"),
    ],
    ids=["operator", "future", "not-an-instant", "rate", "no-to", "unknown-job"],
)  # fmt: skip
def test_a_refused_backfill_names_what_is_wrong_and_starts_nothing(
    client: TestClient, job: str, body: dict[str, Any], status: int, said: str
) -> None:
    answer = post(client, f"/api/schedule/{job}/backfill", body)
    assert answer.status_code == status, answer.text
    assert said in answer.json()["error"]
    assert [r["backfills"] for r in client.get("/api/backfills").json()["regions"]] == [[], []]


def test_a_backfill_is_followed_until_its_last_firing_is_dispatched(
    regions: Regions, client: TestClient
) -> None:
    window = {"from": "2026-11-30T13:00:00Z", "to": "2026-11-30T13:05:00Z", "rate": 2}
    started = post(client, "/api/schedule/tick/backfill", window | {"operator": "jane"}).json()
    assert (started["total"], started["pending"], started["operator"]) == (5, 5, "jane")
    seen = []
    for minute in range(1, 10):
        [east, west] = client.get("/api/backfills").json()["regions"]
        assert west["backfills"] == []
        seen.append([(b["id"], b["done"], b["pending"]) for b in east["backfills"]])
        if not seen[-1]:
            break
        regions.east.tick(f"2026-11-30T14:{minute:02}:00Z")
    ident = started["id"]
    assert seen[0] == [(ident, 0, 5)] and seen[-1] == []
    done = [found[0][1] for found in seen[:-1]]
    assert done == sorted(set(done)) and len(done) > 1, seen  # it moves, a tick at a time
    assert sorted(f for f in regions.east.dispatcher.firing_ids if "T13:" in f) == [
        f"tick@2026-11-30T13:0{m}:00Z" for m in range(5)
    ]


def test_rerun_sends_the_firing_to_the_ticker(regions: Regions, client: TestClient) -> None:
    regions.east.tick("2026-11-30T14:00:00Z")
    answer = post(client, "/api/rerun", {"firingId": "tick@2026-11-30T14:00:00Z", "operator": "j"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["reruns"] == "tick@2026-11-30T14:00:00Z"
    bad = post(client, "/api/rerun", {"firingId": "tick@2026-11-30T13:59:30Z", "operator": "j"})
    assert bad.status_code == 400 and "does not fire at" in bad.json()["error"]


# -- safety --------------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{}, {CSRF_HEADER: "wrong"}, {CSRF_HEADER: ""}])
def test_a_post_without_the_page_s_token_is_refused_and_writes_nothing(
    regions: Regions, client: TestClient, headers: dict[str, str]
) -> None:
    for path, body in [
        ("/api/schedule/tick/pause", {"operator": "jane"}),
        ("/api/scheduler/environment", {"active": "DR", "operator": "jane"}),
        ("/api/schedule/report", {"operator": "jane"}),
    ]:
        answer = client.post(path, json=body, headers=headers)
        assert answer.status_code == 403
        assert answer.json() == {"error": f"missing or wrong {CSRF_HEADER}: reload the page"}
    assert regions.east.claims.control("x").paused == {}
    assert regions.east.store.get() is None and regions.east.dispatcher.calls == []


@pytest.mark.parametrize("headers", [{}, {CSRF_HEADER: "wrong"}])
def test_schedules_and_backfills_without_the_page_s_token_are_refused(
    regions: Regions, client: TestClient, headers: dict[str, str]
) -> None:
    made = post(
        client,
        "/api/schedules",
        {"operator": "jane", "schedules": [{"name": "once", "at": AT, "service": "x-fn"}]},
    )
    assert made.status_code == 200, made.text
    refusal = {"error": f"missing or wrong {CSRF_HEADER}: reload the page"}
    for method, path, body in [
        ("POST", "/api/schedules", {"operator": "j", "schedules": {"name": "two", "at": AT}}),
        ("DELETE", "/api/schedules/once", {"operator": "jane"}),
        ("POST", "/api/schedule/tick/backfill", {"from": AT, "to": AT, "operator": "jane"}),
    ]:
        answer = client.request(method, path, json=body, headers=headers)
        assert (answer.status_code, answer.json()) == (403, refusal), (method, path)
    listed = client.get("/api/schedules").json()["regions"]
    assert [[s["name"] for s in r["schedules"]] for r in listed] == [["once"], []]
    assert [r["backfills"] for r in client.get("/api/backfills").json()["regions"]] == [[], []]


def test_the_page_carries_the_token_and_a_strict_content_security_policy(
    client: TestClient,
) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert f'<meta name="csrf-token" content="{TOKEN}">' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    assert client.get("/api/csrf").json() == {"token": TOKEN}
    assert client.get("/api/schedule").headers["cache-control"] == "no-store"


def test_only_loopback_names_are_served(client: TestClient) -> None:
    """A page of another site whose name resolves to 127.0.0.1 (DNS rebinding) is refused."""
    assert client.get("/api/schedule", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/api/schedule", headers={"host": "localhost:8765"}).status_code == 200


def test_an_aws_failure_is_a_message_never_a_stack_trace(regions: Regions) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        error = {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}
        raise ClientError(error, "GetItem")  # type: ignore[arg-type]

    regions.east.ticker.operator.claims.set_paused = refuse  # type: ignore[method-assign, union-attr]
    app = create_app(regions.service(), token=TOKEN)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        answer = post(c, "/api/schedule/tick/pause", {"operator": "jane"})
        assert answer.status_code == 200
        east, west = answer.json()["regions"]
        assert not east["ok"] and "AccessDeniedException" in east["error"]
        assert west["ok"] and answer.json()["failedRegions"] == ["us-east-1"]
        regions.east.ticker.operator.claims.job_state = refuse  # type: ignore[method-assign, union-attr]
        regions.east.ticker.operator.claims.control = refuse  # type: ignore[method-assign, union-attr]
        assert c.get("/api/schedule").status_code == 200  # the region is left out, and logged


def test_an_unexpected_error_is_500_without_details(regions: Regions) -> None:
    service = regions.service()

    def boom() -> Any:
        raise RuntimeError("secret detail")

    service.jobs = boom  # type: ignore[method-assign]
    app = create_app(service, token=TOKEN)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        answer = c.get("/api/schedule")
    assert answer.status_code == 500
    assert answer.json() == {"error": "internal error: the console's log has the details"}
    assert "secret detail" not in answer.text and "Traceback" not in answer.text


def test_the_openapi_document_describes_every_route(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    paths = document["paths"]
    assert set(paths) == {
        "/api/csrf",
        "/api/schedule",
        "/api/schedule/{name}",
        "/api/schedule/{name}/pause",
        "/api/schedule/{name}/resume",
        "/api/schedule/{name}/history",
        "/api/schedule/{name}/next",
        "/api/schedule/{name}/retries",
        "/api/schedule/{name}/backfill",
        "/api/timeline",
        "/api/rerun",
        "/api/scheduler/environment",
        "/api/schedules",
        "/api/schedules/{name}",
        "/api/backfills",
        "/api/audit",
    }
    assert set(paths["/api/schedule/{name}"]) == {"get", "post"}
    run_now = paths["/api/schedule/{name}"]["post"]
    assert run_now["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/RunNow"
    )
    for path, operations in paths.items():
        for method, operation in operations.items():
            assert operation.get("description") or operation.get("summary"), (path, method)
            if method in ("post", "delete"):
                assert "403" in operation["responses"], (path, method)


def test_a_cron_yaml_job_is_found_without_reading_the_runtime_schedules(
    regions: Regions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request about one job finds it first in cron.yaml: the regions' deferred firings
    (every pending schedule, retry and backfill) are read only for another name."""
    reads: list[str] = []
    for r in (regions.east, regions.west):
        original = r.ticker.operator.runtime_schedules
        monkeypatch.setattr(
            r.ticker.operator,
            "runtime_schedules",
            lambda original=original: reads.append("read") or original(),
        )
    service = regions.service()
    service.history("tick")
    service.next_firings("report")
    assert reads == []
    with pytest.raises(NotFound):
        service.history("nope")
    assert reads == ["read", "read"]


# -- history of a name without a definition (issue 25) --------------------------------------------


def _create(client: TestClient, entry: dict[str, Any]) -> None:
    made = post(client, "/api/schedules", {"operator": "jane", "schedules": [entry]})
    assert made.status_code == 200, made.text


def test_a_fired_one_time_schedule_and_a_deleted_one_keep_their_history(
    regions: Regions, client: TestClient
) -> None:
    _create(client, {"name": "once", "at": "2026-11-30T14:01:00Z", "service": "x-fn"})
    _create(client, {"name": "every", "cron": "0 * * * * ?", "service": "y-fn"})
    regions.east.tick("2026-11-30T14:01:00Z")
    gone = client.request(
        "DELETE", "/api/schedules/every", json={"operator": "jane"}, headers={CSRF_HEADER: TOKEN}
    )
    assert gone.status_code == 200, gone.text
    for name in ("once", "every"):
        assert client.get(f"/api/schedule/{name}").status_code == 404  # no definition left
        answer = client.get(f"/api/schedule/{name}/history")
        assert answer.status_code == 200, answer.text
        assert [run["firingId"] for run in answer.json()["runs"]] == [
            f"{name}@2026-11-30T14:01:00Z"
        ]


def test_the_history_of_a_name_with_no_definition_and_no_run_is_404(client: TestClient) -> None:
    answer = client.get("/api/schedule/nope/history")
    assert answer.status_code == 404
    assert answer.json() == {
        "error": "no cron.yaml job or runtime schedule nope: not in test.yaml, nor a runtime "
        "schedule of us-east-1, us-west-2, and no run of it in us-east-1, us-west-2 "
        "(mini-scheduler jobs lists the cron file's jobs, mini-scheduler schedule list the "
        "runtime schedules)"
    }


# -- runtime schedules are paused like cron.yaml's jobs (issue 25) --------------------------------


def test_a_runtime_schedule_is_paused_and_resumed_where_it_lives(
    regions: Regions, client: TestClient
) -> None:
    _create(client, {"name": "every", "cron": "0 * * * * ?", "service": "y-fn"})
    answer = post(client, "/api/schedule/every/pause", {"operator": "jane"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["failedRegions"] == [] and body["paused"] is True
    assert [(r["region"], r["ok"]) for r in body["regions"]] == [("us-east-1", True)]
    assert set(regions.east.claims.control("x").paused) == {"every"}
    assert regions.west.claims.control("x").paused == {}
    listed = client.get("/api/schedule/every").json()
    assert listed["paused"] and listed["pausedIn"] == ["us-east-1"]
    regions.east.tick("2026-11-30T14:01:00Z")
    assert [call for call in regions.east.dispatcher.calls if call[0] == "y-fn"] == []
    assert client.get("/api/schedule/every/history").status_code == 200
    resumed = post(client, "/api/schedule/every/resume", {"operator": "jane"})
    assert resumed.status_code == 200 and resumed.json()["failedRegions"] == []
    assert not client.get("/api/schedule/every").json()["paused"]


def test_pausing_a_name_that_is_neither_a_job_nor_a_schedule_writes_nothing(
    regions: Regions, client: TestClient
) -> None:
    answer = post(client, "/api/schedule/evrey/pause", {"operator": "jane"})
    assert answer.status_code == 404
    assert answer.json()["error"].startswith(
        "no cron.yaml job or runtime schedule evrey: not in test.yaml, nor a runtime"
    )
    assert regions.east.claims.control("x").paused == {}
    assert regions.west.claims.control("x").paused == {}


def test_deleting_a_paused_runtime_schedule_clears_its_pause(
    regions: Regions, client: TestClient
) -> None:
    _create(client, {"name": "every", "cron": "0 * * * * ?", "service": "y-fn"})
    post(client, "/api/schedule/every/pause", {"operator": "jane"})
    gone = client.request(
        "DELETE", "/api/schedules/every", json={"operator": "jane"}, headers={CSRF_HEADER: TOKEN}
    )
    assert gone.status_code == 200, gone.text
    assert regions.east.claims.control("x").paused == {}
    _create(client, {"name": "every", "cron": "0 * * * * ?", "service": "y-fn"})
    assert not client.get("/api/schedule/every").json()["paused"]


# -- sizes are checked before any AWS call (issue 25) ---------------------------------------------


def test_a_request_body_over_the_limit_is_413_and_nothing_is_sent(
    regions: Regions, client: TestClient
) -> None:
    from mini_scheduler.jobs.limits import LAMBDA_ASYNC_PAYLOAD_LIMIT

    big = {"operator": "jane", "parameters": {"blob": "x" * (50 * 1024 * 1024)}}
    answer = post(client, "/api/schedule/report", big)
    assert answer.status_code == 413
    assert answer.json()["error"].startswith("request body too large: ")
    assert f"more than the {LAMBDA_ASYNC_PAYLOAD_LIMIT} bytes" in answer.json()["error"]
    assert regions.sent == [] and regions.east.dispatcher.calls == []


def test_a_chunked_body_over_the_limit_is_413_too(regions: Regions, client: TestClient) -> None:
    from mini_scheduler.jobs.limits import LAMBDA_ASYNC_PAYLOAD_LIMIT

    def chunks() -> Iterator[bytes]:
        yield b'{"operator": "jane", "parameters": {"blob": "'
        for _ in range(3):
            yield b"x" * LAMBDA_ASYNC_PAYLOAD_LIMIT
        yield b'"}}'

    answer = client.post(
        "/api/schedule/report",
        content=chunks(),
        headers={CSRF_HEADER: TOKEN, "Content-Type": "application/json"},
    )
    assert answer.status_code == 413, answer.text
    assert regions.sent == []


def test_parameters_over_a_target_s_limit_are_422_naming_it_and_nothing_is_sent(
    regions: Regions, client: TestClient
) -> None:
    from mini_scheduler.jobs.limits import parameters_limit

    limit = parameters_limit("lambda")
    body = {"operator": "jane", "parameters": {"blob": "x" * limit}}
    answer = post(client, "/api/schedule/report", body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == (
        f"parameters for report: parameters take {limit + 27} bytes as JSON, more than the "
        f"{limit} a Lambda target allows (the 409600-byte DynamoDB item that records the "
        "job's state, less 8192 kept for the rest of the dispatch)"
    )
    assert regions.sent == [] and regions.east.dispatcher.calls == []
