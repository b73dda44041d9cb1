"""`failover --drill`: the readiness checks, and the drill itself, on moto in two regions.

The region taking over fires when the test's sleep carries the clock past a minute: the real
ticker of us-west-2 then ticks that minute (claims in its state table, dispatches to moto's
functions), as its schedule would have invoked it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from mini_scheduler.claims.base import ClaimResult
from mini_scheduler.claims.dynamodb import DynamoDBClaimStore
from mini_scheduler.claims.records import Definition, new_generation
from mini_scheduler.clock import FixedClock
from mini_scheduler.config import Settings
from mini_scheduler.model import Firing
from mini_scheduler.wiring import build_ticker
from tests.conftest import ROOT
from tests.unit.cli.conftest import (
    ENVIRONMENTS,
    PARAMETER,
    REGIONS,
    TABLE,
    TICKER,
    Aws,
    stack_template,
)
from tests.unit.cli.test_operator import NOW, Run, _clients, cells, cli, make_schedule

STACK = "drill"
SAMPLE = (ROOT / "samplecode" / "cron.yaml").read_bytes()
BOTH = ",".join(REGIONS)
ENV = {"AWS_REGION": "us-east-1", "DISPATCH_WORKERS": "1", "STATE_TABLE_BATCH_WRITES": "false"}
DRILL = ("failover", "--drill", "--to", "DR", "--regions", BOTH, "--stack", STACK)


def _bucket(region: str) -> str:
    return f"drill-cron-{region}"


def _cron(region: str) -> str:
    return f"s3://{_bucket(region)}/cron.yaml"


@pytest.fixture
def deployed(aws: Aws) -> Aws:
    """The stack in each region, with its cron file in S3 and its alarms (quiet)."""
    for region in REGIONS:
        s3 = aws.client("s3", region)
        where = {} if region == "us-east-1" else {"LocationConstraint": region}
        s3.create_bucket(
            Bucket=_bucket(region), **({"CreateBucketConfiguration": where} if where else {})
        )
        s3.put_object(Bucket=_bucket(region), Key="cron.yaml", Body=SAMPLE)
        aws.client("cloudformation", region).create_stack(
            StackName=STACK,
            TemplateBody=stack_template(
                {
                    "StateTableName": TABLE,
                    "TickerFunctionName": TICKER,
                    "ActiveEnvironmentParameter": PARAMETER,
                    "EnvironmentName": ENVIRONMENTS[region],
                    "CronFileLocations": _cron(region),
                }
            ),
        )
        for alarm in ("no-tick", "ticker-errors"):
            aws.client("cloudwatch", region).put_metric_alarm(
                AlarmName=f"{STACK}-{alarm}",
                MetricName="Ticks",
                Namespace="MiniScheduler",
                Statistic="Sum",
                Period=60,
                EvaluationPeriods=1,
                Threshold=1,
                ComparisonOperator="LessThanThreshold",
            )
    return aws


@dataclass
class Ticks:
    """The test's sleep: it moves the clock, and when it passes a minute, the real ticker of
    ``region`` ticks that minute (unless ``tick`` is off: a region whose ticker is down)."""

    clock: FixedClock = field(default_factory=lambda: FixedClock(NOW))  # the command's too
    region: str = "us-west-2"
    tick: bool = True
    slept: list[float] = field(default_factory=list)
    ticked: list[datetime] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.slept.append(seconds)
        before = self.clock.now()
        self.clock.advance(seconds)
        minute = self.clock.now().replace(second=0, microsecond=0)
        if self.tick and minute > before:
            self.ticked.append(minute)
            build_ticker(self._settings(), clients=_clients()(self.region), clock=self.clock).tick(
                minute
            )

    def _settings(self) -> Settings:
        return Settings.from_environment(
            {
                **ENV,
                "AWS_REGION": self.region,
                "STATE_TABLE": TABLE,
                "ACTIVE_ENVIRONMENT_STORE": f"ssm:{PARAMETER}",
                "ENVIRONMENT_NAME": ENVIRONMENTS[self.region],
                "CRON_FILE": _cron(self.region),
            }
        )


def drill(
    capsys: pytest.CaptureFixture[str], *argv: str, ticks: Ticks | None = None
) -> tuple[Run, Ticks]:
    ticks = ticks or Ticks()
    run = cli(
        capsys, *DRILL, "--operator", "jane.doe", *argv, clock=ticks.clock, environ=ENV, sleep=ticks
    )
    return run, ticks


def _unset(aws: Aws) -> None:
    for region in REGIONS:
        with pytest.raises(ClientError):
            aws.active(region)


CHECKS_OK = [
    "Drill: fail over to DR (us-west-2), stack drill in us-east-1, us-west-2",
    "CHECK      RESULT  DETAIL",
    "stack      ok      drill in us-east-1, us-west-2: complete, outputs present, tables ACTIVE",
    "active     ok      prod active everywhere; DR is us-west-2's",
]


def _check(run: Run, name: str) -> list[str]:
    """The row of check ``name``: its name, result and detail."""
    rows = [cells(line) for line in run.lines if line.startswith(f"{name} ")]
    assert len(rows) == 1, run.out
    return rows[0]


# -- the checks --------------------------------------------------------------------------------


def test_the_checks_pass_and_without_yes_nothing_is_written(
    capsys: pytest.CaptureFixture[str], deployed: Aws
) -> None:
    run, ticks = drill(capsys)
    assert run.code == 0, run.err
    assert run.lines[:4] == CHECKS_OK
    digest = hashlib.sha256(SAMPLE).hexdigest()[:12]
    assert _check(run, "cron file") == [
        "cron file",
        "ok",
        f"the same in every region: sha256 {digest}",
    ]
    assert _check(run, "schedules") == ["schedules", "ok", "no runtime schedule in any region"]
    assert _check(run, "pauses") == ["pauses", "ok", "no paused job in any region"]
    targets = _check(run, "targets")
    assert targets[:2] == ["targets", "ok"]
    assert targets[2].startswith(
        "3 jobs in us-west-2: each target exists, the ticker may invoke it"
    )
    assert _check(run, "alarms") == ["alarms", "ok", "2 alarms drill-* in us-west-2, none in ALARM"]
    assert run.lines[-1] == (
        "Ready. Nothing was written: add --yes to switch to DR, time the first firing in "
        "us-west-2 and switch back."
    )
    assert (ticks.slept, ticks.ticked) == ([], [])
    _unset(deployed)


def test_cron_files_schedules_and_pauses_out_of_step_fail_their_checks(
    capsys: pytest.CaptureFixture[str], deployed: Aws
) -> None:
    changed = SAMPLE.replace(b"0/15 * * * * ?", b"0/30 * * * * ?")
    deployed.client("s3", "us-west-2").put_object(
        Bucket=_bucket("us-west-2"), Key="cron.yaml", Body=changed
    )
    make_schedule(
        deployed, {"name": "quarter-close", "at": "2026-12-31T23:00:00Z", "service": "fn"}
    )
    deployed.store("us-east-1").set_paused("heartbeat", True, operator="jane.doe", now=NOW)
    for region in REGIONS:  # made in each region apart: two generations
        make_schedule(
            deployed, {"name": "year-end", "at": "2026-12-31T23:00:00Z", "service": "fn"}, region
        )
    run, _ = drill(capsys)
    assert run.code == 1
    east, west = (hashlib.sha256(body).hexdigest()[:12] for body in (SAMPLE, changed))
    assert _check(run, "cron file") == [
        "cron file",
        "FAILED",
        f"differs: us-east-1 sha256 {east}; us-west-2 sha256 {west}",
    ]
    schedules = _check(run, "schedules")
    assert schedules[:2] == ["schedules", "FAILED"]
    assert schedules[2].startswith("quarter-close only in us-east-1; year-end: generation ")
    assert schedules[2].count(" in us-east-1") == 2 and schedules[2].endswith(" in us-west-2")
    assert _check(run, "pauses") == ["pauses", "FAILED", "heartbeat only in us-east-1"]
    assert _check(run, "targets")[:2] == ["targets", "ok"]
    assert run.lines[-1] == "3 checks failed. Nothing was written."
    _unset(deployed)
    again, ticks = drill(capsys, "--yes", "--json")
    assert again.code == 1
    report = again.json()
    assert report["ready"] is False and report["passed"] is False
    assert report["switch"] is None and report["switchBack"] is None
    assert report["checks"][2]["sha256"] == {
        "us-east-1": hashlib.sha256(SAMPLE).hexdigest(),
        "us-west-2": hashlib.sha256(changed).hexdigest(),
    }
    assert ticks.slept == []
    _unset(deployed)


def test_the_same_schedule_and_pause_everywhere_pass(
    capsys: pytest.CaptureFixture[str], deployed: Aws
) -> None:
    """As a store shared by the regions holds them (one definition, one generation)."""
    definition = Definition(
        "quarter-close", new_generation(NOW), {"service": "fn"}, "jane.doe", NOW, None
    )
    for region in REGIONS:
        assert deployed.store(region).create_schedule(definition)
        deployed.store(region).set_paused("heartbeat", True, operator="jane.doe", now=NOW)
    run, _ = drill(capsys)
    assert run.code == 0, run.out
    assert _check(run, "schedules") == [
        "schedules",
        "ok",
        "1 runtime schedule, the same in every region",
    ]
    assert _check(run, "pauses") == ["pauses", "ok", "1 paused job, the same in every region"]


def test_an_alarm_ringing_or_missing_a_target_missing_and_an_active_target_fail(
    capsys: pytest.CaptureFixture[str], deployed: Aws
) -> None:
    deployed.client("lambda", "us-west-2").delete_function(
        FunctionName="mini-scheduler-sample-heartbeat"
    )
    cloudwatch = deployed.client("cloudwatch", "us-west-2")
    cloudwatch.set_alarm_state(
        AlarmName=f"{STACK}-no-tick", StateValue="ALARM", StateReason="no tick for 3 minutes"
    )
    run, _ = drill(capsys, "--yes")
    assert run.code == 1
    assert _check(run, "alarms") == ["alarms", "FAILED", "in ALARM in us-west-2: drill-no-tick"]
    assert _check(run, "targets") == [
        "targets",
        "FAILED",
        "job heartbeat: mini-scheduler-sample-heartbeat does not exist in us-west-2",
    ]
    assert run.lines[-1] == "2 checks failed: not switched. Nothing was written."
    _unset(deployed)
    cloudwatch.delete_alarms(AlarmNames=[f"{STACK}-no-tick", f"{STACK}-ticker-errors"])
    for region in REGIONS:
        deployed.client("ssm", region).put_parameter(Name=PARAMETER, Value="DR", Type="String")
    run, _ = drill(capsys)
    assert run.code == 1
    assert _check(run, "alarms") == [
        "alarms",
        "FAILED",
        "no alarm named drill-* in us-west-2: deploy the stack",
    ]
    assert _check(run, "active") == [
        "active",
        "FAILED",
        "DR is active already: a drill switches to a region on standby",
    ]


def test_a_region_without_the_stack_fails_the_checks_it_stops(
    capsys: pytest.CaptureFixture[str], deployed: Aws
) -> None:
    deployed.client("cloudformation", "us-west-2").delete_stack(StackName=STACK)
    run, _ = drill(capsys)
    assert run.code == 1
    assert _check(run, "stack") == [
        "stack",
        "FAILED",
        "us-west-2: stack drill not found in us-west-2",
    ]
    assert _check(run, "targets") == ["targets", "FAILED", "not checked: no region given is DR's"]
    assert run.lines[0] == "Drill: fail over to DR, stack drill in us-east-1, us-west-2"


# -- the drill ---------------------------------------------------------------------------------


SWITCH = [
    "",
    "Switch to DR at 2026-11-30T14:00:07Z:",
    "us-east-1  prod (default) -> DR  ssm:/mini-scheduler/active-environment",
    "us-west-2  prod (default) -> DR  ssm:/mini-scheduler/active-environment",
    "Active environment DR in 2 regions, set by jane.doe.",
]
BACK = [
    "",
    "Switch back to prod:",
    "us-east-1  DR -> prod  ssm:/mini-scheduler/active-environment",
    "us-west-2  DR -> prod  ssm:/mini-scheduler/active-environment",
    "Active environment prod in 2 regions, set by jane.doe.",
]
FIRST = (
    "First firing in us-west-2: heartbeat@2026-11-30T14:01:00Z (job heartbeat), claimed 55.0 s "
    "after the switch."
)


def test_yes_switches_times_the_first_firing_and_switches_back(
    capsys: pytest.CaptureFixture[str], deployed: Aws
) -> None:
    run, ticks = drill(capsys, "--yes")
    assert run.code == 0, run.err
    assert run.lines[:4] == CHECKS_OK
    assert run.lines[9:] == [
        *SWITCH,
        "Watching us-west-2 for its first firing, up to 180 s...",
        FIRST,
        *BACK,
        "",
        "Drill passed: us-west-2 took over in 55.0 s; prod is active again.",
    ]
    # the clock moved only by the watch's sleeps (5 s each), and us-west-2 ticked once: 14:01
    assert ticks.slept == [5.0] * 11
    assert ticks.ticked == [datetime(2026, 11, 30, 14, 1, tzinfo=UTC)]
    assert [deployed.active(region) for region in REGIONS] == ["prod", "prod"]
    west = deployed.store("us-west-2").history("heartbeat")
    assert [r.scheduled_time for r in west][-1] == "2026-11-30T14:01:00Z"
    assert west[-1].claimed_at == datetime(2026, 11, 30, 14, 1, 2, tzinfo=UTC)
    assert deployed.store("us-east-1").history("heartbeat") == []


def test_the_report_as_json(capsys: pytest.CaptureFixture[str], deployed: Aws) -> None:
    run, _ = drill(capsys, "--yes", "--json")
    assert run.code == 0, run.err
    report = run.json()
    assert [c["check"] for c in report["checks"] if c["ok"]] == [
        "stack", "active", "cron file", "schedules", "pauses", "targets", "alarms"
    ]  # fmt: skip
    assert report["ready"] is True and report["passed"] is True
    assert report["switchedAt"] == "2026-11-30T14:00:07Z"
    assert report["switch"]["active"] == "DR"
    assert [r["before"] for r in report["switch"]["regions"]] == [None, None]
    assert report["firstFiring"] == {
        "job": "heartbeat",
        "firingId": "heartbeat@2026-11-30T14:01:00Z",
        "region": "us-west-2",
        "scheduledTime": "2026-11-30T14:01:00Z",
        "claimedAt": "2026-11-30T14:01:02Z",
        "secondsAfterSwitch": 55.0,
    }
    assert report["switchBack"]["active"] == "prod"
    assert [r["before"] for r in report["switchBack"]["regions"]] == ["DR", "DR"]
    assert "problems" not in report


def test_stay_leaves_the_target_active(capsys: pytest.CaptureFixture[str], deployed: Aws) -> None:
    run, _ = drill(capsys, "--yes", "--stay")
    assert run.code == 0, run.err
    assert run.lines[-3:] == [
        FIRST,
        "",
        "Drill passed: us-west-2 took over in 55.0 s; DR stays active (--stay).",
    ]
    assert "Switch back" not in run.out
    assert [deployed.active(region) for region in REGIONS] == ["DR", "DR"]


def test_no_firing_within_the_timeout_fails_and_still_switches_back(
    capsys: pytest.CaptureFixture[str], deployed: Aws
) -> None:
    down = Ticks(tick=False)  # us-west-2's ticker never runs
    run, ticks = drill(capsys, "--yes", "--timeout", "42", ticks=down)
    assert run.code == 1
    assert run.lines[9:] == [
        *SWITCH,
        "Watching us-west-2 for its first firing, up to 42 s...",
        "No firing in us-west-2 within 42 s of the switch.",
        *BACK,
        "",
        "Drill FAILED: no firing in us-west-2 within 42 s of the switch; prod is active again.",
    ]
    assert sum(ticks.slept) == 42 and ticks.ticked == []
    assert [deployed.active(region) for region in REGIONS] == ["prod", "prod"]
    stayed, _ = drill(capsys, "--yes", "--stay", "--timeout", "10", ticks=Ticks(tick=False))
    assert stayed.code == 1
    assert stayed.lines[-1] == (
        "Drill FAILED: no firing in us-west-2 within 10 s of the switch; DR stays active (--stay)."
    )
    assert [deployed.active(region) for region in REGIONS] == ["DR", "DR"]


def test_a_switch_that_fails_in_a_region_is_not_watched_and_is_switched_back(
    capsys: pytest.CaptureFixture[str], deployed: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mini_scheduler.cli import environment as operate
    from tests.unit.cli.test_operator import _Deaf

    real = operate.environment_for

    def deaf_in_the_east(context: Any, where: Any) -> Any:
        store = real(context, where)
        return _Deaf(store) if where.region == "us-east-1" else store

    monkeypatch.setattr(operate, "environment_for", deaf_in_the_east)
    deployed.client("ssm", "us-east-1").put_parameter(Name=PARAMETER, Value="prod", Type="String")
    run, ticks = drill(capsys, "--yes")
    assert run.code == 1
    assert cells(run.lines[11]) == [
        "us-east-1",
        "FAILED",
        "ssm:/mini-scheduler/active-environment holds 'prod' after the write, not DR",
    ]
    assert "Watching" not in run.out and ticks.slept == []
    assert run.lines[-1] == (
        "Drill FAILED: the switch failed: no firing watched; prod is active again."
    )
    assert run.lines[-5:-2] == [
        "us-east-1  prod -> prod  ssm:/mini-scheduler/active-environment",
        "us-west-2  DR -> prod    ssm:/mini-scheduler/active-environment",
        "Active environment prod in 2 regions, set by jane.doe.",
    ]
    assert [deployed.active(region) for region in REGIONS] == ["prod", "prod"]


@dataclass
class ByHand(Ticks):
    """Ticks, and before the first, a manual run of heartbeat claimed in the region."""

    def __call__(self, seconds: float) -> None:
        if not self.slept:
            firing = Firing.manual_run("heartbeat", self.clock.now(), "jane.doe", {})
            now = self.clock.now()
            store = DynamoDBClaimStore(TABLE, _clients()(self.region)("dynamodb"), batched=False)
            assert store.claim(firing, now=now, lease_until=now + timedelta(minutes=5),
                               origin="manual") is ClaimResult.WON  # fmt: skip
        super().__call__(seconds)


def test_a_manual_run_is_no_sign_the_region_took_over(
    capsys: pytest.CaptureFixture[str], deployed: Aws
) -> None:
    """Only a tick's claim counts: a run by hand after the switch is not the region taking
    over (a drill that counted it would pass with the region's ticker down)."""
    run, _ = drill(capsys, "--yes", "--timeout", "30", ticks=ByHand(tick=False))
    assert run.code == 1
    assert "No firing in us-west-2 within 30 s of the switch." in run.lines
    run, _ = drill(capsys, "--yes", ticks=ByHand())
    assert run.code == 0, run.err
    assert FIRST in run.lines


def test_usage_errors(capsys: pytest.CaptureFixture[str], deployed: Aws) -> None:
    argv = ("failover", "--to", "DR", "--regions", BOTH, "--stack", STACK)
    for extra, message in [
        (("--yes",), "--yes, --stay and --timeout go with --drill"),
        (("--timeout", "30"), "--yes, --stay and --timeout go with --drill"),
        (("--drill", "--stay"), "--stay goes with --yes: without it a drill only checks"),
        (
            ("--drill", "--force", "--reason", "x"),
            "a drill switches to a known environment only: drop --force and --reason",
        ),
    ]:
        run = cli(capsys, *argv, *extra, environ=ENV)
        assert (run.code, run.out, run.err) == (2, "", f"mini-scheduler failover: {message}\n")
    run = cli(capsys, "failover", "--drill", "--to", "DR", "--regions", BOTH, environ=ENV)
    assert run.err == "mini-scheduler failover: a drill checks a stack: give --stack NAME\n"
    run = cli(capsys, *argv, "--drill", "--timeout", "0", environ=ENV)
    assert run.code == 2 and "'0' is not a number of seconds from 1 to 3600" in run.err
    _unset(deployed)
