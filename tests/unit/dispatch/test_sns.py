"""SNS targets on moto, read back through an SQS queue subscribed to the topic: a topic by name
or ARN, FIFO groups and deduplication, batches cut by count and size, failed entries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.dispatch.base import BatchDispatcher, Ended
from mini_scheduler.dispatch.sns import SnsDispatcher
from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target
from tests.fakeaws import use_test_credentials
from tests.unit.dispatch.batch_hooks import Requests, Sleeps, firing, received

ACCOUNT = "123456789012"  # moto's


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        yield (
            boto3.client("sns", region_name="us-east-1"),
            boto3.client("sqs", region_name="us-east-1"),
        )


def topic_with_queue(clients: tuple[Any, Any], name: str) -> str:
    """The topic ``name`` and a queue subscribed to it with raw delivery: the queue's URL."""
    sns, sqs = clients
    fifo = name.endswith(".fifo")
    topic = sns.create_topic(Name=name, Attributes={"FifoTopic": "true"} if fifo else {})
    queue = sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true"} if fifo else {})
    url: str = queue["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    sns.subscribe(
        TopicArn=topic["TopicArn"],
        Protocol="sqs",
        Endpoint=arn["QueueArn"],
        Attributes={"RawMessageDelivery": "true"},
    )
    return url


def dispatcher(sns: Any, **more: Any) -> SnsDispatcher:
    return SnsDispatcher(sns, region="us-east-1", account=ACCOUNT, **more)


def test_the_dispatcher_is_a_batch_dispatcher(clients: tuple[Any, Any]) -> None:
    assert isinstance(dispatcher(clients[0]), BatchDispatcher)


@pytest.mark.parametrize("form", ["name", "arn"])
def test_a_topic_by_name_or_arn_gets_the_payload(clients: tuple[Any, Any], form: str) -> None:
    url = topic_with_queue(clients, "jobs")
    name = "jobs" if form == "name" else f"arn:aws:sns:us-east-1:{ACCOUNT}:jobs"
    firing_id, payload = firing(0)
    answer = dispatcher(clients[0]).dispatch(Target("sns", name), firing_id, payload)
    (message,) = received(clients[1], url)
    assert json.loads(message["Body"]) == payload
    attributes = {k: v["StringValue"] for k, v in message["MessageAttributes"].items()}
    assert attributes == {"firingId": firing_id, "job": "nightly-report"}
    assert isinstance(answer, Ended) and answer.reference.startswith(f"sns:{name}:")


def test_a_topic_of_another_region_is_refused(clients: tuple[Any, Any]) -> None:
    publishes = Requests(clients[0], "PublishBatch")
    target = Target("sns", f"arn:aws:sns:eu-west-1:{ACCOUNT}:jobs")
    answers = dispatcher(clients[0]).dispatch_batch(target, [firing(0)])
    assert isinstance(answers[0], DispatchError) and "ticker's region" in str(answers[0])
    assert publishes.params == []


def test_a_fifo_topic_groups_by_job_and_drops_a_resent_firing(clients: tuple[Any, Any]) -> None:
    url = topic_with_queue(clients, "jobs.fifo")
    publishes = Requests(clients[0], "PublishBatch")
    firing_id, payload = firing(0)
    sns = dispatcher(clients[0])
    sns.dispatch_batch(Target("sns", "jobs.fifo"), [(firing_id, payload)])
    sns.dispatch_batch(Target("sns", "jobs.fifo"), [(firing_id, payload)])
    (entry,) = publishes.entries[0]
    assert entry["MessageGroupId"] == "nightly-report"
    assert entry["MessageDeduplicationId"] == firing_id
    assert len(received(clients[1], url)) == 1


def test_a_batch_of_25_goes_in_3_requests(clients: tuple[Any, Any]) -> None:
    url = topic_with_queue(clients, "jobs")
    publishes = Requests(clients[0], "PublishBatch")
    answers = dispatcher(clients[0]).dispatch_batch(
        Target("sns", "jobs"), [firing(index) for index in range(25)]
    )
    assert [len(entries) for entries in publishes.entries] == [10, 10, 5]
    assert all(isinstance(answer, Ended) for answer in answers)
    assert len(received(clients[1], url)) == 25


@pytest.mark.parametrize(("limit", "requests"), [(None, [1, 1, 1]), (1_048_576, [2, 1])])
def test_a_batch_is_cut_by_the_topic_s_size(
    clients: tuple[Any, Any], limit: int | None, requests: list[int]
) -> None:
    topic_with_queue(clients, "jobs")
    publishes = Requests(clients[0], "PublishBatch")
    firings = [(f, {**p, "parameters": {"blob": "x" * 400_000}}) for f, p in map(firing, range(3))]
    sns = dispatcher(clients[0], **({"request_limit": limit} if limit else {}))
    sns.dispatch_batch(Target("sns", "jobs"), firings)
    assert [len(entries) for entries in publishes.entries] == requests


def test_only_passing_failures_are_published_again(clients: tuple[Any, Any]) -> None:
    topic_with_queue(clients, "jobs")
    publishes = Requests(clients[0], "PublishBatch")
    publishes.fail(0, 0, Code="InternalError", Message="busy", SenderFault=False)
    publishes.fail(0, 2, Code="InvalidParameter", Message="too big", SenderFault=True)
    sleeps = Sleeps()
    answers = dispatcher(clients[0], sleep=sleeps).dispatch_batch(
        Target("sns", "jobs"), [firing(index) for index in range(4)]
    )
    assert [[entry["Id"] for entry in entries] for entries in publishes.entries[1:]] == [["0"]]
    assert [type(answer) for answer in answers] == [Ended, Ended, DispatchError, Ended]
    assert "InvalidParameter: too big" in str(answers[2]) and sleeps == [0.05]


def test_a_request_that_raises_answers_for_each_entry(clients: tuple[Any, Any]) -> None:
    topic_with_queue(clients, "jobs")
    Requests(clients[0], "PublishBatch").raise_on(0, "Throttling")
    answers = dispatcher(clients[0]).dispatch_batch(Target("sns", "jobs"), [firing(0), firing(1)])
    assert all("SNS PublishBatch arn:aws:sns:" in str(answer) for answer in answers)
    assert all(isinstance(answer, DispatchError) for answer in answers)
