"""Places under caps on DynamoDB (:mod:`.places`): one item per cap, ``CAP#<key>`` / ``STATE``.

The item keeps its holders in a map, ``holders``: firing id -> the lease of the claim that took
the place (an ISO string). Each write is one conditional ``UpdateItem``:

* take: ``SET holders.<id> = if_not_exists(holders.<id>, :lease)`` on the condition
  ``attribute_exists(holders.<id>) OR (attribute_exists(holders) AND size(holders) < :limit)``;
  the cap's first take (no item, or no map yet: the condition fails) writes the whole map, on
  ``attribute_not_exists(holders)``, so two first takers never overwrite each other;
* release: ``REMOVE holders.<id>`` on ``attribute_exists(holders.<id>)``;
* a stale release: the same, on ``holders.<id> = :lease`` as read.

A refused take reads the holders back (``ReturnValuesOnConditionCheckFailure``), and the runs
of those past their lease in one ``BatchGetItem``, to release the stale ones and try again. The
firing id is an attribute name of its own (``ExpressionAttributeNames``), never a part of the
expression's text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims import places
from mini_scheduler.claims.dynamodb_table import (
    REFUSED,
    code,
    failed,
    get_many,
    instant,
    plain_item,
    run_from,
    run_key,
    write_retried,
)
from mini_scheduler.model import firing_from_id, iso_millis

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_ATTEMPTS = 3
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HOLDERS = "holders"


def cap_key(key: str) -> dict[str, Any]:
    return {"pk": {"S": f"CAP#{key}"}, "sk": {"S": "STATE"}}


class Caps:
    """The caps' places in ``table``."""

    def __init__(self, client: DynamoDBClient, table: str, sleep: Callable[[float], None]) -> None:
        self._client = client
        self._table = table
        self._sleep = sleep

    def _write(self, what: str, **request: Any) -> Mapping[str, Any] | None:
        """One conditional UpdateItem of the cap's item: None when written, else the item as
        the refusal found it (empty: none)."""
        try:
            write_retried(
                self._client,
                "update_item",
                self._sleep,
                TableName=self._table,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **request,
            )
        except ClientError as exc:
            if code(exc) != REFUSED:
                raise failed(self._table, f"UpdateItem ({what})", exc) from exc
            old: Mapping[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            return plain_item(old) if old else {}
        except BotoCoreError as exc:
            raise failed(self._table, f"UpdateItem ({what})", exc) from exc
        return None

    def holders(self, key: str) -> dict[str, datetime]:
        try:
            answer = self._client.get_item(
                TableName=self._table, Key=cap_key(key), ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise failed(self._table, "GetItem (cap)", exc) from exc
        return _holders(plain_item(answer.get("Item") or {}))

    def take(self, key: str, firing_id: str, limit: int, *, lease: datetime, now: datetime) -> bool:
        """Take a place for ``firing_id`` under the cap (:func:`.places.may_take`), releasing
        stale places when it is full: False when it stays full."""
        for _ in range(_ATTEMPTS):
            found = self._write(
                "take cap place",
                Key=cap_key(key),
                UpdateExpression="SET #h.#f = if_not_exists(#h.#f, :lease)",
                ConditionExpression="attribute_exists(#h.#f) OR "
                "(attribute_exists(#h) AND size(#h) < :limit)",
                ExpressionAttributeNames={"#h": _HOLDERS, "#f": firing_id},
                ExpressionAttributeValues={
                    ":lease": {"S": iso_millis(lease)},
                    ":limit": {"N": str(limit)},
                },
            )
            if found is None:
                return True
            if _HOLDERS not in found:
                if self._first(key, firing_id, lease):
                    return True
                continue  # another first taker made the map: take a place in it
            holders = _holders(found)
            if places.may_take(holders, firing_id, limit):
                continue  # it changed since the refusal
            if not self._release_stale(key, holders, now):
                return False
        return False

    def _first(self, key: str, firing_id: str, lease: datetime) -> bool:
        """The cap's first place: its map written whole, where it has none."""
        return (
            self._write(
                "take first cap place",
                Key=cap_key(key),
                UpdateExpression="SET #h = :holders",
                ConditionExpression="attribute_not_exists(#h)",
                ExpressionAttributeNames={"#h": _HOLDERS},
                ExpressionAttributeValues={
                    ":holders": {"M": {firing_id: {"S": iso_millis(lease)}}}
                },
            )
            is None
        )

    def release(self, key: str, firing_id: str, lease: datetime | None = None) -> bool:
        """Give back ``firing_id``'s place if it holds one (with ``lease``: only if it is the
        place as read, a stale one): whether it was given back here."""
        values: dict[str, Any] = {}
        condition = "attribute_exists(#h.#f)"
        if lease is not None:
            condition = "#h.#f = :lease"
            values[":lease"] = {"S": iso_millis(lease)}
        request: dict[str, Any] = {
            "Key": cap_key(key),
            "UpdateExpression": "REMOVE #h.#f",
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#h": _HOLDERS, "#f": firing_id},
        }
        if values:
            request["ExpressionAttributeValues"] = values
        return self._write("release cap place", **request) is None

    def _release_stale(self, key: str, holders: Mapping[str, datetime], now: datetime) -> bool:
        """Release the places no open run holds (:func:`.places.stale`): whether any was
        released (here or by a peer), so the take is worth trying again."""
        due = places.past_lease(holders, now)
        if not due:
            return False
        keys = [run_key(firing_from_id(firing_id)) for firing_id in due]
        found = get_many(self._client, self._table, "BatchGetItem (cap holders)", keys, self._sleep)
        runs: dict[str, Any] = dict.fromkeys(due)
        for raw in found:
            run = run_from(raw)
            runs[run.firing_id] = run
        released = False
        for firing_id, lease, why in places.stale(holders, runs, now):
            if self.release(key, firing_id, lease):
                places.log_released(key, firing_id, why)
            released = True
        return released


def _holders(item: Mapping[str, Any]) -> dict[str, datetime]:
    """A cap item's holders and their leases (a lease that does not read: the epoch, so it
    is past)."""
    found: dict[str, datetime] = {}
    for firing_id, lease in (item.get(_HOLDERS) or {}).items():
        moment = instant(lease)
        found[str(firing_id)] = moment if moment is not None else _EPOCH
    return found
