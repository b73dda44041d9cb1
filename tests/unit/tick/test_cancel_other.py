"""``overlap: cancel_other`` on the tick (memory stores): a firing that finds its job's run open
stops it (its target's stop), records its end FAILED as cancelled, and starts; refused at load
for a target whose run cannot be stopped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target, load
from mini_scheduler.model import RunStatus
from mini_scheduler.recorder import Completion, Recorder
from mini_scheduler.tick.dryrun import dry_run
from tests.unit.tick.harness import FakeDispatcher, at, rig

CANCELLING = """
jobs:
  - name: "etl"
    cron: "0 * * * * ?"
    service: "flow://etl"
    overlap: "cancel_other"
    retry: {retries: 2, backoff: 0}
"""


class StoppingDispatcher(FakeDispatcher):
    """Records each stop; ``refusing`` makes a stop fail."""

    def __init__(self) -> None:
        super().__init__()
        self.stopped: list[tuple[str, str]] = []
        self.refusing = False

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        return super().dispatch(target, firing_id, payload)

    def stop(self, target: Target, firing_id: str, reason: str) -> str:
        if self.refusing:
            raise DispatchError("Step Functions StopExecution failed - AccessDenied")
        self.stopped.append((firing_id, reason))
        return f"execution:{firing_id}"


def _id(minute: int) -> str:
    return f"etl@2026-11-30T14:{minute:02d}:00Z"


def test_a_firing_stops_the_open_run_records_it_cancelled_and_starts() -> None:
    dispatcher = StoppingDispatcher()
    r = rig(CANCELLING, dispatcher=dispatcher)
    r.tick("2026-11-30T14:00:00Z")
    answer = r.tick("2026-11-30T14:01:00Z")
    assert answer["counts"]["cancelled"] == 1 and answer["counts"]["skipped"] == {}
    why = f"cancelled by firing {_id(1)} (overlap: cancel_other)"
    assert dispatcher.stopped == [(_id(0), why)]
    assert dispatcher.firing_ids == [_id(0), _id(1)]
    cancelled = r.claims.run(_id(0))
    assert cancelled is not None and cancelled.status is RunStatus.FAILED
    assert cancelled.error == why
    started = r.claims.run(_id(1))
    assert started is not None and started.status is RunStatus.DISPATCHED
    # the stopped execution's own end comes later: nothing changes, and no retry follows
    recorder = Recorder(r.claims, r.clock, r.metrics, origin="us-east-1/prod")
    recorder.record(Completion(_id(0), RunStatus.FAILED, r.clock.now(), "Aborted", "flow"))
    assert r.claims.pending_deferred("retry") == []
    assert r.claims.run(_id(0)) == cancelled


def test_a_run_that_cannot_be_stopped_keeps_running_and_the_firing_is_skipped() -> None:
    dispatcher = StoppingDispatcher()
    r = rig(CANCELLING, dispatcher=dispatcher)
    r.tick("2026-11-30T14:00:00Z")
    dispatcher.refusing = True
    answer = r.tick("2026-11-30T14:01:00Z")
    assert answer["counts"]["skipped"] == {"overlap": 1}
    skipped = r.claims.run(_id(1))
    assert skipped is not None and skipped.status is RunStatus.SKIPPED
    assert skipped.reason is not None and "could not be stopped" in skipped.reason
    running = r.claims.run(_id(0))
    assert running is not None and running.status is RunStatus.DISPATCHED


@pytest.mark.parametrize(
    ("service", "why"),
    [
        ("report-fn", "a Lambda function's invocation cannot be stopped once it runs"),
        ("sqs://work", "a message sent cannot be taken back (its run ends at its dispatch)"),
        ("https://example.com/hook", "a webhook's request cannot be taken back"),
    ],
)
def test_cancel_other_is_refused_for_a_target_that_cannot_be_stopped(
    service: str, why: str
) -> None:
    text = CANCELLING.replace('"flow://etl"', f'"{service}"')
    cron_file = load(text, source="test.yaml")
    assert cron_file.jobs == ()
    (problem,) = [p.message for p in cron_file.problems if p.level == "error"]
    assert "overlap cancel_other needs a target whose run can be stopped" in problem
    assert why in problem


def test_cancel_other_loads_for_a_flow_and_a_task() -> None:
    ecs = (
        CANCELLING.replace('"flow://etl"', '"ecs://batch/etl"') + "    ecs: {subnets: [subnet-1]}\n"
    )
    assert load(CANCELLING, source="t.yaml").jobs[0].exclusive
    assert [j.overlap for j in load(ecs, source="t.yaml").jobs] == ["cancel_other"]


def test_the_dry_run_says_the_open_run_is_stopped_and_the_firing_starts() -> None:
    dispatcher = StoppingDispatcher()
    r = rig(CANCELLING, dispatcher=dispatcher)
    r.tick("2026-11-30T14:00:00Z")
    plan = dry_run(
        at("2026-11-30T14:01:00Z"),
        settings=r.settings,
        cron=r.ticker.cron_file,
        claims=r.claims,
        environment=r.store,
        now=at("2026-11-30T14:01:00Z"),
    )
    assert [(a.kind, a.firing_id) for a in plan.actions] == [
        ("cancel", _id(0)),
        ("dispatch", _id(1)),
    ]
    assert plan.summary.counts["cancelled"] == 1
    assert dispatcher.stopped == []  # nothing stopped, nothing written
    running = r.claims.run(_id(0))
    assert running is not None and running.status is RunStatus.DISPATCHED
