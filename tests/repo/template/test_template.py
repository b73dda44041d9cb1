"""template.yaml read as data: it matches the code (the state table, the settings, the metric
names, the sample cron file) and the docs (the schedule, the wiring to the recorder)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mini_scheduler import alerts
from mini_scheduler import metrics as m
from mini_scheduler.claims.dynamodb import create_state_table
from mini_scheduler.config import DEFAULT_PARAMETER, Settings
from mini_scheduler.handlers import _runtime
from mini_scheduler.jobs import load
from mini_scheduler.model import SkipReason
from tests.conftest import ROOT
from tests.repo.template import cfn

Template = dict[str, Any]

FUNCTIONS = [
    "TickerFunction",
    "RecorderFunction",
    "SampleReportFunction",
    "SampleHeartbeatFunction",
]


def _resources(template: Template, kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def _default(template: Template, parameter: str) -> str:
    return str(template["Parameters"][parameter]["Default"])


def _sub_defaults(template: Template, value: Any) -> str:
    """A ``!Sub`` of parameters, evaluated with their defaults."""
    text = value["Fn::Sub"]
    return re.sub(r"\$\{(\w+)\}", lambda found: _default(template, found.group(1)), text)


# -- the state table -------------------------------------------------------------------------------


class _Recording:
    """A DynamoDB client that records what create_state_table asks for."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, Any]] = {}

    def create_table(self, **kwargs: Any) -> None:
        self.calls["create_table"] = kwargs

    def update_time_to_live(self, **kwargs: Any) -> None:
        self.calls["update_time_to_live"] = kwargs

    def get_waiter(self, name: str) -> Any:
        class _Waiter:
            def wait(self, **kwargs: Any) -> None:
                pass

        return _Waiter()


def test_the_state_table_is_the_one_create_state_table_makes(template: Template) -> None:
    client = _Recording()
    create_state_table(client, "state")  # type: ignore[arg-type]
    made = client.calls["create_table"]
    table = template["Resources"]["StateTable"]["Properties"]
    # on-demand unless StateTableBilling is provisioned (test_provisioned_capacity.py)
    condition, provisioned, on_demand = table["BillingMode"]["Fn::If"]
    assert (condition, provisioned, on_demand) == (
        "ProvisionedState",
        "PROVISIONED",
        made["BillingMode"],
    )

    def by_name(items: list[dict[str, Any]]) -> dict[str, Any]:
        return {str(item.get("AttributeName") or item["IndexName"]): item for item in items}

    assert made["BillingMode"] == "PAY_PER_REQUEST"
    assert by_name(table["AttributeDefinitions"]) == by_name(made["AttributeDefinitions"])
    assert table["KeySchema"] == made["KeySchema"]
    # No secondary index: an entry moving with every status costs more than the run's writes.
    assert "GlobalSecondaryIndexes" not in table and "GlobalSecondaryIndexes" not in made
    ttl = client.calls["update_time_to_live"]["TimeToLiveSpecification"]
    assert (
        table["TimeToLiveSpecification"] == ttl == {"AttributeName": "expiresAt", "Enabled": True}
    )
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["SSESpecification"] == {"SSEEnabled": True}
    # The run history outlives a deleted stack and a replaced table.
    assert template["Resources"]["StateTable"]["DeletionPolicy"] == "Retain"
    assert template["Resources"]["StateTable"]["UpdateReplacePolicy"] == "Retain"


# -- the ticker ------------------------------------------------------------------------------------


STATE_TABLE = {
    "Fn::If": [
        "GlobalStateHome",
        {"Ref": "GlobalStateTable"},
        {"Fn::If": ["GlobalState", {"Ref": "GlobalTableName"}, {"Ref": "StateTable"}]},
    ]
}
"""STATE_TABLE: the global table where the stack creates it (so the functions wait for it),
its name where another stack did, else the stack's own table (tests/repo/template/
test_global_table.py resolves it for each mode)."""


def test_the_ticker_is_configured_by_reference(template: Template) -> None:
    ticker = template["Resources"]["TickerFunction"]["Properties"]
    assert ticker["Handler"] == "mini_scheduler.handlers.ticker.handler"
    variables = ticker["Environment"]["Variables"]
    assert variables == {
        "STATE_TABLE": STATE_TABLE,
        "ENVIRONMENT_NAME": {"Ref": "EnvironmentName"},
        "KNOWN_ENVIRONMENTS": {"Ref": "KnownEnvironments"},
        "ACTIVE_ENVIRONMENT_STORE": {"Ref": "ActiveEnvironmentStore"},
        "CLAIM_STORE": {"Ref": "ClaimStore"},
        "CRON_FILE": {"Ref": "CronFile"},
        "TICK_LEAD_SECONDS": {"Ref": "TickLeadSeconds"},
        "FANOUT_THRESHOLD": {"Ref": "FanoutThreshold"},
        "FANOUT_SHARDS": {"Ref": "FanoutShards"},
        "EVENT_BUS_NAME": {"Ref": "FailureEventBus"},
        "MONGODB_URI_SECRET_ARN": {
            "Fn::If": ["HasMongoSecret", {"Ref": "MongoUriSecretArn"}, {"Ref": "AWS::NoValue"}]
        },
        "STATE_TABLE_TRANSACTIONS": {"Fn::If": ["GlobalState", "false", {"Ref": "AWS::NoValue"}]},
        "PEER_STATE_TABLES": {
            "Fn::If": ["HasPeers", {"Ref": "PeerRegions"}, {"Ref": "AWS::NoValue"}]
        },
        "STACK_NAME": {"Ref": "AWS::StackName"},
        "AUDIT_LOG_GROUP": {"Ref": "AuditLogGroup"},
        "TARGET_QUEUE_PREFIX": {"Ref": "TargetQueuePrefix"},
        "TARGET_TOPIC_PREFIX": {"Ref": "TargetTopicPrefix"},
        "TARGET_EVENT_BUS_PREFIX": {"Ref": "TargetEventBusPrefix"},
        "TARGET_TASK_DEFINITION_PREFIX": {"Ref": "TargetTaskDefinitionPrefix"},
        "TARGET_WEBHOOK_PREFIX": {"Ref": "TargetWebhookPrefix"},
        "POWERTOOLS_SERVICE_NAME": "mini-scheduler",
        "POWERTOOLS_METRICS_NAMESPACE": _runtime.NAMESPACE,
        "LOG_LEVEL": {"Ref": "LogLevel"},
    }


def test_the_parameter_defaults_are_the_code_s_defaults(template: Template) -> None:
    env = {
        "STATE_TABLE": "state",
        "ENVIRONMENT_NAME": _default(template, "EnvironmentName"),
        "KNOWN_ENVIRONMENTS": _default(template, "KnownEnvironments"),
        "ACTIVE_ENVIRONMENT_STORE": _default(template, "ActiveEnvironmentStore"),
        "CLAIM_STORE": _default(template, "ClaimStore"),
        "CRON_FILE": _default(template, "CronFile"),
        "TICK_LEAD_SECONDS": _default(template, "TickLeadSeconds"),
        "FANOUT_THRESHOLD": _default(template, "FanoutThreshold"),
        "FANOUT_SHARDS": _default(template, "FanoutShards"),
        "EVENT_BUS_NAME": _default(template, "FailureEventBus"),
    }
    assert Settings.from_environment(env) == Settings(state_table="state")
    ticker = template["Resources"]["TickerFunction"]["Properties"]
    assert ticker["MemorySize"] == {"Ref": "TickerMemorySize"}
    memory = template["Globals"]["Function"]["MemorySize"]
    assert _default(template, "TickerMemorySize") == str(memory)
    assert _default(template, "ActiveEnvironmentStore") == f"ssm:{DEFAULT_PARAMETER}"


@pytest.mark.parametrize(
    ("parameter", "value", "valid"),
    [
        ("EnvironmentName", "DR", True),
        ("EnvironmentName", "prod-2_b", True),
        ("EnvironmentName", "two words", False),
        ("EnvironmentName", "", False),
        ("KnownEnvironments", "prod,DR", True),
        ("KnownEnvironments", "blue", True),
        ("KnownEnvironments", "prod, DR", False),
        ("KnownEnvironments", "prod,,DR", False),
        ("KnownEnvironments", "", False),
        ("ActiveEnvironmentStore", "ssm:/mini-scheduler/active-environment", True),
        ("ActiveEnvironmentStore", "dynamodb", True),
        ("ActiveEnvironmentStore", "mongodb", True),
        ("ActiveEnvironmentStore", "ssm:", False),
        ("ActiveEnvironmentStore", "ssm:no-leading-slash", False),
        ("CronFile", "", True),
        ("CronFile", "s3://my-bucket/jobs/cron.yaml", True),
        # the fallback list: the region's own bucket, then the packaged file
        ("CronFile", "s3://my-bucket-us-west-2/cron.yaml,file:cron.yaml", True),
        ("CronFile", "file:cron.yaml", True),
        ("CronFile", "file:/opt/jobs/cron.yaml,file:cron.yaml", True),
        ("CronFile", "s3://my-bucket", False),
        ("CronFile", "cron.yaml", False),
        ("CronFile", "s3://a-bucket/cron.yaml,s3://b-bucket/cron.yaml", False),  # one grant
        ("CronFile", "file:cron.yaml,s3://a-bucket/cron.yaml", False),  # S3 first, if at all
        ("CronFile", "s3://a-bucket/cron.yaml, file:cron.yaml", False),
        ("MongoUriSecretArn", "", True),
        ("MongoUriSecretArn", "arn:aws:secretsmanager:us-east-1:123456789012:secret:m-AbC", True),
        ("TargetFunctionPrefix", "", False),
        ("TargetFunctionPrefix", "*", False),
        ("AlarmEmail", "", True),
        ("AlarmEmail", "ops@example.com", True),
        ("AlarmEmail", "ops", False),
        ("FailureEventBus", "default", True),
        ("FailureEventBus", "ops-alerts_2.prod", True),
        ("FailureEventBus", "", False),
        ("FailureEventBus", "arn:aws:events:us-east-1:123456789012:event-bus/ops", False),
    ],
)
def test_parameter_patterns(template: Template, parameter: str, value: str, valid: bool) -> None:
    pattern = template["Parameters"][parameter]["AllowedPattern"]
    assert bool(re.fullmatch(pattern, value)) is valid
    if parameter == "EnvironmentName":
        from mini_scheduler.config import valid_environment_name

        assert valid_environment_name(value) is valid
    if parameter == "KnownEnvironments" and valid:  # what the template allows, the code takes
        settings = Settings.from_environment({"STATE_TABLE": "s", "KNOWN_ENVIRONMENTS": value})
        assert ",".join(settings.known_environments) == value
    if parameter == "FailureEventBus" and valid:  # what the template allows, the code takes
        settings = Settings.from_environment({"STATE_TABLE": "s", "EVENT_BUS_NAME": value})
        assert settings.event_bus == value


def test_the_schedule_ticks_every_minute_with_its_scheduled_time(template: Template) -> None:
    ticker = template["Resources"]["TickerFunction"]["Properties"]
    (event,) = ticker["Events"].values()
    assert event["Type"] == "ScheduleV2"
    schedule = event["Properties"]
    assert schedule["ScheduleExpression"] == "cron(* * * * ? *)"
    assert json.loads(schedule["Input"]) == {"tick": "<aws.scheduler.scheduled-time>"}
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert schedule["RetryPolicy"]["MaximumRetryAttempts"] >= 1
    assert schedule["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}}
    queue = template["Resources"]["DeadLetterQueue"]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True


def test_the_ticker_outlasts_its_window(template: Template) -> None:
    """A tick may wait until the end of [M + lead, M + lead + 60s): its timeout covers that."""
    timeout = template["Resources"]["TickerFunction"]["Properties"]["Timeout"]
    lead = template["Parameters"]["TickLeadSeconds"]
    assert lead["MinValue"] == 0 and lead["MaxValue"] == 60  # Settings' bounds
    assert timeout >= 60 + lead["MaxValue"] + 20


def test_the_ticker_can_invoke_itself_by_a_constructed_arn(template: Template) -> None:
    ticker = template["Resources"]["TickerFunction"]["Properties"]
    assert ticker["FunctionName"] == {"Fn::Sub": "${AWS::StackName}-ticker"}
    role = template["Resources"]["TickerRole"]["Properties"]["Policies"][0]["PolicyDocument"]
    (fan_out,) = [s for s in cfn.statements(role) if s.get("Sid") == "FanOut"]
    assert fan_out["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}"
        ":function:${AWS::StackName}-ticker"
    }
    assert "TickerFunction" not in set(cfn.references(template["Resources"]["TickerRole"]))


def test_the_stack_does_not_own_the_active_environment(template: Template) -> None:
    """A deployment must never undo a failover: no SSM parameter (nor anything that writes one)."""
    kinds = {resource["Type"] for resource in template["Resources"].values()}
    assert "AWS::SSM::Parameter" not in kinds
    assert not any(
        kind.startswith("Custom::") or kind == "AWS::CloudFormation::CustomResource"
        for kind in kinds
    )


def test_the_outputs_the_cli_reads(template: Template) -> None:
    """`mini-scheduler status|failover|run --stack NAME` finds the stack's parts in its outputs."""
    from mini_scheduler.cli import where

    for output in (
        "StateTableName",
        "TickerFunctionName",
        "ActiveEnvironmentParameter",
        "EnvironmentName",
        "CronFileLocations",
    ):
        assert f'"{output}"' in Path(where.__file__).read_text(encoding="utf-8"), output
        assert output in template["Outputs"], output


# -- logs, alarms, dashboard -----------------------------------------------------------------------


def test_every_function_logs_to_a_log_group_with_retention(template: Template) -> None:
    for name in FUNCTIONS:
        function = template["Resources"][name]["Properties"]
        group = function["LoggingConfig"]["LogGroup"]["Ref"]
        properties = template["Resources"][group]["Properties"]
        assert properties["RetentionInDays"] == {"Ref": "LogRetentionInDays"}
        # The log group is Lambda's default name for the function (so `sam logs` finds it).
        name_of_function = function["FunctionName"]["Fn::Sub"]
        assert properties["LogGroupName"] == {"Fn::Sub": f"/aws/lambda/{name_of_function}"}


def test_the_recorder_leaves_platform_lines_out_and_keeps_its_metrics(template: Template) -> None:
    """One recorder invocation a run: Lambda's JSON log format lets SystemLogLevel drop START,
    END and REPORT. Lambda files an EMF line (no ``level``) under INFO, so the application
    filter must never be above INFO, whatever LogLevel says; LOG_LEVEL filters the rest in the
    handler (handlers/_runtime.py log_level)."""
    config = template["Resources"]["RecorderFunction"]["Properties"]["LoggingConfig"]
    assert config["LogFormat"] == "JSON"
    assert config["SystemLogLevel"] == {"Ref": "RecorderPlatformLogs"}
    assert _default(template, "RecorderPlatformLogs") == "WARN"
    condition, when_true, when_false = config["ApplicationLogLevel"]["Fn::If"]
    assert template["Conditions"][condition] == {"Fn::Equals": [{"Ref": "LogLevel"}, "DEBUG"]}
    assert (when_true, when_false) == ("DEBUG", "INFO")
    # the ticker keeps Lambda's text format: one invocation a minute, its REPORT worth reading
    assert "LogFormat" not in template["Resources"]["TickerFunction"]["Properties"]["LoggingConfig"]


def _dashboard(template: Template) -> dict[str, Any]:
    """The dashboard's body as JSON, each ``${...}`` replaced by its name (or ``Dims``' value)."""
    body, variables = template["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    body = body.replace("${Dims}", variables["Dims"]["Fn::Sub"])
    parsed: dict[str, Any] = json.loads(re.sub(r"\$\{([\w:.]+)\}", r"\1", body))
    return parsed


def _dashboard_metrics(template: Template) -> list[tuple[str, str, dict[str, str]]]:
    """(namespace, metric, dimensions) of every line, with the "." and "..." shorthands undone."""
    found = []
    for widget in _dashboard(template)["widgets"]:
        previous: list[Any] = []
        for line in widget.get("properties", {}).get("metrics", []):
            fields = [f for f in line if not isinstance(f, dict)]
            if fields[:1] == ["..."]:
                fields = previous[: len(previous) - len(fields) + 1] + fields[1:]
            fields = [previous[i] if f == "." else f for i, f in enumerate(fields)]
            previous = fields
            found.append((fields[0], fields[1], dict(zip(fields[2::2], fields[3::2], strict=True))))
    return found


def _alarm_metrics(template: Template) -> list[dict[str, Any]]:
    alarms = [a["Properties"] for a in _resources(template, "AWS::CloudWatch::Alarm").values()]
    return [a for a in alarms if "MetricName" in a] + [
        query["MetricStat"]["Metric"]
        for alarm in alarms
        for query in alarm.get("Metrics", [])
        if "MetricStat" in query
    ]


def _code_metrics() -> set[str]:
    names = {
        m.ACTIVE_ENVIRONMENT_UNKNOWN,
        m.FIRINGS_CLAIMED,
        m.FIRINGS_DISPATCHED,
        m.DISPATCH_ERRORS,
        m.CLAIM_ERRORS,
        m.FIRINGS_HELD,
        m.RUNS_SUCCEEDED,
        m.RUNS_FAILED,
        m.RUNS_TIMED_OUT,
        m.RETRIES_DEFERRED,
        m.RUNS_FAILED_FINAL,
        m.JOBS_PAUSED,
        m.ALERTS_UNPUBLISHED,
        m.REGIONS_NOT_IN_STEP,
        m.CRON_ENTRIES_SKIPPED,
        m.TICK_LAG,
        m.TICKS,
    }
    reasons = [*(str(reason) for reason in SkipReason), "standby", "paused", "lost_claim"]
    return names | {m.skipped(reason) for reason in reasons}


POWERTOOLS_DIMENSIONS = {
    "Environment": "EnvironmentName",
    "Region": "AWS::Region",
    "service": _runtime.powertools_metrics.service,
}


def test_the_dashboard_shows_every_metric_the_code_writes(template: Template) -> None:
    ours = [line for line in _dashboard_metrics(template) if line[0] == _runtime.NAMESPACE]
    assert {name for _, name, _ in ours} == _code_metrics()
    for _, _, dimensions in ours:
        assert dimensions == POWERTOOLS_DIMENSIONS


def test_the_alarms_name_metrics_the_code_writes(template: Template) -> None:
    ours = [a for a in _alarm_metrics(template) if a["Namespace"] == _runtime.NAMESPACE]
    assert {a["MetricName"] for a in ours} <= _code_metrics()


def test_the_alarms_use_the_dimensions_powertools_writes(template: Template) -> None:
    """Powertools adds ``service`` to the default dimensions the handlers set (set_dimensions)."""
    expected = [
        {"Name": "Environment", "Value": {"Ref": "EnvironmentName"}},
        {"Name": "Region", "Value": {"Ref": "AWS::Region"}},
        {"Name": "service", "Value": _runtime.powertools_metrics.service},
    ]
    ours = [a for a in _alarm_metrics(template) if a["Namespace"] == _runtime.NAMESPACE]
    assert len(ours) >= 3
    for alarm in ours:
        assert alarm["Dimensions"] == expected


def test_the_alarms_required_by_the_design(template: Template) -> None:
    alarms = {
        (a["Properties"].get("Namespace"), a["Properties"].get("MetricName")): a["Properties"]
        for a in _resources(template, "AWS::CloudWatch::Alarm").values()
    }
    assert alarms[("AWS/Lambda", "Errors")]["Dimensions"][0]["Value"] == {"Ref": "TickerFunction"}
    no_tick = alarms[(_runtime.NAMESPACE, m.TICKS)]
    assert no_tick["TreatMissingData"] == "breaching"
    assert no_tick["Period"] * no_tick["EvaluationPeriods"] == 180
    assert (_runtime.NAMESPACE, m.DISPATCH_ERRORS) in alarms
    assert ("AWS/SQS", "ApproximateNumberOfMessagesVisible") in alarms
    # A failure no attempt follows (test_the_runs_failed_alarm_names_the_job)
    assert template["Resources"]["RunsFailedAlarm"]["Type"] == "AWS::CloudWatch::Alarm"
    assert (_runtime.NAMESPACE, m.ALERTS_UNPUBLISHED) in alarms
    # an entry skipped at load: a gauge written every tick, so its Maximum
    skipped = alarms[(_runtime.NAMESPACE, m.CRON_ENTRIES_SKIPPED)]
    assert (skipped["Statistic"], skipped["Threshold"]) == ("Maximum", 1)
    for alarm in alarms.values():
        assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]
    topic = template["Resources"]["AlarmTopic"]["Properties"]
    assert topic["KmsMasterKeyId"] == {"Ref": "AlarmKey"}


def test_the_runs_failed_alarm_names_the_job(template: Template) -> None:
    """A failure no attempt follows, not each failed attempt (a retry that mends it needs
    nobody), counted by job: a Metrics Insights query grouped by Job, each job a contributor of
    its own, so the alarm's notification names the job (issue 15)."""
    alarm = template["Resources"]["RunsFailedAlarm"]["Properties"]
    (query,) = alarm["Metrics"]
    expression = " ".join(query["Expression"]["Fn::Sub"].split())
    assert expression == (
        f'SELECT SUM({m.RUNS_FAILED_FINAL}) FROM SCHEMA("{_runtime.NAMESPACE}", Environment, '
        f"{m.JOB}, Region, service) WHERE Environment = '${{EnvironmentName}}' AND Region = "
        f"'${{AWS::Region}}' AND service = '{_runtime.powertools_metrics.service}' "
        f"GROUP BY {m.JOB} ORDER BY SUM() DESC"
    )
    assert (query["Period"], query["ReturnData"]) == (300, True)
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (
        1,
        "GreaterThanOrEqualToThreshold",
    )
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]


# -- failure events -------------------------------------------------------------------------------


def test_an_active_environment_no_stack_has_rings_at_once(template: Template) -> None:
    """Each tick writes ActiveEnvironmentUnknown, 0 or 1: the name it read is not this region's
    nor one of KnownEnvironments, so no region is active (issue 15). The ticker knows the list
    the stack outputs, and the CLI reads it there."""
    alarm = template["Resources"]["ActiveEnvironmentUnknownAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"]) == (
        _runtime.NAMESPACE,
        m.ACTIVE_ENVIRONMENT_UNKNOWN,
    )
    assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == ("Maximum", 60, 1)
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (
        1,
        "GreaterThanOrEqualToThreshold",
    )
    assert alarm["TreatMissingData"] == "notBreaching"  # a fail-closed tick writes none
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]
    ticker = template["Resources"]["TickerFunction"]["Properties"]["Environment"]["Variables"]
    assert ticker["KNOWN_ENVIRONMENTS"] == {"Ref": "KnownEnvironments"}
    # mini-scheduler status|failover --stack read it (tests/unit/cli/test_operator.py)
    assert template["Outputs"]["KnownEnvironments"]["Value"] == {"Ref": "KnownEnvironments"}


def test_failure_events_go_to_the_bus_the_template_names_and_on_to_the_alarm_topic(
    template: Template,
) -> None:
    """Both functions publish to FailureEventBus; the stack's rule on that bus sends what the
    code publishes (its source and detail types) to the alarm topic."""
    resources = template["Resources"]
    for function in ("TickerFunction", "RecorderFunction"):
        variables = resources[function]["Properties"]["Environment"]["Variables"]
        assert variables["EVENT_BUS_NAME"] == {"Ref": "FailureEventBus"}, function
    rules = _resources(template, "AWS::Events::Rule")
    rule = rules["FailureEventsRule"]["Properties"]
    assert rule["EventBusName"] == {"Ref": "FailureEventBus"}
    assert rule["EventPattern"] == {
        "source": [alerts.SOURCE],
        "detail-type": [alerts.RUN_FAILED, alerts.JOB_PAUSED],
    }
    assert rule["State"] == "ENABLED"
    assert [target["Arn"] for target in rule["Targets"]] == [{"Ref": "AlarmTopic"}]


def test_the_alarm_topic_takes_the_stack_s_alarms_and_its_rule_only(template: Template) -> None:
    """A topic policy replaces SNS's default one: the account administers the topic, and the
    two services that publish to it are each held to this stack's own source."""
    (policy,) = _resources(template, "AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": "AlarmTopic"}]
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["AccountAdministers"]["Principal"] == {
        "AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}
    }
    alarms = statements["CloudWatchAlarmsPublish"]
    assert alarms["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert alarms["Action"] == "sns:Publish"
    (alarm_names,) = alarms["Condition"]["ArnLike"].values()
    assert alarm_names["Fn::Sub"].endswith(":alarm:${AWS::StackName}-*")
    for alarm in _resources(template, "AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmName"]["Fn::Sub"].startswith("${AWS::StackName}-")
    events = statements["FailureEventsPublish"]
    assert events["Principal"] == {"Service": "events.amazonaws.com"}
    assert events["Action"] == "sns:Publish"
    assert events["Condition"] == {
        "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["FailureEventsRule", "Arn"]}}
    }
    for statement in statements.values():
        assert statement["Resource"] == {"Ref": "AlarmTopic"}


# -- the sample targets ----------------------------------------------------------------------------


def test_the_sample_cron_file_names_the_sample_targets(template: Template) -> None:
    cron = load((ROOT / "samplecode" / "cron.yaml").read_text(encoding="utf-8"))
    assert cron.ok, cron.lines
    services = {job.target.service for job in cron.jobs}
    resources = template["Resources"]
    deployed = {
        _sub_defaults(template, resources["SampleReportFunction"]["Properties"]["FunctionName"]),
        _sub_defaults(template, resources["SampleHeartbeatFunction"]["Properties"]["FunctionName"]),
        "flow://" + _sub_defaults(template, resources["SampleCleanupFlow"]["Properties"]["Name"]),
    }
    assert services == deployed


COMPLETION_QUEUE = {"Fn::GetAtt": ["CompletionQueue", "Arn"]}


@pytest.mark.parametrize("name", ["SampleReportFunction", "SampleHeartbeatFunction"])
def test_a_sample_function_hands_its_end_to_the_completion_queue(
    template: Template, name: str
) -> None:
    function = template["Resources"][name]
    destinations = function["Properties"]["EventInvokeConfig"]["DestinationConfig"]
    assert destinations == {
        "OnSuccess": {"Type": "SQS", "Destination": COMPLETION_QUEUE},
        "OnFailure": {"Type": "SQS", "Destination": COMPLETION_QUEUE},
    }
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    document = template["Resources"][role]["Properties"]["Policies"][0]["PolicyDocument"]
    assert {
        "Sid": "Completions",
        "Effect": "Allow",
        "Action": "sqs:SendMessage",
        "Resource": COMPLETION_QUEUE,
    } in cfn.statements(document)
    # nothing invokes the recorder any more: no permission on it
    assert _resources(template, "AWS::Lambda::Permission") == {}


def test_the_recorder_reads_the_completion_queue_in_batches(template: Template) -> None:
    """An event source mapping: at least 10 ends an invocation, a window of a few seconds, and
    a partial batch response (handlers/recorder.py answers batchItemFailures). The queue hides a
    message 6 times the recorder's timeout (AWS's advice for an event source), and sends what
    failed 5 times to its redrive queue, whose alarm rings."""
    recorder = template["Resources"]["RecorderFunction"]["Properties"]
    assert recorder["Handler"] == "mini_scheduler.handlers.recorder.handler"
    (event,) = recorder["Events"].values()
    assert event["Type"] == "SQS"
    mapping = event["Properties"]
    assert mapping["Queue"] == COMPLETION_QUEUE
    assert mapping["BatchSize"] >= 10
    assert 1 <= mapping["MaximumBatchingWindowInSeconds"] <= 10
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    queue = template["Resources"]["CompletionQueue"]["Properties"]
    assert queue["VisibilityTimeout"] >= 6 * recorder["Timeout"]
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["CompletionDeadLetterQueue", "Arn"]},
        "maxReceiveCount": 5,
    }
    dead = template["Resources"]["CompletionDeadLetterQueue"]["Properties"]
    assert dead["SqsManagedSseEnabled"] is True
    assert dead["MessageRetentionPeriod"] > queue["MessageRetentionPeriod"]
    alarm = template["Resources"]["CompletionDeadLettersAlarm"]["Properties"]
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["CompletionDeadLetterQueue", "QueueName"]}}
    ]
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]
    # your targets' destinations name it (docs/deploy.md, Wire your own targets)
    assert template["Outputs"]["CompletionQueueArn"]["Value"] == COMPLETION_QUEUE


def test_the_completion_queue_hears_every_flow_the_ticker_may_start(template: Template) -> None:
    rule = template["Resources"]["FlowEndedRule"]
    assert rule["Type"] == "AWS::Events::Rule"
    properties = rule["Properties"]
    assert properties["State"] == "ENABLED"
    (target,) = properties["Targets"]
    assert target["Arn"] == COMPLETION_QUEUE
    assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1
    pattern = properties["EventPattern"]
    assert pattern["source"] == ["aws.states"]
    assert pattern["detail-type"] == ["Step Functions Execution Status Change"]
    # every end, and a redrive's RUNNING (a first start is not sent: it changes nothing)
    ends, redrives = pattern["detail"]["$or"]
    assert sorted(ends["status"]) == ["ABORTED", "FAILED", "SUCCEEDED", "TIMED_OUT"]
    assert redrives == {"status": ["RUNNING"], "redriveCount": [{"numeric": [">", 0]}]}
    (prefix,) = pattern["detail"]["stateMachineArn"]
    assert prefix["prefix"]["Fn::Sub"].endswith(":stateMachine:${TargetStateMachinePrefix}")
    # ...the same state machines the ticker may start.
    role = template["Resources"]["TickerRole"]["Properties"]["Policies"][0]["PolicyDocument"]
    (flows,) = [s for s in cfn.statements(role) if s.get("Sid") == "DispatchToFlows"]
    assert flows["Resource"]["Fn::Sub"] == prefix["prefix"]["Fn::Sub"] + "*"


def test_the_sample_flow_is_standard_and_substitutes_what_it_uses(template: Template) -> None:
    flow = template["Resources"]["SampleCleanupFlow"]["Properties"]
    assert flow["Type"] == "STANDARD"
    definition = (ROOT / flow["DefinitionUri"]).read_text(encoding="utf-8")
    json.loads(definition)
    used = set(re.findall(r"\$\{(\w+)\}", definition))
    assert used == set(flow["DefinitionSubstitutions"])


def test_the_report_sample_has_its_idempotency_table(template: Template) -> None:
    report = template["Resources"]["SampleReportFunction"]["Properties"]
    assert report["Environment"]["Variables"]["IDEMPOTENCY_TABLE"] == {"Ref": "IdempotencyTable"}
    table = template["Resources"]["IdempotencyTable"]["Properties"]
    # Powertools' DynamoDBPersistenceLayer defaults: key "id", expiry "expiration".
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}


# -- two regions -----------------------------------------------------------------------------------


def test_samconfig_deploys_prod_and_dr_to_two_regions() -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    expected = {
        "prod": ("us-east-1", "EnvironmentName=prod PeerRegions=us-west-2"),
        "dr": ("us-west-2", "EnvironmentName=DR PeerRegions=us-east-1"),
    }
    for env, (region, overrides) in expected.items():
        deploy = config[env]["deploy"]["parameters"]
        assert config[env]["global"]["parameters"]["stack_name"] == "mini-scheduler"
        assert deploy["region"] == region
        assert deploy["parameter_overrides"] == overrides
        assert deploy["capabilities"] == "CAPABILITY_IAM"
    # A cached build would keep a ticker's old cron file (it is not part of the code's hash).
    assert config["default"]["build"]["parameters"]["cached"] is False


def test_the_builds_install_wheels_for_the_functions_architecture(template: Template) -> None:
    """The makefile builds install binary wheels by platform tag, not by the template: the two
    must name the same machine, or a C extension (PyYAML's, pymongo's) fails to import."""
    (architecture,) = template["Globals"]["Function"]["Architectures"]
    machine = {"arm64": "aarch64", "x86_64": "x86_64"}[architecture]
    for function in template["Resources"].values():
        assert "Architectures" not in function.get("Properties", {})
    for makefile in (ROOT / "src" / "Makefile", ROOT / "samplecode/functions/report/Makefile"):
        platforms = re.findall(r"--platform (\S+)", makefile.read_text())
        assert platforms and all(p.endswith(f"_{machine}") for p in platforms), makefile
