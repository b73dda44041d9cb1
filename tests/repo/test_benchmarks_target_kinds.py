"""Section 9 of the benchmarks (issue 29's target kinds): the stub of SQS, SNS, EventBridge and
ECS answers as moto does and as the dispatchers need, and a webhook's POST with 200; the section at
30 firings a kind sends them in the requests the tick's batching makes (one a firing for ECS and
webhooks); its rows judge a batched kind's requests per firing against 1."""

from __future__ import annotations

import http.client
import json
import math
import shutil
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from benchmarks import target_kinds
from benchmarks.rig import rig
from benchmarks.stub_targets import StubTargets
from benchmarks.table import Row
from botocore.config import Config
from moto import mock_aws

from mini_scheduler.dispatch.base import BatchDispatcher, Ended
from mini_scheduler.dispatch.events import EventBridgeDispatcher
from mini_scheduler.dispatch.sns import SnsDispatcher
from mini_scheduler.dispatch.sqs import SqsDispatcher
from mini_scheduler.jobs import Target
from mini_scheduler.jobs.model import TargetKind
from mini_scheduler.tick.work import BATCH as CLAIM_BATCH
from tests.fakeaws import use_test_credentials

ACCOUNT = "123456789012"  # moto's, and the stub's
TOPIC = f"arn:aws:sns:us-east-1:{ACCOUNT}:bench-topic"


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubTargets]:
    use_test_credentials(monkeypatch)
    with StubTargets(latency=0.0) as started:
        yield started


def _clients(endpoint: str | None) -> dict[str, Any]:
    config = Config(retries={"total_max_attempts": 1})
    return {
        name: boto3.session.Session().client(
            name, region_name="us-east-1", endpoint_url=endpoint, config=config
        )
        for name in ("sqs", "sns", "events", "ecs")
    }


def _body(index: int) -> str:
    return json.dumps({"firingId": f"job-{index}@2026-11-30T14:00:00Z"})


def _answers(clients: dict[str, Any], url: str) -> dict[str, Any]:
    """Each operation the stub serves, called once (a batch of three)."""
    sqs, sns, events, ecs = clients["sqs"], clients["sns"], clients["events"], clients["ecs"]
    batch = [{"Id": str(i), "MessageBody": _body(i)} for i in range(3)]
    published = [{"Id": str(i), "Message": _body(i)} for i in range(3)]
    entries = [{"Source": "s", "DetailType": "d", "Detail": _body(i)} for i in range(3)]
    return {
        "GetQueueUrl": sqs.get_queue_url(QueueName="bench-queue"),
        "SendMessage": sqs.send_message(QueueUrl=url, MessageBody=_body(9)),
        "SendMessageBatch": sqs.send_message_batch(QueueUrl=url, Entries=batch),
        "Publish": sns.publish(TopicArn=TOPIC, Message=_body(9)),
        "PublishBatch": sns.publish_batch(TopicArn=TOPIC, PublishBatchRequestEntries=published),
        "PutEvents": events.put_events(Entries=entries),
        "RunTask": ecs.run_task(
            cluster="mini-cluster",
            taskDefinition="mini-task:1",
            launchType="FARGATE",  # moto places it without a container instance
            overrides={"containerOverrides": [{"name": "app", "environment": _variables(9)}]},
        ),
    }


def _variables(index: int) -> list[dict[str, str]]:
    """A container override's environment holding firing ``index``'s id, as ECS's dispatcher
    puts it."""
    return [
        {"name": "MINI_SCHEDULER_PAYLOAD", "value": _body(index)},
        {"name": "MINI_SCHEDULER_FIRING_ID", "value": f"job-{index}@2026-11-30T14:00:00Z"},
    ]


def _paths(answer: Any, prefix: str = "") -> set[str]:
    """The keys of a parsed answer, nested (a list's by its first member), but its metadata."""
    if isinstance(answer, list):
        return _paths(answer[0], prefix + "[]") if answer else set()
    if not isinstance(answer, dict):
        return set()
    found: set[str] = set()
    for key, value in answer.items():
        if key != "ResponseMetadata":
            found |= {prefix + key} | _paths(value, f"{prefix}{key}.")
    return found


def test_the_stub_answers_every_operation_as_moto_does(stub: StubTargets) -> None:
    clients = _clients(stub.endpoint)
    url = clients["sqs"].get_queue_url(QueueName="bench-queue")["QueueUrl"]
    stub.reset()
    stubbed = _answers(clients, url)
    counts = stub.counts()
    with mock_aws():
        real = _clients(None)
        moto_url = real["sqs"].create_queue(QueueName="bench-queue")["QueueUrl"]
        real["sns"].create_topic(Name="bench-topic")
        real["ecs"].create_cluster(clusterName="mini-cluster")
        real["ecs"].register_task_definition(
            family="mini-task",
            containerDefinitions=[{"name": "app", "image": "app:1", "memory": 512}],
        )
        mocked = _answers(real, moto_url)
    for operation, answer in stubbed.items():
        assert _paths(answer) <= _paths(mocked[operation]), operation
        assert _paths(answer), operation
    assert counts["requests"] == {
        "sqs.SendMessage": 1,
        "sqs.SendMessageBatch": 1,
        "sns.Publish": 1,
        "sns.PublishBatch": 1,
        "events.PutEvents": 1,
        "ecs.RunTask": 1,
    }
    assert counts["messages"]["sqs.SendMessageBatch"] == 3
    assert counts["firings"]["job-0@2026-11-30T14:00:00Z"] == 3  # a batch of each service
    assert counts["firings"]["job-9@2026-11-30T14:00:00Z"] == 3  # SendMessage, Publish, RunTask


def test_the_stub_answers_a_webhook_200_and_counts_its_idempotency_key(stub: StubTargets) -> None:
    port = int(stub.endpoint.rsplit(":", 1)[1])
    statuses = []
    for key in ("job-1@2026-11-30T14:00:00Z", "job-1@2026-11-30T14:00:00Z", None):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"Content-Type": "application/json"} | ({"Idempotency-Key": key} if key else {})
        connection.request("POST", "/hook/run", body=_body(1).encode(), headers=headers)
        statuses.append(connection.getresponse().status)
        connection.close()
    assert statuses == [200, 200, 200]
    counts = stub.counts()
    assert counts["requests"] == {"https.POST": 3}
    assert counts["firings"] == {"job-1@2026-11-30T14:00:00Z": 2, "(no Idempotency-Key)": 1}


def test_the_dispatchers_get_an_end_for_every_firing_from_the_stub(stub: StubTargets) -> None:
    clients = _clients(stub.endpoint)
    firings = [(f"job-{i}@2026-11-30T14:00:00Z", {"firingId": f"job-{i}"}) for i in range(12)]
    dispatchers: dict[TargetKind, BatchDispatcher] = {
        "sqs": SqsDispatcher(clients["sqs"]),
        "sns": SnsDispatcher(clients["sns"], region="us-east-1", account=ACCOUNT),
        "events": EventBridgeDispatcher(clients["events"]),
    }
    for kind, dispatcher in dispatchers.items():
        answers = dispatcher.dispatch_batch(Target(kind, f"bench-{kind}"), firings)
        assert all(isinstance(answer, Ended) for answer in answers), answers
        assert len({answer.reference for answer in answers if isinstance(answer, Ended)}) == 12
    counts = stub.counts()
    assert counts["requests"] == {
        "sqs.SendMessageBatch": 2,
        "sns.PublishBatch": 2,
        "events.PutEvents": 2,
    }
    assert set(counts["firings"].values()) == {3}
    with pytest.raises(Exception, match="ListQueues"):
        clients["sqs"].list_queues()  # an operation the stub does not serve is refused


def _requests(firings: int) -> int:
    """Batch requests of a tick of ``firings`` due at once to one target: claims of 25, each
    claim's winners sent ten a request."""
    full, left = divmod(firings, CLAIM_BATCH)
    return full * math.ceil(CLAIM_BATCH / 10) + math.ceil(left / 10)


@pytest.mark.dynamodb_local
@pytest.mark.skipif(shutil.which("java") is None, reason="DynamoDB Local needs Java")
def test_section_9_counts_the_requests_of_30_firings_of_each_kind() -> None:
    with rig(0.0) as bench_rig:
        results = target_kinds.run(
            bench_rig, firings=30, workers=16, latency=0.0, progress=lambda _: None
        )
    assert _requests(30) == 4  # 25 claimed: 10, 10 and 5; then 5
    sent = {
        result.kind.name: (
            result.tick.sent,
            result.floor.requests,
            result.batched.requests if result.batched else None,
        )
        for result in results
    }
    assert sent == {
        "sqs": ({"sqs.SendMessageBatch": 4}, 30, 3),
        "sns": ({"sns.PublishBatch": 4}, 30, 3),
        "events": ({"events.PutEvents": 4}, 30, 3),
        "ecs": ({"ecs.RunTask": 30}, 30, None),  # one task a firing, nothing batched
        "https": ({"https.POST": 30}, 30, None),
    }
    for result in results:
        assert result.tick.firings == 30
        assert result.dispatches() == (4 if result.kind.batched else 30)
        assert result.tick.cpu > 0 and result.floor.cpu > 0
    ecs = results[3].tick.calls
    assert ecs.get("ecs.RunTask") == 30 and "ecs.DescribeTaskDefinition" not in ecs
    assert not any(op.startswith("https") for op in results[4].tick.calls)  # not botocore's
    assert results[4].requests()["https.POST"] == 30
    rows = target_kinds.rows(results)
    assert len(rows) == 3 * 5 + 2 * 4 + 1
    assert rows[-1].value == "390 of 390" and rows[-1].met
    judged = [row for row in rows if row.met is not None][:-1]
    assert [row.target for row in judged] == ["< 1"] * 3
    for row in judged:
        assert row.met is (float(row.value) < 1)
    unbatched = [row for row in rows if row.figure.startswith(("ecs:", "https:"))]
    assert [row.target for row in unbatched] == ["informational"] * 2
    assert all(float(row.value) > 1 for row in unbatched)  # a request a firing, and the claims


def _result(kind: target_kinds.Kind, ticker_requests: int) -> target_kinds.KindResult:
    calls = {"dynamodb.BatchExecuteStatement": 80, f"{kind.events}.{kind.batched}": 120}
    calls["dynamodb.UpdateItem"] = ticker_requests - 200
    tick = target_kinds.KindTick(1000, 3.0, 2.0, 4.0, calls, {f"{kind.name}.x": 120})
    floor = target_kinds.FloorRun(1000, 1000, 2.5, 2.0)
    batched = target_kinds.FloorRun(1000, 100, 0.3, 0.3)
    return target_kinds.KindResult(kind, 16, tick, floor, batched)


def test_requests_per_firing_are_met_below_one_and_cpu_is_informational() -> None:
    sqs = target_kinds.KINDS[0]
    rows: dict[int, list[Row]] = {
        n: target_kinds.rows([_result(sqs, n)]) for n in (999, 1000, 1206)
    }
    assert [rows[n][0].met for n in (999, 1000, 1206)] == [True, False, False]
    assert rows[1206][0].value == "1.206"
    dispatch, cpu = rows[1000][1], rows[1000][2]
    assert dispatch.value == "0.120" and dispatch.met is None
    assert (cpu.value, cpu.ratio, cpu.target, cpu.met) == (
        "4.00 ms",
        "2.00x",
        "informational",
        None,
    )
