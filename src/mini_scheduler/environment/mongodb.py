"""The active environment as a document of the MongoDB ``control`` collection (``_id:
"environment"``), next to the claim store's watermarks and pauses.

Read with majority read concern on the primary at every tick, never cached: a failover written
by an operator (or by the other region, on a replica set that spans both) counts at the next
tick. Written with majority write concern, so an acknowledged failover survives a primary
election.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pymongo.errors import PyMongoError

from mini_scheduler.errors import EnvironmentStoreError
from mini_scheduler.mongo import CONTROL, Document, describe_error, majority

if TYPE_CHECKING:
    from pymongo.database import Database

_ID = "environment"


class MongoDBEnvironmentStore:
    def __init__(self, database: Database[Document]) -> None:
        self.database_name = database.name
        self.name = f"mongodb:{database.name}"
        self.persistent = True
        self._control = majority(database, CONTROL)

    def get(self) -> str | None:
        try:
            doc = self._control.find_one({"_id": _ID})
        except PyMongoError as exc:
            raise EnvironmentStoreError(
                f"MongoDB find (environment) on {self.database_name}.{CONTROL} failed - "
                f"{describe_error(exc)}"
            ) from exc
        if doc is None or doc.get("active") is None:
            return None
        return str(doc["active"])

    def set(self, value: str, *, operator: str, now: datetime) -> None:
        try:
            self._control.replace_one(
                {"_id": _ID}, {"active": value, "operator": operator, "at": now}, upsert=True
            )
        except PyMongoError as exc:
            raise EnvironmentStoreError(
                f"MongoDB replace (environment) on {self.database_name}.{CONTROL} failed - "
                f"{describe_error(exc)}"
            ) from exc
