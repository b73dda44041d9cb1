"""A job's ``ecs`` mapping: what the dispatcher reads from a good one, each reason a bad one
gives (naming its key), the keys that go together or not, unknown keys as warnings."""

from __future__ import annotations

from typing import Any

import pytest

from mini_scheduler.jobs.ecs_options import ECS_KEYS, ecs_warnings, read_ecs

NETWORK = {"subnets": ["subnet-0a1b2c3d"], "security_groups": ["sg-12ab"]}
FARGATE = {"launch_type": "FARGATE", **NETWORK}


def test_a_full_mapping_reads_as_the_dispatcher_takes_it() -> None:
    options, reasons = read_ecs(
        {
            **FARGATE,
            "assign_public_ip": False,
            "platform_version": "1.4.0",
            "container": "app",
            "command": ["report", "--full"],
            "environment": {"MODE": "full", "RETRIES": 3, "DRY": True, "RATIO": 0.5},
            "cpu": 512,
            "memory": 1024,
            "propagate_tags": "TASK_DEFINITION",
            "group": "family:report",
        }
    )
    assert reasons == []
    assert options == {
        **FARGATE,
        "assign_public_ip": False,
        "platform_version": "1.4.0",
        "container": "app",
        "command": ["report", "--full"],
        "environment": {"MODE": "full", "RETRIES": "3", "DRY": "true", "RATIO": "0.5"},
        "cpu": 512,
        "memory": 1024,
        "propagate_tags": "TASK_DEFINITION",
        "group": "family:report",
    }


def test_a_capacity_provider_strategy_reads_in_runtask_s_shape() -> None:
    strategy = [
        {"capacity_provider": "FARGATE_SPOT", "weight": 3},
        {"capacity_provider": "FARGATE", "weight": 1, "base": 1},
    ]
    options, reasons = read_ecs({"capacity_provider_strategy": strategy, **NETWORK})
    assert reasons == [] and options is not None
    assert options["capacity_provider_strategy"] == [
        {"capacityProvider": "FARGATE_SPOT", "weight": 3, "base": 0},
        {"capacityProvider": "FARGATE", "weight": 1, "base": 1},
    ]


@pytest.mark.parametrize(
    "mapping",
    [{}, {"launch_type": "EC2"}, {"launch_type": "FARGATE", "subnets": ["subnet-1"]}],
    ids=["empty: the cluster's default strategy", "EC2 on bridge", "FARGATE, a subnet only"],
)
def test_small_mappings_are_good(mapping: dict[str, Any]) -> None:
    assert read_ecs(mapping) == (mapping, [])


def test_no_mapping_gives_nothing_and_no_reason() -> None:
    assert read_ecs(None) == (None, [])


def test_a_null_value_is_a_key_left_out() -> None:
    assert read_ecs({**FARGATE, "container": None, "cpu": None}) == (FARGATE, [])


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("launch_type", "fargate", "ecs.launch_type must be one of FARGATE, EC2, EXTERNAL, not "),
        ("subnets", "abc", "ecs.subnets must be a list of subnet ids (subnet-...), not 'abc'"),
        ("subnets", ["abc"], "ecs.subnets must be a list of subnet ids (subnet-...), not 'abc'"),
        ("subnets", [], "ecs.subnets must hold 1 to 16 ids, not 0"),
        ("subnets", [f"subnet-{n:x}" for n in range(17)], "ecs.subnets must hold 1 to 16 ids"),
        ("subnets", ["subnet-1", "subnet-1"], "ecs.subnets names an id twice"),
        ("security_groups", ["sg-1", "group"], "ecs.security_groups must be a list of "),
        ("security_groups", [f"sg-{n}" for n in range(6)], "ecs.security_groups must hold 1 to 5"),
        ("assign_public_ip", "yes", "ecs.assign_public_ip must be true or false, not 'yes'"),
        ("platform_version", "latest", "ecs.platform_version must be LATEST or a version like"),
        ("container", "my app", "ecs.container must be a container name of the task definition"),
        ("command", "report --full", "ecs.command must be a list of text (the container's argu"),
        ("command", [], "ecs.command must be a list of text (the container's arguments), not a "),
        ("command", ["a", 1], "a list that holds something other than text"),
        ("environment", ["A=1"], "ecs.environment must be a mapping of names to values, not a l"),
        ("environment", {"1A": "x"}, "ecs.environment: '1A' is not a variable name"),
        ("environment", {"A": {"b": 1}}, "ecs.environment.A must be text, a number or a boolean"),
        ("environment", {"MINI_SCHEDULER_PAYLOAD": "x"}, "'MINI_SCHEDULER_PAYLOAD' is reserved"),
        ("cpu", "512", "ecs.cpu must be a whole number of CPU units from 0 to 196608, not '512'"),
        ("cpu", True, "ecs.cpu must be a whole number of CPU units"),
        ("memory", 0.5, "ecs.memory must be a whole number of MiB from 6 to 1048576, not 0.5"),
        ("propagate_tags", "SERVICE", "ecs.propagate_tags must be one of TASK_DEFINITION, NONE"),
        ("group", "a group", "ecs.group must be a task group"),
    ],
)
def test_each_bad_value_names_its_key(key: str, value: Any, reason: str) -> None:
    options, reasons = read_ecs({**FARGATE, key: value})
    assert options is None
    assert len(reasons) == 1 and reason in reasons[0], reasons


def test_a_secret_environment_value_is_never_shown() -> None:
    _, reasons = read_ecs({**FARGATE, "environment": {"TOKEN": ["s3cr3t"]}})
    assert reasons == ["ecs.environment.TOKEN must be text, a number or a boolean, not a list"]


@pytest.mark.parametrize(
    ("strategy", "reason"),
    [
        ("FARGATE", "ecs.capacity_provider_strategy must be a list of 1 to 20 mappings of "),
        ([], "ecs.capacity_provider_strategy must be a list of 1 to 20 mappings"),
        (["FARGATE"], "ecs.capacity_provider_strategy[1] must be a mapping of capacity_provider,"),
        ([{"provider": "FARGATE"}], "ecs.capacity_provider_strategy[1]: unknown key provider"),
        ([{"capacity_provider": ""}], "ecs.capacity_provider_strategy[1].capacity_provider must"),
        (
            [{"capacity_provider": "A", "weight": 1001}],
            "ecs.capacity_provider_strategy[1].weight must be a whole number from 0 to 1000",
        ),
        (
            [{"capacity_provider": "A", "weight": 1}, {"capacity_provider": "B", "base": -1}],
            "ecs.capacity_provider_strategy[2].base must be a whole number from 0 to 100000",
        ),
        (
            [
                {"capacity_provider": "A", "base": 1},
                {"capacity_provider": "B", "weight": 1},
                {"capacity_provider": "C", "base": 2},
            ],
            "ecs.capacity_provider_strategy: only one capacity provider may have a base",
        ),
        (
            [{"capacity_provider": "A"}],
            "ecs.capacity_provider_strategy: one capacity provider needs a weight above 0",
        ),
    ],
)
def test_a_bad_strategy_names_its_item(strategy: Any, reason: str) -> None:
    options, reasons = read_ecs({"capacity_provider_strategy": strategy})
    assert options is None and len(reasons) == 1 and reasons[0].startswith(reason), reasons


@pytest.mark.parametrize(
    ("mapping", "reason"),
    [
        (
            {**FARGATE, "capacity_provider_strategy": [{"capacity_provider": "A", "weight": 1}]},
            "ecs.launch_type and ecs.capacity_provider_strategy exclude each other",
        ),
        ({"launch_type": "FARGATE"}, "ecs.launch_type FARGATE needs ecs.subnets (its tasks use"),
        ({"security_groups": ["sg-1"]}, "ecs.security_groups goes with ecs.subnets"),
        ({"assign_public_ip": True}, "ecs.assign_public_ip goes with ecs.subnets"),
        ({"launch_type": "EC2", "platform_version": "LATEST"}, "ecs.platform_version is for FA"),
        (
            {"launch_type": "EXTERNAL", **NETWORK, "assign_public_ip": True},
            "ecs.assign_public_ip is for FARGATE tasks, not EXTERNAL",
        ),
    ],
)
def test_keys_that_do_not_go_together(mapping: dict[str, Any], reason: str) -> None:
    options, reasons = read_ecs(mapping)
    assert options is None and len(reasons) == 1 and reasons[0].startswith(reason), reasons


def test_every_reason_is_given_at_once() -> None:
    _, reasons = read_ecs({"launch_type": "FARGATE", "cpu": -1, "container": 3})
    assert [reason.split()[0] for reason in reasons] == [
        "ecs.container",
        "ecs.cpu",
        "ecs.launch_type",
    ]


@pytest.mark.parametrize("value", ["FARGATE", ["FARGATE"], 3])
def test_a_mapping_that_is_not_one(value: Any) -> None:
    options, reasons = read_ecs(value)
    assert options is None and reasons[0].startswith("ecs must be a mapping (launch_type, ")


def test_unknown_keys_are_warnings_with_a_guess_not_reasons() -> None:
    mapping = {**FARGATE, "subnet": ["subnet-1"], "zzz": 1}
    assert read_ecs(mapping) == (FARGATE, [])
    assert ecs_warnings(mapping, "Job nightly") == [
        "Job nightly key ecs.subnet ignored - did you mean ecs.subnets?",
        f"Job nightly key ecs.zzz ignored - the keys are {', '.join('ecs.' + k for k in ECS_KEYS)}",
    ]
    assert ecs_warnings(FARGATE, "Job nightly") == [] and ecs_warnings("x", "Job nightly") == []
