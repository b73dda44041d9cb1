"""A value as the state table keeps it: the short way for a job's parameters writes what
boto3's serializer writes, and anything else still takes that serializer's way."""

from __future__ import annotations

import json
from decimal import Decimal, Inexact, Rounded
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer

from mini_scheduler.claims.dynamodb_table import value_of


def _serialized(value: Any) -> dict[str, Any]:
    """What boto3's serializer writes for a JSON value, floats as Decimals."""
    return dict(TypeSerializer().serialize(json.loads(json.dumps(value), parse_float=Decimal)))


PLAIN = [
    "",
    "report",
    "ünïcode ✓",
    0,
    -7,
    10**37,
    True,
    False,
    None,
    {},
    [],
    {"region": "east", "batch": 3, "dry": False, "note": None},
    {"nested": {"list": [1, "two", {"three": [True, None]}]}, "empty": {"": []}},
    [[], [[]], {"a": [{}]}],
]


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_a_parameter_value_is_written_as_boto3_writes_it(value: Any) -> None:
    assert value_of(value) == _serialized(value)


@pytest.mark.parametrize(
    "value",
    [1.5, {"ratio": 0.25}, [1, 2.5], {"deep": {"deeper": [0.1]}}],
    ids=repr,
)
def test_a_float_anywhere_travels_as_a_decimal(value: Any) -> None:
    assert value_of(value) == _serialized(value)
    assert "." in json.dumps(value_of(value), default=str)


def test_a_map_with_a_key_that_is_not_a_string_takes_the_json_way() -> None:
    assert value_of({1: "one"}) == {"M": {"1": {"S": "one"}}}


def test_a_number_beyond_38_digits_is_refused_as_boto3_refuses_it() -> None:
    with pytest.raises((Inexact, Rounded)):
        value_of(10**40 + 1)


def test_a_set_is_still_serialized_by_boto3() -> None:
    assert value_of({"a", "b"}) in ({"SS": ["a", "b"]}, {"SS": ["b", "a"]})
