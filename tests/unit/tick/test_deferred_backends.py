"""Runtime schedules and backfill end to end on every claim store (memory, DynamoDB Local,
MongoDB on mongomock; a real server with MONGODB_URI through the same fixture's backends)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.model import RunStatus
from mini_scheduler.recorder import Completion, Recorder
from tests.contract.claims.conftest import open_claim_store
from tests.unit.tick.harness import at, rig

BACKENDS = [
    "memory",
    pytest.param("dynamodb-local", marks=pytest.mark.dynamodb_local),
    "mongodb-mock",
]
CRON = """
jobs:
  - name: "export"
    cron: "0 */10 * * * ?"
    service: "export-fn"
misfire.grace: 60
"""


@pytest.fixture(params=BACKENDS)
def claims(request: pytest.FixtureRequest) -> Iterator[ClaimStore]:
    with open_claim_store(request.param, request) as store:
        yield store


def test_schedules_run_are_retried_and_end(claims: ClaimStore) -> None:
    r = rig(CRON, claims=claims)
    r.ticker.operator.create_schedules(
        [
            {"name": "once", "at": "2026-11-30T14:00:30Z", "service": "once-fn"},
            {
                "name": "every-20",
                "cron": "*/20 * * * * ?",
                "service": "fn",
                "parameters": {"ratio": 0.5, "tags": ["a", "b"]},
                "end": "2026-11-30T14:01:30Z",
                "retry": {"retries": 1, "backoff": 10},
            },
        ],
        "jane.doe",
    )
    assert [s["name"] for s in r.ticker.operator.list_schedules()["schedules"]] == [
        "every-20",
        "once",
    ]
    r.tick("2026-11-30T14:00:00Z")
    sent = [c[1] for c in r.dispatcher.calls]
    assert "once@2026-11-30T14:00:30Z" in sent
    assert [i for i in sent if i.startswith("every-20@")] == [
        "every-20@2026-11-30T14:00:20Z",
        "every-20@2026-11-30T14:00:40Z",
    ]
    recorder = Recorder(r.claims, r.clock, r.metrics, origin="us-east-1/prod")
    recorder.record(
        Completion(
            "every-20@2026-11-30T14:00:40Z",
            RunStatus.FAILED,
            at("2026-11-30T14:00:45Z"),
            "boom",
            "lambda",
        )
    )
    r.tick("2026-11-30T14:01:00Z")
    sent = [c[1] for c in r.dispatcher.calls if c[1].startswith("every-20@")]
    assert sent[2:] == [
        "every-20@2026-11-30T14:00:40Z#2",  # the retry, from the schedule's entry
        "every-20@2026-11-30T14:01:00Z",
        "every-20@2026-11-30T14:01:20Z",
    ]
    assert r.ticker.operator.list_schedules() == {"schedules": []}  # past its end, and once ran
    payload = next(c[2] for c in r.dispatcher.calls if c[1] == "every-20@2026-11-30T14:01:00Z")
    assert payload["parameters"] == {"ratio": 0.5, "tags": ["a", "b"]}


def test_a_backfill_runs_the_skipped_and_never_what_ran(claims: ClaimStore) -> None:
    r = rig(CRON, claims=claims)
    r.tick("2026-11-30T14:00:00Z")
    r.clock.set(at("2026-11-30T15:00:30Z"))
    r.tick("2026-11-30T15:00:00Z")  # 14:10 to 14:50: past the grace, SKIPPED
    r.ticker.operator.backfill(
        "export", "2026-11-30T14:00:00Z", "2026-11-30T15:00:00Z", 3, "jane.doe"
    )
    for minute in ("15:01", "15:02"):
        r.tick(f"2026-11-30T{minute}:00Z")
    backfilled = [c[1] for c in r.dispatcher.calls if c[2].get("backfill")]
    assert backfilled == [f"export@2026-11-30T14:{m}0:00Z" for m in range(1, 6)]
    run = r.claims.run("export@2026-11-30T14:10:00Z")
    assert run is not None and run.backfill and run.status is RunStatus.DISPATCHED
    assert r.ticker.operator.backfill_status()["backfills"] == []
