"""The console's audit: its actions carry the reason and the console's identity to the one
operator path, and ``GET /api/audit`` reads every region's trail merged newest first, naming a
region without one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from mini_scheduler.audit import MemoryAuditLog
from mini_scheduler.console.app import create_app
from tests.unit.console.test_api import TOKEN, Regions, post


@pytest.fixture
def audited() -> Iterator[tuple[Regions, TestClient]]:
    regions = Regions()
    regions.east.ticker.audit = MemoryAuditLog()  # west: a stack without a trail
    app = create_app(regions.service(), token=TOKEN, title="test")
    with TestClient(app, base_url="http://127.0.0.1:8765", raise_server_exceptions=False) as c:
        yield regions, c


def test_actions_are_recorded_with_their_reason_and_read_newest_first(
    audited: tuple[Regions, TestClient],
) -> None:
    regions, client = audited
    paused = post(client, "/api/schedule/report/pause", {"operator": "jane", "reason": "drill"})
    assert paused.status_code == 200, paused.text
    regions.east.clock.advance(60)
    ran = post(client, "/api/schedule/tick", {"operator": "bob", "reason": "hotfix 12"})
    assert ran.status_code == 200, ran.text
    answer = client.get("/api/audit", params={"hours": 1}).json()
    assert [(r["action"], r["operator"], r.get("reason")) for r in answer["records"]] == [
        ("run", "bob", "hotfix 12"),
        ("pause", "jane", "drill"),
    ]
    assert answer["records"][1]["before"] == {"paused": False}
    assert answer["unread"] == [
        {"region": "us-west-2", "error": "no audit trail (a stack deployed before it had one)"}
    ]
    runs = client.get("/api/schedule/tick/history").json()["runs"]
    assert "reason: hotfix 12" in runs[0]["note"]
    only = client.get("/api/audit", params={"hours": 1, "actor": "jane"}).json()["records"]
    assert [r["action"] for r in only] == ["pause"]


def test_a_bad_reason_is_refused_and_nothing_done(audited: tuple[Regions, TestClient]) -> None:
    regions, client = audited
    refused = post(client, "/api/schedule/report/pause", {"operator": "jane", "reason": "a\nb"})
    assert refused.status_code in (400, 422), refused.text
    assert "reason" in refused.text
    assert not regions.east.claims.control("-").paused
    assert client.get("/api/audit").json()["records"] == []
