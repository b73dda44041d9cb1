"""StateTableMode, resolved as each region's stack would have it (resolve.py): regional keeps the
stack's own StateTable exactly as it was; global makes one multi-Region strongly consistent
(MRSC) global table, created by the stack in the first of GlobalTableRegions and named by the
others, and points STATE_TABLE, the grants and the StateTableName output at it
(docs/global-table.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from tests.fakeaws import use_test_credentials
from tests.repo.template import resolve
from tests.repo.template.test_stack import create_stack, for_moto

Template = dict[str, Any]

TABLE = "mini-scheduler-state"
ACCOUNT = "1" * 12
GLOBAL = {
    "StateTableMode": "global",
    "GlobalTableName": TABLE,
    "GlobalTableRegions": "us-east-1,us-west-2",
    "GlobalTableWitnessRegion": "us-east-2",
}
THREE_REPLICAS = {**GLOBAL, "GlobalTableRegions": "us-east-1,us-west-2,us-east-2"}
THREE_REPLICAS["GlobalTableWitnessRegion"] = ""

# The StateTable every stack had before StateTableMode (its logical id, keys, TTL, PITR, SSE and
# Retain policies): regional mode must keep it as it was, or an upgrade would replace the table
# that holds the run history.
STATE_TABLE_BEFORE = {
    "Type": "AWS::DynamoDB::Table",
    "DeletionPolicy": "Retain",
    "UpdateReplacePolicy": "Retain",
    "Properties": {
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "TimeToLiveSpecification": {"AttributeName": "expiresAt", "Enabled": True},
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "SSESpecification": {"SSEEnabled": True},
    },
}

MODES = {
    "regional": ({}, "us-east-1"),
    "global, the home stack": (GLOBAL, "us-east-1"),
    "global, another region's stack": (GLOBAL, "us-west-2"),
    "global with three replicas, the home stack": (THREE_REPLICAS, "us-east-1"),
    "global with three replicas, the third region's stack": (THREE_REPLICAS, "us-east-2"),
}


def _stack(template: Template, mode: str) -> Template:
    given, region = MODES[mode]
    return resolve.stack(template, given, region)


def _table_arn(region: str) -> str:
    return f"arn:aws:dynamodb:{region}:{ACCOUNT}:table/{TABLE}"


def _state_grants(stack: Template) -> dict[str, Any]:
    """The Resource of each role's StateTable statement, as the stack resolves it."""
    found = {}
    for role in ("TickerRole", "RecorderRole"):
        (document,) = [
            p["PolicyDocument"] for p in stack["Resources"][role]["Properties"]["Policies"]
        ]
        (statement,) = [s for s in document["Statement"] if s.get("Sid") == "StateTable"]
        found[role] = resolve.value(statement["Resource"], stack["Values"])
    return found


# -- which table, and who names it ---------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_state_table_follows_the_mode(template: Template, mode: str) -> None:
    stack = _stack(template, mode)
    given, region = MODES[mode]
    resources = stack["Resources"]
    home = given and region == given["GlobalTableRegions"].split(",")[0]
    if not given:
        assert "StateTable" in resources and "GlobalStateTable" not in resources
        table: Any = {"Ref": "StateTable"}
        arn: Any = {"Fn::GetAtt": ["StateTable", "Arn"]}
        output: Any = {"Ref": "StateTable"}
    else:
        # one table for the deployment: created once, by the home stack; never a second
        assert "StateTable" not in resources
        assert ("GlobalStateTable" in resources) is bool(home)
        # the home stack names the resource, so its functions wait for the table
        table = {"Ref": "GlobalStateTable"} if home else TABLE
        arn, output = _table_arn(region), TABLE
    for function in ("TickerFunction", "RecorderFunction"):
        variables = resources[function]["Properties"]["Environment"]["Variables"]
        assert resolve.value(variables["STATE_TABLE"], stack["Values"]) == table, function
    # each region's functions reach their own region's replica, and no other
    assert _state_grants(stack) == {"TickerRole": arn, "RecorderRole": arn}
    assert resolve.value(stack["Outputs"]["StateTableName"]["Value"], stack["Values"]) == output


def test_regional_mode_keeps_the_state_table_as_it_was(template: Template) -> None:
    """The default mode: the same logical id and properties, so `sam deploy` of this template
    over an older stack changes nothing of the table (the condition is always true there)."""
    table = dict(_stack(template, "regional")["Resources"]["StateTable"])
    assert table.pop("Condition") == "RegionalState"
    table.pop("Metadata")  # checkov's notes
    assert table == STATE_TABLE_BEFORE  # on-demand, StateTableBilling's default
    assert template["Parameters"]["StateTableMode"]["Default"] == "regional"
    assert template["Parameters"]["StateTableBilling"]["Default"] == "on-demand"


# -- the global table ------------------------------------------------------------------------------


def test_the_global_table_has_the_state_table_s_schema_in_strong_consistency(
    template: Template,
) -> None:
    """The same keys, billing and encryption as StateTable, point-in-time recovery on every
    replica (PITR is set per replica: AWS does not synchronise it), kept when the stack goes,
    and MRSC: a conditional write is evaluated against the latest version of the item in any
    region, which is what a claim needs. No TTL: MRSC global tables do not support it."""
    regional = _stack(template, "regional")["Resources"]["StateTable"]["Properties"]
    created = _stack(template, "global, the home stack")["Resources"]["GlobalStateTable"]
    table = created["Properties"]
    assert created["Type"] == "AWS::DynamoDB::GlobalTable"
    assert created["DeletionPolicy"] == created["UpdateReplacePolicy"] == "Retain"
    assert table["TableName"] == {"Ref": "GlobalTableName"}
    assert table["MultiRegionConsistency"] == "STRONG"
    for key in ("BillingMode", "AttributeDefinitions", "KeySchema", "SSESpecification"):
        assert table[key] == regional[key], key
    assert "TimeToLiveSpecification" not in table
    assert "LocalSecondaryIndexes" not in table  # MRSC does not support them either
    assert "StreamSpecification" not in table  # MRSC does not replicate through streams
    for replica in table["Replicas"]:
        assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


@pytest.mark.parametrize(
    ("given", "replicas", "witness"),
    [
        (GLOBAL, ["us-east-1", "us-west-2"], ["us-east-2"]),
        (THREE_REPLICAS, ["us-east-1", "us-west-2", "us-east-2"], []),
    ],
    ids=["two replicas and a witness", "three replicas"],
)
def test_the_global_table_spans_three_regions(
    template: Template, given: dict[str, str], replicas: list[str], witness: list[str]
) -> None:
    """MRSC is deployed in exactly three regions: three replicas, or two and a witness. The
    home stack's region is a replica (CloudFormation requires the stack's own region)."""
    stack = resolve.stack(template, given, "us-east-1")
    table = stack["Resources"]["GlobalStateTable"]["Properties"]
    found = [resolve.value(r["Region"], stack["Values"]) for r in table["Replicas"]]
    assert found == replicas
    witnesses = table.get("GlobalTableWitnesses", [])
    assert [resolve.value(w["Region"], stack["Values"]) for w in witnesses] == witness


def _assertions(template: Template, given: dict[str, str]) -> list[str]:
    """The descriptions of the rules' assertions that ``given`` fails."""
    values = resolve.parameters(template, given, "us-east-1")
    failed = []
    for rule in template["Rules"].values():
        if not resolve.evaluate(rule.get("RuleCondition", True), values, resolve.no_condition):
            continue
        failed += [
            a["AssertDescription"]
            for a in rule["Assertions"]
            if not resolve.evaluate(a["Assert"], values, resolve.no_condition)
        ]
    return failed


def test_global_mode_needs_the_table_s_name_and_regions(template: Template) -> None:
    assert _assertions(template, GLOBAL) == []
    assert _assertions(template, {}) == []
    missing = _assertions(template, {"StateTableMode": "global"})
    assert len(missing) == 2 and all("StateTableMode global needs" in m for m in missing)


@pytest.mark.parametrize(
    ("parameter", "value", "valid"),
    [
        ("GlobalTableName", "", True),
        ("GlobalTableName", TABLE, True),
        ("GlobalTableName", "a b", False),
        ("GlobalTableName", "ab", False),
        ("GlobalTableRegions", "", True),
        ("GlobalTableRegions", "us-east-1,us-west-2", True),
        ("GlobalTableRegions", "eu-west-1,eu-central-1,eu-west-2", True),
        ("GlobalTableRegions", "us-east-1", False),  # MRSC: two replicas at least
        ("GlobalTableRegions", "us-east-1,us-west-2,us-east-2,eu-west-1", False),
        ("GlobalTableRegions", "us-east-1, us-west-2", False),
        ("GlobalTableWitnessRegion", "", True),
        ("GlobalTableWitnessRegion", "us-east-2", True),
        ("GlobalTableWitnessRegion", "us-east-2,us-west-2", False),
    ],
)
def test_global_table_parameter_patterns(
    template: Template, parameter: str, value: str, valid: bool
) -> None:
    pattern = template["Parameters"][parameter]["AllowedPattern"]
    assert bool(re.fullmatch(pattern, value)) is valid


def test_every_parameter_is_in_one_group(template: Template) -> None:
    groups = template["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    listed = [name for group in groups for name in group["Parameters"]]
    assert sorted(listed) == sorted(template["Parameters"])
    (state,) = [g for g in groups if g["Label"]["default"] == "State table"]
    assert state["Parameters"][0] == "StateTableMode"


# -- a stack that joins the global table, in moto's CloudFormation ---------------------------------


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    use_test_credentials(monkeypatch)
    monkeypatch.delenv("AWS_REGION")
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield


def test_a_stack_that_joins_the_global_table_creates_no_table(
    aws: None, translated: Template
) -> None:
    """The DR region's stack (not the first of GlobalTableRegions) makes no table of its own:
    its functions, their grants and its output name the global table in its region."""
    template, _ = for_moto(translated)
    stack = create_stack(template, "us-west-2", **GLOBAL, EnvironmentName="DR")
    assert "StateTable" not in stack.resources and "GlobalStateTable" not in stack.resources
    tables = stack.client("dynamodb").list_tables()["TableNames"]
    assert [t for t in tables if "IdempotencyTable" not in t] == []  # the sample's only
    for function in ("TickerFunction", "RecorderFunction"):
        variables = stack.function(function)["Environment"]["Variables"]
        assert variables["STATE_TABLE"] == TABLE
    (granted,) = [s for s in stack.role_policy("TickerRole") if s.get("Sid") == "StateTable"]
    assert granted["Resource"] == f"arn:aws:dynamodb:us-west-2:123456789012:table/{TABLE}"
    assert stack.outputs["StateTableName"] == TABLE
