"""Every action of the console takes the operator's optional ``reason``, as the CLI's
``--reason``: it reaches the one operator path and its audit record (and a manual run's record);
a reason too long or not text is a 400 that names ``reason``, and nothing is done in any region.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mini_scheduler.audit import MemoryAuditLog
from mini_scheduler.audit.base import MAX_REASON
from mini_scheduler.claims.base import BACKFILL
from mini_scheduler.console.app import CSRF_HEADER, create_app
from tests.unit.console.test_api import TOKEN, Regions, post

ONCE = {"name": "once", "at": "2026-11-30T15:00:00Z", "service": "x-fn"}
WINDOW = {"from": "2026-11-30T13:00:00Z", "to": "2026-11-30T13:05:00Z"}


@pytest.fixture
def audited() -> Iterator[tuple[Regions, TestClient]]:
    regions = Regions()
    regions.east.ticker.audit = MemoryAuditLog()
    regions.west.ticker.audit = MemoryAuditLog()
    app = create_app(regions.service(), token=TOKEN, title="test")
    with TestClient(app, base_url="http://127.0.0.1:8765", raise_server_exceptions=False) as c:
        yield regions, c


def delete(client: TestClient, path: str, body: dict[str, Any]) -> Any:
    return client.request("DELETE", path, json=body, headers={CSRF_HEADER: TOKEN})


@dataclass(frozen=True)
class Action:
    """One of the console's actions: what makes it possible, its request, its record's name."""

    name: str
    send: Callable[[TestClient, dict[str, Any]], Any]  # (client, {"reason": ...}) -> answer
    record: str  # the audit record's action
    before: Callable[[Regions, TestClient], object] = lambda regions, client: None


def _ran(regions: Regions, client: TestClient) -> None:
    regions.east.tick("2026-11-30T14:00:00Z")


def _made(regions: Regions, client: TestClient) -> None:
    assert post(client, "/api/schedules", {"operator": "j", "schedules": [ONCE]}).status_code == 200


def _paused(regions: Regions, client: TestClient) -> None:
    assert post(client, "/api/schedule/tick/pause", {"operator": "j"}).status_code == 200


ACTIONS = [
    Action("run", lambda c, w: post(c, "/api/schedule/tick", {"operator": "j"} | w), "run"),
    Action(
        "rerun",
        lambda c, w: post(
            c, "/api/rerun", {"firingId": "tick@2026-11-30T14:00:00Z", "operator": "j"} | w
        ),
        "rerun",
        _ran,
    ),
    Action(
        "pause", lambda c, w: post(c, "/api/schedule/tick/pause", {"operator": "j"} | w), "pause"
    ),
    Action(
        "resume",
        lambda c, w: post(c, "/api/schedule/tick/resume", {"operator": "j"} | w),
        "resume",
        _paused,
    ),
    Action(
        "failover",
        lambda c, w: post(c, "/api/scheduler/environment", {"active": "DR", "operator": "j"} | w),
        "environment",
    ),
    Action(
        "schedule-create",
        lambda c, w: post(c, "/api/schedules", {"operator": "j", "schedules": [ONCE]} | w),
        "schedule.create",
    ),
    Action(
        "schedule-delete",
        lambda c, w: delete(c, "/api/schedules/once", {"operator": "j"} | w),
        "schedule.delete",
        _made,
    ),
    Action(
        "backfill",
        lambda c, w: post(c, "/api/schedule/tick/backfill", WINDOW | {"operator": "j"} | w),
        "backfill",
    ),
]


def records(client: TestClient) -> list[dict[str, Any]]:
    answer = client.get("/api/audit", params={"hours": 1})
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["records"]
    return found


def everything(regions: Regions, client: TestClient) -> object:
    """What every region holds: runs sent and dispatched, pauses, the active environment,
    runtime schedules, backfills, audit records."""
    held = [
        (
            list(r.dispatcher.calls),
            dict(r.claims.control("x").paused),
            r.store.get(),
            [s.name for s in r.claims.schedules()],
            [d.firing.id for d in r.claims.pending_deferred(BACKFILL)],
        )
        for r in (regions.east, regions.west)
    ]
    return held, list(regions.sent), records(client)


@pytest.mark.parametrize("action", ACTIONS, ids=[a.name for a in ACTIONS])
def test_the_reason_reaches_the_action_s_audit_record(
    audited: tuple[Regions, TestClient], action: Action
) -> None:
    regions, client = audited
    action.before(regions, client)
    regions.east.clock.advance(60)
    why = "incident 4711 " + "x" * (MAX_REASON - 14)  # the longest the CLI takes, kept whole
    answer = action.send(client, {"reason": f"  {why}  "})
    assert answer.status_code == 200, answer.text
    newest = records(client)[0]
    assert (newest["action"], newest["operator"], newest.get("reason")) == (action.record, "j", why)


@pytest.mark.parametrize("action", ACTIONS, ids=[a.name for a in ACTIONS])
@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("x" * (MAX_REASON + 1), f"reason is {MAX_REASON + 1} characters long: at most"),
        (42, "reason must be text"),
        (["drill"], "reason must be text"),
        ("   ", "reason must be text"),
        ("two\nlines", "reason must be one line"),
    ],
    ids=["too-long", "a-number", "a-list", "blank", "two-lines"],
)  # fmt: skip
def test_a_bad_reason_is_400_naming_it_and_nothing_is_done(
    audited: tuple[Regions, TestClient], action: Action, reason: Any, said: str
) -> None:
    regions, client = audited
    action.before(regions, client)
    before = everything(regions, client)
    answer = action.send(client, {"reason": reason})
    assert answer.status_code == 400, answer.text
    assert said in answer.json()["error"]
    assert everything(regions, client) == before


def test_a_manual_run_keeps_its_reason_and_its_history_says_it(
    audited: tuple[Regions, TestClient],
) -> None:
    regions, client = audited
    answer = post(client, "/api/schedule/tick", {"operator": "bob", "reason": "hotfix 12"})
    assert answer.status_code == 200, answer.text
    assert regions.sent == [
        (
            "us-east-1",
            {"job": "tick", "operator": "bob", "parameters": {}, "reason": "hotfix 12"},
        )
    ]
    [run] = regions.east.claims.history("tick")
    assert run.operator_reason == "hotfix 12"
    shown = client.get("/api/schedule/tick/history").json()["runs"][0]
    assert shown["note"] == "manual run by bob; reason: hotfix 12"


def test_a_forced_failover_s_reason_is_its_audit_record_s_too(
    audited: tuple[Regions, TestClient],
) -> None:
    _, client = audited
    body = {"active": "DRR", "operator": "j", "force": True, "reason": "drill 7"}
    answer = post(client, "/api/scheduler/environment", body)
    assert answer.status_code == 200, answer.text
    written = [r for r in records(client) if r["action"] == "environment"]
    assert sorted((r["region"], r.get("reason")) for r in written) == [
        ("us-east-1", "drill 7"),
        ("us-west-2", "drill 7"),
    ]


def test_the_openapi_document_bounds_every_reason_as_the_cli_does(
    audited: tuple[Regions, TestClient],
) -> None:
    _, client = audited
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    bodies = ["RunNow", "Rerun", "OperatorOnly", "EnvironmentChange", "InRegion", "Backfill"]
    for name in [*bodies, "SchedulesCreate"]:
        reason = schemas[name]["properties"]["reason"]
        assert {"type": "string", "maxLength": MAX_REASON} in reason["anyOf"], name
