"""EventBridge targets on moto, read back through a rule that sends the bus's events to an SQS
queue: a bus by name or ARN, FailedEntryCount read entry by entry, retries of the retryable
codes only, batches cut by count and by EventBridge's own entry size."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.dispatch.base import BatchDispatcher, Ended
from mini_scheduler.dispatch.events import DETAIL_TYPE, SOURCE, EventBridgeDispatcher
from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target
from tests.fakeaws import use_test_credentials
from tests.unit.dispatch.batch_hooks import Requests, Sleeps, firing, received

BUS_ARN = "arn:aws:events:us-east-1:123456789012:event-bus/jobs"


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        yield (
            boto3.client("events", region_name="us-east-1"),
            boto3.client("sqs", region_name="us-east-1"),
        )


def bus_with_queue(clients: tuple[Any, Any]) -> str:
    """The bus ``jobs`` whose rule sends mini-scheduler's events to a queue: the queue's URL."""
    events, sqs = clients
    events.create_event_bus(Name="jobs")
    url: str = sqs.create_queue(QueueName="seen")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    pattern = json.dumps({"source": [SOURCE]})
    events.put_rule(Name="firings", EventBusName="jobs", EventPattern=pattern)
    events.put_targets(
        Rule="firings", EventBusName="jobs", Targets=[{"Id": "q", "Arn": arn["QueueArn"]}]
    )
    return url


def test_the_dispatcher_is_a_batch_dispatcher(clients: tuple[Any, Any]) -> None:
    assert isinstance(EventBridgeDispatcher(clients[0]), BatchDispatcher)


@pytest.mark.parametrize("bus", ["jobs", BUS_ARN])
def test_a_bus_by_name_or_arn_gets_the_payload_as_detail(
    clients: tuple[Any, Any], bus: str
) -> None:
    url = bus_with_queue(clients)
    puts = Requests(clients[0], "PutEvents")
    firing_id, payload = firing(0)
    answer = EventBridgeDispatcher(clients[0]).dispatch(Target("events", bus), firing_id, payload)
    (message,) = received(clients[1], url)
    event = json.loads(message["Body"])
    assert event["detail"] == payload and event["detail-type"] == DETAIL_TYPE
    assert isinstance(answer, Ended) and answer.reference == f"events:{bus}:{event['id']}"
    (entry,) = puts.entries[0]
    assert entry["EventBusName"] == bus and entry["Resources"] == []
    assert entry["Detail"] == json.dumps(payload, separators=(",", ":"))


def test_a_batch_of_25_goes_in_3_requests_in_order(clients: tuple[Any, Any]) -> None:
    url = bus_with_queue(clients)
    puts = Requests(clients[0], "PutEvents")
    firings = [firing(index) for index in range(25)]
    answers = EventBridgeDispatcher(clients[0]).dispatch_batch(Target("events", "jobs"), firings)
    assert [len(entries) for entries in puts.entries] == [10, 10, 5]
    events = [json.loads(message["Body"]) for message in received(clients[1], url)]
    ids = {event["detail"]["firingId"]: event["id"] for event in events}
    assert answers == [Ended(f"events:jobs:{ids[firing_id]}") for firing_id, _ in firings]


def test_a_batch_is_cut_by_eventbridge_s_entry_size(clients: tuple[Any, Any]) -> None:
    bus_with_queue(clients)
    puts = Requests(clients[0], "PutEvents")
    overhead = len(SOURCE) + len(DETAIL_TYPE)
    # two entries of exactly 500,000 bytes as EventBridge counts them fill a request of 1 MB
    firings = []
    for index in range(3):
        firing_id, payload = firing(index)
        empty = len(json.dumps({**payload, "blob": ""}, separators=(",", ":")))
        firings.append((firing_id, {**payload, "blob": "x" * (500_000 - overhead - empty)}))
    EventBridgeDispatcher(clients[0]).dispatch_batch(Target("events", "jobs"), firings)
    assert [len(entries) for entries in puts.entries] == [2, 1]


def test_a_failed_entry_is_never_a_success(clients: tuple[Any, Any]) -> None:
    bus_with_queue(clients)
    puts = Requests(clients[0], "PutEvents")
    puts.fail(0, 1, ErrorCode="MalformedDetail", ErrorMessage="not JSON")
    puts.fail(0, 2, ErrorCode="ThrottlingException", ErrorMessage="slow down")
    puts.fail(0, 3, ErrorCode="InternalFailure", ErrorMessage="oops")
    puts.fail(1, 1, ErrorCode="InternalFailure", ErrorMessage="oops")
    puts.fail(2, 0, ErrorCode="InternalFailure", ErrorMessage="oops")
    sleeps = Sleeps()
    firings = [firing(index) for index in range(5)]
    answers = EventBridgeDispatcher(clients[0], sleep=sleeps).dispatch_batch(
        Target("events", "jobs"), firings
    )
    sent = [[json.loads(e["Detail"])["firingId"] for e in entries] for entries in puts.entries]
    assert sent[1:] == [[firings[2][0], firings[3][0]], [firings[3][0]]]
    assert [type(answer) for answer in answers] == [
        Ended,
        DispatchError,
        Ended,
        DispatchError,
        Ended,
    ]
    assert str(answers[1]).endswith(f"failed for {firings[1][0]} - MalformedDetail: not JSON")
    assert "(after 3 attempts) - InternalFailure: oops" in str(answers[3])
    assert sleeps == [0.05, 0.1]


def test_an_entry_without_an_event_id_failed(clients: tuple[Any, Any]) -> None:
    bus_with_queue(clients)
    Requests(clients[0], "PutEvents").fail(0, 0)
    answers = EventBridgeDispatcher(clients[0]).dispatch_batch(
        Target("events", "jobs"), [firing(0)]
    )
    assert isinstance(answers[0], DispatchError) and "NoEventId" in str(answers[0])


def test_a_request_that_raises_answers_for_each_entry(clients: tuple[Any, Any]) -> None:
    bus_with_queue(clients)
    puts = Requests(clients[0], "PutEvents")
    for request in (0, 1):
        puts.raise_on(request, "ThrottlingException")
    target = Target("events", "jobs")
    answers = EventBridgeDispatcher(clients[0]).dispatch_batch(target, [firing(0), firing(1)])
    assert all(isinstance(answer, DispatchError) for answer in answers)
    with pytest.raises(DispatchError, match="EventBridge PutEvents jobs failed - Throttling"):
        EventBridgeDispatcher(clients[0]).dispatch(target, *firing(2))
