"""The translated template as a stack in moto's CloudFormation: the functions' settings point at
the resources the stack created, and the handlers, run with those settings, tick, dispatch to
the sample targets and record their ends there.

moto does not model AWS::Scheduler::Schedule, AWS::Lambda::EventInvokeConfig, CloudWatch alarms,
SNS subscriptions or topic policies: they (and what refers to them) are left out of the stack and
checked in the translated template instead. moto's claims are not atomic: nothing here is about
exclusivity."""

from __future__ import annotations

import ast
import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import boto3
import pytest
from botocore.client import BaseClient
from moto import mock_aws

from mini_scheduler.claims.dynamodb import DynamoDBClaimStore
from mini_scheduler.clock import FixedClock
from mini_scheduler.handlers import recorder as recorder_handler
from mini_scheduler.handlers import ticker as ticker_handler
from mini_scheduler.model import RunStatus, execution_name
from tests.conftest import ROOT, load_event
from tests.fakeaws import handler_zip, use_test_credentials
from tests.published import assert_published
from tests.repo.template import cfn

Template = dict[str, Any]

NOT_IN_MOTO = {
    "AWS::Scheduler::Schedule",
    "AWS::Lambda::EventInvokeConfig",
    "AWS::CloudWatch::Alarm",
    "AWS::SNS::Subscription",
    "AWS::SNS::TopicPolicy",
    "AWS::SQS::QueuePolicy",
    "AWS::ApplicationAutoScaling::ScalableTarget",  # StateTableBilling provisioned's
    "AWS::ApplicationAutoScaling::ScalingPolicy",
}
NOT_DELIVERED_BY_MOTO = {"FailureEventsRule"}
"""Rules whose target moto cannot send to (an SNS topic: a matching PutEvents raises there);
the test that runs the handlers listens to the bus with a rule of its own."""
ARTIFACTS = "mini-scheduler-artifacts"  # translate.py's stand-in for sam package's bucket
ACCOUNT = "123456789012"


def for_moto(translated: Template) -> tuple[Template, set[str]]:
    """The template without what moto cannot create, and the logical ids left out."""
    template = copy.deepcopy(translated)
    resources = template["Resources"]
    left_out = {name for name, r in resources.items() if r["Type"] in NOT_IN_MOTO}
    left_out |= NOT_DELIVERED_BY_MOTO & set(resources)
    while True:
        dependent = {
            name
            for name, resource in resources.items()
            if name not in left_out and set(cfn.references(resource)) & left_out
        }
        if not dependent:
            break
        left_out |= dependent
    for name in left_out:
        del resources[name]
    template["Outputs"] = {
        key: output
        for key, output in template["Outputs"].items()
        if not set(cfn.references(output)) & left_out
    }
    return template, left_out


@dataclass
class Stack:
    region: str
    resources: dict[str, str]  # logical id -> physical id
    outputs: dict[str, str]

    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=self.region)  # type: ignore[call-overload]

    def function(self, logical: str) -> dict[str, Any]:
        configuration: dict[str, Any] = self.client("lambda").get_function(
            FunctionName=self.resources[logical]
        )["Configuration"]
        return configuration

    def role_policy(self, logical: str) -> list[dict[str, Any]]:
        """A role's inline statements as moto resolved them (moto keeps an AWS::NoValue in a
        list as None; CloudFormation drops it)."""
        iam = self.client("iam")
        role = self.resources[logical]
        statements = []
        for name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
            document = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
            if isinstance(document, str):
                document = ast.literal_eval(document)
            statements += [s for s in document["Statement"] if s is not None]
        return statements


def create_stack(template: Template, region: str = "us-east-1", **parameters: str) -> Stack:
    """Upload stand-in code, as `sam package` would, and create the stack (inside mock_aws)."""
    s3 = boto3.client("s3", region_name=region)
    if region == "us-east-1":
        s3.create_bucket(Bucket=ARTIFACTS)
    else:
        s3.create_bucket(Bucket=ARTIFACTS, CreateBucketConfiguration={"LocationConstraint": region})  # type: ignore[typeddict-item]
    for name, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Lambda::Function":
            s3.put_object(Bucket=ARTIFACTS, Key=f"{name}.zip", Body=handler_zip())
    cloudformation = boto3.client("cloudformation", region_name=region)
    cloudformation.create_stack(
        StackName="mini-scheduler",
        TemplateBody=json.dumps(template),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
        Capabilities=["CAPABILITY_IAM"],
    )
    described = cloudformation.describe_stacks(StackName="mini-scheduler")["Stacks"][0]
    assert described["StackStatus"] == "CREATE_COMPLETE", described.get("StackStatusReason")
    summaries = cloudformation.list_stack_resources(StackName="mini-scheduler")
    return Stack(
        region,
        {
            r["LogicalResourceId"]: r["PhysicalResourceId"]
            for r in summaries["StackResourceSummaries"]
        },
        {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])},
    )


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    use_test_credentials(monkeypatch)
    monkeypatch.delenv("AWS_REGION")  # each client names its region
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield


@pytest.fixture
def moto_template(translated: Template) -> Template:
    return for_moto(translated)[0]


# -- what moto leaves out, checked in the translated template ------------------------------------


def test_moto_leaves_out_only_what_it_cannot_model(translated: Template) -> None:
    _, left_out = for_moto(translated)
    kinds = {translated["Resources"][name]["Type"] for name in left_out - NOT_DELIVERED_BY_MOTO}
    assert kinds <= NOT_IN_MOTO | {"AWS::CloudWatch::Dashboard"}
    assert "StateTable" not in left_out and "TickerFunction" not in left_out


def test_the_schedule_invokes_the_ticker(translated: Template) -> None:
    (schedule,) = [
        r["Properties"]
        for r in translated["Resources"].values()
        if r["Type"] == "AWS::Scheduler::Schedule"
    ]
    assert schedule["ScheduleExpression"] == "cron(* * * * ? *)"
    target = schedule["Target"]
    assert target["Arn"] == {"Fn::GetAtt": ["TickerFunction", "Arn"]}
    assert json.loads(target["Input"]) == {"tick": "<aws.scheduler.scheduled-time>"}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}}
    role = translated["Resources"][target["RoleArn"]["Fn::GetAtt"][0]]["Properties"]
    granted = [s for p in role["Policies"] for s in cfn.statements(p["PolicyDocument"])]
    assert {(s["Action"], json.dumps(s["Resource"])) for s in granted} == {
        ("lambda:InvokeFunction", json.dumps({"Fn::GetAtt": ["TickerFunction", "Arn"]})),
        ("sqs:SendMessage", json.dumps({"Fn::GetAtt": ["DeadLetterQueue", "Arn"]})),
    }


def test_event_invoke_configs(translated: Template) -> None:
    configs = {
        r["Properties"]["FunctionName"]["Ref"]: r["Properties"]
        for r in translated["Resources"].values()
        if r["Type"] == "AWS::Lambda::EventInvokeConfig"
    }
    queue = {"Destination": {"Fn::GetAtt": ["CompletionQueue", "Arn"]}}
    for sample in ("SampleReportFunction", "SampleHeartbeatFunction"):
        assert configs[sample]["DestinationConfig"] == {"OnSuccess": queue, "OnFailure": queue}
    assert configs["TickerFunction"]["MaximumRetryAttempts"] == 0
    assert configs["RecorderFunction"]["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}}
    }


# -- the stack in moto ---------------------------------------------------------------------------


def test_the_functions_point_at_the_stack_s_resources(aws: None, moto_template: Template) -> None:
    stack = create_stack(moto_template)
    table = stack.resources["StateTable"]
    ticker = stack.function("TickerFunction")
    assert ticker["FunctionName"] == "mini-scheduler-ticker"
    assert ticker["Handler"] == "mini_scheduler.handlers.ticker.handler"
    assert ticker["Runtime"] == "python3.13" and ticker["Timeout"] == 150
    assert ticker["Role"].endswith("/" + stack.resources["TickerRole"])
    variables = {k: str(v) for k, v in ticker["Environment"]["Variables"].items()}
    assert variables == {
        "STATE_TABLE": table,
        "ENVIRONMENT_NAME": "prod",
        "KNOWN_ENVIRONMENTS": "prod,DR",
        "ACTIVE_ENVIRONMENT_STORE": "ssm:/mini-scheduler/active-environment",
        "CLAIM_STORE": "dynamodb",
        "CRON_FILE": "",
        "TICK_LEAD_SECONDS": "0",
        "FANOUT_THRESHOLD": "250",
        "FANOUT_SHARDS": "40",
        "EVENT_BUS_NAME": "default",
        "STACK_NAME": "mini-scheduler",  # PEER_STATE_TABLES: none without PeerRegions
        "AUDIT_LOG_GROUP": "/mini-scheduler/mini-scheduler/audit",
        # the other kinds of target: off by default
        "TARGET_QUEUE_PREFIX": "",
        "TARGET_TOPIC_PREFIX": "",
        "TARGET_EVENT_BUS_PREFIX": "",
        "TARGET_TASK_DEFINITION_PREFIX": "",
        "TARGET_WEBHOOK_PREFIX": "",
        "POWERTOOLS_SERVICE_NAME": "mini-scheduler",
        "POWERTOOLS_METRICS_NAMESPACE": "MiniScheduler",
        "LOG_LEVEL": "INFO",
    }
    recorder = stack.function("RecorderFunction")
    assert recorder["Environment"]["Variables"]["STATE_TABLE"] == table
    assert recorder["Environment"]["Variables"]["EVENT_BUS_NAME"] == "default"
    assert recorder["Role"].endswith("/" + stack.resources["RecorderRole"])

    described = stack.client("dynamodb").describe_table(TableName=table)["Table"]
    assert [k["AttributeName"] for k in described["KeySchema"]] == ["pk", "sk"]
    assert not described.get("GlobalSecondaryIndexes")  # the sweep reads watch items
    assert described["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"

    assert stack.outputs["StateTableName"] == table
    assert stack.outputs["TickerFunctionName"] == "mini-scheduler-ticker"
    assert stack.outputs["RecorderFunctionArn"] == recorder["FunctionArn"]
    assert stack.outputs["ActiveEnvironmentParameter"] == "/mini-scheduler/active-environment"
    assert (
        "Parameters" not in stack.client("ssm").describe_parameters()
        or not (stack.client("ssm").describe_parameters()["Parameters"])
    )


def test_the_ticker_role_names_the_stack_s_resources(aws: None, moto_template: Template) -> None:
    stack = create_stack(moto_template)
    granted = {s["Sid"]: s for s in stack.role_policy("TickerRole")}
    table = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/{stack.resources['StateTable']}"
    assert granted["StateTable"]["Resource"] == table
    assert granted["ActiveEnvironment"]["Resource"] == (
        f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/mini-scheduler/active-environment"
    )
    assert granted["DispatchToFunctions"]["Resource"] == (
        f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:mini-scheduler-*"
    )
    assert granted["FanOut"]["Resource"] == stack.function("TickerFunction")["FunctionArn"]
    assert granted["FailureEvents"]["Resource"] == (
        f"arn:aws:events:us-east-1:{ACCOUNT}:event-bus/default"
    )
    # moto's GetAtt Arn of a log group; CloudFormation's ends in ":*", its streams
    assert granted["Audit"]["Resource"] == (
        f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:/mini-scheduler/mini-scheduler/audit"
    )
    assert set(granted) == {
        "Logs",
        "Audit",
        "StateTable",
        "DispatchToFunctions",
        "DispatchToFlows",
        "FanOut",
        "ActiveEnvironment",
        "FailureEvents",
    }


def test_options_change_the_grants(aws: None, moto_template: Template) -> None:
    """A cron file in S3, the environment in the table, MongoDB claims, no samples."""
    secret = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:mini-scheduler/mongo-AbCdEf"
    stack = create_stack(
        moto_template,
        CronFile="s3://jobs-bucket/team/a/cron.yaml",
        ActiveEnvironmentStore="dynamodb",
        ClaimStore="mongodb",
        MongoUriSecretArn=secret,
        DeploySamples="false",
        TickLeadSeconds="60",
        TickerMemorySize="1769",
        FanoutThreshold="250",
        FanoutShards="40",
    )
    granted = {s["Sid"]: s for s in stack.role_policy("TickerRole")}
    assert granted["CronFile"]["Resource"] == "arn:aws:s3:::jobs-bucket/team/a/cron.yaml"
    assert granted["CronFileBucket"]["Resource"] == "arn:aws:s3:::jobs-bucket"
    assert granted["MongoUri"]["Resource"] == secret
    assert "ActiveEnvironment" not in granted
    variables = {
        k: str(v) for k, v in stack.function("TickerFunction")["Environment"]["Variables"].items()
    }
    assert variables["CRON_FILE"] == "s3://jobs-bucket/team/a/cron.yaml"
    assert variables["ACTIVE_ENVIRONMENT_STORE"] == "dynamodb"
    assert variables["CLAIM_STORE"] == "mongodb"
    assert variables["MONGODB_URI_SECRET_ARN"] == secret
    assert variables["TICK_LEAD_SECONDS"] == "60"
    assert (variables["FANOUT_THRESHOLD"], variables["FANOUT_SHARDS"]) == ("250", "40")
    assert stack.function("TickerFunction")["MemorySize"] == 1769
    assert stack.function("RecorderFunction")["MemorySize"] == 256
    assert not any(name.startswith("Sample") for name in stack.resources)
    assert stack.outputs["ActiveEnvironmentParameter"] == "dynamodb"  # the CLI reads it so
    assert stack.outputs["CronFileLocations"] == "s3://jobs-bucket/team/a/cron.yaml"


@pytest.mark.parametrize(
    ("locations", "grants"),
    [
        # the region's own bucket, then the packaged file: S3 grants for the object only
        (
            "s3://jobs-us-west-2/cron.yaml,file:cron.yaml",
            ("arn:aws:s3:::jobs-us-west-2/cron.yaml", "arn:aws:s3:::jobs-us-west-2"),
        ),
        ("file:/opt/jobs/cron.yaml,file:cron.yaml", None),  # files only: no S3 grant
        ("", None),  # the packaged file
    ],
    ids=["s3-then-package", "files", "package"],
)
def test_the_cron_file_list_the_template_takes(
    aws: None, moto_template: Template, locations: str, grants: tuple[str, str] | None
) -> None:
    """CronFile takes the comma-separated fallback list CRON_FILE reads; the stack says where
    its file is (CronFileLocations, read by the CLI), the packaged file as file:cron.yaml."""
    stack = create_stack(moto_template, region="us-west-2", CronFile=locations)
    granted = {s["Sid"]: s for s in stack.role_policy("TickerRole")}
    if grants is None:
        assert "CronFile" not in granted and "CronFileBucket" not in granted
    else:
        assert (granted["CronFile"]["Resource"], granted["CronFileBucket"]["Resource"]) == grants
    variables = stack.function("TickerFunction")["Environment"]["Variables"]
    assert variables.get("CRON_FILE", "") == locations
    assert stack.outputs["CronFileLocations"] == (locations or "file:cron.yaml")


def test_the_dr_stack_in_its_region(aws: None, translated: Template) -> None:
    """The same build serves both regions: only the parameters differ (samconfig.toml)."""
    template, _ = for_moto(translated)
    stack = create_stack(template, region="us-west-2", EnvironmentName="DR")
    ticker = stack.function("TickerFunction")
    assert ticker["FunctionArn"].startswith(f"arn:aws:lambda:us-west-2:{ACCOUNT}:function:")
    assert ticker["Environment"]["Variables"]["ENVIRONMENT_NAME"] == "DR"
    granted = {s["Sid"]: s for s in stack.role_policy("TickerRole")}
    assert granted["ActiveEnvironment"]["Resource"] == (
        f"arn:aws:ssm:us-west-2:{ACCOUNT}:parameter/mini-scheduler/active-environment"
    )


# -- the handlers, configured as the stack configures them ----------------------------------------


class _Context:
    def __init__(self, arn: str) -> None:
        self.invoked_function_arn = arn
        self.function_name = arn.rsplit(":", 1)[-1]
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 256
        self.aws_request_id = "test-request"

    def get_remaining_time_in_millis(self) -> int:
        return 120_000


class _Calls:
    """The IAM actions of the AWS requests made while ``recording`` (botocore's one choke point:
    the handlers make their own clients). A transaction is authorised per item."""

    _ITEMS: ClassVar[dict[str, str]] = {
        "Put": "PutItem",
        "Update": "UpdateItem",
        "Delete": "DeleteItem",
        "ConditionCheck": "ConditionCheckItem",
    }
    _RENAMED: ClassVar[dict[str, str]] = {"lambda:Invoke": "lambda:InvokeFunction"}

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.actions: set[str] = set()
        self.recording = False
        original = BaseClient._make_api_call  # type: ignore[attr-defined]
        calls = self

        def make_api_call(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
            if calls.recording:
                calls.add(client.meta.service_model.signing_name, operation, params)
            return original(client, operation, params)

        monkeypatch.setattr(BaseClient, "_make_api_call", make_api_call)

    def add(self, service: str, operation: str, params: dict[str, Any]) -> None:
        if operation == "TransactWriteItems":
            for item in params["TransactItems"]:
                self.actions |= {f"{service}:{self._ITEMS[kind]}" for kind in item}
            return
        if operation == "BatchExecuteStatement":  # authorised per statement
            for statement in params["Statements"]:
                verb = statement["Statement"].split(None, 1)[0].title()
                self.actions.add(f"{service}:PartiQL{verb}")
            return
        action = f"{service}:{operation}"
        self.actions.add(self._RENAMED.get(action, action))

    @contextmanager
    def during(self) -> Iterator[None]:
        self.recording = True
        try:
            yield
        finally:
            self.recording = False


def _granted(stack: Stack, role: str) -> set[str]:
    return {
        action
        for statement in stack.role_policy(role)
        if statement["Effect"] == "Allow"
        for action in cfn.as_list(statement["Action"])
        # the Lambda service writes the functions' logs, not the code (the audit trail: the code)
        if statement.get("Sid") != "Logs"
    }


SAMPLE_REPORT = "mini-scheduler-sample-report"


def test_the_handlers_run_on_the_stack(
    aws: None, moto_template: Template, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The ticker, given the variables the stack gave it and the cron file at its package's root
    (CRON_FILE empty), ticks: it dispatches to the sample targets the stack created and records
    the runs in the stack's table; the recorder closes one of them there. Each publishes a final
    failure to the stack's bus, and the ticker pauses the heartbeat after 3 of them
    (pause_after_failures). Every request either makes is one its role grants, and each role
    grants nothing they did not use."""
    stack = create_stack(moto_template)
    published = _listen_to_the_bus(stack)
    calls = _Calls(monkeypatch)
    ticker = stack.function("TickerFunction")
    for key, value in ticker["Environment"]["Variables"].items():
        monkeypatch.setenv(key, str(value))
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", ticker["FunctionName"])
    monkeypatch.setenv("LAMBDA_TASK_ROOT", str(tmp_path))  # the package, as `make build` lays it
    # moto's DynamoDB is not thread-safe (its transactions deep-copy shared state): dispatch
    # one firing at a time here. Concurrency is tested on DynamoDB Local (tests/system/integration).
    monkeypatch.setenv("DISPATCH_WORKERS", "1")
    # moto's PartiQL ignores conditions: claims and marks one request each here. Their PartiQL
    # statements are the ones test_call_budget counts on DynamoDB Local.
    monkeypatch.setenv("STATE_TABLE_BATCH_WRITES", "false")
    sample = (ROOT / "samplecode" / "cron.yaml").read_text(encoding="utf-8")
    heartbeat = "    timeout: 60\n"  # the heartbeat's: it is paused after 3 failures in a row
    assert sample.count(heartbeat) == 1
    sample = sample.replace(heartbeat, heartbeat + "    pause_after_failures: 3\n")
    (tmp_path / "cron.yaml").write_text(sample, encoding="utf-8")
    clock = FixedClock(datetime.fromisoformat("2026-11-30T14:14:00+00:00"))
    monkeypatch.setattr(ticker_handler, "CLOCK", clock)
    monkeypatch.setattr(recorder_handler, "CLOCK", clock)
    ticker_handler.reset()
    recorder_handler.reset()
    context = _Context(ticker["FunctionArn"])

    def tick(event: dict[str, Any]) -> dict[str, Any]:
        with calls.during():
            answer: dict[str, Any] = ticker_handler.handler(event, context)
        assert answer.get("status") != "rejected", answer
        return answer

    try:
        tick({"tick": "2026-11-30T14:14:00Z"})  # the region's first tick: its watermark
        clock.set(datetime.fromisoformat("2026-11-30T14:15:00+00:00"))
        answer = tick({"tick": "2026-11-30T14:15:00Z"})
        assert answer["mode"] == "active", answer
        assert answer["counts"]["dispatched"] == 5, answer  # 4 heartbeats, the cleanup flow
        assert answer["counts"].get("errors", 0) == 0, answer
        # The operator's events: the environment (read, then set in the SSM parameter),
        # pause and resume (items in the table), a manual run.
        assert tick(load_event("environment-get.json"))["store"] == (
            "ssm:/mini-scheduler/active-environment"
        )
        tick({"environment": {"active": "prod", "operator": "jane.doe"}})
        parameter = stack.client("ssm").get_parameter(Name="/mini-scheduler/active-environment")
        assert parameter["Parameter"]["Value"] == "prod"
        tick(load_event("pause.json"))
        tick(load_event("resume.json"))  # a resume is kept, dated: a PutItem
        # A one-time runtime schedule due before the 14:18 tick, which ends it (a transaction
        # that deletes its firing and writes its tombstone).
        soon = {"name": "soon", "at": "2026-11-30T14:16:30Z", "service": SAMPLE_REPORT}
        tick({"schedule": "create", "operator": "jane.doe", "schedules": [soon]})
        assert tick(load_event("manual-run.json"))["status"] == "DISPATCHED"
        # each action is written to the stack's audit trail (CreateLogStream, PutLogEvents:
        # the calls below; what a record holds: tests/unit/cli/test_audit.py, on a clock
        # CloudWatch Logs takes, whose events are of the last 14 days)

        flow = stack.resources["SampleCleanupFlow"]
        executions = stack.client("stepfunctions").list_executions(stateMachineArn=flow)
        assert [e["name"] for e in executions["executions"]] == [
            "hourly-cleanup@2026-11-30T14-15-00Z"
        ]
        store = DynamoDBClaimStore(stack.resources["StateTable"], stack.client("dynamodb"))
        run = store.run("heartbeat@2026-11-30T14:15:15Z")
        assert run is not None and run.status is RunStatus.DISPATCHED
        # Three minutes on, the sweep reads the runs it watches (their leases have passed): the
        # heartbeats are past their 60 s timeout, each a final failure (no retry), and the
        # third in a row pauses the job (after this tick's plan, which still dispatches).
        clock.set(datetime.fromisoformat("2026-11-30T14:18:00+00:00"))
        assert tick({"tick": "2026-11-30T14:18:00Z"})["mode"] == "active"
        assert [e["detail"]["firingId"] for e in published("Job Run Failed")] == [
            f"heartbeat@2026-11-30T14:{minute}:{second}Z"
            for minute in ("14", "15")
            for second in ("00", "15", "30", "45")
        ]
        (paused,) = published("Job Paused")
        assert paused["detail"]["job"] == "heartbeat" and paused["detail"]["failures"] == 3
        assert paused["detail"]["firingId"] == "heartbeat@2026-11-30T14:14:30Z"
        assert store.control("us-east-1/prod").paused["heartbeat"].operator == "mini-scheduler"
        # The environment kept in the state table instead (ActiveEnvironmentStore=dynamodb).
        monkeypatch.setenv("ACTIVE_ENVIRONMENT_STORE", "dynamodb")
        ticker_handler.reset()
        assert tick(load_event("environment-get.json"))["store"].startswith("dynamodb")
        partiql = {"dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate"}  # one by one on moto
        assert calls.actions == _granted(stack, "TickerRole") - partiql, "the calls and grants"

        # The recorder closes the run from the heartbeat's OnSuccess destination record, read
        # from the completion queue in a batch; a second delivery finds it closed.
        calls.actions.clear()
        event = load_event("lambda-destination-success.json")
        heartbeat = stack.function("SampleHeartbeatFunction")["FunctionArn"]
        event["requestContext"]["functionArn"] = heartbeat + ":$LATEST"
        event["requestPayload"].update(
            job="heartbeat",
            firingId="heartbeat@2026-11-30T14:15:15Z",
            scheduledTime="2026-11-30T14:15:15Z",
            parameters={},
        )
        recorder = stack.function("RecorderFunction")
        for key, value in recorder["Environment"]["Variables"].items():
            monkeypatch.setenv(key, str(value))
        recorder_context = _Context(recorder["FunctionArn"])
        batch = _queued(stack, event)
        with calls.during():
            recorded = recorder_handler.handler(batch, recorder_context)
            closed = store.run("heartbeat@2026-11-30T14:15:15Z")
            again = recorder_handler.handler(batch, recorder_context)
            # The flow failed, then Step Functions redrove it: the run reopens, watched again.
            # Its retry (5 min on) is due in the minute it is heard in: the ticker is woken.
            clock.set(datetime.fromisoformat("2026-11-30T14:20:00+00:00"))
            failed = recorder_handler.handler(
                load_event("sfn-status-failed.json"), recorder_context
            )
            redriven = recorder_handler.handler(
                load_event("sfn-status-redriven.json"), recorder_context
            )
            # A heartbeat of 14:18 fails: final, published; the job is paused already.
            event["requestPayload"].update(
                firingId="heartbeat@2026-11-30T14:18:15Z", scheduledTime="2026-11-30T14:18:15Z"
            )
            event["requestContext"]["condition"] = "RetriesExhausted"
            event["responsePayload"] = {"errorType": "Boom", "errorMessage": "heart stopped"}
            event["responseContext"]["functionError"] = "Unhandled"
            heart_failed = recorder_handler.handler(event, recorder_context)
        assert recorded == again == {"batchItemFailures": []}, (recorded, again)
        assert store.run("heartbeat@2026-11-30T14:15:15Z") == closed
        assert failed["recorded"] is True and redriven["recorded"] is True, (failed, redriven)
        assert heart_failed["status"] == "FAILED", heart_failed
        last = published("Job Run Failed")[-1]["detail"]
        assert (last["firingId"], last["error"]) == (
            "heartbeat@2026-11-30T14:18:15Z",
            "Boom: heart stopped",
        )
        for kind in ("Job Run Failed", "Job Paused"):
            for published_event in published(kind):
                assert_published(kind, published_event["detail"])
        assert len(published("Job Paused")) == 1
        reopened = store.run("hourly-cleanup@2026-11-30T14:15:00Z")
        assert reopened is not None and reopened.status is RunStatus.DISPATCHED
        run = store.run("heartbeat@2026-11-30T14:15:15Z")
        assert run is not None and run.status is RunStatus.SUCCEEDED
        # A flow's status event without its input, of an execution whose name was cut (a long
        # job name): the recorder reads the input with DescribeExecution (no such run here).
        firing_id = (
            "a-job-whose-name-is-long-enough-to-cut-its-flow-s-execution-name@2026-11-30T14:15:00Z"
        )
        name = execution_name(firing_id)
        arn = stack.client("stepfunctions").start_execution(
            stateMachineArn=flow, name=name, input=json.dumps({"firingId": firing_id})
        )["executionArn"]
        status = load_event("sfn-status-succeeded.json")
        status["detail"].update(
            executionArn=arn, name=name, input=None, inputDetails={"included": False}
        )
        with calls.during():
            answer = recorder_handler.handler(status, recorder_context)
        assert answer == {"recorded": False, "firingId": firing_id, "reason": "unknown firing"}
        # Lambda's, not the code's: sqs:SendMessage (the OnFailure destination), and the
        # completion queue's reads (the event source mapping).
        lambdas = {"sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage"}
        lambdas.add("sqs:GetQueueAttributes")
        assert calls.actions == _granted(stack, "RecorderRole") - lambdas
    finally:
        ticker_handler.reset()
        recorder_handler.reset()


def _queued(stack: Stack, *events: dict[str, Any]) -> dict[str, Any]:
    """A batch of the stack's completion queue as its event source mapping hands it over, each
    event a message's body (built here: moto would hand a message sent to a queue with a
    mapping to its own Lambda stand-in)."""
    return {
        "Records": [
            {
                "messageId": f"00000000-0000-4000-8000-{index:012d}",
                "receiptHandle": f"receipt-{index}",
                "body": json.dumps(event),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": stack.outputs["CompletionQueueArn"],
                "awsRegion": stack.region,
            }
            for index, event in enumerate(events)
        ]
    }


def _listen_to_the_bus(stack: Stack) -> Any:
    """A queue that a rule on the default bus sends the scheduler's events to, and a function
    that answers those of a detail type published so far, oldest first."""
    sqs, events = stack.client("sqs"), stack.client("events")
    queue = sqs.create_queue(QueueName="heard")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]
    events.put_rule(Name="heard", EventPattern=json.dumps({"source": ["mini-scheduler"]}))
    events.put_targets(Rule="heard", Targets=[{"Id": "queue", "Arn": arn["QueueArn"]}])
    heard: list[dict[str, Any]] = []

    def published(detail_type: str) -> list[dict[str, Any]]:
        while True:
            answer = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)
            if not answer.get("Messages"):
                break
            for message in answer["Messages"]:
                heard.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])
        return [e for e in heard if e["detail-type"] == detail_type]

    return published


def test_the_recorder_reads_the_completion_queue(aws: None, moto_template: Template) -> None:
    """The flows' ends (FlowEndedRule) and the targets' destinations go to the completion queue,
    which the recorder reads in batches and whose failures wait in its redrive queue."""
    stack = create_stack(moto_template)
    recorder = stack.function("RecorderFunction")
    sqs, events = stack.client("sqs"), stack.client("events")
    queue = stack.outputs["CompletionQueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])["Attributes"]
    assert attributes["QueueArn"] == stack.outputs["CompletionQueueArn"]
    # a fixed name: a target's template builds the ARN (docs/deploy.md, Wire your own targets)
    assert attributes["QueueArn"] == f"arn:aws:sqs:us-east-1:{ACCOUNT}:mini-scheduler-completions"
    assert int(attributes["VisibilityTimeout"]) >= 6 * recorder["Timeout"]
    redrive = json.loads(attributes["RedrivePolicy"])
    dead = sqs.get_queue_attributes(
        QueueUrl=stack.outputs["CompletionDeadLetterQueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    assert redrive["deadLetterTargetArn"] == dead and int(redrive["maxReceiveCount"]) == 5
    (mapping,) = stack.client("lambda").list_event_source_mappings(
        FunctionName=recorder["FunctionName"]
    )["EventSourceMappings"]
    assert mapping["EventSourceArn"] == attributes["QueueArn"]
    assert mapping["BatchSize"] >= 10
    rule = stack.resources["FlowEndedRule"]
    (target,) = events.list_targets_by_rule(Rule=rule)["Targets"]
    assert target["Arn"] == attributes["QueueArn"]
    pattern = json.loads(events.describe_rule(Name=rule)["EventPattern"])
    assert pattern["detail"]["stateMachineArn"] == [
        {"prefix": f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:mini-scheduler-"}
    ]
    flow = stack.resources["SampleCleanupFlow"]
    assert flow.startswith(pattern["detail"]["stateMachineArn"][0]["prefix"])
    # the targets' destinations (EventInvokeConfig: not in moto) test_event_invoke_configs reads
