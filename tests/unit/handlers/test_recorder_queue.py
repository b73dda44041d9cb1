"""The recorder reads completions in batches from the completion queue (issue 28): each message's
body is the destination record or EventBridge event it takes alone; only the messages whose
write failed come back (``batchItemFailures``), and a message delivered twice closes its run once.

The queue is moto's SQS: the destination record and the Step Functions event are sent the way
Lambda and an EventBridge rule send them, received, and handed to the handler as the event
source mapping does (its record shape, as events/sqs-completions.json has it)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from mini_scheduler.errors import StoreError
from mini_scheduler.handlers import recorder as recorder_handler
from mini_scheduler.handlers.events.recorder import queued_messages
from mini_scheduler.model import RunStatus
from tests.conftest import load_event
from tests.system.integration.conftest import Aws
from tests.system.integration.conftest import aws as aws  # the fixtures
from tests.system.integration.conftest import invoke_recorder as invoke_recorder
from tests.system.integration.conftest import invoke_ticker as invoke_ticker

Invoke = Callable[[Any], dict[str, Any]]
REPORT = "morning-report@2026-11-30T14:00:00Z"
CLEANUP = "hourly-cleanup@2026-11-30T14:15:00Z"
HEARTBEAT = "heartbeat@2026-11-30T14:15:15Z"

pytestmark = pytest.mark.dynamodb_local


class Queue:
    """The completion queue in moto: what Lambda's destinations and the FlowEnded rule send, and
    the batches the event source mapping would hand the recorder."""

    def __init__(self) -> None:
        self.sqs = boto3.client("sqs")
        self.url = self.sqs.create_queue(QueueName="mini-scheduler-completions")["QueueUrl"]
        attributes = self.sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])
        self.arn = attributes["Attributes"]["QueueArn"]

    def send(self, event: dict[str, Any]) -> None:
        """As a Lambda destination does: the invocation record, as JSON, is the body."""
        self.sqs.send_message(QueueUrl=self.url, MessageBody=json.dumps(event))

    def route_flow_events(self) -> Any:
        """An EventBridge rule on the default bus with the queue as its target, as the stack's
        FlowEnded rule: the event itself is the body."""
        events = boto3.client("events")
        events.put_rule(Name="flow-ended", EventPattern=json.dumps({"source": ["aws.states"]}))
        events.put_targets(Rule="flow-ended", Targets=[{"Id": "completions", "Arn": self.arn}])
        return events

    def batch(self) -> dict[str, Any]:
        """Every message waiting, as one event of the event source mapping (left in the queue:
        the mapping deletes what the answer does not name)."""
        received = self.sqs.receive_message(
            QueueUrl=self.url,
            MaxNumberOfMessages=10,
            AttributeNames=["All"],
            VisibilityTimeout=0,
        ).get("Messages", [])
        return {"Records": [self.record(message) for message in received]}

    def record(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": {},
            "md5OfBody": message["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": self.arn,
            "awsRegion": "us-east-1",
        }


def _dispatched(aws: Aws, ticker: Invoke) -> None:
    """morning-report and four heartbeats at 14:00, their runs again at 14:15 with the flow."""
    ticker({"tick": "2026-11-30T13:59:00Z"})
    aws.clock.set(datetime(2026, 11, 30, 14, 0, tzinfo=UTC))
    ticker({"tick": "2026-11-30T14:00:00Z"})
    aws.clock.set(datetime(2026, 11, 30, 14, 15, tzinfo=UTC))
    ticker({"tick": "2026-11-30T14:15:00Z"})


def _heartbeat_success() -> dict[str, Any]:
    event = load_event("lambda-destination-success.json")
    event["requestPayload"].update(job="heartbeat", firingId=HEARTBEAT, parameters={})
    event["timestamp"] = "2026-11-30T14:15:16.020Z"
    return event


def _status(aws: Aws, firing_id: str) -> RunStatus:
    run = aws.store().run(firing_id)
    assert run is not None, firing_id
    return run.status


def test_the_sample_batch_reads_as_its_messages() -> None:
    messages = queued_messages(load_event("sqs-completions.json"))
    assert messages is not None
    assert [m.event for m in messages] == [
        load_event("lambda-destination-success.json"),
        load_event("sfn-status-succeeded.json"),
    ]
    # the shapes sent to the function itself are no batch
    assert queued_messages(load_event("lambda-destination-success.json")) is None
    assert queued_messages({"Records": [{"eventSource": "aws:sns"}]}) is None
    assert queued_messages({"Records": []}) is None


def test_a_batch_from_the_queue_closes_each_run(
    aws: Aws, invoke_ticker: Invoke, invoke_recorder: Invoke
) -> None:
    _dispatched(aws, invoke_ticker)
    queue = Queue()
    queue.send(load_event("lambda-destination-success.json"))
    queue.send(_heartbeat_success())
    events = queue.route_flow_events()
    flow_event = load_event("sfn-status-succeeded.json")
    events.put_events(
        Entries=[
            {
                "Source": flow_event["source"],
                "DetailType": flow_event["detail-type"],
                "Detail": json.dumps(flow_event["detail"]),
                "Resources": flow_event["resources"],
            }
        ]
    )
    batch = queue.batch()
    assert len(batch["Records"]) == 3
    assert invoke_recorder(batch) == {"batchItemFailures": []}
    assert [_status(aws, f) for f in (REPORT, HEARTBEAT, CLEANUP)] == [RunStatus.SUCCEEDED] * 3


def test_a_message_delivered_twice_closes_its_run_once(
    aws: Aws,
    invoke_ticker: Invoke,
    invoke_recorder: Invoke,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """SQS delivers at least once: the same message in one batch twice, then again in a later
    batch, changes nothing after the first (the store's conditional close), and is not sent
    back (nothing failed)."""
    _dispatched(aws, invoke_ticker)
    queue = Queue()
    queue.send(load_event("lambda-destination-failure.json"))
    (record,) = queue.batch()["Records"]
    with caplog.at_level(logging.INFO, logger="mini_scheduler"):
        assert invoke_recorder({"Records": [record, record]}) == {"batchItemFailures": []}
        first = aws.store().run(REPORT)
        aws.clock.set(datetime(2026, 11, 30, 14, 20, tzinfo=UTC))
        assert invoke_recorder({"Records": [record]}) == {"batchItemFailures": []}
    again = aws.store().run(REPORT)
    assert first is not None and first.status is RunStatus.FAILED
    assert again == first
    ignored = [m for m in caplog.messages if m.startswith(f"Completion for firing {REPORT}")]
    assert ignored == [f"Completion for firing {REPORT} ignored - already ended FAILED"] * 2
    ends = [m for m in caplog.messages if m.startswith("Job morning-report ended FAILED")]
    assert len(ends) == 1


def test_only_the_messages_whose_write_failed_come_back(
    aws: Aws,
    invoke_ticker: Invoke,
    invoke_recorder: Invoke,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A store error closing one run fails that message alone; a message the recorder cannot
    take (not JSON, not a completion) is rejected, not sent back, since it would fail the same
    way every time. The failed one, delivered again once the store answers, closes its run."""
    _dispatched(aws, invoke_ticker)
    queue = Queue()
    queue.send(load_event("lambda-destination-success.json"))
    queue.send(_heartbeat_success())
    queue.sqs.send_message(QueueUrl=queue.url, MessageBody="not json")
    queue.send({"hello": "world"})
    batch = queue.batch()
    ids = {
        json.loads(r["body"]).get("requestPayload", {}).get("firingId"): r["messageId"]
        for r in batch["Records"]
        if r["body"].startswith("{")
    }
    recorder, _ = recorder_handler._get_recorder()
    close = recorder.claims.close

    def failing_close(firing_id: str, *args: Any, **kwargs: Any) -> Any:
        if firing_id == HEARTBEAT:
            raise StoreError("DynamoDB UpdateItem failed - ProvisionedThroughputExceededException")
        return close(firing_id, *args, **kwargs)

    monkeypatch.setattr(recorder.claims, "close", failing_close)
    with caplog.at_level(logging.INFO):
        answer = invoke_recorder(batch)
    assert answer == {"batchItemFailures": [{"itemIdentifier": ids[HEARTBEAT]}]}
    assert (_status(aws, REPORT), _status(aws, HEARTBEAT)) == (
        RunStatus.SUCCEEDED,
        RunStatus.DISPATCHED,
    )
    assert sum(m.startswith("Event rejected: SQS message") for m in caplog.messages) == 2
    assert any(
        m.startswith(f"Completion in SQS message {ids[HEARTBEAT]} not recorded")
        for m in caplog.messages
    )

    monkeypatch.setattr(recorder.claims, "close", close)
    (again,) = [r for r in batch["Records"] if r["messageId"] == ids[HEARTBEAT]]
    assert invoke_recorder({"Records": [again]}) == {"batchItemFailures": []}
    assert _status(aws, HEARTBEAT) is RunStatus.SUCCEEDED


def test_a_bug_on_one_message_sends_back_that_message_only(
    aws: Aws, invoke_ticker: Invoke, invoke_recorder: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dispatched(aws, invoke_ticker)
    queue = Queue()
    queue.send(load_event("lambda-destination-success.json"))
    queue.send(_heartbeat_success())
    batch = queue.batch()
    recorder, _ = recorder_handler._get_recorder()
    close = recorder.claims.close

    def broken_close(firing_id: str, *args: Any, **kwargs: Any) -> Any:
        if firing_id == REPORT:
            raise KeyError("a bug")
        return close(firing_id, *args, **kwargs)

    monkeypatch.setattr(recorder.claims, "close", broken_close)
    answer = invoke_recorder(batch)
    (report,) = [r for r in batch["Records"] if REPORT in r["body"]]
    assert answer == {"batchItemFailures": [{"itemIdentifier": report["messageId"]}]}
    assert _status(aws, HEARTBEAT) is RunStatus.SUCCEEDED


def test_a_completion_sent_to_the_function_itself_is_still_recorded(
    aws: Aws, invoke_ticker: Invoke, invoke_recorder: Invoke
) -> None:
    """A target whose destinations still name the recorder function (a stack deployed before
    the queue, a user's template not updated yet): the direct shape, answered as before."""
    _dispatched(aws, invoke_ticker)
    answer = invoke_recorder(load_event("lambda-destination-success.json"))
    assert answer["recorded"] is True and answer["firingId"] == REPORT
