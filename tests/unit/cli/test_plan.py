"""`plan`: a local cron file against the one each region's stack runs (its S3 object, on moto),
with terraform's exit codes: 0 no change, 2 changes, 1 an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.unit.cli.conftest import REGIONS, TABLE, TICKER, Aws, stack_template
from tests.unit.cli.test_operator import ENV, Run, cli, make_schedule

STACK = "planned"
SAMPLE = (ROOT / "samplecode" / "cron.yaml").read_text(encoding="utf-8")
BOTH = ",".join(REGIONS)
HEARTBEAT = """  - name: "heartbeat"
    description: "every 15 seconds: shows the ticker dispatching at the second"
    cron: "0/15 * * * * ?"
    service: "mini-scheduler-sample-heartbeat"
    misfire: "skip"                     # a missed heartbeat is not worth replaying
    timeout: 60
"""
EXPORT = """  - name: "nightly-export"
    cron: "0 0 2 * * ?"
    service: "sqs://mini-scheduler-exports"
"""
# The sample with morning-report at 09:30 and for the west, heartbeat gone, nightly-export new.
CHANGED = (
    SAMPLE.replace('cron: "0 0 9 * * ?"', 'cron: "0 30 9 * * ?"')
    .replace('region: "east"', 'region: "west"')
    .replace(HEARTBEAT, EXPORT)
)


def _bucket(region: str) -> str:
    return f"plan-jobs-{region}"


def deploy(aws: Aws, text: str, regions: tuple[str, ...] = REGIONS) -> None:
    """Each region's stack reads its own S3 object, which holds ``text``."""
    for region in regions:
        aws.client("s3", region).put_object(
            Bucket=_bucket(region), Key="cron.yaml", Body=text.encode()
        )


@pytest.fixture
def stacks(aws: Aws) -> Aws:
    """A stack in each region whose ticker reads the sample from the region's bucket."""
    for region in REGIONS:
        s3 = aws.client("s3", region)
        if region == "us-east-1":
            s3.create_bucket(Bucket=_bucket(region))
        else:
            s3.create_bucket(
                Bucket=_bucket(region), CreateBucketConfiguration={"LocationConstraint": region}
            )
        aws.client("cloudformation", region).create_stack(
            StackName=STACK,
            TemplateBody=stack_template(
                {
                    "StateTableName": TABLE,
                    "TickerFunctionName": TICKER,
                    "CronFileLocations": f"s3://{_bucket(region)}/cron.yaml",
                }
            ),
        )
    deploy(aws, SAMPLE)
    return aws


def local(tmp_path: Path, text: str) -> str:
    path = tmp_path / "cron.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    environ = {k: v for k, v in ENV.items() if k not in ("STATE_TABLE", "CRON_FILE")}
    return cli(capsys, "plan", *argv, environ=environ)


def test_the_same_file_is_no_change_exit_0(
    capsys: pytest.CaptureFixture[str], stacks: Aws, tmp_path: Path
) -> None:
    run = plan(capsys, local(tmp_path, SAMPLE), "--stack", STACK)
    assert (run.code, run.out, run.err) == (
        0,
        "us-east-1 (stack planned): no change (3 jobs)\n",
        "",
    )


def test_jobs_added_changed_and_removed_field_by_field_exit_2(
    capsys: pytest.CaptureFixture[str], stacks: Aws, tmp_path: Path
) -> None:
    run = plan(capsys, local(tmp_path, CHANGED), "--stack", STACK)
    assert run.code == 2, run.err
    assert run.lines == [
        "us-east-1 (stack planned): 1 to add, 1 to change, 1 to remove",
        "  ~ morning-report",
        "      cron: 0 0 9 * * ? -> 0 30 9 * * ?",
        "      parameters: changed region (values not shown)",
        "      next firings before: 2026-12-01T14:00:00Z, 2026-12-02T14:00:00Z, "
        "2026-12-03T14:00:00Z",
        "      next firings after:  2026-11-30T14:30:00Z, 2026-12-01T14:30:00Z, "
        "2026-12-02T14:30:00Z",
        "  + nightly-export  sqs://mini-scheduler-exports  0 0 2 * * ? @UTC",
        "  - heartbeat  mini-scheduler-sample-heartbeat  0/15 * * * * ? @UTC",
        # 14:30 today and 02:00 appear; 14:00 tomorrow and 4 heartbeats a minute go
        "  firings in the next 24 hours: 2 appear, 5,761 disappear",
    ]
    assert "west" not in run.out  # the parameter's new value is not shown


def test_every_key_a_user_writes_is_compared(
    capsys: pytest.CaptureFixture[str], stacks: Aws, tmp_path: Path
) -> None:
    edited = SAMPLE.replace(
        "    timeout: 60\n",
        "    timeout: 90\n    enabled: false\n    retry: {retries: 1}\n"
        '    start: "2026-12-01T00:00:00Z"\n',
    ).replace("deferred.start: false", "deferred.start: false\nmisfire.grace: 600")
    run = plan(capsys, local(tmp_path, edited), "--stack", STACK)
    assert run.code == 2, run.err
    assert run.lines == [
        "us-east-1 (stack planned): 0 to add, 1 to change, 0 to remove, 1 setting to change",
        "  ~ heartbeat",
        "      timeout: 60 -> 90",
        '      retry: - -> {"retries": 1, "backoff": 60, "factor": 2.0, "max_backoff": 3600}',
        "      enabled: true -> false",
        "      start: - -> 2026-12-01T00:00:00Z",
        "      next firings before: 2026-11-30T14:00:15Z, 2026-11-30T14:00:30Z, "
        "2026-11-30T14:00:45Z",
        "      next firings after:  none",
        "  ~ misfire.grace: 3600 -> 600",
        "  firings in the next 24 hours: 0 appear, 5,760 disappear",
    ]


def test_a_description_alone_moves_no_firing(
    capsys: pytest.CaptureFixture[str], stacks: Aws, tmp_path: Path
) -> None:
    edited = SAMPLE.replace("a flow, at a quarter past every hour", "cleans up")
    run = plan(capsys, local(tmp_path, edited), "--stack", STACK, "--json")
    assert run.code == 2, run.err
    (region,) = run.json()["regions"]
    (job,) = region["jobs"]
    assert job == {
        "job": "hourly-cleanup",
        "action": "change",
        "service": "flow://mini-scheduler-sample-cleanup",
        "schedule": "0 15 * * * ? @UTC",
        "enabled": True,
        "fields": [
            {
                "field": "description",
                "before": "a flow, at a quarter past every hour",
                "after": "cleans up",
            }
        ],
        "firings24h": {"appear": 0, "disappear": 0},
    }


def test_a_new_job_would_shadow_a_runtime_schedule_of_its_name(
    capsys: pytest.CaptureFixture[str], stacks: Aws, tmp_path: Path
) -> None:
    entry = {"name": "nightly-export", "cron": "0 0 3 * * ?", "service": "fn"}
    make_schedule(stacks, entry)
    make_schedule(stacks, {"name": "other", "cron": "0 0 3 * * ?", "service": "fn"})
    run = plan(capsys, local(tmp_path, CHANGED), "--stack", STACK)
    assert run.code == 2, run.err
    assert run.lines[-1] == (
        "  a runtime schedule named nightly-export exists (made by jane.doe): the new job would "
        "shadow it, and the tick drop it"
    )
    assert sum("runtime schedule" in line for line in run.lines) == 1


def test_two_regions_the_same_plan_shown_once_then_apart(
    capsys: pytest.CaptureFixture[str], stacks: Aws, tmp_path: Path
) -> None:
    file = local(tmp_path, SAMPLE)
    run = plan(capsys, file, "--stack", STACK, "--regions", BOTH)
    assert (run.code, run.lines) == (
        0,
        ["us-east-1, us-west-2 (stack planned): no change (3 jobs)"],
    )
    deploy(stacks, CHANGED, ("us-west-2",))  # the west runs the change already
    run = plan(capsys, local(tmp_path, CHANGED), "--stack", STACK, "--regions", BOTH)
    assert run.code == 2, run.err
    assert run.lines[0] == "us-east-1 (stack planned): 1 to add, 1 to change, 1 to remove"
    assert run.lines[-1] == "us-west-2 (stack planned): no change (3 jobs)"


def test_json_has_the_same_facts_per_region(
    capsys: pytest.CaptureFixture[str], stacks: Aws, tmp_path: Path
) -> None:
    deploy(stacks, CHANGED, ("us-west-2",))
    run = plan(capsys, local(tmp_path, CHANGED), "--stack", STACK, "--regions", BOTH, "--json")
    assert run.code == 2, run.err
    report = run.json()
    assert (report["changes"], report["from"]) == (True, "2026-11-30T14:00:07Z")
    east, west = report["regions"]
    assert (east["region"], east["changes"], west["changes"]) == ("us-east-1", True, False)
    assert east["deployed"] == "s3://plan-jobs-us-east-1/cron.yaml"
    assert (east["add"], east["change"], east["remove"], east["unchanged"]) == (1, 1, 1, 1)
    assert east["firings24h"] == {"from": "2026-11-30T14:00:07Z", "appear": 2, "disappear": 5761}
    morning = east["jobs"][0]
    assert morning["fields"] == [
        {"field": "cron", "before": "0 0 9 * * ?", "after": "0 30 9 * * ?"},
        {"field": "parameters", "added": [], "removed": [], "changed": ["region"]},
    ]
    assert morning["nextFiringsAfter"][0] == "2026-11-30T14:30:00Z"
    assert morning["firings24h"] == {"appear": 1, "disappear": 1}
    assert [j["action"] for j in east["jobs"]] == ["change", "add", "remove"]
    assert east["shadowedSchedules"] == [] and west["jobs"] == []


def test_a_local_file_that_does_not_load_exits_1_and_reads_no_stack(
    capsys: pytest.CaptureFixture[str], stacks: Aws, tmp_path: Path
) -> None:
    broken = SAMPLE.replace('cron: "0/15 * * * * ?"', 'cron: "0/15 * * *"')
    path = local(tmp_path, broken)
    run = plan(capsys, path, "--stack", "nope")
    assert (run.code, run.out) == (1, "")
    assert run.err.startswith("ERROR   Invalid job entry#3 (heartbeat) - ")
    assert run.err.endswith(
        f"mini-scheduler plan: {path} does not load (1 entry skipped, errors above): nothing "
        "compared; `mini-scheduler validate` checks it\n"
    )
    missing = plan(capsys, str(tmp_path / "none.yaml"), "--stack", STACK)
    assert missing.code == 1 and "not found" in missing.err


def test_an_unknown_stack_and_a_usage_error_exit_1_never_2(
    capsys: pytest.CaptureFixture[str], stacks: Aws, tmp_path: Path
) -> None:
    file = local(tmp_path, SAMPLE)
    run = plan(capsys, file, "--stack", "nope")
    assert (run.code, run.err) == (1, "mini-scheduler plan: stack nope not found in us-east-1\n")
    assert plan(capsys, file, "--regions", "mars").code == 1
    assert plan(capsys).code == 1
    assert plan(capsys, file, "--stakc", STACK).code == 1
    assert plan(capsys, file, "--help").code == 0
    # without a table a new job's runtime schedules cannot be read: an error, not a guess
    no_table = plan(
        capsys, local(tmp_path, CHANGED), "--cron-file", f"s3://{_bucket('us-east-1')}/cron.yaml"
    )
    assert no_table.code == 1 and "no state table" in no_table.err


def test_a_region_that_fails_is_reported_and_the_others_shown_exit_1(
    capsys: pytest.CaptureFixture[str], stacks: Aws, tmp_path: Path
) -> None:
    stacks.client("cloudformation", "us-west-2").delete_stack(StackName=STACK)
    run = plan(capsys, local(tmp_path, SAMPLE), "--stack", STACK, "--regions", BOTH)
    assert run.code == 1
    assert run.lines == ["us-east-1 (stack planned): no change (3 jobs)"]
    assert run.err == (
        "mini-scheduler plan: us-west-2 not read - stack planned not found in us-west-2\n"
    )
    report = plan(capsys, local(tmp_path, SAMPLE), "--stack", STACK, "--regions", BOTH, "--json")
    assert report.code == 1
    assert report.json()["regions"][1] == {
        "region": "us-west-2",
        "ok": False,
        "error": "stack planned not found in us-west-2",
    }
