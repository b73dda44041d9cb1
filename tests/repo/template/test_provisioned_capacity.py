"""StateTableBilling provisioned (issue 28): the regional state table's read and write capacity,
each between its parameters' minimum and maximum, tracked by Application Auto Scaling at 70%
used; on-demand by default, and always for a global table (docs/performance-and-cost.md,
"Provisioned capacity")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from tests.fakeaws import use_test_credentials
from tests.repo.template import resolve
from tests.repo.template.test_stack import NOT_IN_MOTO, create_stack, for_moto

Template = dict[str, Any]

PROVISIONED = {
    "StateTableBilling": "provisioned",
    "StateTableReadCapacityMin": "10",
    "StateTableReadCapacityMax": "300",
    "StateTableWriteCapacityMin": "20",
    "StateTableWriteCapacityMax": "1500",
}
SCALING = {
    "StateTableReadScaling",
    "StateTableReadScalingPolicy",
    "StateTableWriteScaling",
    "StateTableWriteScalingPolicy",
}


def _kinds(stack: Template, kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in stack["Resources"].items() if r["Type"] == kind}


def test_on_demand_by_default_with_no_scaling(template: Template) -> None:
    stack = resolve.stack(template, {})
    table = stack["Resources"]["StateTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert "ProvisionedThroughput" not in table
    assert not SCALING & set(stack["Resources"])


@pytest.mark.parametrize("dimension", ["Read", "Write"])
def test_provisioned_capacity_tracks_70_percent_between_the_bounds(
    template: Template, dimension: str
) -> None:
    stack = resolve.stack(template, PROVISIONED)
    values = stack["Values"]
    table = stack["Resources"]["StateTable"]["Properties"]
    assert table["BillingMode"] == "PROVISIONED"
    units = table["ProvisionedThroughput"][f"{dimension}CapacityUnits"]
    assert resolve.value(units, values) == PROVISIONED[f"StateTable{dimension}CapacityMin"]
    target = stack["Resources"][f"StateTable{dimension}Scaling"]["Properties"]
    assert target["ServiceNamespace"] == "dynamodb"
    assert target["ResourceId"] == {"Fn::Sub": "table/${StateTable}"}
    assert target["ScalableDimension"] == f"dynamodb:table:{dimension}CapacityUnits"
    assert "RoleARN" not in target  # Application Auto Scaling's service-linked role
    bounds = (target["MinCapacity"], target["MaxCapacity"])
    assert tuple(resolve.value(b, values) for b in bounds) == (
        PROVISIONED[f"StateTable{dimension}CapacityMin"],
        PROVISIONED[f"StateTable{dimension}CapacityMax"],
    )
    policy = stack["Resources"][f"StateTable{dimension}ScalingPolicy"]["Properties"]
    assert policy["PolicyType"] == "TargetTrackingScaling"
    assert policy["ScalingTargetId"] == {"Ref": f"StateTable{dimension}Scaling"}
    tracking = policy["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["TargetValue"] == 70
    assert tracking["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": f"DynamoDB{dimension}CapacityUtilization"
    }


def test_a_global_table_stays_on_demand(template: Template) -> None:
    """The rule refuses provisioned with StateTableMode global, and the global table has no
    capacity to scale: its resources and conditions never meet the scaling's."""
    (assertions,) = [
        rule["Assertions"]
        for rule in template["Rules"].values()
        if rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "StateTableMode"}, "global"]}
    ]
    assert {
        "Assert": {"Fn::Equals": [{"Ref": "StateTableBilling"}, "on-demand"]},
        "AssertDescription": assertions[-1]["AssertDescription"],
    } in assertions
    given = {
        "StateTableMode": "global",
        "GlobalTableName": "mini-scheduler-state",
        "GlobalTableRegions": "us-east-1,us-west-2",
        "GlobalTableWitnessRegion": "us-east-2",
        **PROVISIONED,  # the rule refuses it; were it not, nothing would change
    }
    stack = resolve.stack(template, given)
    assert not SCALING & set(stack["Resources"])
    assert stack["Resources"]["GlobalStateTable"]["Properties"]["BillingMode"] == "PAY_PER_REQUEST"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    use_test_credentials(monkeypatch)
    monkeypatch.delenv("AWS_REGION")
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield


def test_the_provisioned_table_in_moto(aws: None, translated: Template) -> None:
    """The stack creates the table with its minimum capacity (moto has no Application Auto
    Scaling in CloudFormation: the scaling is checked above, on the template)."""
    assert {"AWS::ApplicationAutoScaling::ScalableTarget"} <= NOT_IN_MOTO
    template, left_out = for_moto(translated)
    assert left_out >= SCALING
    stack = create_stack(template, **PROVISIONED)
    table = stack.client("dynamodb").describe_table(TableName=stack.resources["StateTable"])
    described = table["Table"]
    assert described["BillingModeSummary"]["BillingMode"] == "PROVISIONED"
    throughput = described["ProvisionedThroughput"]
    assert (throughput["ReadCapacityUnits"], throughput["WriteCapacityUnits"]) == (10, 20)
