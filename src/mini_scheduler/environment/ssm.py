"""The active environment in an SSM parameter (the default store).

Read with GetParameter at every tick, never cached: Powertools Parameters would cache it for
300 s by default, which would hold a failover back for five minutes.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.errors import EnvironmentStoreError
from mini_scheduler.errors import describe_aws_error as _describe

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient


class SSMEnvironmentStore:
    def __init__(self, parameter: str, client: SSMClient) -> None:
        self.parameter = parameter
        self.name = f"ssm:{parameter}"
        self.persistent = True
        self._client = client

    def get(self) -> str | None:
        try:
            answer = self._client.get_parameter(Name=self.parameter)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ParameterNotFound":
                return None
            raise EnvironmentStoreError(
                f"SSM GetParameter {self.parameter} failed - {_describe(exc)}"
            ) from exc
        except BotoCoreError as exc:
            raise EnvironmentStoreError(
                f"SSM GetParameter {self.parameter} failed - {_describe(exc)}"
            ) from exc
        return str(answer["Parameter"]["Value"])

    def set(self, value: str, *, operator: str, now: datetime) -> None:
        try:
            self._client.put_parameter(
                Name=self.parameter,
                Value=value,
                Type="String",
                Overwrite=True,
                Description=f"mini-scheduler active environment, set by {operator}"[:1024],
            )
        except (ClientError, BotoCoreError) as exc:
            raise EnvironmentStoreError(
                f"SSM PutParameter {self.parameter} failed - {_describe(exc)}"
            ) from exc
