"""The recorder publishes a run's final failure once, the first time it hears of it, and pauses
the job after pause_after_failures of them in a row (issue 14, part 2). EventBridge is moto's;
the ticker that dispatched the runs, and the claims, are in memory."""

from __future__ import annotations

import logging

import pytest

from mini_scheduler.alerts import RecordingAlerts
from mini_scheduler.model import RunStatus
from mini_scheduler.recorder import Completion, Recorder
from tests.eventbridge import listening_bus
from tests.published import assert_published
from tests.unit.tick.harness import Rig, at, rig

EXPORT = """
jobs:
  - name: "export"
    cron: "0 * * * * ?"
    service: "export-fn"
    parameters: {size: 1}
"""
FIRST = "export@2026-11-30T14:00:00Z"


def _failed(run_id: str, ended: str = "2026-11-30T14:00:20Z", error: str = "boom") -> Completion:
    return Completion(run_id, RunStatus.FAILED, at(ended), error, "lambda")


def _recorder(r: Rig, alerts: object) -> Recorder:
    return Recorder(r.claims, r.clock, r.metrics, origin="us-east-1/prod", alerts=alerts)  # type: ignore[arg-type]


def test_a_failure_no_retry_follows_is_published_once_with_the_ended_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with listening_bus(monkeypatch, "ops") as bus:
        r = rig(EXPORT)
        r.tick("2026-11-30T14:00:00Z")
        recorder = _recorder(r, bus.alerts)
        answer = recorder.record(_failed(FIRST))
        again = recorder.record(_failed(FIRST))  # delivered twice
        (event,) = bus.heard()
    assert answer["recorded"] is True and again["recorded"] is False
    assert (event["source"], event["detail-type"]) == ("mini-scheduler", "Job Run Failed")
    assert event["detail"] == {
        "schemaVersion": 1,
        "job": "export",
        "firingId": FIRST,
        "scheduledTime": "2026-11-30T14:00:00Z",
        "attempt": 1,
        "retries": 0,
        "status": "FAILED",
        "origin": "us-east-1/prod",
        "manual": False,
        "backfill": False,
        "error": "boom",
        "startedAt": "2026-11-30T14:00:00Z",
        "endedAt": "2026-11-30T14:00:20Z",
        "service": "export-fn",
    }
    assert_published("Job Run Failed", event["detail"])
    assert r.metrics.totals["RunsFailedFinal"] == 1


def test_only_the_last_attempt_s_failure_is_published() -> None:
    alerts = RecordingAlerts()
    r = rig(EXPORT.replace("parameters:", "retry: {retries: 1, backoff: 30}\n    parameters:"))
    r.tick("2026-11-30T14:00:00Z")
    recorder = _recorder(r, alerts)
    recorder.record(_failed(FIRST))
    assert alerts.published == []  # attempt 2 is deferred
    r.tick("2026-11-30T14:01:00Z")  # dispatches attempt 2 (due 14:00:50) and 14:01
    recorder.record(_failed(f"{FIRST}#2", "2026-11-30T14:00:55Z"))
    (detail,) = alerts.of("Job Run Failed")
    assert (detail["firingId"], detail["attempt"], detail["retries"]) == (f"{FIRST}#2", 2, 1)
    assert_published("Job Run Failed", detail)


def test_a_late_failure_after_the_sweep_s_time_out_is_not_published_again() -> None:
    alerts = RecordingAlerts()
    r = rig(EXPORT.replace("parameters:", "timeout: 60\n    parameters:"), alerts=alerts)
    r.tick("2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:01:00Z")  # the sweep times 14:00 out: published by the ticker
    _recorder(r, alerts).record(_failed(FIRST, "2026-11-30T14:01:10Z"))
    assert [(d["firingId"], d["status"]) for d in alerts.of("Job Run Failed")] == [
        (FIRST, "TIMED_OUT")
    ]
    run = r.claims.run(FIRST)
    assert run is not None and run.status is RunStatus.FAILED  # the real end, recorded


def test_a_failure_that_cannot_be_published_is_recorded_all_the_same(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with listening_bus(monkeypatch) as bus:
        bus.alerts.bus = "no-such-bus"
        r = rig(EXPORT)
        r.tick("2026-11-30T14:00:00Z")
        with caplog.at_level(logging.ERROR):
            answer = _recorder(r, bus.alerts).record(_failed(FIRST))
        assert bus.heard() == []
    assert answer["recorded"] is True and answer["status"] == "FAILED"
    run = r.claims.run(FIRST)
    assert run is not None and run.status is RunStatus.FAILED
    assert r.metrics.totals["AlertsUnpublished"] == 1
    assert any("event Job Run Failed of firing" in m for m in caplog.messages)


def test_the_recorder_pauses_a_job_after_its_failures_in_a_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with listening_bus(monkeypatch) as bus:
        r = rig(EXPORT.replace("parameters:", "pause_after_failures: 2\n    parameters:"))
        r.tick("2026-11-30T14:00:00Z")
        r.tick("2026-11-30T14:01:00Z")
        recorder = _recorder(r, bus.alerts)
        recorder.record(_failed(FIRST))
        assert bus.heard("Job Paused") == []
        recorder.record(_failed("export@2026-11-30T14:01:00Z", "2026-11-30T14:01:20Z"))
        (paused,) = bus.details("Job Paused")
        assert len(bus.heard("Job Run Failed")) == 2
    assert_published("Job Paused", paused)
    assert (paused["job"], paused["failures"]) == ("export", 2)
    assert paused["firingId"] == "export@2026-11-30T14:01:00Z"
    assert r.claims.control("us-east-1/prod").paused["export"].operator == "mini-scheduler"
    r.tick("2026-11-30T14:02:00Z")
    assert r.dispatcher.firing_ids == [FIRST, "export@2026-11-30T14:01:00Z"]  # paused


def test_a_manual_run_s_failure_is_final_and_published_with_its_operator() -> None:
    alerts = RecordingAlerts()
    r = rig(EXPORT.replace("parameters:", "retry: {retries: 2}\n    parameters:"))
    answer = r.ticker.run_manual("export", "jane.doe")
    _recorder(r, alerts).record(_failed(answer["firingId"]))
    (detail,) = alerts.of("Job Run Failed")
    assert detail["manual"] is True and detail["operator"] == "jane.doe"
    assert detail["retries"] == 0  # a manual run is never retried
    assert_published("Job Run Failed", detail)
    assert r.claims.due_deferred(at("2026-12-01T00:00:00Z")) == []
