"""Least privilege: no IAM statement broader than needed, in template.yaml and in what the SAM
transform makes of it (the roles it generates for the schedule and the flow included)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.repo.template import cfn

Template = dict[str, Any]

# A wildcard in a resource is allowed only where the name is a prefix by design (the targets), as
# the qualifier (version or alias) of one named function, or for the peer regions' state tables
# and stacks (PeerRegions): any region, but only this stack's namesake there and the table it
# made (CloudFormation names it <stack>-StateTable-<random>).
_PEER_TABLES = (
    "arn:${AWS::Partition}:dynamodb:*:${AWS::AccountId}:table/${AWS::StackName}-StateTable-*"
)
_PEER_STACKS = "arn:${AWS::Partition}:cloudformation:*:${AWS::AccountId}:stack/${AWS::StackName}/*"
_ALLOWED_WILDCARD = re.compile(
    r"\$\{Target(Function|StateMachine|Queue|Topic|EventBus|TaskDefinition)Prefix\}\*$"
    r"|^<[A-Za-z]+\.Arn>:\*$"
    f"|^{re.escape(_PEER_TABLES)}$|^{re.escape(_PEER_STACKS)}$"
    # a webhook's secrets and parameters, under the names the docs give them (targets.md); the
    # tasks tagged as RunTask creates them (ecs:CreateAction RunTask); the APIs a webhook with
    # auth: iam signs for (its URL names no API id the template could know)
    r"|:secret:mini-scheduler/\*$|:parameter/mini-scheduler/\*$|:task/\*$"
    r"|^arn:\$\{AWS::Partition\}:execute-api:\$\{AWS::Region\}:\$\{AWS::AccountId\}:\*$"
)
_ANY_RESOURCE = {
    "TickerRole FindTasks": "ecs:ListTasks by startedBy and ecs:DescribeTaskDefinition take no "
    "narrower resource",
}


def _render(resource: Any) -> str:
    """A resource as text: ``<X.Arn>`` for a GetAtt, ``<Ref X>`` for a Ref, a Sub's text."""
    if isinstance(resource, str):
        return resource
    if "Fn::GetAtt" in resource:
        logical, attribute = resource["Fn::GetAtt"]
        return f"<{logical}.{attribute}>"
    if "Ref" in resource:
        return f"<Ref {resource['Ref']}>"
    if "Fn::Sub" in resource:
        value = resource["Fn::Sub"]
        text, variables = (value, {}) if isinstance(value, str) else value
        for name, inner in variables.items():
            text = text.replace("${" + name + "}", f"<{name}:{_render(inner)}>")
        return re.sub(r"\$\{([A-Za-z]+)\.Arn\}", r"<\1.Arn>", text)
    if "Fn::Select" in resource or "Fn::Join" in resource:
        return str(resource)
    if "Fn::If" in resource:  # a resource that follows a condition (StateTableMode)
        condition, when_true, when_false = resource["Fn::If"]
        return f"<if {condition}: {_render(when_true)} else {_render(when_false)}>"
    raise AssertionError(f"unexpected resource form {resource!r}")


def _identity_policies(template: Template) -> Iterator[tuple[str, dict[str, Any]]]:
    """(role or policy, statement) of every identity policy in the template."""
    for name, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::IAM::Role":
            for policy in properties.get("Policies", []):
                for statement in cfn.statements(policy["PolicyDocument"]):
                    yield name, statement
        elif resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            for statement in cfn.statements(properties["PolicyDocument"]):
                yield name, statement
        elif resource["Type"] == "AWS::Serverless::Function":
            for policy in properties.get("Policies", []):
                assert isinstance(policy, dict) and "Statement" in policy, (
                    f"{name}: name a role with its statements (policy templates and managed "
                    f"policies are broader than a scheduler needs): {policy!r}"
                )
                for statement in cfn.statements(policy):
                    yield name, statement
        elif resource["Type"] == "AWS::Serverless::StateMachine":
            for policy in properties.get("Policies", []):
                assert isinstance(policy, dict) and "Statement" in policy, f"{name}: {policy!r}"
                for statement in cfn.statements(policy):
                    yield name, statement


def _branches(resources: Any) -> Iterator[Any]:
    """Each resource a statement may name: both branches of an ``Fn::If``."""
    for resource in cfn.as_list(resources):
        if isinstance(resource, dict) and "Fn::If" in resource:
            for branch in resource["Fn::If"][1:]:
                yield from _branches(branch)
        else:
            yield resource


def _check(template: Template) -> list[str]:
    problems = []
    for name, statement in _identity_policies(template):
        where = f"{name} {statement.get('Sid', '')}".strip()
        problems += [
            f"{where}: {key} grants everything else"
            for key in ("NotAction", "NotResource", "NotPrincipal")
            if key in statement
        ]
        if statement.get("Effect") != "Allow":
            continue
        problems += [
            f"{where}: action wildcard {action}"
            for action in cfn.as_list(statement.get("Action", []))
            if "*" in action
        ]
        for resource in _branches(statement.get("Resource", [])):
            text = _render(resource)
            if text == "*":
                if where not in _ANY_RESOURCE:
                    problems.append(f"{where}: Resource * for {statement.get('Action')}")
            elif "*" in text and not _ALLOWED_WILDCARD.search(text):
                problems.append(f"{where}: wildcard resource {text}")
    for name, resource in template["Resources"].items():
        if resource["Type"] == "AWS::IAM::Role":
            managed = resource["Properties"].get("ManagedPolicyArns", [])
            if managed:
                problems.append(f"{name}: managed policies {managed} (their resources are *)")
    return problems


def test_the_template_grants_nothing_broader_than_needed(template: Template) -> None:
    assert _check(template) == []


def test_the_transformed_template_grants_nothing_broader_than_needed(translated: Template) -> None:
    """The SAM transform's own roles (the schedule's, the flow's) are held to the same rules."""
    roles = [k for k, r in translated["Resources"].items() if r["Type"] == "AWS::IAM::Role"]
    assert {"TickerFunctionTickRole", "SampleCleanupFlowRole"} <= set(roles)
    assert _check(translated) == []


def test_the_check_finds_broad_statements(template: Template) -> None:
    """The check above is not vacuous: each kind of broad statement is caught."""
    import copy

    broad = copy.deepcopy(template)
    document = broad["Resources"]["RecorderRole"]["Properties"]["Policies"][0]["PolicyDocument"]
    document["Statement"] += [
        {
            "Effect": "Allow",
            "Action": "dynamodb:*",
            "Resource": {"Fn::GetAtt": ["StateTable", "Arn"]},
        },
        {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"},
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bucket/*"},
        {"Effect": "Allow", "NotAction": "iam:*", "Resource": "arn:aws:s3:::bucket"},
    ]
    broad["Resources"]["TickerRole"]["Properties"]["ManagedPolicyArns"] = [
        "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
    ]
    problems = _check(broad)
    assert len(problems) == 5, problems


def _grants(template: Template, role: str) -> dict[str, tuple[list[str], list[str]]]:
    document = template["Resources"][role]["Properties"]["Policies"][0]["PolicyDocument"]
    return {
        s["Sid"]: (
            sorted(cfn.as_list(s["Action"])),
            [_render(r) for r in cfn.as_list(s["Resource"])],
        )
        for s in cfn.statements(document)
    }


FUNCTION_PREFIX = (
    "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}"
    ":function:${TargetFunctionPrefix}*"
)
FLOW_PREFIX = (
    "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}"
    ":stateMachine:${TargetStateMachinePrefix}*"
)


QUEUE_PREFIX = "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${TargetQueuePrefix}*"


STATE_TABLE = (
    "<if GlobalState: arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}"
    ":table/${GlobalTableName} else <StateTable.Arn>>"
)
"""The state table: this region's replica of the global table (StateTableMode global: this
region's ticker and recorder use no other), or the stack's own."""


TICKER_TABLE_ACTIONS = [  # on its own table, and on the peers' (PeerRegions) alike
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PartiQLInsert",
    "dynamodb:PartiQLUpdate",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
]


def test_the_ticker_role_is_exactly_what_the_ticker_calls(template: Template) -> None:
    """Every call the ticker makes (claims/dynamodb*.py, environment/, dispatch/,
    jobs/locations.py, mongo.py) and nothing else. DynamoDB authorises BatchExecuteStatement per
    statement: there is no dynamodb:BatchExecuteStatement action, its INSERT and UPDATE need
    PartiQLInsert and PartiQLUpdate. No index: the sweep reads watch items."""
    assert _grants(template, "TickerRole") == {
        "Logs": (["logs:CreateLogStream", "logs:PutLogEvents"], ["<TickerLogGroup.Arn>"]),
        "Audit": (["logs:CreateLogStream", "logs:PutLogEvents"], ["<AuditLogGroup.Arn>"]),
        "StateTable": (
            TICKER_TABLE_ACTIONS,
            [STATE_TABLE],
        ),
        "DispatchToFunctions": (["lambda:InvokeFunction"], [FUNCTION_PREFIX]),
        "DispatchToFlows": (["states:StartExecution"], [FLOW_PREFIX]),
        "FanOut": (
            ["lambda:InvokeFunction"],
            [
                "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}"
                ":function:${AWS::StackName}-ticker"
            ],
        ),
        "FailureEvents": (
            ["events:PutEvents"],
            [
                "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}"
                ":event-bus/${FailureEventBus}"
            ],
        ),
        "ActiveEnvironment": (
            ["ssm:GetParameter", "ssm:PutParameter"],
            [
                "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter"
                "<Name:{'Fn::Select': [1, {'Fn::Split': [':', "
                "{'Fn::Sub': '${ActiveEnvironmentStore}:'}]}]}>"
            ],
        ),
        "CronFile": (
            ["s3:GetObject"],
            [
                "arn:${AWS::Partition}:s3:::<Object:{'Fn::Select': [0, {'Fn::Split': [',', "
                "{'Fn::Select': [1, {'Fn::Split': ['s3://', {'Fn::Sub': '${CronFile}s3://'}]}]}]}]}>"
            ],
        ),
        "CronFileBucket": (
            ["s3:ListBucket"],
            [
                "arn:${AWS::Partition}:s3:::<Bucket:{'Fn::Select': [2, {'Fn::Split': "
                "['/', {'Fn::Sub': '${CronFile}///'}]}]}>"
            ],
        ),
        "MongoUri": (["secretsmanager:GetSecretValue"], ["<Ref MongoUriSecretArn>"]),
        "PeerStateTables": (
            TICKER_TABLE_ACTIONS,
            [_PEER_TABLES],
        ),
        "PeerStacks": (["cloudformation:DescribeStacks"], [_PEER_STACKS]),
        # The other kinds of target, each only while its prefix parameter is set
        "DispatchToQueues": (["sqs:GetQueueUrl", "sqs:SendMessage"], [QUEUE_PREFIX]),
        "DispatchToTopics": (
            ["sns:Publish"],
            ["arn:${AWS::Partition}:sns:${AWS::Region}:${AWS::AccountId}:${TargetTopicPrefix}*"],
        ),
        "DispatchToBuses": (
            ["events:PutEvents"],
            [
                "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}"
                ":event-bus/${TargetEventBusPrefix}*"
            ],
        ),
        "DispatchToTasks": (
            ["ecs:RunTask"],
            [
                "arn:${AWS::Partition}:ecs:${AWS::Region}:${AWS::AccountId}"
                ":task-definition/${TargetTaskDefinitionPrefix}*"
            ],
        ),
        "TagTasksAtLaunch": (
            ["ecs:TagResource"],
            ["arn:${AWS::Partition}:ecs:${AWS::Region}:${AWS::AccountId}:task/*"],
        ),
        "FindTasks": (["ecs:DescribeTaskDefinition", "ecs:ListTasks"], ["*"]),
        "PassTaskRoles": (
            ["iam:PassRole"],
            ["arn:${AWS::Partition}:iam::${AWS::AccountId}:role/${TargetTaskDefinitionPrefix}*"],
        ),
        "WebhookSecrets": (
            ["secretsmanager:GetSecretValue"],
            [
                "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}"
                ":secret:mini-scheduler/*"
            ],
        ),
        "WebhookParameters": (
            ["ssm:GetParameter"],
            [
                "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}"
                ":parameter/mini-scheduler/*"
            ],
        ),
        "SignedWebhooks": (
            ["execute-api:Invoke", "lambda:InvokeFunctionUrl"],
            [
                "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:*",
                FUNCTION_PREFIX,
            ],
        ),
    }


def test_the_recorder_role_only_closes_runs(template: Template) -> None:
    """It closes runs and releases slots (UpdateItem), reads a run and the marks item of its
    claim batch (BatchGetItem: when it started), watches a redriven run it
    reopened (PutItem of a watch item), and defers a failed run's retry or drops it when the run
    is redriven (BatchWriteItem). A final failure is an event (PutEvents); for a job with
    pause_after_failures it reads the job's history and the pauses (Query), and may pause it
    (PutItem). A retry due in the minute of its failure wakes the ticker (InvokeFunction of the
    stack's ticker only). Its Completions event source mapping reads the completion queue with
    this role (receive, delete, the queue's attributes), that queue only."""
    assert _grants(template, "RecorderRole") == {
        "Logs": (["logs:CreateLogStream", "logs:PutLogEvents"], ["<RecorderLogGroup.Arn>"]),
        "StateTable": (
            [
                "dynamodb:BatchGetItem",
                "dynamodb:BatchWriteItem",
                "dynamodb:GetItem",
                "dynamodb:PutItem",
                "dynamodb:Query",
                "dynamodb:UpdateItem",
            ],
            [STATE_TABLE],
        ),
        "ReadFlowInput": (
            ["states:DescribeExecution"],
            [
                "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}"
                ":execution:${TargetStateMachinePrefix}*"
            ],
        ),
        "FailedEvents": (["sqs:SendMessage"], ["<DeadLetterQueue.Arn>"]),
        "DeadLetters": (["sqs:GetQueueUrl", "sqs:SendMessage"], [QUEUE_PREFIX]),
        "Completions": (
            ["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"],
            ["<CompletionQueue.Arn>"],
        ),
        "FailureEvents": (
            ["events:PutEvents"],
            [
                "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}"
                ":event-bus/${FailureEventBus}"
            ],
        ),
        "MongoUri": (["secretsmanager:GetSecretValue"], ["<Ref MongoUriSecretArn>"]),
        "WakeTicker": (
            ["lambda:InvokeFunction"],
            [
                "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}"
                ":function:${AWS::StackName}-ticker"
            ],
        ),
        "PeerStateTables": (["dynamodb:Query"], [_PEER_TABLES]),  # the failures in a row there
        "PeerStacks": (["cloudformation:DescribeStacks"], [_PEER_STACKS]),
    }


@pytest.mark.parametrize(
    ("sid", "condition"),
    [
        ("ActiveEnvironment", "UsesSsmStore"),
        ("CronFile", "HasS3CronFile"),
        ("CronFileBucket", "HasS3CronFile"),
        ("MongoUri", "HasMongoSecret"),
        ("PeerStateTables", "HasPeers"),
        ("PeerStacks", "HasPeers"),
    ],
)
def test_optional_grants_exist_only_when_needed(
    template: Template, sid: str, condition: str
) -> None:
    document = template["Resources"]["TickerRole"]["Properties"]["Policies"][0]["PolicyDocument"]
    (conditional,) = [
        s["Fn::If"] for s in document["Statement"] if "Fn::If" in s and s["Fn::If"][1]["Sid"] == sid
    ]
    assert conditional[0] == condition
    assert conditional[2] == {"Ref": "AWS::NoValue"}


def test_the_alarm_key_admits_only_the_account_cloudwatch_and_eventbridge(
    template: Template,
) -> None:
    """A key policy's Resource "*" means the key itself; who may use it is what matters: the
    account, and the two services that publish to the encrypted alarm topic (the alarms, and
    the FailureEventsRule), each for this account only."""
    policy = template["Resources"]["AlarmKey"]["Properties"]["KeyPolicy"]
    principals = [s["Principal"] for s in policy["Statement"]]
    assert principals == [
        {"AWS": {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"}},
        {"Service": "cloudwatch.amazonaws.com"},
        {"Service": "events.amazonaws.com"},
    ]
    for service in policy["Statement"][1:]:
        assert sorted(service["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]
        assert service["Condition"] == {
            "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
        }


def test_resource_policies_name_their_callers(translated: Template) -> None:
    """Each permission on a function names one caller: a role, or a service with its source."""
    for name, resource in translated["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Permission":
            continue
        properties = resource["Properties"]
        principal = properties["Principal"]
        if isinstance(principal, str) and principal.endswith(".amazonaws.com"):
            assert "SourceArn" in properties, name
        else:
            assert principal.get("Fn::GetAtt", [""])[0].endswith("Role"), name
        assert properties["Action"] == "lambda:InvokeFunction", name


@pytest.mark.parametrize("role", ["SampleReportRole", "SampleHeartbeatRole"])
def test_a_sample_target_may_send_its_end_to_the_completion_queue_only(
    template: Template, role: str
) -> None:
    """Lambda sends a function's destination record with the function's own role: the sample
    targets may send to the completion queue, and invoke nothing."""
    grants = _grants(template, role)
    assert grants["Completions"] == (["sqs:SendMessage"], ["<CompletionQueue.Arn>"])
    assert not any(
        action.startswith("lambda:") for actions, _ in grants.values() for action in actions
    )


def test_the_completion_queue_takes_the_stack_s_rules_events_only(template: Template) -> None:
    """The queue's resource policy lets EventBridge send to it on behalf of the stack's
    FlowEndedRule and (with ECS targets on) TaskStoppedRule alone (each ARN as the source): no
    other rule, no other principal. The targets' destinations need no statement there: their
    roles grant it (same account)."""
    (policy,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::SQS::QueuePolicy"
    ]
    assert policy["Queues"] == [{"Ref": "CompletionQueue"}]
    flows, tasks = cfn.statements(policy["PolicyDocument"])

    def rule(sid: str, name: str) -> dict[str, Any]:
        return {
            "Sid": sid,
            "Effect": "Allow",
            "Principal": {"Service": "events.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": {"Fn::GetAtt": ["CompletionQueue", "Arn"]},
            "Condition": {"ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": [name, "Arn"]}}},
        }

    assert flows == rule("FlowEnds", "FlowEndedRule")
    assert tasks == rule("TaskEnds", "TaskStoppedRule")
    assert template["Resources"]["TaskStoppedRule"]["Condition"] == "HasTaskTargets"


def test_operators_may_add_to_and_read_the_audit_trail_never_change_it(
    template: Template,
) -> None:
    """OperatorAuditPolicy (docs/audit.md): append and read on the stack's audit log group, and
    an explicit Deny of every call that deletes its events or shortens their retention, which
    no other policy attached to the operators' role can then allow."""
    policy = template["Resources"]["OperatorAuditPolicy"]
    assert policy["Type"] == "AWS::IAM::ManagedPolicy"
    statements = {
        s["Sid"]: (s["Effect"], sorted(cfn.as_list(s["Action"])), _render(s["Resource"]))
        for s in cfn.statements(policy["Properties"]["PolicyDocument"])
    }
    assert statements == {
        "AddAndRead": (
            "Allow",
            [
                "logs:CreateLogStream",
                "logs:DescribeLogStreams",
                "logs:FilterLogEvents",
                "logs:GetLogEvents",
                "logs:PutLogEvents",
            ],
            "<AuditLogGroup.Arn>",
        ),
        "NeverChangeNorDelete": (
            "Deny",
            [
                "logs:AssociateKmsKey",
                "logs:DeleteLogGroup",
                "logs:DeleteLogStream",
                "logs:DeleteRetentionPolicy",
                "logs:DisassociateKmsKey",
                "logs:PutRetentionPolicy",
            ],
            "<AuditLogGroup.Arn>",
        ),
    }
    group = template["Resources"]["AuditLogGroup"]
    assert group["DeletionPolicy"] == group["UpdateReplacePolicy"] == "Retain"
    assert group["Properties"]["RetentionInDays"] == {"Ref": "AuditRetentionDays"}
    retention = template["Parameters"]["AuditRetentionDays"]
    assert retention["Default"] == 400 and 400 in retention["AllowedValues"]
    assert (
        retention["AllowedValues"] == template["Parameters"]["LogRetentionInDays"]["AllowedValues"]
    )
