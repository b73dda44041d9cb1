"""Runtime schedules and backfill end to end on every claim store (memory, DynamoDB Local,
MongoDB on mongomock; a real server with MONGODB_URI through the same fixture's backends)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.jobs import Target
from mini_scheduler.model import RunStatus
from mini_scheduler.recorder import Completion, Recorder
from tests.contract.claims.conftest import open_claim_store
from tests.unit.tick.harness import FakeDispatcher, at, rig

BACKENDS = [
    "memory",
    "dynamodb-moto",  # make run's local default: moto, one write at a time
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


EVERY_MINUTE = """
jobs:
  - name: "export"
    cron: "0 * * * * ?"
    service: "export-fn"
misfire.grace: 60
"""


def test_two_identical_backfills_run_each_firing_once_beside_the_jobs_own(
    claims: ClaimStore,
) -> None:
    """Sent twice, run once: the same window backfilled twice puts each firing in the same
    tick twice; the tick claims it once, and the job's own firing in that tick's batch runs."""
    r = rig(EVERY_MINUTE, claims=claims)
    r.tick("2026-11-30T14:00:00Z")
    r.clock.set(at("2026-11-30T14:10:30Z"))
    r.tick("2026-11-30T14:10:00Z")  # 14:01 to 14:08: past the grace, one SKIPPED range
    for sent_at in ("14:10:30", "14:10:41"):  # the second one a few seconds later
        r.clock.set(at(f"2026-11-30T{sent_at}Z"))
        r.ticker.operator.backfill(
            "export", "2026-11-30T14:01:00Z", "2026-11-30T14:06:00Z", 60, "jane.doe"
        )
    r.tick("2026-11-30T14:11:00Z")
    counts = r.dispatcher.counts()
    backfilled = sorted(c[1] for c in r.dispatcher.calls if c[2].get("backfill"))
    assert backfilled == [f"export@2026-11-30T14:0{m}:00Z" for m in range(1, 6)]
    assert counts["export@2026-11-30T14:11:00Z"] == 1
    assert max(counts.values()) == 1
    assert r.ticker.operator.backfill_status()["backfills"] == []


class HookedDispatcher(FakeDispatcher):
    """Runs ``hook`` once, as the firing ``when`` is dispatched (an operator acting mid-tick)."""

    def __init__(self, when: str, hook: Callable[[], object]) -> None:
        super().__init__()
        self.when, self.hook = when, hook

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        answer = super().dispatch(target, firing_id, payload)
        if firing_id == self.when:
            self.hook()
        return answer


def test_a_schedule_deleted_while_a_tick_holds_it_never_fires_again(claims: ClaimStore) -> None:
    """Deleted between its :20 and :40 firings, while the tick that read it waits for :40:
    the :40 firing does not start (recorded SKIPPED), and the tick does not write the next
    minute's firing back: nothing of it fires in the minutes after."""
    holder: list[Any] = []
    dispatcher = HookedDispatcher(
        "every-20@2026-11-30T14:00:20Z",
        lambda: holder[0].ticker.operator.delete_schedule("every-20", "jane.doe"),
    )
    r = rig(CRON, claims=claims, dispatcher=dispatcher)
    holder.append(r)
    r.ticker.operator.create_schedules(
        [{"name": "every-20", "cron": "*/20 * * * * ?", "service": "fn"}], "jane.doe"
    )
    r.tick("2026-11-30T14:00:00Z")
    for minute in ("14:01", "14:02", "14:03"):
        r.clock.set(at(f"2026-11-30T{minute}:00Z"))
        r.tick(f"2026-11-30T{minute}:00Z")
    fired = [i for i in r.dispatcher.firing_ids if i.startswith("every-20@")]
    assert fired == ["every-20@2026-11-30T14:00:20Z"]
    assert r.ticker.operator.list_schedules() == {"schedules": []}
    held = r.claims.run("every-20@2026-11-30T14:00:40Z")
    assert held is not None and held.status is RunStatus.SKIPPED


def test_a_paused_schedule_moves_on_and_fires_again_after_its_resume(claims: ClaimStore) -> None:
    """Paused like a cron.yaml job: its firings of the pause are not run, nothing is written
    for them, and after the resume it fires at its next firings. A one-time schedule whose
    instant passes while paused is recorded SKIPPED (paused) rather than silently gone."""
    r = rig(CRON, claims=claims)
    operator = r.ticker.operator
    operator.create_schedules(
        [
            {"name": "every-20", "cron": "*/20 * * * * ?", "service": "fn"},
            {"name": "once", "at": "2026-11-30T14:01:30Z", "service": "fn"},
        ],
        "jane.doe",
    )
    operator.set_paused("every-20", True, "jane.doe")
    operator.set_paused("once", True, "jane.doe")
    for minute in ("14:00", "14:01"):
        r.clock.set(at(f"2026-11-30T{minute}:00Z"))
        r.tick(f"2026-11-30T{minute}:00Z")
    assert [i for i in r.dispatcher.firing_ids if not i.startswith("export@")] == []
    assert r.claims.run("every-20@2026-11-30T14:00:20Z") is None  # nothing written
    once = r.claims.run("once@2026-11-30T14:01:30Z")
    assert once is not None and once.status is RunStatus.SKIPPED and once.reason == "paused"
    operator.set_paused("every-20", False, "jane.doe")
    r.clock.set(at("2026-11-30T14:02:00Z"))
    r.tick("2026-11-30T14:02:00Z")
    assert [i for i in r.dispatcher.firing_ids if i.startswith("every-20@")] == [
        "every-20@2026-11-30T14:02:00Z",
        "every-20@2026-11-30T14:02:20Z",
        "every-20@2026-11-30T14:02:40Z",
    ]
    assert [s["name"] for s in operator.list_schedules()["schedules"]] == ["every-20"]


BUFFERING = """
jobs:
  - name: "solo"
    cron: "0 * * * * ?"
    service: "solo-fn"
    overlap: "buffer_all"
    max_buffered: 2
misfire.grace: 60
"""


def test_a_backfill_s_firing_that_waits_for_the_job_s_run_starts_as_a_backfill_s(
    claims: ClaimStore,
) -> None:
    """13:30 was skipped; its backfill finds 14:00's run open and waits. When the run ends it
    starts still a backfill's firing: its claim wins over the skip, its payload and run say
    backfill."""
    from mini_scheduler.model import Firing

    r = rig(BUFFERING, claims=claims)
    r.tick("2026-11-30T14:00:00Z")
    skipped = Firing("solo", at("2026-11-30T13:30:00Z"))
    assert claims.record_skipped(skipped, now=r.clock.now(), reason="paused", origin="x")
    r.clock.set(at("2026-11-30T14:00:30Z"))
    r.ticker.operator.backfill(
        "solo", "2026-11-30T13:30:00Z", "2026-11-30T13:31:00Z", 60, "jane.doe"
    )
    r.tick("2026-11-30T14:01:00Z")  # 14:00's run is open: the backfill's firing waits
    assert [d.firing.id for d in claims.pending_deferred("buffer")] == [
        skipped.id,
        "solo@2026-11-30T14:01:00Z",
    ]
    assert claims.close("solo@2026-11-30T14:00:00Z", RunStatus.SUCCEEDED, now=r.clock.now())
    r.tick("2026-11-30T14:02:00Z")
    started = [c for c in r.dispatcher.calls if c[1] == skipped.id]
    assert len(started) == 1 and started[0][2].get("backfill") is True
    run = claims.run(skipped.id)
    assert run is not None and run.backfill and run.status is RunStatus.DISPATCHED
    assert run.replaced_skip is not None  # the claim won over the skip
