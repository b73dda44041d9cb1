"""The open slot of ``overlap: skip`` on DynamoDB: taken in a write of its own, before the claim.

An exclusive claim takes two writes, in this order, and no transaction (a transaction costs
twice the write units of its items):

1. one conditional update of the job's item (``JOB#<job>`` / ``STATE``) sets ``openFiring`` to
   the firing, and ``openUntil`` to the claim's lease, only when no other firing holds it. A
   claim batch's slots go together (:meth:`JobSlots.take_many`): one ``BatchExecuteStatement``
   of ``UPDATE`` s, then one of ``INSERT`` s for the jobs whose item does not exist yet (a
   PartiQL ``UPDATE`` never creates one), then, one by one, the few still refused (a slot held:
   its holder is read, and a stale slot released);
2. the claim's insert, batched with the other claims.

A run of an exclusive firing therefore never exists without its slot, so two runs of the job are
never open at once. A claimer that dies between the two writes leaves a slot with no run: the
job is skipped (never run twice) until the claim's lease has passed; the next exclusive claim
then releases that slot, conditionally on it being as it read it. A slot whose run has ended
(its release was lost) is released the same way at once (:func:`.transitions.stale_slot`);
one taken by a backfill's claim over a SKIPPED record (``openOverSkip``) counts that record as no
run yet, since the claim replaces it after taking the slot.

The same item keeps the firings that ``overlap: buffer_one`` and ``buffer_all`` keep waiting for
the slot (``waiting``, a string set of firing ids): a place is taken with ``ADD`` on the condition
that fewer than the limit hold one, or this firing does (:func:`.transitions.may_wait`), and given
back with ``DELETE`` on the condition that it holds one (so no item is made for nothing). Neither
is on the path of a job without a buffer.
MongoDB keeps its slots the same way (:mod:`.mongodb_slots`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.claims import places, transitions
from mini_scheduler.claims.dynamodb_batch import BatchWriter, Insert, Update
from mini_scheduler.claims.dynamodb_table import (
    code,
    conditional,
    encode,
    expressions,
    failed,
    instant,
    job_key,
    named,
    plain_item,
    run_from,
    run_key,
    write_retried,
)
from mini_scheduler.claims.records import JOB_FIELDS
from mini_scheduler.claims.transitions import Expect, Write
from mini_scheduler.errors import StoreError
from mini_scheduler.model import Firing, firing_from_id

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

log = logging.getLogger("mini_scheduler.claims")

_ATTEMPTS = 3


class JobSlots:
    """The jobs' open slots in ``table``."""

    def __init__(self, client: DynamoDBClient, table: str, sleep: Callable[[float], None]) -> None:
        self._client = client
        self._table = table
        self._sleep = sleep

    def _fail(self, operation: str, exc: Exception) -> StoreError:
        return failed(self._table, operation, exc)

    def _update(self, job: str, write: Write, operation: str) -> dict[str, Any] | None:
        """The conditional update of the job's item: None when written, else the item as it
        was (empty when there was none)."""
        request = named(
            {
                "TableName": self._table,
                "Key": job_key(job),
                **expressions(replace(write, sets={"job": job, **write.sets}), JOB_FIELDS),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        )
        try:
            write_retried(self._client, "update_item", self._sleep, **request)
        except ClientError as exc:
            if code(exc) != "ConditionalCheckFailedException":
                raise self._fail(f"UpdateItem ({operation})", exc) from exc
            old: Mapping[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            return plain_item(old) if old else self._state(job)
        except BotoCoreError as exc:
            raise self._fail(f"UpdateItem ({operation})", exc) from exc
        return None

    def _state(self, job: str) -> dict[str, Any]:
        """The job's item, read (an endpoint that does not return it with a refusal)."""
        try:
            answer = self._client.get_item(
                TableName=self._table, Key=job_key(job), ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise self._fail("GetItem (job slot)", exc) from exc
        return plain_item(answer.get("Item") or {})

    def take_many(
        self,
        writer: BatchWriter,
        takes: Sequence[tuple[Firing, bool]],
        *,
        now: datetime,
        lease_until: datetime,
    ) -> list[bool | StoreError]:
        """:meth:`take` for each (firing, over_skip), in order, batched: whether each slot was
        taken, or why it could not be asked."""
        writes = [_take(firing, over_skip, lease_until) for firing, over_skip in takes]
        updates = [
            Update(job_key(firing.job), write, JOB_FIELDS)
            for (firing, _), write in zip(takes, writes, strict=True)
        ]
        claiming = {firing.id for firing, _ in takes}
        outcomes: list[bool | StoreError] = list(writer.write(updates))
        missing = [i for i, outcome in enumerate(outcomes) if outcome is False]
        if missing and writer.batched:  # refused: held, or no item yet (an UPDATE creates none)
            inserts = [Insert(_new_state(takes[i][0].job, writes[i])) for i in missing]
            for i, outcome in zip(missing, writer.write(inserts), strict=True):
                outcomes[i] = outcome
        for i, outcome in enumerate(outcomes):
            if outcome is False:  # held: its holder read, a stale slot released, asked again
                firing, over_skip = takes[i]
                try:
                    outcomes[i] = self.take(
                        firing,
                        now=now,
                        lease_until=lease_until,
                        over_skip=over_skip,
                        claiming=claiming,
                    )
                except StoreError as exc:
                    outcomes[i] = exc
        return outcomes

    def take(
        self,
        firing: Firing,
        *,
        now: datetime,
        lease_until: datetime,
        over_skip: bool = False,
        claiming: Container[str] = (),
    ) -> bool:
        """Set the job's ``openFiring`` to this firing unless another firing holds it
        (``over_skip``: for a backfill's claim over the firing's SKIPPED record; ``claiming``:
        the firings of its claim batch, :meth:`_release_stale`)."""
        take = _take(firing, over_skip, lease_until)
        for _ in range(_ATTEMPTS):
            state = self._update(firing.job, take, "take job slot")
            if state is None:
                return True
            held = state.get(JOB_FIELDS["open_firing"])
            if held in (None, firing.id):
                continue  # it changed since the refusal: try again
            if not self._release_stale(firing.job, str(held), state, now, claiming):
                return False
        return False

    def take_back(self, job: str, firing_id: str) -> bool:
        """A reopened run (a redrive) takes the slot again, if no other run holds it."""
        return self._update(job, transitions.take_slot(firing_id), "take job slot") is None

    def release(self, job: str, firing_id: str, operation: str = "release job slot") -> bool:
        """Release the slot if ``firing_id`` holds it (never another's)."""
        return self._update(job, transitions.release_slot(firing_id), operation) is None

    def _release_stale(
        self,
        job: str,
        held: str,
        state: Mapping[str, Any],
        now: datetime,
        claiming: Container[str] = (),
    ) -> bool:
        """Release a slot no open run holds, conditionally on it being as read. True: it was
        stale (released here or by someone else), so the caller tries again; False: held. Said
        at WARNING, but at DEBUG when ``held`` is a firing of the same claim batch (``claiming``):
        the batch took that slot a moment before for a firing recorded already, whose claim is
        lost and gives it back (:func:`.transitions.lost_keeps_slot`)."""
        try:
            answer = self._client.get_item(
                TableName=self._table, Key=run_key(firing_from_id(held)), ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise self._fail("GetItem (slot holder)", exc) from exc
        holder = run_from(answer["Item"]) if answer.get("Item") else None
        lease = state.get(JOB_FIELDS["open_until"])
        over_skip = bool(state.get(JOB_FIELDS["open_over_skip"]))
        why = transitions.stale_slot(holder, instant(lease), now, over_skip=over_skip)
        if why is None:
            return False
        release = transitions.release_slot(held)
        release = replace(
            release, expect=Expect({**release.expect.one_of, "open_until": (instant(lease),)})
        )
        if self._update(job, release, "release stale job slot") is None:
            places.log_stale_released(job, held, why, claiming)
        return True

    def wait(self, job: str, firing_id: str, limit: int) -> bool:
        """Take a place among the job's waiting firings (:func:`.transitions.may_wait`): False
        when ``limit`` others hold one."""
        request = named(
            {
                "TableName": self._table,
                "Key": job_key(job),
                "UpdateExpression": "SET #job = :job ADD #waiting :ids",
                "ConditionExpression": "attribute_not_exists(#waiting) OR "
                "size(#waiting) < :limit OR contains(#waiting, :id)",
                "ExpressionAttributeValues": {
                    ":job": {"S": job},
                    ":ids": {"SS": [firing_id]},
                    ":id": {"S": firing_id},
                    ":limit": {"N": str(limit)},
                },
            }
        )
        what = "UpdateItem (wait for job slot)"
        answer = conditional(self._client, "update_item", self._sleep, self._table, what, **request)
        return answer is not None

    def leave(self, job: str, firing_id: str) -> None:
        """Give the firing's place among the job's waiting firings back, if it holds one."""
        request = named(
            {
                "TableName": self._table,
                "Key": job_key(job),
                "UpdateExpression": "DELETE #waiting :ids",
                "ConditionExpression": "contains(#waiting, :id)",
                "ExpressionAttributeValues": {
                    ":ids": {"SS": [firing_id]},
                    ":id": {"S": firing_id},
                },
            }
        )
        what = "UpdateItem (stop waiting for job slot)"
        conditional(self._client, "update_item", self._sleep, self._table, what, **request)


def _take(firing: Firing, over_skip: bool, lease_until: datetime) -> Write:
    """The take of ``firing``'s slot until its claim's lease."""
    take = transitions.take_slot(firing.id, over_skip=over_skip, lease_until=lease_until)
    return replace(take, sets={"job": firing.job, **take.sets})


def _new_state(job: str, take: Write) -> dict[str, Any]:
    """The job's item as a take writes it where there was none."""
    item = dict(job_key(job))
    for field, value in take.sets.items():
        if value is not None:
            item[JOB_FIELDS[field]] = encode(field, value)
    return item
