"""Retries: a failed run becomes its firing's next attempt, deferred, then claimed and
dispatched by the tick that reaches it (issue 14, part 1)."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from mini_scheduler.claims.base import Deferred
from mini_scheduler.claims.memory import MemoryClaimStore
from mini_scheduler.clock import FixedClock
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, RunStatus
from mini_scheduler.recorder import Completion, Recorder
from tests.unit.tick.harness import at, rig

RETRIED = """
jobs:
  - name: "export"
    cron: "0 0 * * * ?"
    service: "export-fn"
    parameters: {size: 1}
    retry: {retries: 2, backoff: 90, factor: 2}
"""
FIRST = "export@2026-11-30T14:00:00Z"


def test_a_failed_dispatch_is_retried_with_back_off_until_no_attempt_is_left(
    caplog: pytest.LogCaptureFixture,
) -> None:
    r = rig(RETRIED)
    r.dispatcher.failing.add("export-fn")
    r.tick("2026-11-30T14:00:00Z")
    failed = r.claims.run(FIRST)
    assert failed is not None and failed.status is RunStatus.FAILED
    (retry,) = r.claims.due_deferred(at("2026-12-01T00:00:00Z"))
    assert retry.firing.id == f"{FIRST}#2" and retry.reason == "retry"
    assert retry.due == at("2026-11-30T14:01:30Z")  # backoff 90 s after the failure
    r.tick("2026-11-30T14:01:00Z")  # the attempt is due in this window, at its second
    (third,) = r.claims.due_deferred(at("2026-12-01T00:00:00Z"))
    assert third.firing.id == f"{FIRST}#3"
    assert third.due == at("2026-11-30T14:04:30Z")  # 90 s x 2
    second = r.claims.run(f"{FIRST}#2")
    assert second is not None and second.status is RunStatus.FAILED
    r.dispatcher.failing.clear()
    with caplog.at_level(logging.INFO):
        r.tick("2026-11-30T14:02:00Z")
        r.tick("2026-11-30T14:03:00Z")
        assert r.dispatcher.calls == []  # not due yet
        r.tick("2026-11-30T14:04:00Z")
    ((target, run_id, body, sent),) = r.dispatcher.calls
    assert (target, run_id) == ("export-fn", f"{FIRST}#3")
    assert (body["firingId"], body["attempt"], body["parameters"]) == (FIRST, 3, {"size": 1})
    assert sent == at("2026-11-30T14:04:30Z")
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == []
    assert [run.firing_id for run in r.claims.history("export")] == [
        f"{FIRST}#3",
        f"{FIRST}#2",
        FIRST,
    ]


def test_the_last_attempt_s_failure_is_final_and_said() -> None:
    r = rig(RETRIED)
    r.dispatcher.failing.add("export-fn")
    for minute in ("14:00", "14:01", "14:02", "14:03", "14:04", "14:05", "14:06"):
        r.tick(f"2026-11-30T{minute}:00Z")
    assert [run.status for run in r.claims.history("export")] == [RunStatus.FAILED] * 3
    assert r.claims.due_deferred(at("2026-12-02T00:00:00Z")) == []
    assert (r.metrics.totals["RetriesDeferred"], r.metrics.totals["RunsFailedFinal"]) == (2, 1)


def test_a_completion_that_failed_defers_the_next_attempt_and_a_duplicate_defers_it_once() -> None:
    r = rig(RETRIED)
    r.tick("2026-11-30T14:00:00Z")
    run = r.claims.run(FIRST)
    assert run is not None and run.policy is not None
    assert run.policy.as_record() == {
        "retries": 2,
        "backoff": 90,
        "factor": 2.0,
        "max_backoff": 3600,
    }
    recorder = Recorder(r.claims, r.clock, r.metrics, origin="us-east-1/prod")
    failed = Completion(FIRST, RunStatus.FAILED, at("2026-11-30T14:00:20Z"), "boom", "lambda")
    recorder.record(failed)
    recorder.record(failed)  # delivered twice
    assert r.metrics.totals["RetriesDeferred"] == 1  # counted once
    (retry,) = r.claims.due_deferred(at("2026-12-01T00:00:00Z"))
    assert (retry.firing.id, retry.due) == (f"{FIRST}#2", at("2026-11-30T14:01:50Z"))
    r.tick("2026-11-30T14:01:00Z")
    assert r.dispatcher.firing_ids == [FIRST, f"{FIRST}#2"]
    # the attempt's own end closes its own run
    recorder.record(
        Completion(f"{FIRST}#2", RunStatus.SUCCEEDED, at("2026-11-30T14:02:00Z"), None, "lambda")
    )
    assert r.claims.run(f"{FIRST}#2").status is RunStatus.SUCCEEDED  # type: ignore[union-attr]
    assert r.claims.run(FIRST).status is RunStatus.FAILED  # type: ignore[union-attr]
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == []


def test_a_recorder_that_failed_before_deferring_defers_when_the_event_comes_again() -> None:
    r = rig(RETRIED)
    r.tick("2026-11-30T14:00:00Z")
    r.claims.close(FIRST, RunStatus.FAILED, now=at("2026-11-30T14:00:20Z"), error="boom")
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == []  # closed, never deferred
    recorder = Recorder(r.claims, r.clock)
    recorder.record(
        Completion(FIRST, RunStatus.FAILED, at("2026-11-30T14:00:20Z"), "boom", "lambda")
    )
    (retry,) = r.claims.due_deferred(at("2026-12-01T00:00:00Z"))
    assert retry.firing.id == f"{FIRST}#2"


def test_a_run_timed_out_by_the_sweep_is_retried() -> None:
    r = rig(RETRIED.replace("retry:", "timeout: 60\n    retry:"))
    r.tick("2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:02:00Z")  # past its 60 s timeout: the sweep times it out
    run = r.claims.run(FIRST)
    assert run is not None and run.status is RunStatus.TIMED_OUT
    (retry,) = r.claims.due_deferred(at("2026-12-01T00:00:00Z"))
    assert retry.firing.id == f"{FIRST}#2"


def test_without_a_retry_policy_or_for_a_manual_run_nothing_is_deferred() -> None:
    r = rig(RETRIED.replace("    retry: {retries: 2, backoff: 90, factor: 2}\n", ""))
    r.dispatcher.failing.add("export-fn")
    r.tick("2026-11-30T14:00:00Z")
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == []
    r = rig(RETRIED)
    r.dispatcher.failing.add("export-fn")
    answer = r.ticker.run_manual("export", "jane")
    assert answer.get("firingId", "").startswith("export@manual-")
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == []


def _deferred(job: str, due: str, attempt: int = 2) -> Deferred:
    firing = Firing(job, at("2026-11-30T13:00:00Z"), attempt=attempt)
    return Deferred(firing, at(due), "retry", "us-east-1/prod", at("2026-11-30T13:00:05Z"))


def test_a_deferred_firing_no_job_can_run_is_dropped_and_a_paused_job_s_waits() -> None:
    r = rig(RETRIED)
    gone, waiting = (
        _deferred("deleted-job", "2026-11-30T14:00:00Z"),
        _deferred("export", "2026-11-30T14:00:10Z"),
    )
    r.claims.defer([gone, waiting])
    r.claims.set_paused("export", True, operator="jane", now=r.clock.now())
    r.tick("2026-11-30T14:00:00Z")
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == [waiting]
    assert r.dispatcher.calls == []
    r.claims.set_paused("export", False, operator="jane", now=r.clock.now())
    r.tick("2026-11-30T14:01:00Z")
    assert r.dispatcher.firing_ids == ["export@2026-11-30T13:00:00Z#2"]
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == []


def test_a_standby_region_leaves_its_deferred_firings_for_when_it_is_active() -> None:
    r = rig(RETRIED, active="DR")
    waiting = _deferred("export", "2026-11-30T13:59:00Z")
    r.claims.defer([waiting])
    r.tick("2026-11-30T14:00:00Z")
    assert r.dispatcher.calls == []
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == [waiting]


class _RefusingClaims(MemoryClaimStore):
    """Refuses the claims of deferred firings (attempt 2 and on): a store that could not
    answer for them this tick."""

    def claim_many(self, claims, *, now, lease_until, origin):  # type: ignore[no-untyped-def]
        return [
            StoreError("throttled") if c.firing.attempt > 1 else outcome
            for c, outcome in zip(
                claims,
                super().claim_many(list(claims), now=now, lease_until=lease_until, origin=origin),
                strict=True,
            )
        ]


def test_a_deferred_claim_that_failed_is_tried_next_tick_without_pulling_the_watermark_back() -> (
    None
):
    claims = _RefusingClaims()
    r = rig(RETRIED, claims=claims)
    waiting = _deferred("export", "2026-11-30T13:59:00Z")
    claims.defer([waiting])
    summary = r.tick("2026-11-30T14:00:00Z")
    assert summary["counts"]["held"] == 0 and summary["counts"]["errors"] == 1
    assert claims.due_deferred(at("2026-12-01T00:00:00Z")) == [waiting]  # still there
    assert claims.control("us-east-1/prod").watermark == at("2026-11-30T14:01:00Z")
    assert r.clock.now() - at("2026-11-30T14:00:00Z") < timedelta(minutes=1)


def test_the_recorder_store_error_while_deferring_fails_the_invocation() -> None:
    class Refusing(MemoryClaimStore):
        def defer(self, deferred):  # type: ignore[no-untyped-def]
            raise StoreError("throttled")

    claims = Refusing()
    r = rig(RETRIED, claims=claims)
    r.tick("2026-11-30T14:00:00Z")
    recorder = Recorder(claims, FixedClock(at("2026-11-30T14:00:30Z")))
    with pytest.raises(StoreError):
        recorder.record(
            Completion(FIRST, RunStatus.FAILED, at("2026-11-30T14:00:20Z"), "boom", "lambda")
        )
    assert claims.run(FIRST).status is RunStatus.FAILED  # type: ignore[union-attr]


def test_a_dry_run_shows_a_due_retry_and_writes_nothing() -> None:
    from mini_scheduler.tick.dryrun import dry_run

    r = rig(RETRIED)
    waiting = _deferred("export", "2026-11-30T14:00:30Z", attempt=3)
    r.claims.defer([waiting])
    plan = dry_run(
        at("2026-11-30T14:00:00Z"),
        settings=r.settings,
        cron=lambda: r.ticker.cron_file(),
        claims=r.claims,
        environment=r.store,
        now=at("2026-11-30T14:00:00Z"),
    )
    retry = [a for a in plan.actions if a.firing_id == "export@2026-11-30T13:00:00Z#3"]
    assert len(retry) == 1 and retry[0].kind == "dispatch"
    assert retry[0].to_json()["reason"] == "retry, attempt 3"
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == [waiting]
    assert r.dispatcher.calls == []


def test_a_failed_run_redriven_drops_the_retry_its_failure_deferred() -> None:
    from mini_scheduler.recorder import Redriven

    r = rig(RETRIED)
    r.tick("2026-11-30T14:00:00Z")
    recorder = Recorder(r.claims, r.clock)
    recorder.record(
        Completion(FIRST, RunStatus.FAILED, at("2026-11-30T14:00:20Z"), "boom", "lambda")
    )
    assert len(r.claims.due_deferred(at("2026-12-01T00:00:00Z"))) == 1
    recorder.record(Redriven(FIRST, 1, at("2026-11-30T14:01:00Z")))
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == []
    run = r.claims.run(FIRST)
    assert run is not None and run.status is RunStatus.DISPATCHED
