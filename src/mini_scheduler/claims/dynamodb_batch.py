"""Conditional writes to the state table, 25 to a request: PartiQL in ``BatchExecuteStatement``.

A new item is an ``INSERT``, refused with ``DuplicateItem`` where the item exists (a peer's
claim); a change is an ``UPDATE ... WHERE`` whose condition is the write's expectation, refused
with ``ConditionalCheckFailed``. Each statement gets its own answer. One refused for throttling
or an internal error is sent again with the others refused so (never with a statement that was
written), after a back-off; one still refused after :data:`ATTEMPTS`, or refused for any other
reason, is that write's :class:`~mini_scheduler.errors.StoreError`. A request that fails as a
whole after the SDK's own retries raises.

With ``batched=False`` each write is a request of its own (``PutItem``, ``UpdateItem``): for
an endpoint whose PartiQL does not honour conditions (moto writes a duplicate ``INSERT`` over
the item and ignores an ``UPDATE``'s ``WHERE``), or a role without the PartiQL permissions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims.dynamodb_table import (
    code,
    encode,
    expressions,
    failed,
    named,
    write_retried,
)
from mini_scheduler.claims.transitions import Write
from mini_scheduler.errors import StoreError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

BATCH_SIZE = 25
"""Statements in one BatchExecuteStatement: DynamoDB's limit."""
ATTEMPTS = 5
"""Sends of a statement refused for throttling or an internal error."""
_AGAIN = frozenset(
    {
        "ProvisionedThroughputExceeded",
        "ThrottlingError",
        "RequestLimitExceeded",
        "InternalServerError",
        "TransactionConflict",
    }
)
_REFUSED = frozenset({"DuplicateItem", "ConditionalCheckFailed"})
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")


@dataclass(frozen=True, slots=True)
class Insert:
    """A new item (its attributes as DynamoDB values), unless an item has its key."""

    item: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Update:
    """``write`` on the item at ``key``, its logical fields stored under ``names``."""

    key: Mapping[str, Any]
    write: Write
    names: Mapping[str, str]


Statement = Insert | Update
Outcome = bool | StoreError
"""True: written; False: refused (the item exists, or the condition failed); else why not."""


class BatchWriter:
    """Writes :data:`Statement` s to ``table``, batched or one by one."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        sleep: Callable[[float], None],
        *,
        batched: bool = True,
    ) -> None:
        self._client = client
        self._table = table
        self._sleep = sleep
        self.batched = batched

    def write(self, statements: Sequence[Statement]) -> list[Outcome]:
        """Each statement's outcome, in order. Raises StoreError when a batch's request failed
        as a whole (nothing is known of its statements)."""
        if not self.batched:
            return [self._one(statement) for statement in statements]
        outcomes: list[Outcome | None] = [None] * len(statements)
        for batch in requests_of(statements):
            answers = self._batch([statements[i] for i in batch])
            for i, outcome in zip(batch, answers, strict=True):
                outcomes[i] = outcome
        return [outcome for outcome in outcomes if outcome is not None]

    # -- batched -------------------------------------------------------------------------------

    def _batch(self, statements: Sequence[Statement]) -> list[Outcome]:
        outcomes: list[Outcome | None] = [None] * len(statements)
        pending = list(range(len(statements)))
        why: dict[int, str] = {}
        for attempt in range(ATTEMPTS):
            try:
                answer = write_retried(
                    self._client,
                    "batch_execute_statement",
                    self._sleep,
                    Statements=[self._partiql(statements[i]) for i in pending],
                )
            except (ClientError, BotoCoreError) as exc:
                error = failed(self._table, "BatchExecuteStatement", exc)
                if attempt == 0 and len(statements) > 1 and _invalid(exc):
                    # Refused whole for what one statement says: nothing was written, and
                    # each statement alone gets its own answer (one never sinks the others).
                    return [self._alone(one) for one in statements]
                if attempt == 0:
                    raise error from exc
                for i in pending:  # the earlier sends' outcomes stand
                    outcomes[i] = error
                return [o for o in outcomes if o is not None]
            again: list[int] = []
            for i, response in zip(pending, answer["Responses"], strict=True):
                error = response.get("Error")
                if error is None:
                    outcomes[i] = True
                elif error.get("Code") in _REFUSED:
                    outcomes[i] = False
                elif error.get("Code") in _AGAIN:
                    again.append(i)
                    why[i] = f"{error.get('Code')}: {error.get('Message', '')}"
                else:
                    outcomes[i] = self._refused(f"{error.get('Code')}: {error.get('Message', '')}")
            if not again:
                break
            pending = again
            if attempt + 1 < ATTEMPTS:
                self._sleep(0.05 * 2**attempt)
        else:
            for i in pending:
                outcomes[i] = self._refused(f"{why[i]} ({ATTEMPTS} attempts)")
        return [o for o in outcomes if o is not None]

    def _alone(self, statement: Statement) -> Outcome:
        """One statement as a request of its own: its answer, or why the request failed."""
        try:
            (outcome,) = self._batch([statement])
        except StoreError as exc:
            return exc
        return outcome

    def _refused(self, why: str) -> StoreError:
        return StoreError(f"DynamoDB statement on table {self._table} refused - {why}")

    def _partiql(self, statement: Statement) -> dict[str, Any]:
        if isinstance(statement, Insert):
            names = list(statement.item)
            fields = ", ".join(f"'{_checked(name)}': ?" for name in names)
            return {
                "Statement": f'INSERT INTO "{self._table}" VALUE {{{fields}}}',
                "Parameters": [statement.item[name] for name in names],
            }
        return update_statement(self._table, statement)

    # -- one by one ----------------------------------------------------------------------------

    def _one(self, statement: Statement) -> Outcome:
        if isinstance(statement, Insert):
            operation = "put_item"
            request = named(
                {
                    "TableName": self._table,
                    "Item": dict(statement.item),
                    "ConditionExpression": "attribute_not_exists(#pk)",
                }
            )
        else:
            operation = "update_item"
            request = named(
                {
                    "TableName": self._table,
                    "Key": dict(statement.key),
                    **expressions(statement.write, statement.names),
                }
            )
        try:
            write_retried(self._client, operation, self._sleep, **request)
        except ClientError as exc:
            if code(exc) == "ConditionalCheckFailedException":
                return False
            return self._failed(operation, exc)
        except BotoCoreError as exc:
            return self._failed(operation, exc)
        return True

    def _failed(self, operation: str, exc: Exception) -> StoreError:
        return failed(self._table, "PutItem" if operation == "put_item" else "UpdateItem", exc)


def requests_of(statements: Sequence[Statement]) -> list[list[int]]:
    """The statements' indexes in order, :data:`BATCH_SIZE` to a request at most and never two
    on one key in a request: DynamoDB refuses such a request whole (``Provided list of item
    keys contains duplicates``). A repeat starts the next request, where it meets the item."""
    requests: list[list[int]] = []
    held: set[str] = set()
    for i, statement in enumerate(statements):
        key = _key_of(statement)
        if not requests or len(requests[-1]) == BATCH_SIZE or key in held:
            requests.append([])
            held = set()
        requests[-1].append(i)
        held.add(key)
    return requests


def _key_of(statement: Statement) -> str:
    """The statement's item key as text (the table's keys are strings: ``pk`` and ``sk``)."""
    item = statement.item if isinstance(statement, Insert) else statement.key
    pk, sk = item.get("pk"), item.get("sk")
    if type(pk) is dict and type(sk) is dict and len(pk) == len(sk) == 1:
        return f"{next(iter(pk.values()))}\x00{next(iter(sk.values()))}"
    key = {name: item[name] for name in ("pk", "sk") if name in item}
    return json.dumps(key, sort_keys=True)


def _invalid(exc: Exception) -> bool:
    """A request refused whole as invalid (not throttled, not failing): worth splitting."""
    return isinstance(exc, ClientError) and code(exc) == "ValidationException"


def update_statement(table: str, update: Update) -> dict[str, Any]:
    """An :class:`Update` as a PartiQL ``UPDATE``: its sets, and its key and expectation as the
    ``WHERE`` (the statement changes nothing, and is refused, when the item is missing)."""
    write, names = update.write, update.names
    if write.adds:
        raise ValueError("a PartiQL UPDATE here sets fields; it does not add to counters")
    clauses: list[str] = []
    parameters: list[Any] = []
    for field, value in write.sets.items():
        if field not in names:
            continue  # a field this table does not keep (the open marker)
        name = _checked(names[field])
        if value is None:
            clauses.append(f'REMOVE "{name}"')
        else:
            clauses.append(f'SET "{name}" = ?')
            parameters.append(encode(field, value))
    where: list[str] = []
    for name, value in update.key.items():
        where.append(f'"{_checked(name)}" = ?')
        parameters.append(value)
    for field, allowed in write.expect.one_of.items():
        name = _checked(names[field])
        options = []
        for value in allowed:
            if value is None:
                options.append(f'"{name}" IS MISSING')
            else:
                options.append(f'"{name}" = ?')
                parameters.append(encode(field, value))
        where.append(options[0] if len(options) == 1 else f"({' OR '.join(options)})")
    for field, bound in write.expect.at_most.items():
        where.append(f'"{_checked(names[field])}" <= ?')
        parameters.append(encode(field, bound))
    text = f'UPDATE "{table}" {" ".join(clauses)} WHERE {" AND ".join(where)}'
    return {"Statement": text, "Parameters": parameters}


def _checked(name: str) -> str:
    """An attribute name as it goes into a statement: ours are plain words, never quoted."""
    if name in _CHECKED:
        return name
    if not _NAME.fullmatch(name):
        raise ValueError(f"attribute name {name!r} cannot go into a statement")
    _CHECKED.add(name)
    return name


_CHECKED: set[str] = set()
"""The names checked already (a few dozen: the table's own), so the hot path skips the regex."""
