"""The audit trail from the CLI: every operator command takes --reason and sends the caller's
identity; pause, resume and failover write their record (in each region's log group); a
record not written exits 1 with the action done; ``audit`` reads every region's trail merged
newest first.

CloudWatch Logs (moto too) takes events of the last 14 days only: these tests run on a clock
near the real one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mini_scheduler.clock import FixedClock
from tests.unit.cli.conftest import REGIONS, TICKER, Aws
from tests.unit.cli.test_operator import BOTH, ENV, MOTO_ARN, FakeInvoker, cli

GROUP = "/mini-scheduler/audit"
AUDITED = {**ENV, "AUDIT_LOG_GROUP": GROUP}


def _clock() -> FixedClock:
    return FixedClock(datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1))


@pytest.fixture
def groups(aws: Aws) -> Aws:
    for region in REGIONS:
        aws.client("logs", region).create_log_group(logGroupName=GROUP)
    return aws


def test_pause_and_resume_are_recorded_and_audit_reads_them_newest_first(
    capsys: pytest.CaptureFixture[str], groups: Aws
) -> None:
    clock = _clock()
    argv = ("--regions", BOTH, "--operator", "jane.doe")
    paused = cli(
        capsys,
        "pause",
        "heartbeat",
        *argv,
        "--reason",
        "warehouse down",
        clock=clock,
        environ=AUDITED,
    )
    assert paused.code == 0, paused.err
    clock.advance(60)
    assert cli(capsys, "resume", "heartbeat", *argv, clock=clock, environ=AUDITED).code == 0
    clock.advance(60)
    shown = cli(capsys, "audit", "--regions", BOTH, clock=clock, environ=AUDITED)
    assert shown.code == 0, shown.err
    assert shown.lines[0].split() == ["WHEN", "REGION", "ACTION", "JOB", "WHO", "CHANGE", "REASON"]
    assert len(shown.lines) == 6  # the header, 4 records, the summary
    assert "resume" in shown.lines[1] and "paused: true -> false" in shown.lines[1]
    assert "pause" in shown.lines[4] and "warehouse down" in shown.lines[4]
    assert f"jane.doe ({MOTO_ARN})" in shown.lines[4]
    assert shown.lines[-1] == "4 audit records in us-east-1, us-west-2"
    report = cli(
        capsys,
        "audit",
        "--regions",
        BOTH,
        "--json",
        "--actor",
        "jane.doe",
        "--since",
        "1d",
        clock=clock,
        environ=AUDITED,
    ).json()
    records: list[dict[str, Any]] = report["records"]
    assert [(r["action"], r["region"]) for r in records] == [  # merged: time, then region
        ("resume", "us-west-2"),
        ("resume", "us-east-1"),
        ("pause", "us-west-2"),
        ("pause", "us-east-1"),
    ]
    oldest = records[-1]
    assert (oldest["before"], oldest["after"], oldest["reason"], oldest["via"]) == (
        {"paused": False},
        {"paused": True},
        "warehouse down",
        "cli",
    )
    assert oldest["identity"] == MOTO_ARN and oldest["job"] == "heartbeat"
    assert report["regions"] == [
        {"region": "us-east-1", "ok": True, "logGroup": GROUP},
        {"region": "us-west-2", "ok": True, "logGroup": GROUP},
    ]
    none = cli(capsys, "audit", "--job", "report", clock=clock, environ=AUDITED)
    assert none.lines == ["0 audit records in us-east-1"]


def test_a_failover_is_recorded_with_the_environment_before_and_after(
    capsys: pytest.CaptureFixture[str], groups: Aws
) -> None:
    clock = _clock()
    done = cli(
        capsys,
        "failover",
        "--to",
        "DR",
        "--regions",
        BOTH,
        "--operator",
        "jane",
        "--reason",
        "us-east-1 degraded",
        "--stack",
        "mini-scheduler",
        clock=clock,
        environ=AUDITED,
    )
    assert done.code == 0, done.err
    report = cli(capsys, "audit", "--regions", BOTH, "--json", clock=clock, environ=AUDITED)
    changes = {
        r["region"]: (r["action"], r["before"], r["after"], r["reason"])
        for r in report.json()["records"]
    }
    assert changes == {
        region: ("environment", {"active": None}, {"active": "DR"}, "us-east-1 degraded")
        for region in REGIONS
    }


def test_an_action_whose_record_is_not_written_is_done_and_exits_1(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    # no log group made: PutLogEvents fails, the pause stands
    run = cli(capsys, "pause", "heartbeat", "--operator", "jane", clock=_clock(), environ=AUDITED)
    assert run.code == 1
    assert "pause done, but its audit record was not written to /mini-scheduler/audit" in run.err
    assert "(the action was done: do not repeat it)" in run.err
    assert "heartbeat" in aws.store().control("-").paused


def test_a_ticker_s_answer_without_its_record_exits_1_after_printing_it(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    answer = {"job": "heartbeat", "firingId": "heartbeat@manual-x", "status": "DISPATCHED"}
    invoker = FakeInvoker({**answer, "auditError": "run done, but its audit record was not"})
    run = cli(
        capsys,
        "run",
        "heartbeat",
        "--operator",
        "jane",
        "--reason",
        "hotfix 12",
        "--function",
        TICKER,
        invoke=invoker,
    )
    assert run.code == 1
    assert invoker.calls[0][2]["reason"] == "hotfix 12"
    assert "Job heartbeat run by jane: DISPATCHED" in run.out
    assert "warning: run done, but its audit record was not" in run.err


def test_without_a_trail_the_action_is_done_with_a_warning(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    run = cli(capsys, "pause", "heartbeat", "--operator", "jane", clock=_clock())
    assert run.code == 0
    assert "us-east-1 has no audit trail" in run.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["pause", "heartbeat", "--reason", "x" * 501], "reason is 501 characters long"),
        (["audit", "--limit", "0"], "--limit: give 1 to 1000, not 0"),
        (["audit", "--since", "1h", "--until", "2h"], "is not before --until"),
    ],
    ids=["long-reason", "limit", "since-after-until"],
)
def test_usage_errors_name_the_option(
    capsys: pytest.CaptureFixture[str], aws: Aws, argv: list[str], message: str
) -> None:
    run = cli(capsys, *argv, "--operator", "jane") if argv[0] == "pause" else cli(capsys, *argv)
    assert run.code == 2 and message in run.err, run.err
    assert "heartbeat" not in aws.store().control("-").paused
