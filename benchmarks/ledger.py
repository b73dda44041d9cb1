"""Every DynamoDB request a session makes, item by item: its partition key, and the request
units it cost, from the items' sizes read back.

A :class:`Ledger` registers on a boto3 session (``before-parameter-build`` and ``after-call``
of every DynamoDB operation) and reads the items a request names, whatever the operation:
``PutItem``, ``UpdateItem``, ``DeleteItem``, ``BatchWriteItem``, ``TransactWriteItems``, the
PartiQL ``INSERT``, ``UPDATE`` and ``DELETE`` of ``ExecuteStatement`` and
``BatchExecuteStatement`` (the key's ``?`` found in the statement), ``GetItem``,
``BatchGetItem``, ``Query`` and ``Scan``. Nothing about the scheduler's own design is typed in
here: a claim, a mark, a per-batch record or a watch item are each whatever items the code
writes.

* A write is read (consistently, on a client of the ledger's own, which nobody counts) just
  before it is sent and again when it answered, and costs one write request unit per started KB
  of the larger of the two (DynamoDB's rule; a refused conditional write costs the same; a
  transaction's twice). A delete costs the size of the item it deleted.
* A read costs, per started 4 KB, one read unit consistent and half of one eventually
  consistent: each item of a ``GetItem`` or ``BatchGetItem`` (at least one unit, found or not),
  the sum of the items a ``Query`` or ``Scan`` page returned.

Items are sized by DynamoDB's documented rules (``jobs.limits.item_size``, the one the cron
file's loader uses: strings their UTF-8 length, numbers about one byte per two digits plus one,
maps and lists 3 bytes plus one per element). An item that lists firings (a watch item:
``claims.dynamodb_watch.watched``) says how many, so that its size can be taken to another
number of firings.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import boto3
from boto3.dynamodb.types import TypeDeserializer

from mini_scheduler.claims.dynamodb_watch import watched
from mini_scheduler.jobs import limits

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KB = 1024
READ_UNIT = 4 * KB
_PLAIN = TypeDeserializer()
_PARAMETER = re.compile(r"""(?:'(\w+)'\s*:\s*|"(\w+)"\s*=\s*)?\?""")
_KEY = ("pk", "sk")
Key = tuple[str, str]


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """The size DynamoDB bills for an item as the low-level client returns it."""
    plain = {name: _PLAIN.deserialize(cast(Any, value)) for name, value in item.items()}
    return limits.item_size(plain)


def wru(size: float) -> int:
    """Write request units of one standard write of an item of ``size`` bytes."""
    return max(1, math.ceil(size / KB))


def rru(size: float) -> int:
    """Read request units of one strongly consistent read of ``size`` bytes."""
    return max(1, math.ceil(size / READ_UNIT))


@dataclass(frozen=True, slots=True)
class Entry:
    """One item a request wrote, or one read (an item, or a Query's page)."""

    operation: str
    pk: str
    sk: str  # "" for a Query's page
    write: bool
    units: float  # WRU or RRU
    size: int  # the bytes the units are charged on
    listed: int = 0  # firing ids the items list (a watch item's)
    items: int = 1  # items a read returned


def _key(item: Mapping[str, Any]) -> Key:
    return tuple(str(item.get(name, {}).get("S", "")) for name in _KEY)  # type: ignore[return-value]


def _statement_key(statement: Mapping[str, Any]) -> Key:
    """The pk and sk a PartiQL statement's parameters give (``'pk': ?`` or ``"pk" = ?``)."""
    parameters = statement.get("Parameters") or []
    found: dict[str, str] = {}
    for index, match in enumerate(_PARAMETER.finditer(statement.get("Statement", ""))):
        name = match.group(1) or match.group(2)
        if name in _KEY and index < len(parameters):
            found[name] = str(parameters[index].get("S", ""))
    return found.get("pk", ""), found.get("sk", "")


def _writes(operation: str, params: Mapping[str, Any], table: str) -> Iterator[Key]:
    """The keys of the items a write request names, on ``table``."""
    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        if params.get("TableName") == table:
            yield _key(params.get("Item") or params.get("Key") or {})
    elif operation == "BatchWriteItem":
        for request in params.get("RequestItems", {}).get(table, []):
            put, delete = request.get("PutRequest"), request.get("DeleteRequest")
            yield _key(put["Item"] if put else delete["Key"])
    elif operation == "TransactWriteItems":
        for request in params.get("TransactItems", []):
            for kind in ("Put", "Update", "Delete", "ConditionCheck"):
                part = request.get(kind)
                if part and part.get("TableName") == table:
                    yield _key(part.get("Item") or part.get("Key") or {})
    elif operation in ("ExecuteStatement", "BatchExecuteStatement"):
        statements = params.get("Statements") or [params]
        for statement in statements:
            text = str(statement.get("Statement", ""))
            if f'"{table}"' in text and not text.lstrip().upper().startswith("SELECT"):
                yield _statement_key(statement)


def _read_key(operation: str, params: Mapping[str, Any]) -> Key:
    """A Query's partition key value (its ``pk = :value``), or a GetItem's key."""
    if operation == "GetItem":
        return _key(params.get("Key", {}))
    names = params.get("ExpressionAttributeNames", {})
    condition = str(params.get("KeyConditionExpression", ""))
    for left, value in re.findall(r"([#\w]+)\s*=\s*(:\w+)", condition):
        if names.get(left, left) == "pk":
            return str(params.get("ExpressionAttributeValues", {}).get(value, {}).get("S", "")), ""
    return "", ""


class Ledger:
    """The items the sessions it watches write and read on ``table``, and what they cost."""

    def __init__(self, admin: DynamoDBClient, table: str) -> None:
        self._admin = admin
        self.table = table
        self._entries: list[Entry] = []
        self._lock = threading.Lock()
        self.on = False

    def watch(self, session: boto3.session.Session) -> None:
        session.events.register("before-parameter-build.dynamodb", self._before)
        session.events.register("after-call.dynamodb", self._after)

    def take(self) -> tuple[Entry, ...]:
        """The entries since the last take."""
        with self._lock:
            taken, self._entries = tuple(self._entries), []
            return taken

    def _items(self, keys: Sequence[Key]) -> dict[Key, dict[str, Any]]:
        """The items at ``keys`` now (consistent reads, 100 a request)."""
        unique = list(dict.fromkeys(key for key in keys if key[0]))
        found: dict[Key, dict[str, Any]] = {}
        for first in range(0, len(unique), 100):
            wanted = [{"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in unique[first : first + 100]]
            request: dict[str, Any] = {self.table: {"Keys": wanted, "ConsistentRead": True}}
            while request:
                answer = self._admin.batch_get_item(RequestItems=request)
                for item in answer.get("Responses", {}).get(self.table, []):
                    found[_key(item)] = item
                request = dict(answer.get("UnprocessedKeys") or {})
        return found

    def _before(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        if not self.on:
            return
        operation = model.name
        keys = list(_writes(operation, params, self.table))
        if keys:
            context["ledger.write"] = (operation, keys, self._items(keys))
        elif operation in ("GetItem", "BatchGetItem", "Query", "Scan"):
            context["ledger.read"] = (operation, params)

    def _after(self, parsed: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        written, read = context.pop("ledger.write", None), context.pop("ledger.read", None)
        if written is not None:
            entries = self._written(*written)
        elif read is not None:
            entries = self._read(read[0], read[1], parsed)
        else:
            return
        with self._lock:
            self._entries.extend(entries)

    def _written(
        self, operation: str, keys: Sequence[Key], before: Mapping[Key, Mapping[str, Any]]
    ) -> list[Entry]:
        after = self._items(keys)
        factor = 2 if operation == "TransactWriteItems" else 1
        out = []
        for key in keys:
            versions = [item for item in (before.get(key), after.get(key)) if item]
            size = max((item_size(item) for item in versions), default=0)
            listed = max((len(watched(item)) for item in versions), default=0)
            out.append(Entry(operation, *key, True, factor * wru(size), size, listed))
        return out

    def _read(
        self, operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any]
    ) -> list[Entry]:
        if operation == "BatchGetItem":
            request = params.get("RequestItems", {}).get(self.table)
            if not request:
                return []
            half = 1.0 if request.get("ConsistentRead") else 0.5
            found = {_key(item): item for item in parsed.get("Responses", {}).get(self.table, [])}
            return [
                _read_entry(operation, key, half, [found[key]] if key in found else [])
                for key in (_key(wanted) for wanted in request.get("Keys", []))
            ]
        if params.get("TableName") != self.table:
            return []
        half = 1.0 if params.get("ConsistentRead") else 0.5
        items = parsed.get("Items") if operation != "GetItem" else [parsed.get("Item")]
        return [
            _read_entry(
                operation, _read_key(operation, params), half, [i for i in items or [] if i]
            )
        ]


def _read_entry(operation: str, key: Key, half: float, items: Sequence[Mapping[str, Any]]) -> Entry:
    size = sum(item_size(item) for item in items)
    listed = sum(len(watched(item)) for item in items)
    return Entry(operation, key[0], key[1], False, half * rru(size), size, listed, len(items))


def total(
    entries: Iterable[Entry], write: bool, where: Callable[[Entry], bool] | None = None
) -> float:
    """The units of the writes (or reads) of ``entries`` that ``where`` keeps."""
    return sum(e.units for e in entries if e.write is write and (where is None or where(e)))


def job_of(pk: str, jobs: Collection[str]) -> str | None:
    """The job a partition key names (``RUN#<job>``, ``JOB#<job>``), or None."""
    rest = pk.partition("#")[2]
    return rest if rest in jobs else None


def family(pk: str, jobs: Collection[str]) -> str:
    """A partition key with the job it names as ``<job>`` (and any other variable part as
    ``…``): the partitions of one kind."""
    head, marked, rest = pk.partition("#")
    if not marked:
        return head
    return f"{head}#<job>" if rest in jobs else f"{head}#…"
