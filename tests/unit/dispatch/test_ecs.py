"""ECS task targets on moto (a FARGATE task in a VPC's subnet): what RunTask carries (the
overridden container's variables, the tags, startedBy, the client token), the container read
from the task definition, a lost answer that finds the task it started instead of a second,
failures, overrides over ECS's limit. moto never loses an answer nor lists a failure: botocore's
event hooks do it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from moto import mock_aws

from mini_scheduler.dispatch.ecs import (
    FIRING_VARIABLE,
    OVERRIDES_LIMIT,
    PAYLOAD_VARIABLE,
    EcsDispatcher,
    client_token,
    split_target,
    started_by,
)
from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target
from mini_scheduler.jobs.ecs_options import read_ecs
from tests.fakeaws import use_test_credentials

ACCOUNT = "123456789012"  # moto's
REGION = "us-east-1"
FIRING = "nightly-report@2026-12-04T03:00:00Z"
PAYLOAD = {"job": "nightly-report", "firingId": FIRING, "attempt": 1, "parameters": {"n": 1}}
STARTED_BY_RULE = re.compile(r"[A-Za-z0-9/_-]{1,128}")  # RunTask's startedBy, as ECS documents
TOKEN_RULE = re.compile(r"[!-~]{1,64}")  # clientToken: up to 64 of ASCII 33 to 126


class Hooks:
    """Every request ``client`` makes of ``operation`` (``params``), and answers bent: the
    ``lose`` first requests reach moto and then raise a read timeout (the answer is lost on its
    way back), ``refuse`` requests raise a ClientError before moto sees them, ``rewrite``
    replaces what moto answered."""

    def __init__(self, client: Any, operation: str) -> None:
        self.params: list[dict[str, Any]] = []
        self.lose = 0
        self.refuse: list[dict[str, Any]] = []
        self.rewrite: dict[str, Any] | None = None
        events = client.meta.events
        events.register(f"before-parameter-build.ecs.{operation}", self._record)
        events.register(f"before-call.ecs.{operation}", self._refuse)
        events.register(f"after-call.ecs.{operation}", self._after)

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.params.append(json.loads(json.dumps(params)))

    def _refuse(self, model: Any, **_: Any) -> None:
        if self.refuse:
            raise ClientError(self.refuse.pop(0), model.name)  # type: ignore[arg-type]

    def _after(self, parsed: dict[str, Any], **_: Any) -> None:
        if self.lose:
            self.lose -= 1
            raise ReadTimeoutError(endpoint_url="https://ecs.us-east-1.amazonaws.com/")
        if self.rewrite is not None:
            parsed.clear()
            parsed.update(self.rewrite)


def refusal(code: str, status: int, **more: Any) -> dict[str, Any]:
    return {
        "Error": {"Code": code, "Message": f"{code} (injected)"},
        "ResponseMetadata": {"HTTPStatusCode": status},
        **more,
    }


@pytest.fixture
def ecs(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, str]]:
    """moto's ECS with the cluster ``batch`` and the FARGATE task definition ``report`` (a
    sidecar first, not essential, then ``app``), and a network for its tasks: ``<subnet id>
    <security group id>``."""
    use_test_credentials(monkeypatch, REGION)
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})  # moto's ENI
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
        group = ec2.create_security_group(GroupName="tasks", Description="t", VpcId=vpc)
        client = boto3.client("ecs", region_name=REGION)
        client.create_cluster(clusterName="batch")
        client.register_task_definition(
            family="report",
            requiresCompatibilities=["FARGATE"],
            networkMode="awsvpc",
            cpu="256",
            memory="512",
            containerDefinitions=[
                {"name": "sidecar", "image": "x", "essential": False, "memory": 128},
                {"name": "app", "image": "x", "essential": True, "memory": 256},
            ],
        )
        yield client, f"{subnet} {group['GroupId']}"


def target(network: str, name: str = "batch/report", **more: Any) -> Target:
    """The job's target, in the fixture's ``network`` (its subnet and security group: moto
    needs one)."""
    subnet, group = network.split()
    mapping = {"launch_type": "FARGATE", "subnets": [subnet], "security_groups": [group]}
    options, reasons = read_ecs({**mapping, **more})
    assert options is not None, reasons
    return Target("ecs", name, options)


def dispatcher(client: Any) -> EcsDispatcher:
    return EcsDispatcher(client, region=REGION, account=ACCOUNT)


def tasks(client: Any) -> list[str]:
    """Every task of the cluster, running or stopped."""
    found: list[str] = []
    for status in ("RUNNING", "STOPPED"):
        found += client.list_tasks(cluster="batch", desiredStatus=status)["taskArns"]
    return found


def test_the_task_carries_the_firing_its_tags_and_the_mapping(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    runs = Hooks(client, "RunTask")
    job = target(
        subnet, container="app", command=["report", "--full"], environment={"MODE": "full"}
    )
    answer = dispatcher(client).dispatch(job, FIRING, PAYLOAD)
    assert tasks(client) == [answer]
    (task,) = client.describe_tasks(cluster="batch", tasks=[answer], include=["TAGS"])["tasks"]
    (override,) = task["overrides"]["containerOverrides"]
    variables = {item["name"]: item["value"] for item in override["environment"]}
    assert variables == {
        "MODE": "full",
        FIRING_VARIABLE: FIRING,
        PAYLOAD_VARIABLE: json.dumps(PAYLOAD, separators=(",", ":")),
    }
    assert (override["name"], override["command"]) == ("app", ["report", "--full"])
    assert {tag["key"]: tag["value"] for tag in task["tags"]} == {
        "mini-scheduler:firing-id": FIRING,
        "mini-scheduler:job": "nightly-report",
        "mini-scheduler:attempt": "1",
    }
    (sent,) = runs.params
    assert sent["launchType"] == "FARGATE" and sent["count"] == 1
    network = {"subnets": subnet.split()[:1], "securityGroups": subnet.split()[1:]}
    assert sent["networkConfiguration"] == {"awsvpcConfiguration": network}
    assert task["startedBy"] == sent["startedBy"] == started_by(FIRING)
    assert sent["clientToken"] == client_token(FIRING)


@pytest.mark.parametrize(
    "run_id",
    [
        FIRING,
        f"{FIRING}#2",
        "nightly-report@manual-2026-12-04T03:00:00.123Z-1a2b3c4d",
        f"{'j' * 64}@manual-2026-12-04T03:00:00.123Z-1a2b3c4d#20",
    ],
)
def test_started_by_and_the_client_token_take_ecs_forms_one_per_run(run_id: str) -> None:
    assert STARTED_BY_RULE.fullmatch(started_by(run_id))
    assert TOKEN_RULE.fullmatch(client_token(run_id))
    assert started_by(run_id) == started_by(run_id) != started_by(run_id + "0")
    assert client_token(run_id) != client_token(run_id + "0")


def test_a_retry_has_a_task_of_its_own_with_its_attempt(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    first = dispatcher(client).dispatch(target(subnet), FIRING, PAYLOAD)
    second = dispatcher(client).dispatch(target(subnet), f"{FIRING}#2", PAYLOAD)
    assert sorted(tasks(client)) == sorted([first, second])
    (task,) = client.describe_tasks(cluster="batch", tasks=[second], include=["TAGS"])["tasks"]
    tags = {tag["key"]: tag["value"] for tag in task["tags"]}
    assert (tags["mini-scheduler:firing-id"], tags["mini-scheduler:attempt"]) == (FIRING, "2")
    variables = task["overrides"]["containerOverrides"][0]["environment"]
    assert {"name": FIRING_VARIABLE, "value": f"{FIRING}#2"} in variables


def test_without_a_container_the_first_essential_one_is_read_once(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    reads = Hooks(client, "DescribeTaskDefinition")
    ecs_dispatcher = dispatcher(client)
    for run_id in (FIRING, f"{FIRING}#2"):
        arn = ecs_dispatcher.dispatch(target(subnet), run_id, PAYLOAD)
        (task,) = client.describe_tasks(cluster="batch", tasks=[arn])["tasks"]
        assert task["overrides"]["containerOverrides"][0]["name"] == "app"
    assert len(reads.params) == 1


def test_a_cluster_arn_target_runs_in_that_cluster(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    name = f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/batch/report:1"
    answer = dispatcher(client).dispatch(target(subnet, name), FIRING, PAYLOAD)
    assert tasks(client) == [answer]


@pytest.mark.parametrize(
    ("name", "cluster", "definition"),
    [
        ("batch/report", "batch", "report"),
        ("batch/report:7", "batch", "report:7"),
        (
            f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/batch/report",
            f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/batch",
            "report",
        ),
        (
            f"batch/arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/report:3",
            "batch",
            f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/report:3",
        ),
    ],
)
def test_a_target_splits_after_its_cluster(name: str, cluster: str, definition: str) -> None:
    assert split_target(name) == (cluster, definition)


def test_a_lost_answer_finds_the_task_it_started(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    runs = Hooks(client, "RunTask")
    runs.lose = 1
    answer = dispatcher(client).dispatch(target(subnet, container="app"), FIRING, PAYLOAD)
    (started,) = tasks(client)  # moto ignores the client token: a second RunTask would start one
    assert answer == f"{started} (found started)"
    assert len(runs.params) == 1


def test_a_lost_answer_with_no_task_started_runs_it_again_with_its_token(
    ecs: tuple[Any, str],
) -> None:
    client, subnet = ecs
    runs = Hooks(client, "RunTask")
    runs.refuse = [refusal("ServerException", 500)]
    answer = dispatcher(client).dispatch(target(subnet, container="app"), FIRING, PAYLOAD)
    assert tasks(client) == [answer]
    first, again = runs.params
    assert first == again and first["clientToken"] == client_token(FIRING)


def test_a_conflict_on_the_second_try_answers_the_token_s_task(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    runs = Hooks(client, "RunTask")
    arn = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/batch/0123456789abcdef"
    runs.refuse = [
        refusal("ServerException", 503),
        refusal("ConflictException", 400, resourceIds=[arn]),
    ]
    answer = dispatcher(client).dispatch(target(subnet, container="app"), FIRING, PAYLOAD)
    assert answer == f"{arn} (found started)" and tasks(client) == []


def test_lost_twice_is_a_dispatch_error_naming_both(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    runs = Hooks(client, "RunTask")
    runs.refuse = [refusal("ServerException", 500), refusal("ThrottlingException", 400)]
    with pytest.raises(DispatchError) as raised:
        dispatcher(client).dispatch(target(subnet, container="app"), FIRING, PAYLOAD)
    text = str(raised.value)
    assert text.startswith("ECS RunTask batch/report failed - ServerException")
    assert "ThrottlingException" in text and tasks(client) == []


def test_a_refusal_is_a_dispatch_error_and_nothing_is_looked_for(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    lists = Hooks(client, "ListTasks")
    job = target(subnet, "batch/missing", container="app")
    with pytest.raises(DispatchError, match=r"ECS RunTask batch/missing failed - Client"):
        dispatcher(client).dispatch(job, FIRING, PAYLOAD)
    assert lists.params == []


def test_failures_and_no_task_are_a_dispatch_error(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    runs = Hooks(client, "RunTask")
    arn = f"arn:aws:ecs:{REGION}:{ACCOUNT}:container-instance/batch/1a2b"
    runs.rewrite = {"tasks": [], "failures": [{"arn": arn, "reason": "RESOURCE:MEMORY"}]}
    with pytest.raises(DispatchError) as raised:
        dispatcher(client).dispatch(target(subnet, container="app"), FIRING, PAYLOAD)
    said = f"ECS RunTask batch/report started no task - RESOURCE:MEMORY ({arn})"
    assert str(raised.value) == said


def test_overrides_over_ecs_limit_are_refused_before_runtask(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    runs = Hooks(client, "RunTask")
    big = {**PAYLOAD, "parameters": {"text": "x" * OVERRIDES_LIMIT}}
    with pytest.raises(DispatchError, match=r"over ECS's 8192 .*MINI_SCHEDULER_PAYLOAD"):
        dispatcher(client).dispatch(target(subnet, container="app"), FIRING, big)
    assert runs.params == [] and tasks(client) == []


def test_overrides_just_within_the_limit_are_sent(ecs: tuple[Any, str]) -> None:
    client, subnet = ecs
    job = target(subnet, container="app")
    ecs_dispatcher = dispatcher(client)
    empty = ecs_dispatcher.request(job, FIRING, {**PAYLOAD, "parameters": {"text": ""}})
    room = OVERRIDES_LIMIT - len(json.dumps(empty["overrides"], separators=(",", ":")))
    fits = {**PAYLOAD, "parameters": {"text": "x" * room}}
    answer = ecs_dispatcher.dispatch(job, FIRING, fits)
    assert tasks(client) == [answer]
    with pytest.raises(DispatchError, match="8193 characters"):
        ecs_dispatcher.dispatch(job, FIRING, {**PAYLOAD, "parameters": {"text": "x" * (room + 1)}})


def test_stop_finds_the_firing_s_task_and_stops_it_saying_why(ecs: tuple[Any, str]) -> None:
    """``overlap: cancel_other``: the task is found by its ``startedBy``, as dispatch made it."""
    client, network = ecs
    d = dispatcher(client)
    started = d.dispatch(target(network), "report@2026-11-30T14:00:00Z", {"job": "report"})
    d.dispatch(target(network), "report@2026-11-30T14:01:00Z", {"job": "report"})
    why = "cancelled by firing report@2026-11-30T14:02:00Z (overlap: cancel_other)"
    assert d.stop(target(network), "report@2026-11-30T14:00:00Z", why) == started
    (task,) = client.describe_tasks(cluster="batch", tasks=[started])["tasks"]
    assert task["desiredStatus"] == "STOPPED" and task["stoppedReason"] == why
    running = client.list_tasks(cluster="batch", desiredStatus="RUNNING")["taskArns"]
    assert started not in running and len(running) == 1
    gone = d.stop(target(network), "report@2026-11-30T13:00:00Z", why)
    assert gone.endswith("nothing to stop")
