"""An EventBridge bus on moto that a test listens to: a rule sends the scheduler's events
(source mini-scheduler) to an SQS queue, which the test reads back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.alerts.eventbridge import EventBridgeAlerts
from mini_scheduler.aws import Clients
from tests.fakeaws import use_test_credentials


@dataclass
class Bus:
    """The bus ``name`` on moto; ``alerts`` publish to it as the functions do."""

    name: str
    alerts: EventBridgeAlerts
    queue: str
    _sqs: Any
    _heard: list[dict[str, Any]] = field(default_factory=list)

    def heard(self, detail_type: str | None = None) -> list[dict[str, Any]]:
        """The events the bus routed so far (of ``detail_type``), oldest first."""
        while True:
            answer = self._sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10)
            messages = answer.get("Messages") or []
            if not messages:
                break
            for message in messages:
                self._heard.append(json.loads(message["Body"]))
                self._sqs.delete_message(
                    QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"]
                )
        return [e for e in self._heard if detail_type is None or e["detail-type"] == detail_type]

    def details(self, detail_type: str) -> list[dict[str, Any]]:
        return [event["detail"] for event in self.heard(detail_type)]


@contextmanager
def listening_bus(monkeypatch: pytest.MonkeyPatch, name: str = "default") -> Iterator[Bus]:
    """moto, the bus ``name`` (created unless it is the default one) and a rule on it to a
    queue; the alerts a function would publish with EVENT_BUS_NAME=``name``."""
    use_test_credentials(monkeypatch)
    with mock_aws():
        events = boto3.client("events", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        if name != "default":
            events.create_event_bus(Name=name)
        queue = sqs.create_queue(QueueName="heard")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])
        events.put_rule(
            Name="heard", EventBusName=name, EventPattern=json.dumps({"source": ["mini-scheduler"]})
        )
        events.put_targets(
            Rule="heard",
            EventBusName=name,
            Targets=[{"Id": "queue", "Arn": arn["Attributes"]["QueueArn"]}],
        )
        clients = Clients("us-east-1")
        yield Bus(name, EventBridgeAlerts(name, lambda: clients("events")), queue, sqs)
