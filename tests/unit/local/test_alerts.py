"""The local run has no bus: a final failure's event, and a pause's, are lines of its log."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from mini_scheduler.model import RunStatus
from tests.published import assert_published
from tests.unit.local.test_local import run_minutes, write

FAILING = """
jobs:
  - name: "boom"
    cron: "0 * * * * ?"
    service: "mini-scheduler-sample-boom"
    pause_after_failures: 2
"""


def _events(caplog: pytest.LogCaptureFixture, detail_type: str) -> list[dict[str, object]]:
    prefix = f"Event {detail_type}: "
    return [
        json.loads(record.getMessage().removeprefix(prefix))
        for record in caplog.records
        if record.name == "mini_scheduler.events" and record.getMessage().startswith(prefix)
    ]


def test_a_failed_run_s_event_and_the_pause_are_lines_of_the_local_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    functions = tmp_path / "samples" / "functions" / "boom"
    functions.mkdir(parents=True)
    (functions / "app.py").write_text(
        "def handler(event, context):\n    raise ConnectionError('report database unreachable')\n"
    )
    caplog.set_level(logging.INFO)
    cron_file = write(tmp_path, FAILING)
    with run_minutes(cron_file, count=2, samplecode=tmp_path / "samples") as scheduler:
        runs = scheduler.history("boom")
        assert [run.status for run in runs] == [RunStatus.FAILED] * 2
        paused = scheduler.ticker.claims.control(scheduler.settings.origin).paused
        assert paused["boom"].operator == "mini-scheduler"
    failed = _events(caplog, "Job Run Failed")
    assert [event["firingId"] for event in failed] == [
        "boom@2026-11-30T13:59:00Z",
        "boom@2026-11-30T14:00:00Z",
    ]
    assert failed[0]["error"] == "ConnectionError: report database unreachable"
    assert failed[0]["status"] == "FAILED" and failed[0]["attempt"] == 1
    (pause,) = _events(caplog, "Job Paused")
    assert_published("Job Run Failed", failed[0])
    assert_published("Job Paused", pause)
    assert (pause["job"], pause["failures"]) == ("boom", 2)
    assert any(
        r.getMessage()
        == "Job boom paused after 2 failures in a row - resume it with: mini-scheduler resume boom"
        for r in caplog.records
    )
