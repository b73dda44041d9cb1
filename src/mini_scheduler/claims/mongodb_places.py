"""Places under caps on MongoDB (:mod:`.places`): one document per cap in ``caps``.

A cap's document (``_id``: the cap's key) keeps its holders in an array, ``holders``, of
``{id: <firing id>, until: <the lease of the claim that took it>}`` (an array rather than a
subdocument keyed by firing id: a firing id holds dots, which a field name may not). Each write
is one ``update_one``:

* take: ``$push`` of the holder, on the filter that no holder is this firing and no element is
  at ``limit - 1`` (fewer than ``limit`` hold one), with upsert, so the cap's first take makes
  its document. A filter that misses meets the document as a DuplicateKeyError: the document is
  read to tell a place this firing holds already (taken by a peer claiming it too), a cap that
  changed meanwhile (tried again), and a full one (stale places released, then tried again);
* release: ``$pull`` of the firing's holder; a stale release pulls it only as read (its
  ``until`` too).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pymongo.errors import DuplicateKeyError, PyMongoError

from mini_scheduler.claims import places
from mini_scheduler.claims.mongodb_documents import run_from, utc
from mini_scheduler.claims.mongodb_slots import Fail
from mini_scheduler.mongo import RUNS, Document

if TYPE_CHECKING:
    from pymongo.collection import Collection

CAPS = "caps"
_ATTEMPTS = 3
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Caps:
    """The caps' places in ``caps``; ``runs`` tells a place no open run holds any more."""

    def __init__(self, runs: Collection[Document], caps: Collection[Document], fail: Fail) -> None:
        self._runs = runs
        self._caps = caps
        self._fail = fail

    def _read(self, key: str) -> list[Mapping[str, Any]]:
        """The cap's holders as stored."""
        try:
            found = self._caps.find_one({"_id": key})
        except PyMongoError as exc:
            raise self._fail("find (cap)", CAPS, exc) from exc
        holders = (found or {}).get("holders") or []
        return [holder for holder in holders if isinstance(holder, Mapping)]

    def holders(self, key: str) -> dict[str, datetime]:
        return {str(h.get("id")): utc(h.get("until")) or _EPOCH for h in self._read(key)}

    def take(self, key: str, firing_id: str, limit: int, *, lease: datetime, now: datetime) -> bool:
        """Take a place for ``firing_id`` under the cap (:func:`.places.may_take`), releasing
        stale places when it is full: False when it stays full."""
        query = {
            "_id": key,
            "holders.id": {"$ne": firing_id},
            f"holders.{limit - 1}": {"$exists": False},
        }
        for _ in range(_ATTEMPTS):
            try:
                self._caps.update_one(
                    query, {"$push": {"holders": {"id": firing_id, "until": lease}}}, upsert=True
                )
            except DuplicateKeyError:
                stored = self._read(key)
                holders = {str(h.get("id")): utc(h.get("until")) or _EPOCH for h in stored}
                if firing_id in holders:
                    return True  # a peer claiming the same firing took it: the same place
                if places.may_take(holders, firing_id, limit):
                    continue  # it changed since: try again
                if not self._release_stale(key, stored, holders, now):
                    return False
            except PyMongoError as exc:
                raise self._fail("update (take cap place)", CAPS, exc) from exc
            else:
                return True
        return False

    def release(self, key: str, firing_id: str, until: Any = None) -> bool:
        """Give back ``firing_id``'s place (``until``: only as read, a stale one): whether it
        was given back here."""
        holder: dict[str, Any] = {"id": firing_id}
        if until is not None:
            holder["until"] = until
        try:
            result = self._caps.update_one({"_id": key}, {"$pull": {"holders": holder}})
        except PyMongoError as exc:
            raise self._fail("update (release cap place)", CAPS, exc) from exc
        return result.modified_count == 1

    def _release_stale(
        self,
        key: str,
        stored: list[Mapping[str, Any]],
        holders: Mapping[str, datetime],
        now: datetime,
    ) -> bool:
        """Release the places no open run holds (:func:`.places.stale`): whether any was
        released (here or by a peer), so the take is worth trying again."""
        due = places.past_lease(holders, now)
        if not due:
            return False
        try:
            found = list(self._runs.find({"_id": {"$in": due}}))
        except PyMongoError as exc:
            raise self._fail("find (cap holders)", RUNS, exc) from exc
        runs: dict[str, Any] = dict.fromkeys(due)
        for doc in found:
            runs[str(doc["_id"])] = run_from(doc)
        raw = {str(h.get("id")): h.get("until") for h in stored}
        released = False
        for firing_id, _, why in places.stale(holders, runs, now):
            if self.release(key, firing_id, raw.get(firing_id)):
                places.log_released(key, firing_id, why)
            released = True
        return released
