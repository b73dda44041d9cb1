"""``next`` of a job with ``jitter`` or ``window`` (issue 30, item 3): each firing at the instant
it starts, its own instant beside it; and a bad value refused by ``validate`` naming the key."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mini_scheduler.jobs import load
from mini_scheduler.jobs.spread import planned, planned_after
from tests.unit.cli.test_cli import NOW, run, write

CRON = """
jobs:
  - name: "exports"
    cron: "0 0 2 * * ?"
    timezone: "America/New_York"
    service: "export-fn"
    window: 30
  - name: "poll"
    cron: "0 */5 * * * ?"
    service: "poll-fn"
    jitter: 90
"""


def test_next_shows_when_each_firing_starts_and_its_own_instant(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "next", write(tmp_path, CRON), "-n", "2")
    assert code == 0 and err == ""
    exports, poll = load(CRON).jobs
    lines = out.splitlines()
    assert lines[2] == (
        "exports  0 0 2 * * ? @America/New_York  -> export-fn  (window 30 min: when each starts)"
    )
    (nominal, start), _ = planned_after(exports, NOW, 2)
    assert nominal == datetime(2026, 3, 9, 6, tzinfo=UTC)  # 02:00 EDT (the 8th has no 02:00)
    late = int((start - nominal).total_seconds())
    local = start.astimezone(exports.tz)
    assert lines[3] == (
        f"  {start:%a %Y-%m-%d %H:%M:%S} UTC   {local:%a %Y-%m-%d %H:%M:%S} EDT (UTC-04:00)"
        f"   firing 06:00:00 UTC +{late} s"
    )
    (nominal, start), _ = planned_after(poll, NOW, 2)
    late = int((start - nominal).total_seconds())
    assert (
        lines[7] == f"  {start:%a %Y-%m-%d %H:%M:%S} UTC   firing {nominal:%H:%M:%S} UTC +{late} s"
    )
    assert lines[6] == "poll  0 */5 * * * ? @UTC  -> poll-fn  (jitter 90 s: when each starts)"


def test_next_json_gives_the_planned_instant_and_the_scheduled_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "next", write(tmp_path, CRON), "-n", "3", "--json")
    assert code == 0
    jobs = {job.name: job for job in load(CRON).jobs}
    after = json.loads(out)["after"]
    for schedule in json.loads(out)["schedules"]:
        job = jobs[schedule["job"]]
        assert (schedule["jitter"], schedule["window"]) == (job.jitter, job.window)
        for firing in schedule["firings"]:
            nominal = datetime.fromisoformat(firing["scheduled"].replace("Z", "+00:00"))
            start = planned(job, nominal)
            assert firing["utc"] == start.strftime("%Y-%m-%dT%H:%M:%SZ") > after
            assert firing["spreadSeconds"] == (start - nominal).total_seconds()


def test_validate_refuses_a_bad_jitter_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "validate", write(tmp_path, CRON.replace("90", "90.5")))
    assert code == 1
    assert "jitter must be a whole number of seconds from 0 to 3600, not 90.5" in out + err


def test_schedule_create_takes_jitter_and_window(capsys: pytest.CaptureFixture[str]) -> None:
    from mini_scheduler.cli.main import main
    from mini_scheduler.schedules import Schedules
    from tests.unit.cli.test_deferred import CRON as TICKER_CRON
    from tests.unit.cli.test_deferred import ENV, OPERATOR, TickerInvoker
    from tests.unit.tick.harness import rig

    r = rig(TICKER_CRON)
    asked = TickerInvoker(r)
    for name, flag in (("jittery", ("--jitter", "30")), ("windowed", ("--window", "15"))):
        code = main(
            [
                *("schedule", "create", name, "--cron", "0 0 * * * ?", "--service", "fn", *flag),
                *("--function", "ticker", *OPERATOR),
            ],
            clock=r.clock,
            environ=ENV,
            invoke=asked,
        )
        assert code == 0, capsys.readouterr().err
    jobs = {s.name: s.job for s in Schedules(r.claims, cron=None, origin="test").all()}
    assert (jobs["jittery"].jitter, jobs["windowed"].window) == (30, 15)
    code = main(
        [
            *("schedule", "create", "both", "--cron", "0 0 * * * ?", "--service", "fn"),
            *("--jitter", "30", "--window", "15", "--function", "ticker", *OPERATOR),
        ],
        clock=r.clock,
        environ=ENV,
        invoke=asked,
    )
    assert code == 1 and "jitter and window both spread a firing" in capsys.readouterr().err
    assert len(asked.events) == 2  # refused before asking the ticker
