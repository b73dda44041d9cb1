"""A final failure the ticker sees (a failed dispatch, a run the sweep times out) is published
once to the bus, and pauses its job after pause_after_failures of them in a row (issue 14,
part 2). EventBridge is moto's; the claims are in memory."""

from __future__ import annotations

import logging

import pytest

from mini_scheduler.alerts import RecordingAlerts
from mini_scheduler.model import RunStatus
from tests.eventbridge import listening_bus
from tests.published import assert_published
from tests.unit.tick.harness import at, rig

FAILING = """
jobs:
  - name: "export"
    cron: "0 * * * * ?"
    service: "export-fn"
    timeout: 60
    misfire: "skip"
    pause_after_failures: 2
"""


def test_a_failed_dispatch_with_no_retry_is_published_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with listening_bus(monkeypatch) as bus:
        r = rig(FAILING.replace("    pause_after_failures: 2\n", ""), alerts=bus.alerts)
        r.dispatcher.failing.add("export-fn")
        r.tick("2026-11-30T14:00:00Z")
        (event,) = bus.heard()
    assert (event["source"], event["detail-type"]) == ("mini-scheduler", "Job Run Failed")
    assert event["detail"] == {
        "schemaVersion": 1,
        "job": "export",
        "firingId": "export@2026-11-30T14:00:00Z",
        "scheduledTime": "2026-11-30T14:00:00Z",
        "attempt": 1,
        "retries": 0,
        "status": "FAILED",
        "origin": "us-east-1/prod",
        "manual": False,
        "backfill": False,
        "error": "Lambda Invoke export-fn failed - TooManyRequestsException",
        "endedAt": "2026-11-30T14:00:00Z",
        "service": "export-fn",
    }
    assert_published("Job Run Failed", event["detail"])
    assert r.metrics.totals["RunsFailedFinal"] == 1


def test_a_retried_dispatch_is_published_at_its_last_attempt_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    retried = FAILING.replace("    pause_after_failures: 2\n", "    retry: {retries: 1}\n")
    with listening_bus(monkeypatch) as bus:
        r = rig(retried, alerts=bus.alerts)
        r.dispatcher.failing.add("export-fn")
        r.tick("2026-11-30T14:00:00Z")
        assert bus.heard() == []  # attempt 2 is due in 60 s
        r.tick("2026-11-30T14:01:00Z")  # attempt 2 fails: final; 14:01's attempt 1 waits
        (event,) = bus.heard()
    assert event["detail"]["firingId"] == "export@2026-11-30T14:00:00Z#2"
    assert event["detail"]["attempt"] == 2
    assert event["detail"]["retries"] == 1
    assert_published("Job Run Failed", event["detail"])


def test_runs_the_sweep_times_out_are_published_and_the_second_in_a_row_pauses_the_job(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with listening_bus(monkeypatch) as bus:
        r = rig(FAILING, alerts=bus.alerts)
        r.tick("2026-11-30T14:00:00Z")
        r.tick("2026-11-30T14:01:00Z")  # 14:00 is past its 60 s: timed out, 1 in a row
        with caplog.at_level(logging.INFO):
            r.tick("2026-11-30T14:02:00Z")  # 14:01 too: 2 in a row, the job is paused
            r.tick("2026-11-30T14:03:00Z")  # paused: nothing dispatched; 14:02 times out
        failed = bus.details("Job Run Failed")
        (paused,) = bus.details("Job Paused")
    assert [(d["firingId"], d["status"]) for d in failed] == [
        ("export@2026-11-30T14:00:00Z", "TIMED_OUT"),
        ("export@2026-11-30T14:01:00Z", "TIMED_OUT"),
        ("export@2026-11-30T14:02:00Z", "TIMED_OUT"),  # published; paused already: no pause
    ]
    assert failed[0]["endedAt"] == "2026-11-30T14:01:00Z"  # when the sweep timed it out
    assert "retry" not in failed[0] and failed[0]["retries"] == 0  # pause_after_failures only
    for detail in failed:
        assert_published("Job Run Failed", detail)
    assert paused == {
        "schemaVersion": 1,
        "job": "export",
        "failures": 2,
        "firingId": "export@2026-11-30T14:01:00Z",
        "origin": "us-east-1/prod",
        "operator": "mini-scheduler",
        "pausedAt": "2026-11-30T14:02:00Z",
    }
    assert r.claims.control("us-east-1/prod").paused["export"].operator == "mini-scheduler"
    assert (
        "Job export paused after 2 failures in a row - resume it with: mini-scheduler resume export"
    ) in caplog.messages
    assert r.dispatcher.firing_ids == [
        "export@2026-11-30T14:00:00Z",
        "export@2026-11-30T14:01:00Z",
        "export@2026-11-30T14:02:00Z",  # planned before the sweep paused the job
    ]
    assert r.metrics.totals["JobsPaused"] == 1


def test_a_success_between_failures_keeps_the_job_running() -> None:
    alerts = RecordingAlerts()
    r = rig(FAILING, alerts=alerts)
    r.tick("2026-11-30T14:00:00Z")
    r.tick("2026-11-30T14:01:00Z")
    r.claims.close(
        "export@2026-11-30T14:01:00Z", RunStatus.SUCCEEDED, now=at("2026-11-30T14:01:10Z")
    )
    r.tick("2026-11-30T14:02:00Z")  # 14:00 times out: 1 in a row
    r.tick("2026-11-30T14:03:00Z")  # 14:02 times out: 14:01 succeeded between them
    assert [d["firingId"] for d in alerts.of("Job Run Failed")] == [
        "export@2026-11-30T14:00:00Z",
        "export@2026-11-30T14:02:00Z",
    ]
    assert alerts.of("Job Paused") == []
    assert r.claims.control("us-east-1/prod").paused == {}


def test_an_alert_that_cannot_be_published_leaves_the_tick_and_the_run_as_they_were(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with listening_bus(monkeypatch, "gone") as bus:
        bus.alerts.bus = "no-such-bus"  # PutEvents answers that it does not exist
        r = rig(FAILING.replace("    pause_after_failures: 2\n", ""), alerts=bus.alerts)
        r.dispatcher.failing.add("export-fn")
        with caplog.at_level(logging.ERROR):
            summary = r.tick("2026-11-30T14:00:00Z")
    run = r.claims.run("export@2026-11-30T14:00:00Z")
    assert run is not None and run.status is RunStatus.FAILED
    assert summary["counts"]["errors"] == 1  # the dispatch's, as before
    assert r.metrics.totals["AlertsUnpublished"] == 1
    (said,) = [m for m in caplog.messages if "not published" in m]
    assert said.startswith(
        "Job export - event Job Run Failed of firing export@2026-11-30T14:00:00Z not "
        "published: EventBridge PutEvents (Job Run Failed) to bus no-such-bus failed"
    )
