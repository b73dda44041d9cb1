"""The operator commands against moto: jobs, history, run, pause, resume, status, failover, tick."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from mini_scheduler.claims.records import JobStart
from mini_scheduler.cli.context import Invocation, RegionClients
from mini_scheduler.cli.main import main
from mini_scheduler.clock import FixedClock
from mini_scheduler.model import Firing, RunStatus
from tests.conftest import ROOT
from tests.unit.cli.conftest import (
    ENVIRONMENTS,
    PARAMETER,
    REGIONS,
    STACK,
    TABLE,
    TICKER,
    Aws,
    stack_template,
)

SAMPLE = ROOT / "samplecode" / "cron.yaml"
NOW = datetime(2026, 11, 30, 14, 0, 7, tzinfo=UTC)  # 14:00 UTC is 09:00 in New York (EST)
ENV = {
    "AWS_REGION": "us-east-1",
    "STATE_TABLE": TABLE,
    "CRON_FILE": str(SAMPLE),
    "ENVIRONMENT_NAME": "prod",
    "DISPATCH_WORKERS": "1",  # moto's DynamoDB transactions are not safe across threads
    "STATE_TABLE_BATCH_WRITES": "false",  # moto's PartiQL ignores conditions
}
BOTH = "us-east-1,us-west-2"


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class FakeInvoker:
    answer: Any = None
    function_error: str | None = None
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def __call__(self, region: str, function: str, event: Mapping[str, Any]) -> Invocation:
        self.calls.append((region, function, dict(event)))
        return Invocation(self.answer, self.function_error)


MOTO_ARN = "arn:aws:sts::123456789012:user/moto"  # what moto's STS answers GetCallerIdentity


def cli(
    capsys: pytest.CaptureFixture[str],
    *argv: str,
    clock: FixedClock | None = None,
    environ: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> Run:
    kwargs.setdefault("clients", _clients())
    code = main(
        list(argv),
        clock=clock or FixedClock(NOW),
        environ=ENV if environ is None else environ,
        **kwargs,
    )
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)


@functools.cache
def _clients() -> RegionClients:
    """One set of clients for every test: made once (slow), and moto answers them all."""
    return RegionClients(boto3.session.Session())


def cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def assert_aligned(lines: list[str]) -> None:
    """Every row's cells start where the header's do."""
    header = lines[0]
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=\s\s))\S", header)]
    for line in lines[1:]:
        for start in starts[1:]:
            assert line[start - 2 : start] == "  " and line[start] != " ", (header, line)


def without(*keys: str) -> dict[str, str]:
    return {k: v for k, v in ENV.items() if k not in keys}


# -- where the commands act --------------------------------------------------------------------


def test_a_missing_table_is_a_usage_error(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    run = cli(capsys, "history", "heartbeat", environ=without("STATE_TABLE"))
    assert (run.code, run.out) == (2, "")
    assert run.err == (
        "mini-scheduler history: no state table: give --table NAME, --stack NAME or set "
        "STATE_TABLE\n"
    )


def test_a_missing_region_is_a_usage_error(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    run = cli(capsys, "status", environ=without("AWS_REGION"))
    assert run.code == 2
    assert run.err == (
        "mini-scheduler status: no region: give --region (or --regions) or set AWS_REGION\n"
    )
    run = cli(capsys, "jobs", "--region", "moon-1")
    assert run.code == 2
    assert run.err.splitlines()[-1] == (
        "mini-scheduler jobs: error: argument --region: not an AWS region: 'moon-1' "
        "(e.g. us-east-1)"
    )


def test_the_stack_names_the_table_the_function_and_the_parameter(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    bare = without("STATE_TABLE", "CRON_FILE")
    # (a job without runs is looked up in the cron file: CRON_FILE names it)
    run = cli(capsys, "history", "heartbeat", "--stack", STACK, environ=without("STATE_TABLE"))
    assert run.code == 0, run.err
    assert run.out == f"No runs recorded for heartbeat in table {TABLE} (us-east-1).\n"
    invoker = FakeInvoker({"status": "DISPATCHED"})
    run = cli(
        capsys,
        "run",
        "heartbeat",
        "--stack",
        STACK,
        "--region",
        "us-west-2",
        "--operator",
        "jane.doe",
        environ=bare,
        invoke=invoker,
    )
    assert run.code == 0 and invoker.calls[0][:2] == ("us-west-2", TICKER)


def test_a_flag_wins_over_the_stack(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    run = cli(capsys, "history", "heartbeat", "--stack", STACK, "--table", "other-table")
    assert run.code == 1
    assert run.err.startswith(
        "mini-scheduler history: DynamoDB Query (history) on table other-table failed - "
        "ResourceNotFoundException"
    )
    assert len(run.err.splitlines()) == 1


def test_a_missing_stack_and_a_missing_output_are_clear(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    run = cli(capsys, "jobs", "--stack", "nope")
    assert (run.code, run.err) == (
        1,
        "mini-scheduler jobs: stack nope not found in us-east-1\n",
    )
    aws.client("cloudformation").create_stack(
        StackName="bare", TemplateBody=stack_template({"StateTableName": TABLE})
    )
    run = cli(capsys, "run", "heartbeat", "--stack", "bare", "--operator", "jane.doe")
    assert (run.code, run.err) == (
        2,
        "mini-scheduler run: no ticker function: give --function NAME or --stack NAME "
        "(stack bare in us-east-1 has no output TickerFunctionName)\n",
    )


# -- tick ----------------------------------------------------------------------------------------


def test_a_dry_run_tells_what_the_minute_would_do_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    before = aws.items()
    run = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z")
    assert run.code == 0, run.err
    assert aws.items() == before == []
    assert run.lines == [
        "Dry run of the tick of 2026-11-30T14:00:00Z in us-east-1: nothing written.",
        "  environment  prod; active environment prod (ssm:/mini-scheduler/active-environment):"
        " this region is active",
        "  window       2026-11-30 14:00:00Z to 2026-11-30 14:01:00Z",
        "  watermark    none yet (a region's first tick); it would move to 2026-11-30 14:01:00Z",
        "",
        "SCHEDULED             JOB             ACTION    DETAIL",
        "2026-11-30 14:00:00Z  heartbeat       dispatch  to mini-scheduler-sample-heartbeat at "
        "14:00:07Z",
        "2026-11-30 14:00:00Z  morning-report  dispatch  to mini-scheduler-sample-report at "
        "14:00:07Z",
        "2026-11-30 14:00:15Z  heartbeat       dispatch  to mini-scheduler-sample-heartbeat at "
        "14:00:15Z",
        "2026-11-30 14:00:30Z  heartbeat       dispatch  to mini-scheduler-sample-heartbeat at "
        "14:00:30Z",
        "2026-11-30 14:00:45Z  heartbeat       dispatch  to mini-scheduler-sample-heartbeat at "
        "14:00:45Z",
        "Would claim 5, dispatch 5, skip 0; 0 missed before the window.",
        "Run it for real with --execute.",
    ]
    assert run.err == ""


def test_a_dry_run_follows_each_job_s_misfire_policy(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    aws.store().advance_watermark("us-east-1/prod", datetime(2026, 11, 30, 13, 14, tzinfo=UTC))
    run = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", "--json")
    plan = run.json()
    assert run.code == 0 and plan["dryRun"] is True
    missed = [a for a in plan["actions"] if a.get("misfire")]
    # heartbeat (misfire: skip): 184 firings, more than misfire.max, recorded as one range
    [heartbeat] = [a for a in missed if a["job"] == "heartbeat"]
    assert heartbeat == {
        "job": "heartbeat",
        "action": "skip-range",
        "scheduledTime": "2026-11-30T13:14:00Z",
        "service": "mini-scheduler-sample-heartbeat",
        "reason": "misfire",
        "until": "2026-11-30T13:59:45Z",
        "count": 184,
        "misfire": True,
    }
    # hourly-cleanup (misfire: fire_all): the 13:15 firing runs now
    [cleanup] = [a for a in missed if a["job"] == "hourly-cleanup"]
    assert cleanup["action"] == "dispatch" and cleanup["scheduledTime"] == "2026-11-30T13:15:00Z"
    assert cleanup["at"] == "2026-11-30T14:00:07Z"
    assert plan["counts"]["misfired"] == 46 * 4 + 1
    assert plan["watermark"] == "2026-11-30T13:14:00Z"
    assert aws.store().control("us-east-1/prod").watermark == datetime(
        2026, 11, 30, 13, 14, tzinfo=UTC
    )
    aws.store().advance_watermark("us-east-1/prod", datetime(2026, 11, 30, 13, 59, tzinfo=UTC))
    run = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z")
    rows = [cells(line) for line in run.lines if line.startswith("2026-11-30 13:59")]
    assert rows == [
        [f"2026-11-30 13:59:{s:02d}Z", "heartbeat", "record SKIPPED", "missed; misfire"]
        for s in (0, 15, 30, 45)
    ]
    assert run.lines[-2] == "Would claim 5, dispatch 5, skip 4; 4 missed before the window."


def test_a_dry_run_shows_paused_jobs_records_already_there_and_the_sweep(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    store = aws.store()
    store.set_paused("morning-report", True, operator="jane.doe", now=NOW)
    done = Firing("heartbeat", datetime(2026, 11, 30, 14, 0, 15, tzinfo=UTC))
    store.claim(done, now=NOW, lease_until=NOW + timedelta(minutes=2), origin="us-west-2/DR")
    store.close(done.id, RunStatus.SUCCEEDED, now=NOW)
    stuck = Firing("heartbeat", datetime(2026, 11, 30, 13, 59, 45, tzinfo=UTC))
    store.watch([stuck.id], NOW - timedelta(seconds=1))  # as the ticker that died did
    store.claim(stuck, now=stuck.scheduled, lease_until=NOW - timedelta(seconds=1), origin="x")
    run = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z")
    assert run.code == 0, run.err
    assert [cells(line) for line in run.lines[5:12]] == [
        ["SCHEDULED", "JOB", "ACTION", "DETAIL"],
        [
            "2026-11-30 13:59:45Z",
            "heartbeat",
            "take over, dispatch",
            "claimed but not dispatched within the lease",
        ],
        [
            "2026-11-30 14:00:00Z",
            "heartbeat",
            "dispatch",
            "to mini-scheduler-sample-heartbeat at 14:00:07Z",
        ],
        ["2026-11-30 14:00:00Z", "morning-report", "leave (paused)", "paused by jane.doe"],
        ["2026-11-30 14:00:15Z", "heartbeat", "leave", "already recorded SUCCEEDED"],
        [
            "2026-11-30 14:00:30Z",
            "heartbeat",
            "dispatch",
            "to mini-scheduler-sample-heartbeat at 14:00:30Z",
        ],
        [
            "2026-11-30 14:00:45Z",
            "heartbeat",
            "dispatch",
            "to mini-scheduler-sample-heartbeat at 14:00:45Z",
        ],
    ]
    assert "Paused: morning-report (by jane.doe): 1 firing left alone." in run.lines
    assert [r.status for r in store.history("heartbeat")] == [
        RunStatus.SUCCEEDED,
        RunStatus.CLAIMED,
    ]


def test_a_dry_run_on_standby_and_when_the_store_holds_nonsense(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    ssm = aws.client("ssm")
    ssm.put_parameter(Name=PARAMETER, Value="DR", Type="String")
    run = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", environ=without("ENVIRONMENT_NAME"))
    assert run.code == 0
    assert run.err == (
        "WARNING the environment name of us-east-1 is not known: taken as prod (give "
        "--environment-name or set ENVIRONMENT_NAME)\n"
    )
    as_dr = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", "--environment-name", "dr")
    assert "active environment DR (ssm:/mini-scheduler/active-environment): this region is " in (
        as_dr.out
    )
    assert as_dr.lines[1].endswith("this region is active")
    assert "active environment DR (ssm:/mini-scheduler/active-environment): this region is " in (
        run.out
    )
    assert cells(run.lines[6]) == [
        "2026-11-30 14:00:00Z",
        "heartbeat",
        "leave (standby)",
        "the active environment is DR, this instance is prod",
    ]
    ssm.put_parameter(Name=PARAMETER, Value="two words", Type="String", Overwrite=True)
    run = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z")
    assert run.code == 1
    assert "the tick fails closed" in run.lines[1]
    assert "No firing in this minute." in run.out


def test_tick_execute_runs_the_real_ticker(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    run = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", "--execute")
    assert run.code == 0, run.err
    assert run.lines == [
        "Tick of 2026-11-30T14:00:00Z in us-east-1: active (environment prod, active prod)",
        "  claimed 5, dispatched 5, skipped none, missed 0, errors 0",
    ]
    assert (
        "INFO    Job heartbeat dispatched to mini-scheduler-sample-heartbeat - firing "
        "heartbeat@2026-11-30T14:00:45Z" in run.err.splitlines()
    )
    store = aws.store()
    assert [r.status for r in store.history("heartbeat")] == [RunStatus.DISPATCHED] * 4
    assert store.control("us-east-1/prod").watermark == datetime(2026, 11, 30, 14, 1, tzinfo=UTC)
    again = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", "--json")
    assert again.json()["note"] == "minute already handled (watermark 2026-11-30T14:01:00Z)"


def test_tick_execute_refuses_a_minute_that_has_not_begun(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    run = cli(capsys, "tick", "--at", "2026-11-30T14:01:00Z", "--execute")
    assert (run.code, run.out) == (2, "")
    assert run.err == (
        "mini-scheduler tick: 2026-11-30T14:01:00Z has not begun: --execute runs a minute that "
        "has (drop --execute for a dry run)\n"
    )
    assert aws.items() == []


FREQUENT = """
misfire.grace: 7200
misfire.max: 1000
jobs:
  - {name: "every-10s", cron: "0/10 * * * * ?", service: "fn-a", misfire: "skip"}
  - {name: "daily", cron: "0 0 14 * * ?", service: "fn-b"}
"""


def test_a_dry_run_after_a_long_gap_summarises_each_job_past_five_lines(
    capsys: pytest.CaptureFixture[str], aws: Aws, tmp_path: Path
) -> None:
    """Two hours missed by a 10-second job: 720 misfires recorded SKIPPED one by one and six
    dispatches. The text shows its first five and one line for the other 721; --json lists
    every one."""
    (tmp_path / "cron.yaml").write_text(FREQUENT)
    environ = {**ENV, "CRON_FILE": str(tmp_path / "cron.yaml")}
    aws.store().advance_watermark("us-east-1/prod", datetime(2026, 11, 30, 12, 0, tzinfo=UTC))
    run = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", environ=environ)
    assert run.code == 0, run.err
    table = run.lines[5 : run.lines.index("Run it for real with --execute.")]
    assert [cells(line) for line in table] == [
        ["SCHEDULED", "JOB", "ACTION", "DETAIL"],
        *(
            [f"2026-11-30 12:00:{s:02d}Z", "every-10s", "record SKIPPED", "missed; misfire"]
            for s in (0, 10, 20, 30, 40)
        ),
        [
            "2026-11-30 12:00:50Z",
            "every-10s",
            "721 more",
            "to 2026-11-30 14:00:50Z: record SKIPPED 715, dispatch 6 (--json lists each)",
        ],
        ["2026-11-30 14:00:00Z", "daily", "dispatch", "to fn-b at 14:00:07Z"],
        ["Would claim 7, dispatch 7, skip 720; 720 missed before the window."],
    ]
    assert_aligned(table[:-1])
    plan = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", "--json", environ=environ).json()
    assert len([a for a in plan["actions"] if a["job"] == "every-10s"]) == 726


def test_a_dry_run_shows_six_lines_of_a_job_in_full(
    capsys: pytest.CaptureFixture[str], aws: Aws, tmp_path: Path
) -> None:
    """A summary line stands for two lines or more: a job's sixth line is shown as it is."""
    (tmp_path / "cron.yaml").write_text(FREQUENT)
    environ = {**ENV, "CRON_FILE": str(tmp_path / "cron.yaml")}
    run = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", environ=environ)
    rows = [cells(line) for line in run.lines if "every-10s" in line]
    assert [row[0][-3:] for row in rows] == ["00Z", "10Z", "20Z", "30Z", "40Z", "50Z"]
    assert {row[2] for row in rows} == {"dispatch"}


def test_tick_verbose_shows_what_the_ticker_would_log(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    run = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", "-v")
    assert "What the ticker would log:" in run.lines
    assert (
        "  INFO Job heartbeat dispatched to mini-scheduler-sample-heartbeat - firing "
        "heartbeat@2026-11-30T14:00:45Z" in run.lines
    )


# -- jobs and history ----------------------------------------------------------------------------


def test_jobs_shows_next_firing_last_status_and_pauses(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    assert cli(capsys, "pause", "morning-report", "--operator", "jane.doe").code == 0
    assert cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", "--execute").code == 0
    run = cli(capsys, "jobs")
    assert run.code == 0, run.err
    assert [cells(line) for line in run.lines] == [
        ["JOB", "NEXT FIRING", "IN", "LAST RUN", "LAST STATUS", "PAUSED", "SERVICE"],
        [
            "morning-report",
            "Tue 2026-12-01 09:00:00 EST",
            "23h 59m",
            "-",
            "-",
            "by jane.doe",
            "mini-scheduler-sample-report",
        ],
        [
            "hourly-cleanup",
            "Mon 2026-11-30 14:15:00 UTC",
            "14m 53s",
            "-",
            "-",
            "-",
            "flow://mini-scheduler-sample-cleanup",
        ],
        [
            "heartbeat",
            "Mon 2026-11-30 14:00:15 UTC",
            "8s",
            "2026-11-30 14:00:45Z",
            "DISPATCHED",
            "-",
            "mini-scheduler-sample-heartbeat",
        ],
        [f"3 jobs in {SAMPLE}; runs from table {TABLE} in us-east-1"],
    ]
    assert_aligned(run.lines[:4])


def test_jobs_json(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    aws.store().set_paused("retired-job", True, operator="ops", now=NOW)
    run = cli(capsys, "jobs", "--json")
    report = run.json()
    assert run.code == 0
    assert report["region"] == "us-east-1" and report["table"] == TABLE
    report_job = report["jobs"][0]
    assert report_job["nextFiring"] == {
        "utc": "2026-12-01T14:00:00Z",
        "local": "2026-12-01T09:00:00-05:00",
        "zone": "America/New_York",
        "abbreviation": "EST",
    }
    assert report_job["paused"] is False and report_job["lastStatus"] is None
    assert report["pausedNotInCronFile"] == [{"job": "retired-job", "pausedBy": "ops"}]
    text = cli(capsys, "jobs")
    assert "(job retired-job is paused by ops but not in the cron file)" in text.lines


def test_jobs_needs_the_cron_file(
    capsys: pytest.CaptureFixture[str], aws: Aws, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    run = cli(capsys, "jobs", environ=without("CRON_FILE"))
    assert run.code == 1
    assert run.err == (
        "mini-scheduler jobs: Scheduler configuration not found in [file:cron.yaml]: give "
        "--cron-file (the file the ticker reads) or set CRON_FILE\n"
    )


def test_history_newest_first_with_a_limit(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    store = aws.store()
    start = JobStart("mini-scheduler-sample-heartbeat", "0/15 * * * * ? @UTC", {})
    for second in (0, 15, 30, 45):
        firing = Firing("heartbeat", datetime(2026, 11, 30, 14, 0, second, tzinfo=UTC))
        at = firing.scheduled + timedelta(milliseconds=20)
        store.claim(firing, now=at, lease_until=at + timedelta(minutes=2), origin="us-east-1/prod")
        store.mark_dispatched(firing, now=at, deadline=at + timedelta(minutes=1), start=start)
    store.close(
        "heartbeat@2026-11-30T14:00:45Z",
        RunStatus.SUCCEEDED,
        now=datetime(2026, 11, 30, 14, 0, 46, 20_000, tzinfo=UTC),
    )
    store.close(
        "heartbeat@2026-11-30T14:00:30Z",
        RunStatus.FAILED,
        now=datetime(2026, 11, 30, 14, 0, 47, 20_000, tzinfo=UTC),
        error="ConnectionError: down\n  at line 3",
    )
    run = cli(capsys, "history", "heartbeat", "--limit", "3")
    assert run.code == 0, run.err
    assert [cells(line) for line in run.lines] == [
        ["SCHEDULED", "STATUS", "STARTED", "ENDED", "TOOK", "ORIGIN", "NOTE"],
        [
            "2026-11-30 14:00:45Z",
            "SUCCEEDED",
            "2026-11-30 14:00:45Z",
            "2026-11-30 14:00:46Z",
            "1000 ms",
            "us-east-1/prod",
            "-",
        ],
        [
            "2026-11-30 14:00:30Z",
            "FAILED",
            "2026-11-30 14:00:30Z",
            "2026-11-30 14:00:47Z",
            "17s",
            "us-east-1/prod",
            "ConnectionError: down",
        ],
        [
            "2026-11-30 14:00:15Z",
            "DISPATCHED",
            "2026-11-30 14:00:15Z",
            "-",
            "-",
            "us-east-1/prod",
            "-",
        ],
        ["3 runs of heartbeat in us-east-1 (the newest; --limit for more)"],
    ]
    assert_aligned(run.lines[:4])
    report = cli(capsys, "history", "heartbeat", "--json").json()
    assert [r["firingId"][-9:] for r in report["runs"]] == [
        "14:00:45Z",
        "14:00:30Z",
        "14:00:15Z",
        "14:00:00Z",
    ]
    assert report["runs"][1]["error"] == "ConnectionError: down\n  at line 3"


def test_history_notes_manual_runs_and_skips(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    store = aws.store()
    manual = Firing.manual_run("heartbeat", NOW, "jane.doe", {}, nonce="0123abcd")
    store.claim(manual, now=NOW, lease_until=NOW + timedelta(minutes=2), origin="us-east-1/prod")
    store.record_skipped(
        Firing("heartbeat", datetime(2026, 11, 30, 13, 0, tzinfo=UTC)),
        now=NOW,
        reason="overlap",
        origin="us-east-1/prod",
    )
    run = cli(capsys, "history", "heartbeat")
    assert cells(run.lines[1])[-1] == "manual run by jane.doe"
    assert cells(run.lines[1])[0] == "2026-11-30 14:00:07.000Z"
    assert cells(run.lines[2])[1:2] == ["SKIPPED"] and cells(run.lines[2])[-1] == "overlap"
    assert run.lines[-1] == "2 runs of heartbeat in us-east-1"


def test_history_never_shows_a_negative_took(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    """A completion stamped before the run's start (the clocks of two machines): 0, as the
    recorder logs it."""
    store = aws.store()
    firing = Firing("heartbeat", datetime(2026, 11, 30, 14, 0, 15, tzinfo=UTC))
    began = firing.scheduled + timedelta(seconds=2)
    start = JobStart("mini-scheduler-sample-heartbeat", "0/15 * * * * ? @UTC", {})
    store.claim(firing, now=began, lease_until=began + timedelta(minutes=2), origin="x")
    store.mark_dispatched(firing, now=began, deadline=began + timedelta(minutes=1), start=start)
    store.close(firing.id, RunStatus.SUCCEEDED, now=began - timedelta(milliseconds=1500))
    run = cli(capsys, "history", "heartbeat")
    assert run.code == 0, run.err
    assert cells(run.lines[1])[2:5] == ["2026-11-30 14:00:17Z", "2026-11-30 14:00:15Z", "0 ms"]


def test_history_of_an_unknown_job_says_so_and_fails(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    run = cli(capsys, "history", "heartbaet")
    assert (run.code, run.out) == (2, "")
    assert run.err == (
        f"mini-scheduler history: unknown job heartbaet: it is not in {SAMPLE} and table "
        f"{TABLE} (us-east-1) holds no run of it - did you mean heartbeat?\n"
    )
    run = cli(capsys, "history", "no-such-job", "--json")
    assert (run.code, run.out) == (2, "")
    assert run.err.startswith("mini-scheduler history: unknown job no-such-job: it is not in ")
    assert "did you mean" not in run.err


def test_history_of_a_job_without_runs_reads_the_cron_file(
    capsys: pytest.CaptureFixture[str], aws: Aws, tmp_path: Path
) -> None:
    run = cli(capsys, "history", "heartbeat")
    assert (run.code, run.out) == (
        0,
        f"No runs recorded for heartbeat in table {TABLE} (us-east-1).\n",
    )
    mine = tmp_path / "cron.yaml"
    mine.write_text('jobs:\n  - {name: "nightly", cron: "0 0 2 * * ?", service: "fn"}\n')
    run = cli(capsys, "history", "nightly", "--cron-file", str(mine))
    assert run.code == 0 and run.out.startswith("No runs recorded for nightly")
    run = cli(capsys, "history", "heartbeat", "--cron-file", str(mine))
    assert run.code == 2 and f"unknown job heartbeat: it is not in {mine} and " in run.err
    # no cron file to look the name up in: say what to give
    run = cli(capsys, "history", "heartbeat", environ=without("CRON_FILE"))
    assert (run.code, run.out) == (2, "")
    assert run.err.startswith(
        f"mini-scheduler history: no run of heartbeat in table {TABLE} (us-east-1), and no cron "
        "file to tell whether it is a job: Scheduler configuration not found in [file:cron.yaml]"
    )
    assert run.err.endswith(": give --cron-file (the file the ticker reads) or set CRON_FILE\n")


def test_history_of_a_job_gone_from_the_cron_file_still_shows_its_runs(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    store = aws.store()
    firing = Firing("retired-job", datetime(2026, 11, 30, 13, 0, tzinfo=UTC))
    store.claim(firing, now=NOW, lease_until=NOW + timedelta(minutes=2), origin="us-east-1/prod")
    run = cli(capsys, "history", "retired-job")
    assert run.code == 0, run.err
    assert cells(run.lines[1])[:2] == ["2026-11-30 13:00:00Z", "CLAIMED"]
    assert run.lines[-1] == "1 run of retired-job in us-east-1"


def make_schedule(aws: Aws, entry: dict[str, Any], region: str = "us-east-1") -> None:
    """A runtime schedule in ``region``'s table, as the ticker's event makes one."""
    from mini_scheduler.operator import Operator

    op = Operator(cron=None, claims=aws.store(region), environment=None, clock=FixedClock(NOW))
    op.create_schedules(entry, "jane.doe")


def test_history_of_a_runtime_schedule_without_runs_is_not_an_unknown_job(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    make_schedule(aws, {"name": "quarter-close", "at": "2026-12-31T23:00:00Z", "service": "fn"})
    for environ in (ENV, without("CRON_FILE")):
        run = cli(capsys, "history", "quarter-close", environ=environ)
        assert (run.code, run.out, run.err) == (
            0,
            f"No runs recorded for quarter-close in table {TABLE} (us-east-1).\n",
            "",
        )


def test_history_usage_errors(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    run = cli(capsys, "history", "bad..name")
    assert (run.code, run.err) == (
        2,
        "mini-scheduler history: not a job name: name 'bad..name' must not hold '..'\n",
    )
    run = cli(capsys, "history", "heartbeat", "--limit", "0")
    assert run.code == 2 and "give 1 to 1000, not 0" in run.err


# -- run -----------------------------------------------------------------------------------------

ANSWER = {
    "job": "morning-report",
    "firingId": "morning-report@manual-2026-11-30T14:00:07.000Z-0123abcd",
    "operator": "jane.doe",
    "manual": True,
    "status": "DISPATCHED",
    "mode": "active",
    "parameters": {"region": "west", "recipients": ["ops@example.com"]},
}


def test_run_invokes_the_ticker_with_a_manual_run_event_and_prints_its_answer(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    invoker = FakeInvoker(ANSWER)
    run = cli(
        capsys,
        "run",
        "morning-report",
        "--operator",
        "jane.doe",
        "--parameters",
        '{"region": "west"}',
        "--function",
        TICKER,
        invoke=invoker,
    )
    assert run.code == 0, run.err
    assert invoker.calls == [
        (
            "us-east-1",
            TICKER,
            {
                "job": "morning-report",
                "operator": "jane.doe",
                "parameters": {"region": "west"},
                "identity": MOTO_ARN,  # the caller's, for the audit record
            },
        )
    ]
    assert run.lines == [
        "Job morning-report run by jane.doe: DISPATCHED - firing "
        "morning-report@manual-2026-11-30T14:00:07.000Z-0123abcd",
        "  job         morning-report",
        "  firingId    morning-report@manual-2026-11-30T14:00:07.000Z-0123abcd",
        "  operator    jane.doe",
        "  manual      true",
        "  status      DISPATCHED",
        "  mode        active",
        '  parameters  {"region": "west", "recipients": ["ops@example.com"]}',
    ]


def test_run_on_standby_says_so(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    invoker = FakeInvoker({**ANSWER, "mode": "standby"})
    run = cli(
        capsys,
        "run",
        "morning-report",
        "--operator",
        "jane.doe",
        "--function",
        TICKER,
        invoke=invoker,
    )
    assert run.code == 0
    assert run.lines[1] == (
        "  (this region is on standby: the operator's run went ahead all the same)"
    )


def test_run_takes_the_operator_from_the_caller_s_identity(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    invoker = FakeInvoker(ANSWER)
    run = cli(capsys, "run", "heartbeat", "--function", TICKER, invoke=invoker)
    assert run.code == 0
    assert invoker.calls[0][2] == {
        "job": "heartbeat",
        "operator": "moto",
        "parameters": {},
        "identity": MOTO_ARN,  # one STS call: the name is its last part
    }


def test_run_through_moto_s_lambda(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    # Without Docker, moto's Invoke answers the event it was given: proof of what was sent.
    run = cli(capsys, "run", "heartbeat", "--operator", "jane.doe", "--function", TICKER)
    assert run.code == 0, run.err
    assert run.lines == [
        "The ticker answered:",
        "  job         heartbeat",
        "  operator    jane.doe",
        "  parameters  {}",
        f"  identity    {MOTO_ARN}",
    ]
    report = cli(
        capsys, "run", "heartbeat", "--operator", "jane.doe", "--function", TICKER, "--json"
    ).json()
    assert (
        report["answer"]
        == report["event"]
        == {
            "job": "heartbeat",
            "operator": "jane.doe",
            "parameters": {},
            "identity": MOTO_ARN,
        }
    )


def test_run_when_lambda_refuses_the_invoke(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    def refuse(region: str, function: str, event: Mapping[str, Any]) -> Invocation:
        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}, "Invoke"
        )

    run = cli(
        capsys, "run", "heartbeat", "--operator", "jane.doe", "--function", "nope", invoke=refuse
    )
    assert (run.code, run.out) == (1, "")
    assert run.err == (
        "mini-scheduler run: Lambda Invoke nope in us-east-1 failed - AccessDeniedException: "
        "not allowed\n"
    )


def test_run_refuses_parameters_no_target_takes_before_invoking(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    from mini_scheduler.jobs.limits import parameters_limit

    limit = parameters_limit("lambda")
    calls: list[Mapping[str, Any]] = []

    def invoke(region: str, function: str, event: Mapping[str, Any]) -> Invocation:
        calls.append(event)
        raise AssertionError("nothing is sent")

    blob = json.dumps({"blob": "x" * limit})
    args = ("run", "heartbeat", "--operator", "jane.doe", "--function", TICKER)
    run = cli(capsys, *args, "--parameters", blob, invoke=invoke)
    assert (run.code, run.out, calls) == (2, "", [])
    assert run.err == (
        f"mini-scheduler run: parameters: parameters take {limit + 11} bytes as JSON, more than "
        f"the {limit} a Lambda target allows (the 409600-byte DynamoDB item that records the "
        "job's state, less 8192 kept for the rest of the dispatch)\n"
    )


@pytest.mark.parametrize(
    ("invoker", "message"),
    [
        (
            FakeInvoker(
                {"status": "rejected", "error": "unknown job 'x': no job of that name in cron.yaml"}
            ),
            "the ticker refused the run: unknown job 'x': no job of that name in cron.yaml",
        ),
        (
            FakeInvoker(
                {"errorType": "StoreError", "errorMessage": "DynamoDB PutItem failed"}, "Unhandled"
            ),
            "the ticker failed (Unhandled): StoreError: DynamoDB PutItem failed",
        ),
        (FakeInvoker({**ANSWER, "status": "FAILED"}), "the dispatch failed: see the ticker's log"),
    ],
)
def test_run_failures_exit_1(
    capsys: pytest.CaptureFixture[str], aws: Aws, invoker: FakeInvoker, message: str
) -> None:
    run = cli(capsys, "run", "x", "--operator", "jane.doe", "--function", TICKER, invoke=invoker)
    assert run.code == 1
    assert run.err == f"mini-scheduler run: {message}\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--operator", "jane doe"],
            "mini-scheduler run: operator 'jane doe' must be 1-128 letters, digits, '.', '_', "
            "'-' or '@'",
        ),
        (
            ["--operator", "x" * 129],
            "mini-scheduler run: operator '" + "x" * 129 + "' must be 1-128 letters, digits, "
            "'.', '_', '-' or '@'",
        ),
        (
            ["--operator", "jane", "--parameters", "nope"],
            "mini-scheduler run: error: argument --parameters: not JSON: Expecting value: line 1 "
            "column 1 (char 0)",
        ),
        (
            ["--operator", "jane", "--parameters", "[1]"],
            "mini-scheduler run: error: argument --parameters: give a JSON object, e.g. "
            '\'{"region": "west"}\', not list',
        ),
        (
            ["--operator", "jane", "--function", ""],
            "mini-scheduler run: no ticker function: give --function NAME or --stack NAME",
        ),
    ],
)
def test_run_usage_errors(
    capsys: pytest.CaptureFixture[str], aws: Aws, argv: list[str], message: str
) -> None:
    invoker = FakeInvoker(ANSWER)
    run = cli(capsys, "run", "heartbeat", "--function", TICKER, *argv, invoke=invoker)
    assert run.code == 2 and run.err.splitlines()[-1] == message
    assert invoker.calls == []


class _Sts:
    def __init__(self, arn: str | None) -> None:
        self.arn = arn

    def get_caller_identity(self) -> dict[str, str]:
        if self.arn is None:
            raise ClientError(
                {"Error": {"Code": "ExpiredToken", "Message": "The security token expired"}},
                "GetCallerIdentity",
            )
        return {"Arn": self.arn}


def test_run_when_the_identity_names_no_operator(capsys: pytest.CaptureFixture[str]) -> None:
    for arn, code, message in [
        (
            "arn:aws:sts::123456789012:assumed-role/Admin/jane+doe",
            2,
            "your identity arn:aws:sts::123456789012:assumed-role/Admin/jane+doe does not end in "
            "an operator name (operator 'jane+doe' must be 1-128 letters, digits, '.', '_', '-' "
            "or '@'): give --operator NAME",
        ),
        (
            None,
            1,
            "cannot tell who you are (STS GetCallerIdentity failed - ExpiredToken: The security "
            "token expired): give --operator NAME",
        ),
    ]:
        sts = _Sts(arn)
        invoker = FakeInvoker(ANSWER)
        run = cli(
            capsys,
            "run",
            "heartbeat",
            "--function",
            TICKER,
            clients=lambda region, sts=sts: lambda service: sts,
            invoke=invoker,
        )
        assert (run.code, run.err) == (code, f"mini-scheduler run: {message}\n")
        assert invoker.calls == []
    sts = _Sts("arn:aws:sts::123456789012:assumed-role/Admin/jane.doe@example.com")
    invoker = FakeInvoker(ANSWER)
    cli(
        capsys,
        "run",
        "heartbeat",
        "--function",
        TICKER,
        clients=lambda region: lambda service: sts,
        invoke=invoker,
    )
    assert invoker.calls[0][2]["operator"] == "jane.doe@example.com"


# -- pause and resume ----------------------------------------------------------------------------


def test_pause_and_resume_in_every_region(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    run = cli(capsys, "pause", "morning-report", "--regions", BOTH, "--operator", "jane.doe")
    assert run.code == 0, run.err
    assert run.lines == [
        f"us-east-1  paused  table {TABLE}",
        f"us-west-2  paused  table {TABLE}",
        "Job morning-report paused by jane.doe in 2 regions.",
    ]
    for region in ("us-east-1", "us-west-2"):
        pause = aws.store(region).control("x").paused["morning-report"]
        assert pause.operator == "jane.doe"
    plan = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", "--json").json()
    assert plan["paused"] == [
        {
            "job": "morning-report",
            "operator": "jane.doe",
            "pausedAt": "2026-11-30T14:00:07Z",
            "firings": 1,
        }
    ]
    run = cli(capsys, "resume", "morning-report", "--regions", "us-west-2", "--operator", "ops")
    assert run.lines[0] == f"us-west-2  resumed  table {TABLE}"
    run = cli(capsys, "resume", "morning-report", "--regions", BOTH, "--operator", "ops")
    assert run.lines == [
        f"us-east-1  resumed                     table {TABLE}",
        f"us-west-2  not paused (nothing to do)  table {TABLE}",
        "Job morning-report resumed by ops in 2 regions.",
    ]
    assert aws.store().control("x").paused == {}


def test_pause_reports_each_region_and_fails_when_one_fails(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    run = cli(
        capsys, "pause", "heartbeat", "--regions", "us-east-1,eu-west-1", "--operator", "jane.doe"
    )
    assert run.code == 1
    assert run.lines[0] == f"us-east-1  paused  table {TABLE}"
    assert cells(run.lines[1])[:2] == ["eu-west-1", "FAILED"]
    assert "ResourceNotFoundException" in run.lines[1]
    assert run.lines[2] == (
        "Job heartbeat paused by jane.doe in 1 of 2 regions: retry the failed ones with "
        "--regions eu-west-1"
    )
    report = cli(
        capsys,
        "pause",
        "heartbeat",
        "--regions",
        "us-east-1,eu-west-1",
        "--operator",
        "jane.doe",
        "--json",
    ).json()
    assert [(r["region"], r["ok"]) for r in report["regions"]] == [
        ("us-east-1", True),
        ("eu-west-1", False),
    ]


def test_pause_checks_the_job_is_in_the_cron_file(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    run = cli(capsys, "pause", "morning-reprot", "--operator", "jane.doe")
    assert (run.code, run.out) == (2, "")
    assert run.err == (
        f"mini-scheduler pause: no cron.yaml job or runtime schedule morning-reprot: not in "
        f"{SAMPLE}, nor a runtime schedule of us-east-1 (mini-scheduler jobs lists the cron "
        "file's jobs, mini-scheduler schedule list the runtime schedules)\n"
    )
    assert aws.items() == []


def test_a_runtime_schedule_is_paused_where_it_lives_with_or_without_a_cron_file(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    make_schedule(aws, {"name": "every", "cron": "0 * * * * ?", "service": "fn"})
    args = ("every", "--regions", BOTH, "--operator", "jane.doe")
    run = cli(capsys, "pause", *args)
    assert run.code == 0, run.err
    assert run.lines == [
        f"us-east-1  paused                                    table {TABLE}",
        "us-west-2  no runtime schedule here (nothing to do)",
        "Job every paused by jane.doe in 2 regions.",
    ]
    assert set(aws.store().control("x").paused) == {"every"}
    assert aws.store("us-west-2").control("x").paused == {}
    run = cli(capsys, "resume", *args)
    assert run.code == 0 and aws.store().control("x").paused == {}
    run = cli(capsys, "pause", *args, environ=without("CRON_FILE"))  # the name's form only
    assert run.code == 0, run.err
    assert set(aws.store("us-west-2").control("x").paused) == {"every"}


def test_a_runtime_schedule_s_pause_reaches_a_region_not_read_and_reports_it(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    """A region whose store could not be read may hold the schedule: the pause is tried there
    and its failure reported (exit 1), never shown as "nothing to do" (fleet.holders, the
    console's rule too)."""
    make_schedule(aws, {"name": "every", "cron": "0 * * * * ?", "service": "fn"})
    run = cli(capsys, "pause", "every", "--regions", "us-east-1,eu-west-1", "--operator", "jane")
    assert run.code == 1
    assert run.lines[0] == f"us-east-1  paused  table {TABLE}"
    assert cells(run.lines[1])[:2] == ["eu-west-1", "FAILED"]
    assert set(aws.store().control("x").paused) == {"every"}


# -- status and failover -------------------------------------------------------------------------


def test_status_reads_every_region(capsys: pytest.CaptureFixture[str], aws: Aws) -> None:
    run = cli(capsys, "status", "--regions", BOTH)
    assert run.code == 0, run.err
    assert run.lines == [
        "REGION     ACTIVE          THIS REGION  STORE",
        "us-east-1  prod (default)  -            ssm:/mini-scheduler/active-environment",
        "us-west-2  prod (default)  -            ssm:/mini-scheduler/active-environment",
    ]
    run = cli(capsys, "status", "--regions", BOTH, "--stack", STACK)
    assert run.lines[1:] == [
        "us-east-1  prod (default)  prod: active  ssm:/mini-scheduler/active-environment",
        "us-west-2  prod (default)  DR: standby   ssm:/mini-scheduler/active-environment",
    ]
    # ENVIRONMENT_NAME names one region's environment: it is shown for one region only
    run = cli(capsys, "status", "--region", "us-west-2", "--environment-name", "DR")
    assert run.lines[1] == (
        "us-west-2  prod (default)  DR: standby  ssm:/mini-scheduler/active-environment"
    )
    run = cli(capsys, "status", "--regions", BOTH, "--environment-name", "DR")
    assert (run.code, run.err) == (
        2,
        "mini-scheduler status: --environment-name names one region's: give one region\n",
    )


def test_failover_writes_every_region_through_the_ticker_s_store(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    run = cli(capsys, "failover", "--to", "DR", "--regions", BOTH, "--operator", "jane.doe")
    assert run.code == 0, run.err
    assert run.lines == [
        "us-east-1  prod (default) -> DR  ssm:/mini-scheduler/active-environment",
        "us-west-2  prod (default) -> DR  ssm:/mini-scheduler/active-environment",
        "Active environment DR in 2 regions, set by jane.doe.",
    ]
    for region in ("us-east-1", "us-west-2"):
        assert aws.active(region) == "DR"
        described = aws.client("ssm", region).describe_parameters()["Parameters"][0]
        assert described["Description"] == "mini-scheduler active environment, set by jane.doe"
    report = cli(capsys, "status", "--regions", BOTH, "--stack", STACK, "--json").json()
    assert report == {
        "regions": [
            {
                "region": "us-east-1",
                "ok": True,
                "store": "ssm:/mini-scheduler/active-environment",
                "active": "DR",
                "stored": True,
                "known": True,
                "environment": "prod",
                "mode": "standby",
            },
            {
                "region": "us-west-2",
                "ok": True,
                "store": "ssm:/mini-scheduler/active-environment",
                "active": "DR",
                "stored": True,
                "known": True,
                "environment": "DR",
                "mode": "active",
            },
        ],
        "agree": True,
        "known": ["prod", "DR"],
        "activeRegions": ["us-west-2"],
    }


def test_failover_with_another_parameter_and_the_caller_s_identity(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    run = cli(capsys, "failover", "--to", "prod", "--regions", "us-west-2", "--parameter", "/x/y",
              "--known", "prod")  # fmt: skip
    assert run.code == 0, run.err
    assert run.lines[-1] == "Active environment prod in 1 region, set by moto."
    assert aws.active("us-west-2", "/x/y") == "prod"
    env = {**ENV, "ACTIVE_ENVIRONMENT_STORE": "ssm:/x/y"}
    assert cli(capsys, "status", "--regions", "us-west-2", environ=env).lines[1].split()[1] == (
        "prod"
    )


def test_a_partial_failover_exits_1_and_says_what_to_retry(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    env = {**ENV, "ACTIVE_ENVIRONMENT_STORE": "dynamodb"}
    run = cli(
        capsys,
        "failover",
        "--to",
        "DR",
        "--regions",
        "us-east-1,eu-west-1",
        "--operator",
        "jane.doe",
        environ=env,
    )
    assert run.code == 1
    assert run.lines[0] == f"us-east-1  prod (default) -> DR  dynamodb:{TABLE}"
    assert cells(run.lines[1])[:2] == ["eu-west-1", "FAILED"]
    assert run.lines[2] == (
        "Active environment DR in 1 of 2 regions; the regions disagree until the rest are "
        "written: mini-scheduler failover --to DR --regions us-east-1,eu-west-1"
    )
    status = cli(capsys, "status", "--regions", "us-east-1,eu-west-1", environ=env)
    assert status.code == 1
    assert status.lines[1] == f"us-east-1  DR      -            dynamodb:{TABLE}"
    assert status.lines[-1] == "1 of 2 regions could not be read."


def _deploy(aws: Aws, stack: str, known: str = "prod,DR") -> None:
    """A stack in each region, named as the conftest's, whose KnownEnvironments lists both."""
    for region in REGIONS:
        aws.client("cloudformation", region).create_stack(
            StackName=stack,
            TemplateBody=stack_template(
                {
                    "StateTableName": TABLE,
                    "EnvironmentName": ENVIRONMENTS[region],
                    "KnownEnvironments": known,
                }
            ),
        )


def test_a_failover_that_leaves_a_stack_s_region_out_is_refused(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    """Issue 25: --to DR in us-west-2 alone made DR active there while us-east-1 (prod) read
    prod: two regions active, exit 0."""
    _deploy(aws, "pair")
    argv = ("failover", "--to", "DR", "--operator", "jane.doe")
    run = cli(capsys, *argv, "--regions", "us-west-2", "--stack", "pair")
    assert (run.code, run.out) == (2, "")
    assert run.err == (
        "mini-scheduler failover: DR would be active in us-west-2, and no region given is "
        "prod's (known: DR, prod): a region left out keeps its value, and may stay active too. "
        "Give every stack's region: --regions us-west-2,<prod's region> (if no stack is named "
        "prod, take it out of KnownEnvironments or --known). Nothing was written.\n"
    )
    # without a stack the regions' names are not known: fewer regions than names is refused
    run = cli(capsys, *argv, "--regions", "us-west-2", environ=without("ENVIRONMENT_NAME"))
    assert run.code == 2
    assert run.err.startswith(
        "mini-scheduler failover: the deployment knows 2 environments (prod, DR) and 1 region "
        "is given (us-west-2): a region left out keeps its value, and may stay active too. "
    )
    for region in REGIONS:
        with pytest.raises(ClientError):
            aws.active(region)
    run = cli(capsys, *argv, "--regions", BOTH, "--stack", "pair")
    assert run.code == 0, run.err
    assert [aws.active(r) for r in REGIONS] == ["DR", "DR"]


class _Deaf:
    """An environment store that takes a write and keeps the old value."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.name: str = store.name
        self.persistent: bool = store.persistent

    def get(self) -> str | None:
        return self.store.get()  # type: ignore[no-any-return]

    def set(self, value: str, *, operator: str, now: datetime) -> None:
        pass


def test_failover_reads_every_region_back_and_names_one_left_wrong(
    capsys: pytest.CaptureFixture[str], aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mini_scheduler.cli import environment as operate

    real = operate.environment_for

    def deaf_in_the_east(context: Any, where: Any) -> Any:
        store = real(context, where)
        return _Deaf(store) if where.region == "us-east-1" else store

    monkeypatch.setattr(operate, "environment_for", deaf_in_the_east)
    aws.client("ssm", "us-east-1").put_parameter(Name=PARAMETER, Value="prod", Type="String")
    run = cli(capsys, "failover", "--to", "DR", "--regions", BOTH, "--stack", STACK,
              "--operator", "jane.doe")  # fmt: skip
    assert run.code == 1
    assert cells(run.lines[0]) == [
        "us-east-1",
        "FAILED",
        "ssm:/mini-scheduler/active-environment holds 'prod' after the write, not DR",
    ]
    assert run.lines[2] == (
        "Active environment DR in 1 of 2 regions; the regions disagree until the rest are "
        "written: mini-scheduler failover --to DR --regions us-east-1,us-west-2"
    )


def test_status_says_when_regions_disagree_or_a_value_is_nonsense(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    aws.client("ssm", "us-west-2").put_parameter(Name=PARAMETER, Value="DR", Type="String")
    run = cli(capsys, "status", "--regions", BOTH)
    assert run.code == 1
    assert run.lines[-1] == (
        "The regions disagree on the active environment: us-east-1 holds prod, us-west-2 holds "
        "DR. Finish the failover: mini-scheduler failover --to NAME --regions "
        "us-east-1,us-west-2."
    )
    aws.client("ssm").put_parameter(Name=PARAMETER, Value="not a name", Type="String")
    run = cli(capsys, "status", "--regions", BOTH, "--json")
    assert run.code == 1
    first = run.json()["regions"][0]
    assert first["ok"] is False
    assert first["error"].startswith(
        "ssm:/mini-scheduler/active-environment holds 'not a name', which is not an "
        "environment name"
    )


@pytest.mark.parametrize("stack", [[], ["--stack", STACK]], ids=["no stack", "stack"])
def test_status_exits_1_when_the_regions_disagree_with_or_without_a_stack(
    capsys: pytest.CaptureFixture[str], aws: Aws, stack: list[str]
) -> None:
    """Issue 25: without --stack, regions holding prod and maintenance exited 0; with it too,
    as one region (prod) was active."""
    aws.client("ssm", "us-east-1").put_parameter(Name=PARAMETER, Value="prod", Type="String")
    aws.client("ssm", "us-west-2").put_parameter(Name=PARAMETER, Value="maintenance", Type="String")
    run = cli(capsys, "status", "--regions", BOTH, *stack)
    assert run.code == 1, run.out
    assert run.lines[-1].startswith(
        "The regions disagree on the active environment: us-east-1 holds prod, us-west-2 holds "
        "maintenance. "
    )
    report = cli(capsys, "status", "--regions", BOTH, *stack, "--json")
    assert report.code == 1 and report.json()["agree"] is False
    assert report.json()["problem"].startswith("The regions disagree")
    # the same value in every region, spelt differently, is agreement
    aws.client("ssm", "us-west-2").put_parameter(
        Name=PARAMETER, Value="PROD", Type="String", Overwrite=True
    )
    assert cli(capsys, "status", "--regions", BOTH, *stack).code == 0


def test_failover_refuses_a_name_no_stack_has_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    """The typo of issue 15: DRR, where the stacks are prod and DR, would stop every job."""
    argv = ("failover", "--to", "DRR", "--regions", BOTH, "--operator", "jane.doe")
    run = cli(capsys, *argv, "--stack", STACK)
    assert (run.code, run.out) == (2, "")
    assert run.err == (
        "mini-scheduler failover: DRR is not a known environment (known: prod, DR) - did you "
        "mean DR? No region would be active, and nothing was written. Check the name (a stack's "
        "EnvironmentName, --known, KNOWN_ENVIRONMENTS), or write it anyway with --force "
        "--reason TEXT\n"
    )
    # without a stack, the list the functions know by default (prod,DR), or the one given
    assert cli(capsys, *argv).code == 2
    assert cli(capsys, *argv, environ={**ENV, "KNOWN_ENVIRONMENTS": "prod,DR2"}).code == 2
    run = cli(capsys, *argv, "--known", "blue,green")
    assert run.err.startswith("mini-scheduler failover: DRR is not a known environment (known: ")
    for region in ("us-east-1", "us-west-2"):
        with pytest.raises(ClientError):
            aws.active(region)
    run = cli(capsys, *argv, "--known", "prod,drr")  # compared without regard to case
    assert run.code == 0, run.err
    assert aws.active("us-west-2") == "DRR"


def test_failover_matches_a_name_without_regard_to_case_and_writes_the_stack_s_spelling(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    """Issue 25: --to dr to a stack named DR wrote dr; the tickers compare without regard to
    case, so it worked, but every listing then showed dr beside the stack's DR."""
    run = cli(capsys, "failover", "--to", "dr", "--regions", BOTH, "--stack", STACK,
              "--operator", "jane.doe")  # fmt: skip
    assert run.code == 0, run.err
    assert run.lines[-1] == "Active environment DR in 2 regions, set by jane.doe."
    assert [aws.active(r) for r in REGIONS] == ["DR", "DR"]
    assert cli(capsys, "status", "--regions", BOTH, "--stack", STACK).lines[2].split()[1:3] == [
        "DR",
        "DR:",
    ]


def test_failover_suggests_the_closest_known_name_only_when_one_is_close(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    argv = ("failover", "--regions", BOTH, "--stack", STACK, "--operator", "jane.doe")
    run = cli(capsys, *argv, "--to", "prd")
    assert run.code == 2 and "(known: prod, DR) - did you mean prod? No region" in run.err
    run = cli(capsys, *argv, "--to", "staging")
    assert run.code == 2
    assert "did you mean" not in run.err and "(known: prod, DR): no region" in run.err


def test_a_forced_failover_to_a_name_no_stack_has_says_no_region_is_active(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    run = cli(
        capsys,
        "failover",
        "--to",
        "maintenance",
        "--force",
        "--reason",
        "stop every job during the migration",
        "--regions",
        BOTH,
        "--stack",
        STACK,
        "--operator",
        "jane.doe",
    )
    assert run.code == 1
    assert run.lines == [
        "us-east-1  prod (default) -> maintenance  ssm:/mini-scheduler/active-environment",
        "us-west-2  prod (default) -> maintenance  ssm:/mini-scheduler/active-environment",
        "Active environment maintenance in 2 regions, set by jane.doe, forced: stop every job "
        "during the migration.",
        "No region is active: maintenance is not a known environment (known: prod, DR), so no "
        "stack has it. No job runs until one is: mini-scheduler failover --to NAME --regions "
        "us-east-1,us-west-2.",
    ]
    assert aws.active("us-west-2") == "maintenance"
    status = cli(capsys, "status", "--regions", BOTH, "--stack", STACK)
    assert status.code == 1
    assert status.lines[1] == (
        "us-east-1  maintenance (not known)  prod: standby  ssm:/mini-scheduler/active-environment"
    )
    assert status.lines[-1].startswith("No region is active: maintenance is not a known ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--force"], "--force needs --reason TEXT"),
        (["--force", "--reason", "x\ny"], "--reason: reason must be one line"),
        (["--known", "prod,two words"], "--known: 'two words' is not an environment name"),
    ],
)
def test_failover_force_and_known_usage_errors(
    capsys: pytest.CaptureFixture[str], aws: Aws, argv: list[str], message: str
) -> None:
    run = cli(capsys, "failover", "--to", "DR", "--regions", BOTH, "--operator", "jane", *argv)
    assert run.code == 2 and message in run.err, run.err
    with pytest.raises(ClientError):
        aws.active("us-east-1")


def test_status_says_when_no_region_or_more_than_one_is_active(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    # each region holds the other's name: both on standby, each with a known name
    aws.client("ssm", "us-east-1").put_parameter(Name=PARAMETER, Value="DR", Type="String")
    aws.client("ssm", "us-west-2").put_parameter(Name=PARAMETER, Value="prod", Type="String")
    run = cli(capsys, "status", "--regions", BOTH, "--stack", STACK)
    assert run.code == 1
    assert run.lines[-1] == (
        "No region is active: each region holds the name of another: us-east-1 (prod) holds "
        "DR, us-west-2 (DR) holds prod. No job runs until one is: mini-scheduler failover "
        "--to NAME --regions us-east-1,us-west-2."
    )
    report = cli(capsys, "status", "--regions", BOTH, "--stack", STACK, "--json").json()
    assert report["activeRegions"] == [] and report["problem"].startswith("No region is active")
    # one region alone cannot tell: prod may be active in a region not given
    run = cli(capsys, "status", "--regions", "us-west-2", "--stack", STACK, "--known", "prod,DR")
    assert run.code == 0 and run.lines[1].split()[1:3] == ["prod", "DR:"]
    # two stacks named alike (a DR stack deployed without EnvironmentName=DR): both active
    for region in REGIONS:
        aws.client("cloudformation", region).create_stack(
            StackName="twins",
            TemplateBody=stack_template(
                {"EnvironmentName": "prod", "KnownEnvironments": "prod,DR"}
            ),
        )
        aws.client("ssm", region).put_parameter(
            Name=PARAMETER, Value="prod", Type="String", Overwrite=True
        )
    run = cli(capsys, "status", "--regions", BOTH, "--stack", "twins", "--table", TABLE)
    assert run.code == 1
    assert run.lines[-1] == (
        "2 regions are active: us-east-1 (prod), us-west-2 (prod) - each may run the same "
        "firing. Give each stack its own EnvironmentName."
    )
    run = cli(capsys, "failover", "--to", "prod", "--regions", BOTH, "--stack", "twins",
              "--table", TABLE, "--operator", "jane.doe")  # fmt: skip
    assert run.code == 1 and run.lines[-1].startswith("2 regions are active: ")


def test_a_stack_s_known_environments_are_the_ones_its_ticker_knows(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    """One region given: its stack's KnownEnvironments output says which other names exist."""
    aws.client("cloudformation", "us-west-2").create_stack(
        StackName="listed",
        TemplateBody=stack_template(
            {"StateTableName": TABLE, "EnvironmentName": "DR", "KnownEnvironments": "prod,DR"}
        ),
    )
    argv = ("--regions", "us-west-2", "--stack", "listed")
    run = cli(capsys, "status", *argv)
    assert run.code == 0, run.out
    assert run.lines[1].split()[1:4] == ["prod", "(default)", "DR:"]
    run = cli(capsys, "failover", "--to", "prod", *argv, "--operator", "jane.doe")
    assert run.code == 0, run.err
    # the stack of the conftest has no KnownEnvironments: prod is then known to nobody here
    run = cli(capsys, "failover", "--to", "prod", "--regions", "us-west-2", "--stack", STACK,
              "--operator", "jane.doe")  # fmt: skip
    assert run.code == 2 and "prod is not a known environment (known: DR)" in run.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--to", "DR"],
            "mini-scheduler failover: name every region with --regions R1,R2: a failover must "
            "reach them all",
        ),
        (
            ["--to", "two words", "--regions", BOTH],
            "mini-scheduler failover: error: argument --to: 'two words' is not an environment "
            "name (one word of letters, digits, '-' and '_')",
        ),
        (
            ["--to", "DR", "--regions", ","],
            "mini-scheduler failover: error: argument --regions/--region: name at least one "
            "region, e.g. us-east-1,us-west-2",
        ),
    ],
)
def test_failover_usage_errors(
    capsys: pytest.CaptureFixture[str], aws: Aws, argv: list[str], message: str
) -> None:
    run = cli(capsys, "failover", "--operator", "jane.doe", *argv)
    assert run.code == 2 and run.err.splitlines()[-1] == message
    with pytest.raises(ClientError):
        aws.active("us-east-1")


# -- errors --------------------------------------------------------------------------------------


def test_an_unexpected_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def broken(region: str) -> Any:
        raise RuntimeError("the network is a lie")

    run = cli(capsys, "status", clients=broken)
    assert run.code == 1
    assert run.err == (
        "mini-scheduler status: unexpected RuntimeError: the network is a lie (set "
        "MINI_SCHEDULER_TRACEBACK=1 to see where)\n"
    )


def test_no_credentials_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    run = cli(capsys, "run", "heartbeat", "--function", TICKER, clients=RegionClients())
    assert run.code == 1
    assert run.err == (
        "mini-scheduler run: cannot tell who you are (STS GetCallerIdentity failed - "
        "NoCredentialsError: Unable to locate credentials): give --operator NAME\n"
    )


def test_output_stays_clean_when_a_runtime_configured_the_package_loggers(
    capsys: pytest.CaptureFixture[str], aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Powertools (the Lambda handlers' runtime) gives each package logger its own handler and
    stops propagation: the CLI still owns what it prints."""
    import logging
    import sys

    for name in ("mini_scheduler.ticker", "mini_scheduler.environment"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "handlers", [logging.StreamHandler(sys.stdout)])
        monkeypatch.setattr(logger, "propagate", False)
    dry = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z")
    assert dry.lines[0].startswith("Dry run of the tick") and "Job heartbeat" not in dry.out
    real = cli(capsys, "tick", "--at", "2026-11-30T14:00:00Z", "--execute")
    assert "Job heartbeat" not in real.out and "INFO    Job heartbeat dispatched" in real.err
    assert logging.getLogger("mini_scheduler.ticker").propagate is False
