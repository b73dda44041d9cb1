"""The audit trail fixture: one contract suite, run against every backend.

Each backend gives ``log`` (the one under test), ``peer`` (a second writer on the same backend:
another region's CLI, the ticker) and ``broken`` (the same kind, unable to reach its backend).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.audit.base import AuditLog
from mini_scheduler.audit.cloudwatch import CloudWatchAuditLog
from mini_scheduler.audit.memory import MemoryAuditLog
from tests.contract.claims.conftest import unreachable_aws_client

BACKENDS = ["memory", "cloudwatch-moto"]
GROUP = "/mini-scheduler/test/audit"


@dataclass
class Logs:
    log: AuditLog
    peer: AuditLog
    broken: AuditLog


@pytest.fixture(params=BACKENDS)
def audit(request: pytest.FixtureRequest) -> Iterator[Logs]:
    if request.param == "memory":
        log = MemoryAuditLog()
        broken = MemoryAuditLog()
        broken.failing = ConnectionError("down")
        yield Logs(log, log, broken)  # one process: its peer is itself
        return
    with mock_aws():
        boto3.client("logs", region_name="us-east-1").create_log_group(logGroupName=GROUP)
        yield Logs(
            CloudWatchAuditLog(GROUP, boto3.client("logs", region_name="us-east-1")),
            CloudWatchAuditLog(GROUP, lambda: boto3.client("logs", region_name="us-east-1")),
            CloudWatchAuditLog(GROUP, unreachable_aws_client("logs")),
        )
