"""Parameters must be JSON and fit their target's dispatch: found when the file loads, and by
check_parameters_fit for a manual run's overrides."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pytest

from mini_scheduler.jobs import (
    DISPATCH_RESERVE,
    DYNAMODB_ITEM_LIMIT,
    LAMBDA_ASYNC_PAYLOAD_LIMIT,
    STEP_FUNCTIONS_INPUT_LIMIT,
    Target,
    check_parameters_fit,
    load,
    parameters_limit,
    reserved_note,
    split_reserved,
)
from mini_scheduler.jobs.limits import item_size, value_size
from tests.unit.jobs.helpers import errors, invalid, one

LAMBDA = Target("lambda", "report-fn")
FLOW = Target("flow", "cleanup")
FLOW_REASON = (
    "more than the 253952 a flow target allows (a Step Functions input of 262144 bytes, less "
    "8192 kept for the rest of the dispatch)"
)
LAMBDA_REASON = (
    "more than the 401408 a Lambda target allows (the 409600-byte DynamoDB item that records "
    "the job's state, less 8192 kept for the rest of the dispatch)"
)


def test_limits() -> None:
    assert (LAMBDA_ASYNC_PAYLOAD_LIMIT, STEP_FUNCTIONS_INPUT_LIMIT, DYNAMODB_ITEM_LIMIT) == (
        1_048_576,
        262_144,
        409_600,
    )
    assert DISPATCH_RESERVE == 8192
    assert parameters_limit("flow") == 262_144 - 8192
    assert parameters_limit("lambda") == 409_600 - 8192  # the state record binds, not the invoke


def blob(size: int) -> dict[str, str]:
    """Parameters whose compact JSON takes exactly ``size`` bytes."""
    return {"b": "x" * (size - len('{"b":""}'))}


@pytest.mark.parametrize("target", [LAMBDA, FLOW])
def test_exactly_at_the_limit_fits(target: Target) -> None:
    limit = parameters_limit(target.kind)
    assert check_parameters_fit(target, blob(limit)) is None
    reason = check_parameters_fit(target, blob(limit + 1))
    assert reason == f"parameters take {limit + 1} bytes as JSON, " + (
        FLOW_REASON if target is FLOW else LAMBDA_REASON
    )


def test_a_size_that_fits_lambda_but_not_step_functions() -> None:
    parameters = blob(300_000)
    assert check_parameters_fit(LAMBDA, parameters) is None
    assert check_parameters_fit(FLOW, parameters) == (
        f"parameters take 300000 bytes as JSON, {FLOW_REASON}"
    )
    assert one(parameters=parameters).ok
    cron_file = one(parameters=parameters, service="flow://cleanup")
    assert cron_file.jobs == ()
    assert errors(cron_file) == [invalid(f"parameters take 300000 bytes as JSON, {FLOW_REASON}")]


def test_too_large_for_lambda_too() -> None:
    cron_file = one(parameters=blob(420_000))
    assert errors(cron_file) == [invalid(f"parameters take 420000 bytes as JSON, {LAMBDA_REASON}")]


def test_bytes_are_measured_not_characters() -> None:
    parameters = {"text": "é" * 130_000}  # 130,000 characters, 260,000 UTF-8 bytes
    reason = check_parameters_fit(FLOW, parameters)
    assert reason == f"parameters take 260011 bytes as JSON, {FLOW_REASON}"


def test_dropped_keys_do_not_count() -> None:
    cron_file = one(parameters={"_big": "x" * 300_000, "small": 1}, service="flow://cleanup")
    assert cron_file.ok and cron_file.jobs[0].parameters == {"small": 1}


def test_any_mapping_is_measured() -> None:
    assert check_parameters_fit(FLOW, MappingProxyType({"a": 1})) is None


def circular() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


@pytest.mark.parametrize(
    ("parameters", "reason"),
    [
        (
            {"at": datetime(2026, 1, 1)},
            "parameter at holds a datetime value, which JSON cannot carry: write it as text",
        ),
        (
            {"day": date(2026, 1, 1)},
            "parameter day holds a date value, which JSON cannot carry: write it as text",
        ),
        (
            {"tags": {"a", "b"}},
            "parameter tags holds a set value, which JSON cannot carry: write it as text",
        ),
        (
            {"raw": b"x"},
            "parameter raw holds a bytes value, which JSON cannot carry: write it as text",
        ),
        ({"n": float("nan")}, "parameter n is NaN or an infinity, which JSON cannot carry"),
        (
            {"n": [1, {"m": -float("inf")}]},
            "parameter n[1].m is NaN or an infinity, which JSON cannot carry",
        ),
        ({"deep": {1: "a"}}, "parameter deep has a key 1 that is not text: quote it"),
        ({1: "a"}, "parameters have a key 1 that is not text: quote it"),
        ({"loop": circular()}, "parameter loop" + ".self" * 30 + " nests deeper than 31 levels"),
        ("a=1", "parameters must be a mapping of keys to values, not text"),
        (["a=1"], "parameters must be a mapping of keys to values, not a list"),
        (41, "parameters must be a mapping of keys to values, not a number"),
        (True, "parameters must be a mapping of keys to values, not a boolean"),
    ],
)
def test_what_json_cannot_carry(parameters: Any, reason: str) -> None:
    assert check_parameters_fit(LAMBDA, parameters) == reason


def test_json_values_fit() -> None:
    parameters = {"s": "é", "i": 10**30, "f": 1.5, "b": True, "n": None, "l": [1, [2]], "m": {}}
    assert check_parameters_fit(FLOW, parameters) is None


@pytest.mark.parametrize(
    "number", [0, -0.0, 1e-130, -1e-130, 1.5e125, -(10**37), 10**37, int("9" * 38), 0.1]
)
def test_numbers_dynamodb_stores_fit(number: float) -> None:
    assert check_parameters_fit(LAMBDA, {"n": number}) is None


@pytest.mark.parametrize(
    "number",
    [
        10**38 + 1,  # 39 digits
        4111111111111111411111111111111111111111,  # a card number twice over: 40 digits
        1e126,
        1e-131,
        -1e300,
        int("f" * 4000, 16),  # str() refuses it: 4,816 digits
    ],
    ids=["39 digits", "40 digits", "1e126", "1e-131", "-1e300", "16000 bits"],
)
def test_numbers_dynamodb_cannot_store_name_the_key_and_the_rule(number: float) -> None:
    """Never the value (issue 11): a parameter's value may be a secret, and this text is logged
    (cron.yaml) or answered to the invoker (a manual run)."""
    reason = check_parameters_fit(LAMBDA, {"card_pan": {"n": [number]}})
    assert reason == (
        "parameter card_pan.n[0] is a number DynamoDB cannot store (at most 38 digits, "
        "from 1E-130 to 9.99E+125): write it as text"
    )


def test_a_huge_integer_from_a_hex_literal_skips_only_its_entry() -> None:
    cron_file = load(
        "jobs:\n"
        "  - {name: a, cron: '0 0 9 * * ?', service: fn, parameters: {n: 0x" + "f" * 4000 + "}}\n"
        "  - {name: b, cron: '0 0 9 * * ?', service: fn}\n"
    )
    assert [job.name for job in cron_file.jobs] == ["b"]
    assert errors(cron_file) == [
        invalid(
            "parameter n is a number DynamoDB cannot store (at most 38 digits, from 1E-130 to "
            "9.99E+125): write it as text",
            name="a",
        )
    ]


def test_long_numbers_are_sized_by_all_their_digits() -> None:
    """38-digit numbers take 20 bytes each in DynamoDB; rounded to 28 digits they seemed 15."""
    parameters = {"p": [[]] * 87_602 + [12345678901234567890123456789012345678] * 3000}
    reason = check_parameters_fit(LAMBDA, parameters)
    assert reason is not None and reason.startswith("parameters take 413412 bytes in DynamoDB")


def test_reserved_keys_are_split_off_in_order() -> None:
    """The one ``_`` rule the loader, a manual run and the payload share."""
    kept, dropped = split_reserved({"_a": 1, "b": 2, "_c": {"_d": 3}, "e": {"_f": 4}})
    assert kept == {"b": 2, "e": {"_f": 4}}  # only top-level keys are reserved
    assert dropped == ["_a", "_c"]
    assert reserved_note("Job nightly", "_a\nb") == (
        "Job nightly parameter _a\\nb ignored - a key that starts with '_' is reserved for the "
        "system"
    )


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ("RUN#a", 5),
        ("é", 2),
        (123, 3),
        (Decimal("-1.50"), 2),
        (0, 2),
        (None, 1),
        (True, 1),
        ([], 3),
        ({"a": "x"}, 3 + 1 + 1 + 1),
        (b"abc", 3),
        ({"ab", "c"}, 3),
    ],
    ids=lambda v: repr(sorted(v) if isinstance(v, set) else v),  # a set's order varies
)
def test_values_are_sized_by_dynamodbs_rules(value: object, size: int) -> None:
    assert value_size(value) == size
    assert item_size({"k": value}) == 1 + size
