"""``history`` across jobs and regions (issue 15, part 4): every job of the cron file and every
runtime schedule, in each region given, merged newest first with a REGION column; ``--since``,
``--status``, ``--job``; one history Query per job and region, each bounded by ``--limit``.
Against moto, two regions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.claims.base import SCHEDULE, Deferred
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore
from mini_scheduler.claims.records import Definition, JobStart, new_generation
from mini_scheduler.model import Firing, RunStatus
from tests.unit.cli.conftest import TABLE, Aws
from tests.unit.cli.test_operator import BOTH, NOW, SAMPLE, assert_aligned, cells, cli

START = JobStart("mini-scheduler-sample-heartbeat", "0/15 * * * * ? @UTC", {})


def ran(
    store: DynamoDBClaimStore,
    job: str,
    when: str,
    status: RunStatus,
    *,
    error: str | None = None,
    origin: str = "us-east-1/prod",
) -> Firing:
    """A run of ``job`` scheduled ``when``, dispatched 1 s later and ended ``status``."""
    firing = Firing(job, datetime.fromisoformat(when.replace("Z", "+00:00")))
    began = firing.scheduled + timedelta(seconds=1)
    store.claim(firing, now=began, lease_until=began + timedelta(minutes=2), origin=origin)
    store.mark_dispatched(firing, now=began, deadline=began + timedelta(minutes=5), start=START)
    if status is not RunStatus.DISPATCHED:
        store.close(firing.id, status, now=began + timedelta(seconds=2), error=error)
    return firing


@pytest.fixture
def night(aws: Aws) -> Aws:
    """Last night in both regions: us-east-1 (prod) ran until 03:00, then us-west-2 (DR)."""
    east, west = aws.store("us-east-1"), aws.store("us-west-2")
    ran(east, "morning-report", "2026-11-30T01:00:00Z", RunStatus.SUCCEEDED)
    ran(east, "hourly-cleanup", "2026-11-30T02:15:00Z", RunStatus.FAILED, error="boom\nline 2")
    ran(east, "heartbeat", "2026-11-30T02:30:00Z", RunStatus.TIMED_OUT)
    ran(west, "hourly-cleanup", "2026-11-30T04:15:00Z", RunStatus.SUCCEEDED, origin="us-west-2/DR")
    ran(west, "heartbeat", "2026-11-30T05:00:15Z", RunStatus.FAILED, origin="us-west-2/DR")
    return aws


def test_history_of_every_job_in_both_regions_merged_newest_first(
    capsys: pytest.CaptureFixture[str], night: Aws
) -> None:
    run = cli(capsys, "history", "--regions", BOTH)
    assert run.code == 0, run.err
    assert [cells(line)[:4] for line in run.lines[:-1]] == [
        ["SCHEDULED", "REGION", "JOB", "STATUS"],
        ["2026-11-30 05:00:15Z", "us-west-2", "heartbeat", "FAILED"],
        ["2026-11-30 04:15:00Z", "us-west-2", "hourly-cleanup", "SUCCEEDED"],
        ["2026-11-30 02:30:00Z", "us-east-1", "heartbeat", "TIMED_OUT"],
        ["2026-11-30 02:15:00Z", "us-east-1", "hourly-cleanup", "FAILED"],
        ["2026-11-30 01:00:00Z", "us-east-1", "morning-report", "SUCCEEDED"],
    ]
    assert cells(run.lines[4])[4:] == [
        "2026-11-30 02:15:01Z",
        "2000 ms",
        "hourly-cleanup@2026-11-30T02:15:00Z",  # what rerun takes
        "boom",
    ]
    assert run.lines[-1] == "5 runs of 3 jobs in us-east-1, us-west-2"
    assert_aligned(run.lines[:-1])


def test_what_failed_last_night(capsys: pytest.CaptureFixture[str], night: Aws) -> None:
    run = cli(
        capsys,
        "history",
        "--since",
        "12h",
        "--status",
        "FAILED,timed_out",
        "--regions",
        BOTH,
        clock=_clock("2026-11-30T12:00:00Z"),
    )
    assert run.code == 0, run.err
    assert [cells(line)[6] for line in run.lines[1:-1]] == [
        "heartbeat@2026-11-30T05:00:15Z",
        "heartbeat@2026-11-30T02:30:00Z",
        "hourly-cleanup@2026-11-30T02:15:00Z",
    ]
    assert run.lines[-1] == (
        "3 runs (FAILED,TIMED_OUT since 2026-11-30 00:00:00Z) of 3 jobs in us-east-1, us-west-2"
    )
    later = cli(
        capsys,
        "history",
        "--since",
        "2026-11-30T02:20:00Z",
        "--status",
        "FAILED",
        "--regions",
        BOTH,
    )
    assert [cells(line)[6] for line in later.lines[1:-1]] == ["heartbeat@2026-11-30T05:00:15Z"]


def test_one_job_in_both_regions_and_json(capsys: pytest.CaptureFixture[str], night: Aws) -> None:
    run = cli(capsys, "history", "--job", "heartbeat", "--regions", BOTH)
    assert [cells(line)[:3] for line in run.lines[1:-1]] == [
        ["2026-11-30 05:00:15Z", "us-west-2", "heartbeat"],
        ["2026-11-30 02:30:00Z", "us-east-1", "heartbeat"],
    ]
    assert run.lines[-1] == "2 runs of heartbeat in us-east-1, us-west-2"
    report = cli(capsys, "history", "heartbeat", "--regions", BOTH, "--json").json()
    assert report["job"] == "heartbeat" and report["more"] is False
    assert report["regions"] == [
        {"region": "us-east-1", "ok": True, "table": TABLE},
        {"region": "us-west-2", "ok": True, "table": TABLE},
    ]
    assert [(r["region"], r["firingId"], r["status"]) for r in report["runs"]] == [
        ("us-west-2", "heartbeat@2026-11-30T05:00:15Z", "FAILED"),
        ("us-east-1", "heartbeat@2026-11-30T02:30:00Z", "TIMED_OUT"),
    ]


def test_history_job_still_prints_one_job_s_table(
    capsys: pytest.CaptureFixture[str], night: Aws
) -> None:
    run = cli(capsys, "history", "hourly-cleanup", "--status", "FAILED")
    assert run.code == 0, run.err
    assert cells(run.lines[0]) == [
        "SCHEDULED",
        "STATUS",
        "STARTED",
        "ENDED",
        "TOOK",
        "ORIGIN",
        "NOTE",
    ]
    assert cells(run.lines[1])[:2] == ["2026-11-30 02:15:00Z", "FAILED"]
    assert run.lines[-1] == "1 run of hourly-cleanup in us-east-1"


def test_runtime_schedules_are_read_too(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    store = aws.store()
    entry = {"name": "quarter-close", "cron": "0 0 * * * ?", "service": "close-fn"}
    at = datetime(2026, 11, 30, 15, tzinfo=UTC)
    made = Definition("quarter-close", new_generation(NOW), entry, "jane", NOW, at)
    assert store.create_schedule(made)
    store.defer(
        [Deferred(Firing("quarter-close", at), at, SCHEDULE, "us-east-1/prod", NOW, made.detail())]
    )
    ran(store, "quarter-close", "2026-11-30T13:00:00Z", RunStatus.FAILED)
    run = cli(capsys, "history")
    assert [cells(line)[2] for line in run.lines[1:-1]] == ["quarter-close"]
    assert run.lines[-1] == "1 run of 4 jobs in us-east-1"


def test_a_job_read_only_to_its_limit_is_named(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    store = aws.store()
    for minute in range(3):
        ran(store, "heartbeat", f"2026-11-30T13:0{minute}:00Z", RunStatus.SUCCEEDED)
    ran(store, "morning-report", "2026-11-30T12:00:00Z", RunStatus.FAILED)
    run = cli(capsys, "history", "--status", "FAILED", "--limit", "2")
    assert [cells(line)[2] for line in run.lines[1:-2]] == ["morning-report"]
    assert run.lines[-1] == (
        "Read only the newest 2 runs of heartbeat (us-east-1, back to 2026-11-30T13:01:00Z): "
        "older runs that match may be left out - raise --limit or narrow --since."
    )
    # --since reached within the limit: nothing left out
    run = cli(capsys, "history", "--since", "2026-11-30T13:01:30Z", "--limit", "2")
    assert not run.lines[-1].startswith("Read only")
    # more runs match than --limit shows
    run = cli(capsys, "history", "--limit", "2")
    assert run.lines[-2] == "2 runs of 3 jobs in us-east-1, the newest 2 of 3: --limit for more"


def test_a_region_that_cannot_be_read_is_said_and_the_others_shown(
    capsys: pytest.CaptureFixture[str], night: Aws
) -> None:
    run = cli(capsys, "history", "--regions", "us-east-1,eu-west-1")
    assert run.code == 1
    assert [cells(line)[1] for line in run.lines[1:-1]] == ["us-east-1"] * 3
    assert run.err.startswith(
        "mini-scheduler history: eu-west-1 not read - DynamoDB Query (schedules) on table "
        f"{TABLE} failed - ResourceNotFoundException"
    )
    assert run.lines[-1] == "3 runs of 3 jobs in us-east-1"


def test_history_without_a_cron_file_needs_a_job(
    capsys: pytest.CaptureFixture[str], aws: Aws, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"AWS_REGION": "us-east-1", "STATE_TABLE": TABLE, "STATE_TABLE_BATCH_WRITES": "false"}
    run = cli(capsys, "history", environ=env)
    assert (run.code, run.out) == (1, "")
    assert run.err.endswith(": give --cron-file (the file the ticker reads) or set CRON_FILE\n")
    assert cli(capsys, "history", "--job", "heartbeat", "--regions", BOTH, environ=env).code == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--since", "yesterday"), "not a span (e.g. 12h, 30m, 2d, 1h30m) nor an ISO 8601 time"),
        (("--since", "0h"), "'0h' is no time at all"),
        (("--status", "BROKEN"), "not a run status: 'BROKEN' (CLAIMED, DISPATCHED, SUCCEEDED,"),
        (("--status", ","), "name a status"),
        (("heartbeat", "--job", "other"), "two jobs given: heartbeat and --job other"),
        (("--job", "bad..name"), "not a job name: name 'bad..name' must not hold '..'"),
        (("--regions", "us-east-1,moon"), "not an AWS region: 'moon'"),
    ],
)
def test_bad_history_arguments_are_usage_errors(
    capsys: pytest.CaptureFixture[str], aws: Aws, argv: tuple[str, ...], message: str
) -> None:
    run = cli(capsys, "history", *argv)
    assert (run.code, run.out) == (2, "")
    assert message in run.err


def test_the_sample_cron_file_is_the_one_read(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    report = cli(capsys, "history", "--json").json()
    assert report["regions"] == [{"region": "us-east-1", "ok": True, "table": TABLE, "jobs": 3}]
    assert report["runs"] == [] and report["cutByLimit"] == []
    assert str(SAMPLE).endswith("cron.yaml")


def _clock(text: str) -> Any:
    from mini_scheduler.clock import FixedClock

    return FixedClock(datetime.fromisoformat(text.replace("Z", "+00:00")))
