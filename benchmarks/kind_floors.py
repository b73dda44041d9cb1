"""Section 9's target kinds (:mod:`benchmarks.target_kinds`) and their floors: what a
hand-written scheduler would send for a firing of each, on the same stub.

A floor is the bare call per firing: one ``SendMessage``, ``Publish`` or ``PutEvents`` of one
entry carrying the ticker's body and message attributes; one ``RunTask`` with the ticker's
placement and container overrides (``MINI_SCHEDULER_FIRING_ID`` and ``MINI_SCHEDULER_PAYLOAD``);
one ``http.client.HTTPConnection`` POST of the same JSON body with its ``Idempotency-Key``, a
connection each (as the webhook dispatcher opens one a firing). Its client is made as the
ticker's are (:class:`mini_scheduler.aws.Clients`), and an untimed round first opens its
connections. The batched kinds' floor of ten a request (``SendMessageBatch``, ``PublishBatch``,
``PutEvents``) is measured beside it; ECS and webhooks have no call of more than one firing.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import boto3

from benchmarks.rig import ACCOUNT, FIRST_MINUTE, REGION
from benchmarks.stub_targets import StubTargets
from mini_scheduler.aws import Clients
from mini_scheduler.dispatch.ecs import FIRING_VARIABLE, PAYLOAD_VARIABLE
from mini_scheduler.model import Firing, payload

ORIGIN = f"{REGION}/prod"
CLUSTER, TASK_DEFINITION, SUBNET, CONTAINER = (
    "mini-cluster",
    "mini-task:1",
    "subnet-0abc1234",
    "app",
)
TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:bench-topic"

Group = Sequence[tuple[str, str]]
"""Firings sent in one request: each one's id and the ticker's body."""


@dataclass(frozen=True)
class Kind:
    name: str  # the target's kind, and its service's botocore name
    target: str  # the name after the scheme (a webhook's: its path on the stub)
    single: str  # the operation of one firing
    batched: str | None  # the operation of ten; None: no call carries more than one firing
    events: str | None  # the service as botocore's events name it (``before-call.<events>.<Op>``);
    # None: not an AWS call (a webhook's POST, counted by the stub)
    options: str = ""  # more of each job's mapping, in YAML's flow style

    def service(self, endpoint: str) -> str:
        """The jobs' ``service``: a webhook's URL is on the stub's ``endpoint``."""
        if self.name == "https":
            return f"{endpoint}{self.target}"
        return f"{self.name}://{self.target}"


KINDS = (
    Kind("sqs", "bench-queue", "SendMessage", "SendMessageBatch", "sqs"),
    Kind("sns", "bench-topic", "Publish", "PublishBatch", "sns"),
    Kind("events", "bench-bus", "PutEvents", "PutEvents", "eventbridge"),
    Kind(
        "ecs",
        f"{CLUSTER}/{TASK_DEFINITION}",
        "RunTask",
        None,
        "ecs",
        f"ecs: {{launch_type: FARGATE, subnets: [{SUBNET}], container: {CONTAINER}}}",
    ),
    Kind("https", "/hook/run", "POST", None, None, "http: {insecure: true, allow_private: true}"),
)


@dataclass(frozen=True)
class FloorRun:
    calls: int  # firings sent
    requests: int
    wall: float
    cpu: float


def check_once(seen: dict[str, int], expected: set[str], what: str) -> None:
    """AssertionError unless the stub saw each of ``expected`` once, and nothing else."""
    wrong = sorted(fid for fid in expected if seen.get(fid) != 1)
    stray = sorted(set(seen) - expected)
    if wrong or stray:
        raise AssertionError(
            f"{what}: {len(wrong)} of {len(expected)} firings not sent exactly once "
            f"({wrong[:5]}); not due: {stray[:5]}"
        )


def _bodies(calls: int) -> list[tuple[str, str]]:
    """A firing id and the ticker's body for each call (firings of a day the ticks never see)."""
    minute = FIRST_MINUTE + timedelta(days=1)
    out = []
    for index in range(calls):
        firing = Firing(f"floor-job-{index:05d}", minute)
        body = payload(firing, {"region": "east"}, ORIGIN)
        out.append((firing.id, json.dumps(body, separators=(",", ":"), ensure_ascii=False)))
    return out


def _attributes(firing_id: str) -> dict[str, Any]:
    job = firing_id.split("@", 1)[0]
    return {
        name: {"DataType": "String", "StringValue": value}
        for name, value in (("firingId", firing_id), ("job", job))
    }


def _sqs(kind: Kind, client: Any) -> Callable[[Group], None]:
    url = client.get_queue_url(QueueName=kind.target)["QueueUrl"]  # once, as a cache would

    def send(group: Group) -> None:
        if len(group) == 1:
            fid, body = group[0]
            client.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=_attributes(fid))
            return
        entries = [
            {"Id": str(i), "MessageBody": body, "MessageAttributes": _attributes(fid)}
            for i, (fid, body) in enumerate(group)
        ]
        _all_sent(client.send_message_batch(QueueUrl=url, Entries=entries), len(group))

    return send


def _sns(_: Kind, client: Any) -> Callable[[Group], None]:
    def send(group: Group) -> None:
        if len(group) == 1:
            fid, body = group[0]
            client.publish(TopicArn=TOPIC_ARN, Message=body, MessageAttributes=_attributes(fid))
            return
        entries = [
            {"Id": str(i), "Message": body, "MessageAttributes": _attributes(fid)}
            for i, (fid, body) in enumerate(group)
        ]
        answer = client.publish_batch(TopicArn=TOPIC_ARN, PublishBatchRequestEntries=entries)
        _all_sent(answer, len(group))

    return send


def _events(kind: Kind, client: Any) -> Callable[[Group], None]:
    def send(group: Group) -> None:
        entries = [
            {
                "Source": "mini-scheduler",
                "DetailType": "Scheduled Job Firing",
                "Detail": body,
                "EventBusName": kind.target,
                "Resources": [],
            }
            for _, body in group
        ]
        if client.put_events(Entries=entries)["FailedEntryCount"]:
            raise AssertionError("the stub failed a PutEvents entry")

    return send


def _ecs(_: Kind, client: Any) -> Callable[[Group], None]:
    network = {"awsvpcConfiguration": {"subnets": [SUBNET]}}

    def send(group: Group) -> None:
        for fid, body in group:
            variables = {FIRING_VARIABLE: fid, PAYLOAD_VARIABLE: body}
            environment = [{"name": name, "value": value} for name, value in variables.items()]
            answer = client.run_task(
                cluster=CLUSTER,
                taskDefinition=TASK_DEFINITION,
                count=1,
                launchType="FARGATE",
                networkConfiguration=network,
                overrides={"containerOverrides": [{"name": CONTAINER, "environment": environment}]},
            )
            if not answer.get("tasks") or answer.get("failures"):
                raise AssertionError(f"the stub started no task: {answer}")

    return send


def _webhook(url: str) -> Callable[[Group], None]:
    parts = urlsplit(url)
    host, port, path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path

    def send(group: Group) -> None:
        for fid, body in group:
            connection = http.client.HTTPConnection(host, port, timeout=30)
            try:
                headers = {"Content-Type": "application/json", "Idempotency-Key": fid}
                connection.request("POST", path, body=body.encode(), headers=headers)
                answer = connection.getresponse()
                answer.read()
            finally:
                connection.close()
            if answer.status != 200:
                raise AssertionError(f"the stub answered the webhook {answer.status}")

    return send


SENDERS: dict[str, Callable[[Kind, Any], Callable[[Group], None]]] = {
    "sqs": _sqs,
    "sns": _sns,
    "events": _events,
    "ecs": _ecs,
}


def _all_sent(answer: dict[str, Any], count: int) -> None:
    if answer.get("Failed") or len(answer["Successful"]) != count:
        raise AssertionError(f"the stub did not take the batch: {answer}")


def floor(stub: StubTargets, kind: Kind, calls: int, workers: int, *, batch: int) -> FloorRun:
    """``calls`` firings sent ``batch`` a request on ``workers`` threads, after an untimed round
    of ``workers`` requests that opens the client's connections (AssertionError when a firing
    did not reach the stub exactly once)."""
    client = None
    if kind.events:
        client = Clients(REGION, session=boto3.session.Session(), pool=workers)(kind.name)
        send = SENDERS[kind.name](kind, client)
    else:
        send = _webhook(kind.service(stub.endpoint))
    warm = _bodies(workers)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="floor") as pool:
        list(pool.map(send, [[body] for body in warm]))
        bodies = _bodies(calls)
        groups = [bodies[i : i + batch] for i in range(0, calls, batch)]
        stub.reset()
        cpu, started = time.process_time(), time.perf_counter()
        for future in [pool.submit(send, group) for group in groups]:
            future.result()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    if client is not None:
        client.close()
    check_once(stub.counts()["firings"], {fid for fid, _ in bodies}, f"{kind.name} floor")
    return FloorRun(calls, len(groups), wall, cpu)
