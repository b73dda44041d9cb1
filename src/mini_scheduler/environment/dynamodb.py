"""The active environment as an item of the state table (``CONTROL`` / ``ENVIRONMENT``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.errors import EnvironmentStoreError
from mini_scheduler.errors import describe_aws_error as _describe
from mini_scheduler.model import iso_millis

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_KEY = {"pk": {"S": "CONTROL"}, "sk": {"S": "ENVIRONMENT"}}


class DynamoDBEnvironmentStore:
    def __init__(self, table: str, client: DynamoDBClient) -> None:
        self.table = table
        self.name = f"dynamodb:{table}"
        self.persistent = True
        self._client = client

    def get(self) -> str | None:
        try:
            answer = self._client.get_item(TableName=self.table, Key=_KEY, ConsistentRead=True)
        except (ClientError, BotoCoreError) as exc:
            raise EnvironmentStoreError(
                f"DynamoDB GetItem (environment) on {self.table} failed - {_describe(exc)}"
            ) from exc
        item = answer.get("Item")
        if not item or "active" not in item:
            return None
        return str(item["active"].get("S", ""))

    def set(self, value: str, *, operator: str, now: datetime) -> None:
        try:
            self._client.put_item(
                TableName=self.table,
                Item={
                    **_KEY,
                    "active": {"S": value},
                    "operator": {"S": operator},
                    "at": {"S": iso_millis(now)},
                },
            )
        except (ClientError, BotoCoreError) as exc:
            raise EnvironmentStoreError(
                f"DynamoDB PutItem (environment) on {self.table} failed - {_describe(exc)}"
            ) from exc
