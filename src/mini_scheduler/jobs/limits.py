"""What a target and a store accept: the parameters a job may send, and the size DynamoDB gives
an item.

Parameters must travel as JSON (text keys, no NaN, no dates or bytes), be stored by DynamoDB
(numbers of at most 38 digits, no empty keys, 32 levels), and fit the smaller of the request
that carries them (an asynchronous Lambda invoke, 1 MB; a Step Functions input, 256 KiB) and
the 400 KB item that records the job's latest state, less :data:`DISPATCH_RESERVE`. A key that
starts with ``_`` is reserved for the system: :func:`split_reserved` drops it, for the loader,
a manual run and the payload alike. A reason names a parameter by its key or path and the rule
it breaks, never by its value: a parameter's value may be a secret.
"""

from __future__ import annotations

import decimal
import json
import math
from collections.abc import Mapping
from typing import Any, Final, SupportsBytes

from mini_scheduler.jobs.model import Target
from mini_scheduler.jobs.text import kind, printable

__all__ = [
    "DISPATCH_RESERVE",
    "DYNAMODB_ITEM_LIMIT",
    "LAMBDA_ASYNC_PAYLOAD_LIMIT",
    "MAX_PARAMETER_DEPTH",
    "STEP_FUNCTIONS_INPUT_LIMIT",
    "TARGET_LIMITS",
    "check_parameters_fit",
    "item_size",
    "parameters_limit",
    "reserved_note",
    "split_reserved",
    "value_size",
]

LAMBDA_ASYNC_PAYLOAD_LIMIT: Final = 1_048_576
"""An asynchronous (``InvocationType=Event``) Lambda invoke carries at most 1 MB."""
STEP_FUNCTIONS_INPUT_LIMIT: Final = 262_144
"""A Step Functions execution input is at most 256 KiB."""
DYNAMODB_ITEM_LIMIT: Final = 409_600
"""A DynamoDB item (the job's latest-state record holds the parameters) is at most 400 KB."""
DISPATCH_RESERVE: Final = 8_192
"""Kept for the payload's envelope (job, firingId, scheduledTime, origin, manual, operator) and
for the state record's other attributes, so that only the parameters need measuring."""
DYNAMODB_MAX_DEPTH: Final = 32
"""Lists and maps DynamoDB nests in one item."""
MAX_PARAMETER_DEPTH: Final = DYNAMODB_MAX_DEPTH - 1
"""Lists and maps nested in the parameters: the parameters map is the item's first level."""

_DYNAMODB_NUMBERS: Final = decimal.Context(
    prec=38,
    Emin=-128,
    Emax=126,
    traps=[decimal.Clamped, decimal.Overflow, decimal.Inexact, decimal.Rounded, decimal.Underflow],
)
_DYNAMODB_LARGEST: Final = decimal.Decimal("1E126")
_LARGEST_BITS: Final = 420
"""1E126 < 2**419: an integer of more bits is past DynamoDB's range."""
_EXACT: Final = decimal.Context(prec=400)
"""Enough digits to normalise any number DynamoDB stores without rounding it."""
_DYNAMODB_SMALLEST: Final = decimal.Decimal("1E-130")
_RESERVED: Final = "_"


# -- the reserved keys ------------------------------------------------------------------------


def split_reserved(parameters: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The parameters a target receives, and the keys dropped from them in their order: a key
    that starts with ``_`` is reserved for the system."""
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in parameters.items():
        if isinstance(key, str) and key.startswith(_RESERVED):
            dropped.append(key)
        else:
            kept[key] = value
    return kept, dropped


def reserved_note(label: str, key: str) -> str:
    """The warning for a dropped key: ``<label> parameter <key> ignored - ...``, where
    ``label`` names the job (``Job nightly``); the key is shown cut and on one line."""
    return (
        f"{label} parameter {printable(key, 40)} ignored - a key that starts with "
        f"'{_RESERVED}' is reserved for the system"
    )


# -- what a target accepts --------------------------------------------------------------------


TARGET_LIMITS: Final[Mapping[str, int]] = {
    "lambda": LAMBDA_ASYNC_PAYLOAD_LIMIT,
    "flow": STEP_FUNCTIONS_INPUT_LIMIT,
    "sqs": 1_048_576,
    "sns": 262_144,
    "events": 1_000_000,
    "ecs": 8_192,
    "https": 1_048_576,
}
"""The most bytes one firing's body can take, by kind: an SQS message (1 MiB), an SNS message
(256 KiB unless the topic allows more), a PutEvents entry (1 MB since January 2026), an ECS
task's overrides (8,192 characters: the body rides in an environment variable), a webhook's body
(ours: 1 MiB)."""
_CARRIERS: Final[Mapping[str, str]] = {
    "lambda": "an asynchronous Lambda invoke",
    "flow": "a Step Functions input",
    "sqs": "an SQS message",
    "sns": "an SNS message",
    "events": "an EventBridge entry",
    "ecs": "an ECS task's overrides",
    "https": "a webhook's body",
}


def _reserve(kind: str) -> int:
    """The envelope's share: :data:`DISPATCH_RESERVE`, or a quarter of a small carrier's."""
    carrier = TARGET_LIMITS[kind]
    return DISPATCH_RESERVE if carrier > 4 * DISPATCH_RESERVE else carrier // 4


def parameters_limit(kind: str) -> int:
    """The most bytes of compact UTF-8 JSON the parameters of a ``kind`` target may take."""
    return min(TARGET_LIMITS[kind], DYNAMODB_ITEM_LIMIT) - _reserve(kind)


def _limit_reason(kind: str) -> str:
    carrier = TARGET_LIMITS[kind]
    if carrier <= DYNAMODB_ITEM_LIMIT:
        what = f"{_CARRIERS[kind]} of {carrier} bytes"
    else:
        what = f"the {DYNAMODB_ITEM_LIMIT}-byte DynamoDB item that records the job's state"
    return f"{what}, less {_reserve(kind)} kept for the rest of the dispatch"


def check_parameters_fit(target: Target, parameters: Mapping[str, Any]) -> str | None:
    """Why ``parameters`` cannot be dispatched to ``target``, or None when they can.

    They must be JSON (text keys, no NaN, no dates or bytes), and their compact UTF-8 JSON must
    fit :func:`parameters_limit` for the target's kind: an asynchronous Lambda invoke (1 MB), a
    Step Functions input (256 KiB), and the 400 KB DynamoDB item that records the job's latest
    state, each less :data:`DISPATCH_RESERVE`. A manual run's merged parameters are checked
    the same way.
    """
    if not isinstance(parameters, Mapping):
        return f"parameters must be a mapping of keys to values, not {kind(parameters)}"
    plain = dict(parameters)
    for key, value in plain.items():
        if not isinstance(key, str):
            return f"parameters have a key {repr(key)[:40]} that is not text: quote it"
        if not key:
            return "parameters have an empty key, which DynamoDB cannot store"
        found = _json_problem(value, key, 1)
        if found:
            return found
    try:
        size = len(_compact_json(plain).encode("utf-8"))
    except (TypeError, ValueError, RecursionError) as exc:
        return f"parameters are not JSON ({type(exc).__name__})"  # its text may quote a value
    limit = parameters_limit(target.kind)
    if size > limit:
        label = {"lambda": "Lambda", "https": "webhook"}.get(target.kind, target.kind)
        return (
            f"parameters take {size} bytes as JSON, more than the {limit} a {label} target "
            f"allows ({_limit_reason(target.kind)})"
        )
    stored = item_size(plain)
    if stored > DYNAMODB_ITEM_LIMIT - DISPATCH_RESERVE:
        return (
            f"parameters take {stored} bytes in DynamoDB, more than the "
            f"{DYNAMODB_ITEM_LIMIT - DISPATCH_RESERVE} the item that records the run allows"
        )
    return None


def _json_problem(value: object, path: str, depth: int) -> str | None:
    """Why ``value`` cannot travel as JSON, or None. The reason names the parameter's path and
    the rule it breaks, never the value: a parameter's value may be a secret."""
    if value is None or isinstance(value, bool | str):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"parameter {printable(path)} is NaN or an infinity, which JSON cannot carry"
    if isinstance(value, int | float):
        if _storable_number(value):
            return None
        return (
            f"parameter {printable(path)} is a number DynamoDB cannot store (at most 38 digits, "
            "from 1E-130 to 9.99E+125): write it as text"
        )
    if depth >= MAX_PARAMETER_DEPTH:
        return f"parameter {printable(path)} nests deeper than {MAX_PARAMETER_DEPTH} levels"
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _json_problem(item, f"{path}[{index}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, dict):
        return _mapping_problem(value, path, depth)
    return (
        f"parameter {printable(path)} holds a {type(value).__name__} value, which JSON cannot "
        "carry: write it as text"
    )


def _mapping_problem(value: dict[Any, Any], path: str, depth: int) -> str | None:
    for key, item in value.items():
        if not isinstance(key, str):
            return (
                f"parameter {printable(path)} has a key {repr(key)[:40]} that is not text: quote it"
            )
        if not key:
            return f"parameter {printable(path)} has an empty key, which DynamoDB cannot store"
        found = _json_problem(item, f"{path}.{key}", depth + 1)
        if found:
            return found
    return None


def _storable_number(value: int | float) -> bool:
    """Whether DynamoDB stores ``value`` as a number exactly: at most 38 significant digits,
    zero or a magnitude from 1E-130 to under 1E126."""
    if isinstance(value, int) and value.bit_length() > _LARGEST_BITS:
        return False  # past 1E126; and str() refuses ints of more than 4,300 digits
    try:
        number = _DYNAMODB_NUMBERS.create_decimal(json.dumps(value))
    except decimal.DecimalException:
        return False
    return not number or _DYNAMODB_SMALLEST <= number.copy_abs() < _DYNAMODB_LARGEST


def _compact_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# -- what a store accepts ---------------------------------------------------------------------


def value_size(value: object) -> int:
    """The size DynamoDB gives a value, by its documented rules: text its UTF-8 length, a
    number about one byte per two significant digits plus one, binary its length, a boolean or
    null 1, a list or a map 3 plus one per element (and a map's keys), a set its elements.

    Values as boto3's ``TypeDeserializer`` gives them, or as JSON reads them; 0 for any other.
    """
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, int | float | decimal.Decimal):
        number = value if isinstance(value, decimal.Decimal) else decimal.Decimal(json.dumps(value))
        digits = len(number.normalize(_EXACT).as_tuple().digits)
        return (digits + 1) // 2 + 1
    if isinstance(value, list):
        return 3 + sum(value_size(item) + 1 for item in value)
    if isinstance(value, dict):
        return 3 + sum(len(str(k).encode()) + value_size(v) + 1 for k, v in value.items())
    if isinstance(value, set | frozenset):
        return sum(value_size(item) for item in value)
    if isinstance(value, bytes | bytearray | SupportsBytes):
        return len(bytes(value))
    return 0


def item_size(item: Mapping[str, object]) -> int:
    """The size DynamoDB gives an item: each attribute's name and value."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())
