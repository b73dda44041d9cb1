"""The deployed cron file read where the stack says (CronFileLocations), and `doctor`: a
deployment's preflight check, on moto in two regions."""

from __future__ import annotations

import io
import json
import urllib.error
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.unit.cli.conftest import FLOW, FUNCTIONS, PARAMETER, REGIONS, TABLE, TICKER, Aws
from tests.unit.cli.test_operator import ENV, Run, cells, cli

STACK = "sched"  # the full stack of these tests (the fixture's has no parameters)
RECORDER = "mini-scheduler-recorder"
COMPLETIONS = "mini-scheduler-completions"
SAMPLE = (ROOT / "samplecode" / "cron.yaml").read_bytes()
NAMES = {"us-east-1": "prod", "us-west-2": "DR"}
BOTH = ",".join(REGIONS)


def _package(files: Mapping[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return event\n")
        for name, body in files.items():
            archive.writestr(name, body)
    return buffer.getvalue()


class Downloads:
    """The packages a test deploys, by the URL GetFunction gives (moto's never answers)."""

    def __init__(self) -> None:
        self.packages: dict[str, bytes] = {}
        self.urls: list[str] = []

    def __call__(self, url: str) -> bytes:
        self.urls.append(url)
        return self.packages[url]


def _stack_template(outputs: Mapping[str, str]) -> str:
    parameters = ("EnvironmentName", "TargetFunctionPrefix", "TargetStateMachinePrefix")
    return json.dumps(
        {
            "Parameters": {name: {"Type": "String"} for name in parameters},
            "Resources": {"Handle": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {key: {"Value": value} for key, value in outputs.items()},
        }
    )


def deploy(
    aws: Aws,
    downloads: Downloads,
    region: str,
    *,
    cron: bytes = SAMPLE,
    locations: str | None = "file:cron.yaml",
    environment: str | None = None,
) -> None:
    """The parts of a deployed stack doctor reads: the ticker's package with the cron file,
    the sample targets' ends sent to the completion queue (the report's, and the flow's rule)
    or to the recorder itself (the heartbeat's: wired before the queue), the tick schedule, and
    the stack's outputs."""
    lam = aws.client("lambda", region)
    lam.update_function_code(FunctionName=TICKER, ZipFile=_package({"cron.yaml": cron}))
    url = lam.get_function(FunctionName=TICKER)["Code"]["Location"]
    downloads.packages[url] = _package({"cron.yaml": cron})
    role = lam.get_function_configuration(FunctionName=TICKER)["Role"]
    sqs = aws.client("sqs", region)
    queue = sqs.get_queue_attributes(
        QueueUrl=sqs.create_queue(QueueName=COMPLETIONS)["QueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    try:
        recorder = lam.get_function_configuration(FunctionName=RECORDER)["FunctionArn"]
    except lam.exceptions.ResourceNotFoundException:
        recorder = lam.create_function(
            FunctionName=RECORDER,
            Runtime="python3.13",
            Role=role,
            Handler="app.handler",
            Code={"ZipFile": _package({})},
        )["FunctionArn"]
        for function in FUNCTIONS:
            ears = recorder if function.endswith("heartbeat") else queue
            lam.put_function_event_invoke_config(
                FunctionName=function,
                DestinationConfig={
                    "OnSuccess": {"Destination": ears},
                    "OnFailure": {"Destination": ears},
                },
            )
        events = aws.client("events", region)
        events.put_rule(
            Name=f"{STACK}-flow-ended",
            EventPattern=json.dumps({"source": ["aws.states"]}),
            State="ENABLED",
        )
        events.put_targets(Rule=f"{STACK}-flow-ended", Targets=[{"Id": "q", "Arn": queue}])
        aws.client("scheduler", region).create_schedule(
            Name=f"{STACK}-tick",
            ScheduleExpression="cron(* * * * ? *)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target={"Arn": recorder.replace(RECORDER, TICKER), "RoleArn": role},
        )
    outputs = {
        "StateTableName": TABLE,
        "TickerFunctionName": TICKER,
        "RecorderFunctionArn": recorder,
        "CompletionQueueArn": queue,
        "ActiveEnvironmentParameter": PARAMETER,
        "EnvironmentName": environment or NAMES[region],
    }
    if locations is not None:
        outputs["CronFileLocations"] = locations
    cloudformation = aws.client("cloudformation", region)
    cloudformation.delete_stack(StackName=STACK)  # a redeploy (deleting none is no error)
    cloudformation.create_stack(
        StackName=STACK,
        TemplateBody=_stack_template(outputs),
        Parameters=[
            {"ParameterKey": "EnvironmentName", "ParameterValue": outputs["EnvironmentName"]},
            {"ParameterKey": "TargetFunctionPrefix", "ParameterValue": "mini-scheduler-"},
            {"ParameterKey": "TargetStateMachinePrefix", "ParameterValue": "mini-scheduler-"},
        ],
    )


@pytest.fixture
def downloads(aws: Aws) -> Downloads:
    found = Downloads()
    for region in REGIONS:
        deploy(aws, found, region)
    return found


def without(*names: str) -> dict[str, str]:
    return {k: v for k, v in ENV.items() if k not in names}


def run(capsys: pytest.CaptureFixture[str], downloads: Downloads, *argv: str, **kw: Any) -> Run:
    return cli(capsys, *argv, download=downloads, **kw)


# -- the deployed cron file ---------------------------------------------------------------------


def test_jobs_reads_the_stack_s_cron_file_from_the_repository_root(
    capsys: pytest.CaptureFixture[str],
    downloads: Downloads,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No --cron-file, no CRON_FILE: the stack says where its file is (in the ticker's
    package), and the CLI reads it there."""
    monkeypatch.chdir(ROOT)
    result = run(capsys, downloads, "jobs", "--stack", STACK, environ=without("CRON_FILE"))
    assert result.code == 0, result.err
    assert [line.split()[0] for line in result.lines[1:4]] == [
        "morning-report",
        "hourly-cleanup",
        "heartbeat",
    ]
    assert len(downloads.urls) == 1 and "us-east-1" in downloads.urls[0]


def test_a_cron_yaml_in_the_current_folder_does_not_win_over_the_stack_s(
    capsys: pytest.CaptureFixture[str],
    downloads: Downloads,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    (tmp_path / "cron.yaml").write_text(
        'jobs:\n  - {name: "elsewhere", cron: "0 0 2 * * ?", service: "mini-scheduler-x"}\n'
    )
    monkeypatch.chdir(tmp_path)
    result = run(capsys, downloads, "jobs", "--stack", STACK, environ=without("CRON_FILE"))
    assert result.code == 0 and "elsewhere" not in result.out
    assert "heartbeat" in result.out
    # without a stack, the folder's file is read, and the command says so
    result = run(capsys, downloads, "jobs", environ=without("CRON_FILE"))
    assert "elsewhere" in result.out
    assert "reading file:cron.yaml in the current folder: give --stack or --cron-file" in result.err


def test_the_stack_s_s3_copy_in_its_region_then_the_packaged_file(
    capsys: pytest.CaptureFixture[str], aws: Aws, downloads: Downloads
) -> None:
    """Each region reads its own copy: the region's bucket, falling back on the package."""
    s3 = aws.client("s3", "us-west-2")
    bucket = "jobs-us-west-2"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_object(
        Bucket=bucket,
        Key="cron.yaml",
        Body=b'jobs:\n  - {name: "from-s3", cron: "0 0 2 * * ?", service: "mini-scheduler-x"}\n',
    )
    deploy(aws, downloads, "us-west-2", locations=f"s3://{bucket}/cron.yaml,file:cron.yaml")
    args = ("jobs", "--stack", STACK, "--region", "us-west-2")
    result = run(capsys, downloads, *args, environ=without("CRON_FILE"))
    assert result.code == 0 and "from-s3" in result.out and "heartbeat" not in result.out
    s3.delete_object(Bucket=bucket, Key="cron.yaml")
    result = run(capsys, downloads, *args, environ=without("CRON_FILE"))
    assert result.code == 0 and "heartbeat" in result.out


def test_a_stack_without_the_output_says_what_to_give(
    capsys: pytest.CaptureFixture[str], aws: Aws, downloads: Downloads
) -> None:
    deploy(aws, downloads, "us-east-1", locations=None)
    result = run(capsys, downloads, "jobs", "--stack", STACK, environ=without("CRON_FILE"))
    assert result.code == 1
    assert result.err == (
        f"mini-scheduler jobs: stack {STACK} in us-east-1 has no output CronFileLocations "
        "(deployed before it had one): give --cron-file (the file the ticker reads), or deploy "
        "the stack again\n"
    )


def test_pause_refuses_a_job_the_stack_does_not_run(
    capsys: pytest.CaptureFixture[str], downloads: Downloads
) -> None:
    environ = without("CRON_FILE")
    result = run(capsys, downloads, "pause", "nightly", "--stack", STACK, environ=environ)
    assert result.code == 2
    assert result.err == (
        "mini-scheduler pause: no cron.yaml job or runtime schedule nightly: not in "
        "file:cron.yaml (the package of mini-scheduler-ticker in us-east-1), nor a runtime "
        "schedule of us-east-1 (mini-scheduler jobs lists the cron file's jobs, mini-scheduler "
        "schedule list the runtime schedules)\n"
    )
    args = ("pause", "heartbeat", "--stack", STACK, "--operator", "jane.doe")
    assert run(capsys, downloads, *args, environ=environ).code == 0


# -- doctor -------------------------------------------------------------------------------------


def doctor(capsys: pytest.CaptureFixture[str], downloads: Downloads, *argv: str) -> Run:
    return run(
        capsys,
        downloads,
        "doctor",
        "--stack",
        STACK,
        "--regions",
        BOTH,
        *argv,
        environ=without("CRON_FILE", "STATE_TABLE"),
    )


def findings(result: Run) -> list[tuple[str, str, str]]:
    return [(f["region"], f["level"], f["check"]) for f in result.json()["findings"]]


def test_doctor_of_a_healthy_deployment(
    capsys: pytest.CaptureFixture[str], downloads: Downloads
) -> None:
    result = doctor(capsys, downloads)
    assert result.code == 0, result.out + result.err
    assert result.lines[0].split() == ["REGION", "CHECK", "FINDING"]
    assert result.lines[-1] == f"Nothing stops the jobs (stack {STACK} in us-east-1, us-west-2)."
    text = result.out
    for region in REGIONS:
        assert f"{region}  OK" in text
    assert "active prod (no value: the default) in ssm:/mini-scheduler/active-environment" in text
    assert "sched-tick ENABLED" in text
    assert "mini-scheduler-sample-report exists, its ends go to the completion queue" in text
    assert "mini-scheduler-sample-heartbeat exists, its ends go to the recorder" in text
    assert f"flow://{FLOW} exists; the recorder's rule hears its ends" in text
    report = doctor(capsys, downloads, "--json").json()
    assert report["ok"] is True
    assert {f["level"] for f in report["findings"]} == {"ok"}
    checks = [f["check"] for f in report["findings"] if f["region"] == "us-west-2"]
    assert checks == [
        "stack",
        "table",
        "environment",
        "schedule",
        "cron file",
        "job morning-report",
        "job hourly-cleanup",
        "job heartbeat",
    ]


def test_doctor_finds_what_stops_the_jobs_and_says_what_to_do(
    capsys: pytest.CaptureFixture[str], aws: Aws, downloads: Downloads
) -> None:
    """The typo'd failover (a name no stack has), a target missing in one region, a target
    not wired to the recorder, a disabled schedule, a target outside the prefix."""
    for region in REGIONS:
        aws.client("ssm", region).put_parameter(
            Name=PARAMETER, Value="DRR", Type="String", Overwrite=True
        )
    west = aws.client("lambda", "us-west-2")
    west.delete_function(FunctionName="mini-scheduler-sample-report")
    aws.client("lambda", "us-east-1").delete_function_event_invoke_config(
        FunctionName="mini-scheduler-sample-heartbeat"
    )
    scheduler = aws.client("scheduler", "us-west-2")
    tick = scheduler.get_schedule(Name=f"{STACK}-tick")
    scheduler.update_schedule(
        Name=f"{STACK}-tick",
        ScheduleExpression=tick["ScheduleExpression"],
        FlexibleTimeWindow={"Mode": "OFF"},
        Target=tick["Target"],
        State="DISABLED",
    )
    result = doctor(capsys, downloads, "--json")
    assert result.code == 1
    found = result.json()["findings"]
    problems = {(f["region"], f["check"]): f for f in found if f["level"] != "ok"}
    assert set(problems) == {
        ("us-east-1", "environment"),
        ("us-west-2", "environment"),
        ("us-east-1", "job heartbeat"),
        ("us-west-2", "job morning-report"),
        ("us-west-2", "schedule"),
    }
    typo = problems[("us-east-1", "environment")]
    assert typo["level"] == "error"
    assert typo["message"] == (
        "the active environment DRR names no stack here (prod, DR): no region runs the jobs"
    )
    assert typo["fix"].startswith("mini-scheduler failover --to <one of prod, DR>")
    missing = problems[("us-west-2", "job morning-report")]
    assert (missing["level"], missing["message"]) == (
        "error",
        "mini-scheduler-sample-report does not exist in us-west-2",
    )
    assert "deploy the function in us-west-2" in missing["fix"]
    unwired = problems[("us-east-1", "job heartbeat")]
    assert unwired["level"] == "warning" and "CompletionQueueArn" not in unwired["fix"]
    assert f"Type SQS, arn:aws:sqs:us-east-1:123456789012:{COMPLETIONS}" in unwired["fix"]
    assert problems[("us-west-2", "schedule")]["message"].startswith("sched-tick is DISABLED")
    # as text: each finding, then what to do
    text = doctor(capsys, downloads)
    assert text.code == 1
    assert "What to do:" in text.lines
    assert text.lines[-1] == (
        f"4 findings stop the jobs; 1 warning (stack {STACK} in us-east-1, us-west-2)."
    )


def test_doctor_refuses_a_target_the_ticker_may_not_invoke(
    capsys: pytest.CaptureFixture[str], aws: Aws, downloads: Downloads
) -> None:
    cron = b'jobs:\n  - {name: "theirs", cron: "0 0 2 * * ?", service: "report-fn"}\n'
    deploy(aws, downloads, "us-east-1", cron=cron)
    result = doctor(capsys, downloads, "--json")
    assert result.code == 1
    (refused,) = [f for f in result.json()["findings"] if f["check"] == "job theirs"]
    assert refused["message"] == "report-fn: the ticker cannot run it"
    assert "TargetFunctionPrefix" in refused["fix"]


def test_doctor_of_a_region_without_the_stack(
    capsys: pytest.CaptureFixture[str], aws: Aws, downloads: Downloads
) -> None:
    aws.client("cloudformation", "us-west-2").delete_stack(StackName=STACK)
    result = doctor(capsys, downloads, "--json")
    assert result.code == 1
    west = [f for f in result.json()["findings"] if f["region"] == "us-west-2"]
    assert west == [
        {
            "region": "us-west-2",
            "level": "error",
            "check": "stack",
            "message": f"stack {STACK} not found",
            "fix": "deploy it (make deploy), or name the stack and regions it has "
            "(--stack, --regions)",
        }
    ]


def test_doctor_needs_a_stack(capsys: pytest.CaptureFixture[str], downloads: Downloads) -> None:
    result = run(capsys, downloads, "doctor", "--regions", BOTH)
    assert (result.code, result.err) == (
        2,
        "mini-scheduler doctor: doctor checks a stack: give --stack NAME\n",
    )


def test_doctor_finds_regions_that_disagree_and_both_active(
    capsys: pytest.CaptureFixture[str], aws: Aws, downloads: Downloads
) -> None:
    """An environment event sent to one region's ticker: each region holds its own name."""
    for region, name in NAMES.items():
        aws.client("ssm", region).put_parameter(
            Name=PARAMETER, Value=name, Type="String", Overwrite=True
        )
    result = doctor(capsys, downloads, "--json")
    assert result.code == 1
    messages = [f["message"] for f in result.json()["findings"] if f["level"] == "error"]
    assert messages == [
        "the regions disagree on the active environment (us-east-1 prod, us-west-2 DR)",
        "2 regions are active (us-east-1, us-west-2): a firing may run in each",
    ]


def test_doctor_says_the_package_download_failed_and_what_to_do(
    capsys: pytest.CaptureFixture[str], downloads: Downloads
) -> None:
    """Issue 25: a failed download was advised "ship a cron file: make deploy CRON_YAML=...",
    once per region, though the file was deployed: only this machine could not fetch it."""

    def unreachable(url: str) -> bytes:
        raise urllib.error.URLError("timed out")

    result = cli(capsys, "doctor", "--stack", STACK, "--regions", BOTH, download=unreachable)
    assert result.code == 1
    assert cells(result.lines[5]) == [
        "us-east-1",
        "ERROR",
        "cron file",
        "not checked: downloading the package of mini-scheduler-ticker in us-east-1 failed: "
        "<urlopen error timed out>",
    ]
    assert "make deploy CRON_YAML" not in result.out
    what = result.lines[result.lines.index("What to do:") + 1 :]
    assert what[0] == (
        "  us-east-1, us-west-2 cron file: check that this machine reaches the package's "
        "download URL (HTTPS to S3: a proxy, a firewall?), then run the command again"
    )
    # a package that is no zip (a download cut short) gets the same advice
    result = cli(capsys, "doctor", "--stack", STACK, "--region", "us-east-1",
                 download=lambda url: b"PK\x03\x04 cut")  # fmt: skip
    assert "the package of mini-scheduler-ticker in us-east-1 is not a zip archive" in result.out
    assert "reaches the package's download URL" in result.out


def test_doctor_says_each_fix_once_for_the_regions_that_share_it(
    capsys: pytest.CaptureFixture[str], aws: Aws, downloads: Downloads
) -> None:
    """A name no stack has, in both regions: one failover fixes both, so one line says it."""
    for region in REGIONS:
        aws.client("ssm", region).put_parameter(
            Name=PARAMETER, Value="DRR", Type="String", Overwrite=True
        )
    result = doctor(capsys, downloads)
    what = result.lines[result.lines.index("What to do:") + 1 : -1]
    assert what == [
        f"  us-east-1, us-west-2 environment: mini-scheduler failover --to <one of prod, DR> "
        f"--stack {STACK} --regions us-east-1,us-west-2"
    ]
