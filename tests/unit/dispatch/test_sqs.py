"""SQS targets on moto: a queue named by its name, URL or ARN; FIFO groups and deduplication;
batches cut by count and size; a partly failed batch sends its passing failures again, alone."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.dispatch.base import BatchDispatcher, Ended
from mini_scheduler.dispatch.sqs import SqsDispatcher
from mini_scheduler.errors import DispatchError
from mini_scheduler.jobs import Target
from mini_scheduler.model import RunStatus
from tests.fakeaws import use_test_credentials
from tests.unit.dispatch.batch_hooks import Requests, Sleeps, firing, received

ACCOUNT = "123456789012"  # moto's


@pytest.fixture
def sqs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    use_test_credentials(monkeypatch)
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")


def test_each_dispatcher_is_a_batch_dispatcher(sqs: Any) -> None:
    dispatcher = SqsDispatcher(sqs)
    assert isinstance(dispatcher, BatchDispatcher) and dispatcher.batch_size == 10


@pytest.mark.parametrize("form", ["name", "url", "arn"])
def test_a_queue_by_name_url_or_arn_gets_the_payload(sqs: Any, form: str) -> None:
    url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
    name = {"name": "jobs", "url": url, "arn": f"arn:aws:sqs:us-east-1:{ACCOUNT}:jobs"}[form]
    lookups = Requests(sqs, "GetQueueUrl")
    firing_id, payload = firing(0)
    answer = SqsDispatcher(sqs).dispatch(Target("sqs", name), firing_id, payload)
    assert isinstance(answer, Ended) and answer.status is RunStatus.SUCCEEDED
    (message,) = received(sqs, url)
    assert answer.reference == f"sqs:{name}:{message['MessageId']}"
    assert json.loads(message["Body"]) == payload
    assert message["Body"] == json.dumps(payload, separators=(",", ":"))
    attributes = {k: v["StringValue"] for k, v in message["MessageAttributes"].items()}
    assert attributes == {"firingId": firing_id, "job": "nightly-report"}
    expected = {"name": [{"QueueName": "jobs"}], "url": []}
    expected["arn"] = [{"QueueName": "jobs", "QueueOwnerAWSAccountId": ACCOUNT}]
    assert lookups.params == expected[form]


def test_a_name_is_looked_up_once_by_every_thread(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
    lookups = Requests(sqs, "GetQueueUrl")
    second = threading.Event()

    def slow_lookup(**_: Any) -> None:
        if len(lookups.params) > 1:
            second.set()
        second.wait(0.5)  # a second lookup while the first is under way would end this wait

    sqs.meta.events.register("before-call.sqs.GetQueueUrl", slow_lookup)
    dispatcher = SqsDispatcher(sqs)
    start = threading.Barrier(8)

    def dispatch(index: int) -> object:
        start.wait(5)
        return dispatcher.dispatch(Target("sqs", "jobs"), *firing(index))

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(dispatch, range(8)))
    assert all(isinstance(answer, Ended) for answer in answers)
    assert len(lookups.params) == 1 and len(received(sqs, url)) == 8


def test_a_queue_of_another_region_is_refused_before_anything_is_sent(sqs: Any) -> None:
    sends = Requests(sqs, "SendMessageBatch")
    target = Target("sqs", f"arn:aws:sqs:eu-west-1:{ACCOUNT}:jobs")
    answers = SqsDispatcher(sqs).dispatch_batch(target, [firing(0), firing(1)])
    assert all(isinstance(answer, DispatchError) for answer in answers)
    assert "must be in the ticker's region (us-east-1)" in str(answers[0])
    with pytest.raises(DispatchError, match="eu-west-1"):
        SqsDispatcher(sqs).dispatch(target, *firing(0))
    assert sends.params == []


def test_an_unknown_queue_answers_its_error_for_every_firing(sqs: Any) -> None:
    answers = SqsDispatcher(sqs).dispatch_batch(Target("sqs", "missing"), [firing(0), firing(1)])
    assert [type(answer) for answer in answers] == [DispatchError, DispatchError]
    assert "SQS GetQueueUrl missing failed" in str(answers[0])


def test_a_fifo_queue_groups_by_job_and_drops_a_resent_firing(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="jobs.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    dispatcher = SqsDispatcher(sqs)
    target = Target("sqs", "jobs.fifo")
    firing_id, payload = firing(0)
    first = dispatcher.dispatch(target, firing_id, payload)
    again = dispatcher.dispatch_batch(target, [(firing_id, payload), firing(1, "other")])
    assert isinstance(first, Ended) and all(isinstance(answer, Ended) for answer in again)
    messages = received(sqs, url)
    assert len(messages) == 2
    by_group = {m["Attributes"]["MessageGroupId"]: m["Attributes"] for m in messages}
    assert by_group["nightly-report"]["MessageDeduplicationId"] == firing_id
    assert by_group["other"]["MessageDeduplicationId"] == firing(1, "other")[0]


def test_a_long_firing_id_deduplicates_by_its_hash(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="jobs.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    firing_id = "j" * 64 + "@manual-2026-12-04T03:00:00.123Z-1a2b3c4d" + "#" * 30
    SqsDispatcher(sqs).dispatch(Target("sqs", "jobs.fifo"), firing_id, {"firingId": firing_id})
    (message,) = received(sqs, url)
    digest = hashlib.sha256(firing_id.encode()).hexdigest()
    assert len(firing_id) > 128 and message["Attributes"]["MessageDeduplicationId"] == digest


def test_a_standard_queue_has_no_deduplication_id(sqs: Any) -> None:
    sends = Requests(sqs, "SendMessageBatch")
    sqs.create_queue(QueueName="jobs")
    SqsDispatcher(sqs).dispatch_batch(Target("sqs", "jobs"), [firing(0)])
    (entry,) = sends.entries[0]
    assert "MessageDeduplicationId" not in entry and "MessageGroupId" not in entry


def test_a_batch_of_25_goes_in_3_requests_answered_in_order(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
    sends = Requests(sqs, "SendMessageBatch")
    firings = [firing(index) for index in range(25)]
    answers = SqsDispatcher(sqs).dispatch_batch(Target("sqs", "jobs"), firings)
    assert [len(entries) for entries in sends.entries] == [10, 10, 5]
    ids = {m["MessageAttributes"]["firingId"]["StringValue"]: m for m in received(sqs, url)}
    assert len(ids) == 25
    for (firing_id, _), answer in zip(firings, answers, strict=True):
        assert isinstance(answer, Ended)
        assert answer.reference == f"sqs:jobs:{ids[firing_id]['MessageId']}"


def test_a_batch_over_1_mib_is_cut_by_size(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
    sends = Requests(sqs, "SendMessageBatch")
    firings = [(f, {**p, "parameters": {"blob": "x" * 400_000}}) for f, p in map(firing, range(5))]
    answers = SqsDispatcher(sqs).dispatch_batch(Target("sqs", "jobs"), firings)
    assert [len(entries) for entries in sends.entries] == [2, 2, 1]
    assert all(isinstance(answer, Ended) for answer in answers)
    assert len(received(sqs, url)) == 5


def test_only_the_entries_that_failed_for_a_passing_cause_are_sent_again(sqs: Any) -> None:
    sqs.create_queue(QueueName="jobs")
    sends = Requests(sqs, "SendMessageBatch")
    for position in (1, 3):
        sends.fail(0, position, Code="InternalError", Message="try again", SenderFault=False)
    sends.fail(0, 5, Code="InvalidMessageContents", Message="bad body", SenderFault=True)
    sleeps = Sleeps()
    firings = [firing(index) for index in range(8)]
    answers = SqsDispatcher(sqs, sleep=sleeps).dispatch_batch(Target("sqs", "jobs"), firings)
    assert [[entry["Id"] for entry in entries] for entries in sends.entries[1:]] == [["1", "3"]]
    assert sleeps == [0.05]
    failed = [index for index, answer in enumerate(answers) if isinstance(answer, DispatchError)]
    assert failed == [5]
    assert str(answers[5]) == (
        f"SQS SendMessageBatch jobs failed for {firings[5][0]} - InvalidMessageContents: bad body"
    )


def test_an_entry_that_keeps_failing_stops_after_3_attempts(sqs: Any) -> None:
    sqs.create_queue(QueueName="jobs")
    sends = Requests(sqs, "SendMessageBatch")
    for request in range(3):
        sends.fail(request, 0, Code="InternalError", Message="busy", SenderFault=False)
    sleeps = Sleeps()
    firings = [firing(0), firing(1)]
    answers = SqsDispatcher(sqs, sleep=sleeps).dispatch_batch(Target("sqs", "jobs"), firings)
    assert [len(entries) for entries in sends.entries] == [2, 1, 1] and sleeps == [0.05, 0.1]
    assert isinstance(answers[0], DispatchError) and isinstance(answers[1], Ended)
    assert "(after 3 attempts) - InternalError: busy" in str(answers[0])


def test_a_request_that_raises_answers_for_each_of_its_entries(sqs: Any) -> None:
    sqs.create_queue(QueueName="jobs")
    sends = Requests(sqs, "SendMessageBatch")
    sends.raise_on(0, "ThrottlingException")
    firings = [firing(index) for index in range(15)]
    answers = SqsDispatcher(sqs, sleep=Sleeps()).dispatch_batch(Target("sqs", "jobs"), firings)
    assert all(isinstance(answer, DispatchError) for answer in answers[:10])
    assert all(isinstance(answer, Ended) for answer in answers[10:])
    assert "ThrottlingException" in str(answers[0]) and len(sends.params) == 2


def test_a_single_dispatch_that_fails_raises(sqs: Any) -> None:
    sqs.create_queue(QueueName="jobs")
    Requests(sqs, "SendMessage").raise_on(0, "AccessDenied")
    with pytest.raises(DispatchError, match=r"SQS SendMessage jobs failed - AccessDenied"):
        SqsDispatcher(sqs).dispatch(Target("sqs", "jobs"), *firing(0))
