"""The state table as the claim store writes it: keys, attribute values, a
:class:`~mini_scheduler.claims.transitions.Write` as an UpdateItem's expressions, and writes
tried again on a conflict.

A run's attributes are :mod:`.records`' names, less the open marker (the sweep finds open runs
through its watch items, :mod:`.dynamodb_watch`, not an index); times are ISO strings with
milliseconds (they sort as they compare), ``expiresAt`` is in epoch seconds (the TTL). Every
attribute in an expression goes through a ``#name`` placeholder (:func:`named`), so DynamoDB's
reserved words never break one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims.records import RUN_FIELDS, RunRecord, run_record_from, stored_ends
from mini_scheduler.claims.transitions import Expect, Write
from mini_scheduler.errors import StoreError, describe_aws_error
from mini_scheduler.jobs.model import FailurePolicy
from mini_scheduler.model import Firing, RunStatus, attempt_number, iso_millis, parse_instant

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

RUN: Mapping[str, str] = {k: v for k, v in RUN_FIELDS.items() if k != "open"}
"""A run's attribute names: every field but the open marker, which the table does not keep."""
_CONFLICT_ATTEMPTS = 5
_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()


def run_key(firing: Firing) -> dict[str, Any]:
    return {"pk": {"S": f"RUN#{firing.job}"}, "sk": {"S": firing.sort_key}}


def job_key(job: str) -> dict[str, Any]:
    return {"pk": {"S": f"JOB#{job}"}, "sk": {"S": "STATE"}}


def value_of(value: Any) -> dict[str, Any]:
    """A DynamoDB attribute value; floats travel as Decimals, as DynamoDB needs."""
    plain = _plain_value(value)
    if plain is not None:
        return plain
    if isinstance(value, (float, dict, list)):
        value = json.loads(json.dumps(value), parse_float=Decimal)
    return dict(_SERIALIZER.serialize(value))


_LARGEST_NUMBER = 10**38  # DynamoDB's numbers keep 38 digits


def _plain_value(value: Any) -> dict[str, Any] | None:
    """``value`` as :data:`_SERIALIZER` writes it, for the values a job's parameters hold
    (strings, whole numbers, booleans, null, and maps with string keys and lists of them),
    without its type checks or the JSON round trip (a claim's parameters: a firing each); None
    for anything else (a float, a tuple, a set), which takes that way."""
    kind = type(value)
    if kind is str:
        return {"S": value}
    if kind is bool:
        return {"BOOL": value}
    if kind is int:
        return {"N": str(value)} if -_LARGEST_NUMBER < value < _LARGEST_NUMBER else None
    if value is None:
        return {"NULL": True}
    if kind is dict:
        entries = {}
        for key, item in value.items():
            entry = _plain_value(item) if type(key) is str else None
            if entry is None:
                return None
            entries[key] = entry
        return {"M": entries}
    if kind is list:
        items = []
        for item in value:
            entry = _plain_value(item)
            if entry is None:
                return None
            items.append(entry)
        return {"L": items}
    return None


def encode(field: str, value: Any) -> dict[str, Any]:
    """A logical field's value as the table keeps it: times as ISO strings with milliseconds,
    the TTL in epoch seconds."""
    if field == "expires_at":
        return {"N": str(int(value.timestamp()))}
    if isinstance(value, datetime):
        return {"S": iso_millis(value)}
    if isinstance(value, RunStatus):
        return {"S": str(value)}
    if type(value) is str:  # most fields: no serializer needed (a tenth of a claim's CPU)
        return {"S": value}
    if type(value) is bool:
        return {"BOOL": value}
    if isinstance(value, tuple):  # earlier ends
        return value_of(stored_ends(value, iso_millis))
    if isinstance(value, FailurePolicy):
        return value_of(value.as_record())
    return value_of(value)


def _plain(value: Any) -> Any:
    """A deserialised value with Decimals back as ints or floats."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, set, frozenset)):
        return [_plain(v) for v in value]
    return value


def plain_item(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _plain(_DESERIALIZER.deserialize(v)) for k, v in raw.items()}


def instant(value: Any) -> datetime | None:
    return parse_instant(value) if isinstance(value, str) and value else None


KEYED = ("firing_id", "job", "scheduled_time")
"""A run's fields its key already says (``RUN#<job>`` / :attr:`.Firing.sort_key`): not stored,
about 100 bytes an item for as long as runs are kept; :func:`run_from` reads them from the key
(and from an item written before, which has them)."""


def firing_from_key(pk: str, sk: str) -> Firing:
    """The firing a run's key names (ValueError when it is not a run's key)."""
    job = pk.removeprefix("RUN#")
    if job == pk or not job:
        raise ValueError(f"{pk[:100]!r} is not a run's partition key (RUN#<job>)")
    sk, marked, number = sk.partition("#attempt-")
    attempt = attempt_number(number.lstrip("0")) if marked else 1
    if attempt is None:
        raise ValueError(f"{sk[:100]!r}#attempt-{number[:10]!r} names no attempt")
    at, _, nonce = sk.partition("#manual-")
    moment = parse_instant(at)  # ValueError when it is not an instant
    return Firing(job, moment, bool(nonce), nonce, attempt=attempt)


def run_from(raw: Mapping[str, Any]) -> RunRecord:
    plain = plain_item(raw)
    if RUN["firing_id"] not in plain:
        firing = firing_from_key(str(plain.get("pk", "")), str(plain.get("sk", "")))
        plain[RUN["firing_id"]] = firing.id
        plain[RUN["job"]] = firing.job
        plain[RUN["scheduled_time"]] = firing.scheduled_time
    return run_record_from(plain, instant, RUN)


def expressions(write: Write, names: Mapping[str, str]) -> dict[str, Any]:
    """``write`` as an UpdateItem's expressions and values (every attribute a ``#name``)."""
    values: dict[str, Any] = {}
    clauses: dict[str, list[str]] = {"SET": [], "REMOVE": [], "ADD": []}
    for field, value in write.sets.items():
        if field not in names:
            continue  # a field this table does not keep (the open marker)
        name = names[field]
        if value is None:
            clauses["REMOVE"].append(f"#{name}")
        else:
            clauses["SET"].append(f"#{name} = :{name}")
            values[f":{name}"] = encode(field, value)
    for field, count in write.adds.items():
        name = names[field]
        clauses["ADD"].append(f"#{name} :{name}")
        values[f":{name}"] = value_of(count)
    request: dict[str, Any] = {
        "UpdateExpression": " ".join(
            f"{verb} {', '.join(parts)}" for verb, parts in clauses.items() if parts
        )
    }
    expected = condition(write.expect, names, values)
    if expected:
        request["ConditionExpression"] = expected
    if values:
        request["ExpressionAttributeValues"] = values
    return request


def condition(expect: Expect, names: Mapping[str, str], values: dict[str, Any]) -> str:
    """``expect`` as a ConditionExpression, its values added to ``values``."""
    parts: list[str] = []
    for field, allowed in expect.one_of.items():
        name = names[field]
        was = f":was{_title(name)}"
        present = [value for value in allowed if value is not None]
        options = [f"attribute_not_exists(#{name})"] if len(present) < len(allowed) else []
        if len(present) == 1:
            values[was] = encode(field, present[0])
            options.append(f"#{name} = {was}")
        elif present:
            keys = [f"{was}{i}" for i in range(len(present))]
            values.update(zip(keys, (encode(field, value) for value in present), strict=True))
            options.append(f"#{name} IN ({', '.join(keys)})")
        parts.append(options[0] if len(options) == 1 else f"({' OR '.join(options)})")
    for field, bound in expect.at_most.items():
        name = names[field]
        values[f":max{_title(name)}"] = encode(field, bound)
        parts.append(f"#{name} <= :max{_title(name)}")
    return " AND ".join(parts)


def _title(name: str) -> str:
    return name[:1].upper() + name[1:]


_NAME = re.compile(r"#([A-Za-z][A-Za-z0-9]*)")
_EXPRESSIONS = (
    "UpdateExpression",
    "ConditionExpression",
    "KeyConditionExpression",
    "FilterExpression",
    "ProjectionExpression",
)


def named(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` with ``#attr`` in its expressions mapped to ``attr``: every attribute goes
    through a name placeholder, so DynamoDB's reserved words (status, parameters, end...) never
    break an expression."""
    names: dict[str, str] = {}
    for key in _EXPRESSIONS:
        for word in _NAME.findall(str(request.get(key, ""))):
            names[f"#{word}"] = word
    if names:
        request["ExpressionAttributeNames"] = names
    else:
        request.pop("ExpressionAttributeNames", None)
    return request


def run_item(firing: Firing, run: Mapping[str, Any]) -> dict[str, Any]:
    """A new run's item: its key and its fields (:func:`.transitions.claimed`, ``skipped``) but
    those the key says (:data:`KEYED`)."""
    return {
        **run_key(firing),
        **{RUN[k]: encode(k, v) for k, v in run.items() if k in RUN and k not in KEYED},
    }


_READ = 100  # keys in one BatchGetItem
_UNPROCESSED_ATTEMPTS = 5


def get_many(
    client: DynamoDBClient,
    table: str,
    operation: str,
    keys: Sequence[Mapping[str, Any]],
    sleep: Callable[[float], None],
    *,
    consistent: bool = True,
    attributes: Sequence[str] = (),
) -> Iterator[dict[str, Any]]:
    """The items of ``table`` at ``keys`` that exist (only their ``attributes``, when named),
    100 a ``BatchGetItem``, the keys DynamoDB left unprocessed asked again with back-off.
    Raises StoreError naming ``operation``."""
    asked: dict[str, Any] = {"ConsistentRead": consistent}
    if attributes:
        asked["ProjectionExpression"] = ", ".join(f"#{name}" for name in attributes)
        asked["ExpressionAttributeNames"] = {f"#{name}": name for name in attributes}
    keys = list({json.dumps(key, sort_keys=True): key for key in keys}.values())  # once each:
    for start in range(0, len(keys), _READ):  # DynamoDB refuses a request that repeats a key
        wanted: Any = {"Keys": list(keys[start : start + _READ]), **asked}
        for attempt in range(_UNPROCESSED_ATTEMPTS):
            try:
                answer = client.batch_get_item(RequestItems={table: wanted})
            except (ClientError, BotoCoreError) as exc:
                raise failed(table, operation, exc) from exc
            yield from answer.get("Responses", {}).get(table, [])
            left = answer.get("UnprocessedKeys", {}).get(table)
            if not left:
                break
            wanted = {**left, **asked}  # as asked, whatever comes back
            sleep(0.05 * 2**attempt)
        else:
            raise StoreError(
                f"DynamoDB {operation} on table {table} left keys unread after "
                f"{_UNPROCESSED_ATTEMPTS} attempts"
            )


_WRITE = 25  # requests in one BatchWriteItem


def write_batches(
    client: DynamoDBClient,
    table: str,
    requests: Sequence[Mapping[str, Any]],
    operation: str,
    sleep: Callable[[float], None],
) -> list[Any]:
    """``requests`` (each a ``PutRequest`` or a ``DeleteRequest``; no two on one key) 25 a
    ``BatchWriteItem``, the requests DynamoDB left unprocessed sent again with back-off. The
    requests still unprocessed after that, for the caller to judge (none when every one was
    written). Raises StoreError naming ``operation`` when a request fails."""
    left: list[Any] = []
    for start in range(0, len(requests), _WRITE):
        batch: list[Any] = [dict(request) for request in requests[start : start + _WRITE]]
        for attempt in range(_UNPROCESSED_ATTEMPTS):
            try:
                answer = write_retried(
                    client, "batch_write_item", sleep, RequestItems={table: batch}
                )
            except (ClientError, BotoCoreError) as exc:
                raise failed(table, operation, exc) from exc
            batch = list(answer.get("UnprocessedItems", {}).get(table, []))
            if not batch:
                break
            sleep(0.05 * 2**attempt)
        left.extend(batch)
    return left


def failed(table: str, operation: str, exc: Exception) -> StoreError:
    """A request on ``table`` that failed, as the store reports it: the request and why."""
    return StoreError(f"DynamoDB {operation} on table {table} failed - {describe_aws_error(exc)}")


def code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def write_retried(
    client: DynamoDBClient, operation: str, sleep: Callable[[float], None], **request: Any
) -> Any:
    """A write, retried when a multi-Region strongly consistent global table answers
    ReplicatedWriteConflictException (a concurrent write to the same item in another region:
    the outcome is not known yet, so it must not be read as a lost claim). Other errors are
    the SDK's to retry."""
    call = getattr(client, operation)
    for attempt in range(_CONFLICT_ATTEMPTS):
        try:
            return call(**request)
        except ClientError as exc:
            if code(exc) != "ReplicatedWriteConflictException" or attempt + 1 == _CONFLICT_ATTEMPTS:
                raise
            sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")


REFUSED: Final = "ConditionalCheckFailedException"


def conditional(
    client: DynamoDBClient,
    operation: str,
    sleep: Callable[[float], None],
    table: str,
    what: str,
    **request: Any,
) -> dict[str, Any] | None:
    """A conditional write (:func:`write_retried`): its answer, or None when its condition
    refused it; StoreError naming ``what`` (e.g. ``PutItem (carry schedule)``) on any other
    failure."""
    try:
        answer: dict[str, Any] = write_retried(client, operation, sleep, **request)
    except ClientError as exc:
        if code(exc) == REFUSED:
            return None
        raise failed(table, what, exc) from exc
    except BotoCoreError as exc:
        raise failed(table, what, exc) from exc
    return answer
