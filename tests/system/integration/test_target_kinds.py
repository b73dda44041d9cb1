"""Queues, topics and buses as targets, end to end: the ticker's handler on moto's SQS, SNS and
EventBridge and DynamoDB Local's claims (issue 29). Each firing arrives once, its run ends
SUCCEEDED at its dispatch, a FIFO queue's message carries the job as its group and the firing
as its deduplication id; a kind whose prefix is empty is refused at load, with the parameter to
set; a firing whose dispatch fails for good leaves its letter on the job's dead-letter queue."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from mini_scheduler.model import RunStatus
from tests.system.integration.conftest import Aws

pytestmark = pytest.mark.dynamodb_local

Invoke = Callable[[Any], dict[str, Any]]
MINUTE = "2026-11-30T14:01:00Z"
CRON = """\
jobs:
  - {name: "to-queue", cron: "0 * * * * ?", service: "sqs://mini-work", parameters: {n: 1}}
  - {name: "to-fifo", cron: "0 * * * * ?", service: "sqs://mini-work.fifo"}
  - {name: "to-topic", cron: "0 * * * * ?", service: "sns://mini-news"}
  - name: "to-bus"
    cron: "0 * * * * ?"
    service: "events://mini-bus"
    input: {kind: "nightly", firing: "<firingId>"}
  - name: "to-nowhere"
    cron: "0 * * * * ?"
    service: "sqs://mini-missing"
    dead_letter: "sqs://mini-dlq"
    parameters: {day: "today"}
  - {name: "hook", cron: "0 * * * * ?", service: "https://hooks.example.com/x"}
"""


def _drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message on the queue now (moto answers at once: no wait)."""
    found: list[dict[str, Any]] = []
    for _ in range(20):  # bounded
        answer = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        batch = answer.get("Messages", [])
        if not batch:
            return found
        found.extend(batch)
        for message in batch:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found


@pytest.fixture
def queues(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for variable in ("TARGET_QUEUE_PREFIX", "TARGET_TOPIC_PREFIX", "TARGET_EVENT_BUS_PREFIX"):
        monkeypatch.setenv(variable, "mini-")
    monkeypatch.setenv("TARGET_WEBHOOK_PREFIX", "")
    sqs, sns, events = boto3.client("sqs"), boto3.client("sns"), boto3.client("events")
    urls = {
        name: sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        for name, attributes in {
            "mini-work": {},
            "mini-work.fifo": {"FifoQueue": "true"},
            "mini-dlq": {},
            "news-copy": {},
            "bus-copy": {},
        }.items()
    }
    arn = {
        name: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        for name, url in urls.items()
    }
    topic = sns.create_topic(Name="mini-news")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn["news-copy"])
    events.create_event_bus(Name="mini-bus")
    events.put_rule(
        Name="copy",
        EventBusName="mini-bus",
        EventPattern=json.dumps({"source": ["mini-scheduler"]}),
    )
    events.put_targets(
        Rule="copy", EventBusName="mini-bus", Targets=[{"Id": "q", "Arn": arn["bus-copy"]}]
    )
    aws.cron_path.write_text(CRON)
    return urls


def test_each_kind_receives_its_firing_once_and_its_run_ends_at_dispatch(
    aws: Aws, queues: dict[str, str], invoke_ticker: Invoke
) -> None:
    aws.clock.set(datetime(2026, 11, 30, 14, 0, tzinfo=UTC))
    invoke_ticker({"tick": "2026-11-30T14:00:00Z"})
    sqs = boto3.client("sqs")
    for url in queues.values():  # the 14:00 firings
        _drain(sqs, url)
    aws.clock.set(datetime(2026, 11, 30, 14, 1, tzinfo=UTC))
    answer = invoke_ticker({"tick": MINUTE})
    assert answer["counts"]["dispatched"] == 4, answer

    (plain,) = _drain(sqs, queues["mini-work"])
    body = json.loads(plain["Body"])
    assert body["firingId"] == f"to-queue@{MINUTE}" and body["parameters"] == {"n": 1}
    assert plain["MessageAttributes"]["firingId"]["StringValue"] == f"to-queue@{MINUTE}"
    (fifo,) = _drain(sqs, queues["mini-work.fifo"])
    assert fifo["Attributes"]["MessageGroupId"] == "to-fifo"
    assert fifo["Attributes"]["MessageDeduplicationId"] == f"to-fifo@{MINUTE}"
    (news,) = _drain(sqs, queues["news-copy"])
    assert json.loads(json.loads(news["Body"])["Message"])["firingId"] == f"to-topic@{MINUTE}"
    (bus,) = _drain(sqs, queues["bus-copy"])
    event = json.loads(bus["Body"])
    assert event["detail-type"] == "Scheduled Job Firing" and event["source"] == "mini-scheduler"
    assert event["detail"] == {"kind": "nightly", "firing": f"to-bus@{MINUTE}"}

    store = aws.store()
    for job in ("to-queue", "to-fifo", "to-topic", "to-bus"):
        run = store.run(f"{job}@{MINUTE}")
        assert run is not None and run.status is RunStatus.SUCCEEDED, (job, run)

    # The same minute again (a second region's tick, a retried invoke): nothing is sent twice.
    invoke_ticker({"tick": MINUTE})
    assert all(not _drain(sqs, queues[q]) for q in ("mini-work", "news-copy", "bus-copy"))


def test_a_dispatch_that_fails_for_good_leaves_a_dead_letter(
    aws: Aws, queues: dict[str, str], invoke_ticker: Invoke
) -> None:
    aws.clock.set(datetime(2026, 11, 30, 14, 1, tzinfo=UTC))
    invoke_ticker({"tick": MINUTE})
    run = aws.store().run(f"to-nowhere@{MINUTE}")
    assert run is not None and run.status is RunStatus.FAILED
    (letter,) = _drain(boto3.client("sqs"), queues["mini-dlq"])
    body = json.loads(letter["Body"])
    assert body["firingId"] == f"to-nowhere@{MINUTE}" and body["status"] == "FAILED"
    assert body["parameters"] == {"day": "today"} and "mini-missing" in body["error"]


def test_a_kind_that_is_off_is_refused_at_load_with_its_parameter(
    aws: Aws, queues: dict[str, str], invoke_ticker: Invoke, caplog: pytest.LogCaptureFixture
) -> None:
    aws.clock.set(datetime(2026, 11, 30, 14, 1, tzinfo=UTC))
    answer = invoke_ticker({"tick": MINUTE})
    assert aws.store().run(f"hook@{MINUTE}") is None
    refused = [r.getMessage() for r in caplog.records if "entry#6" in r.getMessage()]
    assert refused and "TargetWebhookPrefix" in refused[0], refused
    assert answer["counts"]["dispatched"] == 4
