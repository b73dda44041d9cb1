"""The sample targets of ``make run`` beside its functions and flows, one set in each region,
and how their arrivals are shown (:class:`SampleTargets`):

* the queue :data:`QUEUE`, the topic :data:`TOPIC` with the queue :data:`TOPIC_QUEUE`
  subscribed to it (raw delivery: each message is the firing's body), the bus :data:`BUS` with
  a rule sending its ``source: mini-scheduler`` events to the queue :data:`BUS_QUEUE`, all in
  moto; a daemon thread reads the three queues back and logs one line per message: ``Queue
  mini-scheduler-sample-queue received firing <id>`` (``... from topic ...``, ``... from bus
  ...`` for the copies);
* the ECS cluster :data:`CLUSTER` and task definition :data:`TASK` in moto, with a VPC's
  subnet and security group for its FARGATE tasks (moto runs no container: a task's end is
  :class:`~mini_scheduler.local.tasks.LocalTaskDispatcher`'s);
* a webhook on 127.0.0.1 (any free port) that logs each request it receives and answers 200.

Nothing here reaches past this process and its loopback.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.errors import describe_aws_error
from mini_scheduler.local.dispatch import SAMPLE_PREFIX, in_region

if TYPE_CHECKING:
    from mini_scheduler.aws import Clients

__all__ = [
    "BUS",
    "BUS_QUEUE",
    "CLUSTER",
    "QUEUE",
    "TASK",
    "TOPIC",
    "TOPIC_QUEUE",
    "Arrival",
    "SampleTargets",
    "SampleWebhook",
    "firing_of",
]

log = logging.getLogger("mini_scheduler.targets")
webhook_log = logging.getLogger("mini_scheduler.webhook")

QUEUE: Final = SAMPLE_PREFIX + "queue"
TOPIC: Final = SAMPLE_PREFIX + "topic"
TOPIC_QUEUE: Final = SAMPLE_PREFIX + "topic-copies"
BUS: Final = SAMPLE_PREFIX + "bus"
BUS_QUEUE: Final = SAMPLE_PREFIX + "bus-copies"
BUS_RULE: Final = SAMPLE_PREFIX + "bus-rule"
CLUSTER: Final = SAMPLE_PREFIX + "cluster"
TASK: Final = SAMPLE_PREFIX + "task"
CONTAINER: Final = "app"
WEBHOOK_PATH: Final = "/hook"
POLL_SECONDS: Final = 0.5  # how often the queues are read back
_BODY_SHOWN: Final = 300  # the characters of a webhook's body its line shows


@dataclass(frozen=True, slots=True)
class Arrival:
    """A message read back from a sample queue: the queue, the firing it carries, and where it
    came from (``None``: sent to the queue itself; else ``topic <name>`` or ``bus <name>``)."""

    queue: str
    firing_id: str
    via: str | None = None


def firing_of(message: Mapping[str, Any]) -> str:
    """The firing id a read-back message carries: its ``firingId`` attribute, else its body's
    ``firingId`` (a topic's raw copy), else its body's ``detail.firingId`` (a bus's event)."""
    attribute = message.get("MessageAttributes", {}).get("firingId", {})
    if attribute.get("StringValue"):
        return str(attribute["StringValue"])
    try:
        body = json.loads(str(message.get("Body", "")))
    except ValueError:
        body = None
    if isinstance(body, dict):
        detail = body.get("detail")
        found = body.get("firingId") or (detail.get("firingId") if isinstance(detail, dict) else 0)
        if found:
            return str(found)
    return f"(no firing id in {str(message.get('Body', ''))[:80]!r})"


class SampleWebhook:
    """An HTTP server on 127.0.0.1 (``port`` 0: any free one) that logs each request it
    receives (method, path, ``Idempotency-Key``, body) and answers 200; :attr:`received`
    keeps them, :meth:`wait_for` waits (bounded) for one."""

    def __init__(self, port: int = 0) -> None:
        self.received: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{WEBHOOK_PATH}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="webhook", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def wait_for(self, found: Callable[[list[dict[str, Any]]], bool], timeout: float) -> bool:
        """True once ``found`` holds for the requests received, False after ``timeout``."""
        with self._changed:
            return self._changed.wait_for(lambda: found(self.received), timeout)

    def _got(self, request: dict[str, Any]) -> None:
        webhook_log.info(
            "Webhook received %s %s - Idempotency-Key %s, body %s",
            request["method"],
            request["path"],
            request["key"],
            request["body"][:_BODY_SHOWN] or "(none)",
        )
        with self._changed:
            self.received.append(request)
            self._changed.notify_all()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        got = self._got

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                key = self.headers.get("Idempotency-Key") or "(none)"
                got({"method": self.command, "path": self.path, "key": key, "body": body})
                answer = b'{"ok":true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET = _answer

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: :meth:`SampleWebhook._got` logs each request once."""

        return Handler


class SampleTargets:
    """The sample targets of one region (:meth:`create` them in moto, :meth:`start` the
    webhook and the reader of the queues, :meth:`close` both). :attr:`arrivals` keeps what
    the queues gave back, :meth:`wait_for` waits (bounded) for one."""

    def __init__(self, clients: Clients, *, poll: float = POLL_SECONDS) -> None:
        self._clients = clients
        self._poll = poll
        self.queues: dict[str, str] = {}  # queue name -> URL
        self.subnet = ""
        self.security_group = ""
        self.webhook = SampleWebhook()
        self.arrivals: list[Arrival] = []
        self._changed = threading.Condition()
        self._closing = threading.Event()
        self._reader: threading.Thread | None = None

    @property
    def ecs(self) -> dict[str, Any]:
        """The ``ecs:`` mapping of a job on :data:`CLUSTER`: FARGATE in the sample subnet."""
        return {
            "launch_type": "FARGATE",
            "subnets": [self.subnet],
            "security_groups": [self.security_group],
            "container": CONTAINER,
        }

    def create(self) -> None:
        """The queues, the topic, the bus, the cluster and its network, in moto."""
        sqs = self._clients("sqs")
        for name in (QUEUE, TOPIC_QUEUE, BUS_QUEUE):
            self.queues[name] = str(sqs.create_queue(QueueName=name)["QueueUrl"])
        sns = self._clients("sns")
        topic = sns.create_topic(Name=TOPIC)["TopicArn"]
        attributes = {"RawMessageDelivery": "true"}  # the copy's body is the firing's body
        sns.subscribe(
            TopicArn=topic, Protocol="sqs", Endpoint=self._arn(TOPIC_QUEUE), Attributes=attributes
        )
        events = self._clients("events")
        events.create_event_bus(Name=BUS)
        pattern = json.dumps({"source": ["mini-scheduler"]})
        events.put_rule(Name=BUS_RULE, EventBusName=BUS, EventPattern=pattern)
        events.put_targets(
            Rule=BUS_RULE, EventBusName=BUS, Targets=[{"Id": "copies", "Arn": self._arn(BUS_QUEUE)}]
        )
        self._cluster()

    def _arn(self, queue: str) -> str:
        answer = self._clients("sqs").get_queue_attributes(
            QueueUrl=self.queues[queue], AttributeNames=["QueueArn"]
        )
        return str(answer["Attributes"]["QueueArn"])

    def _cluster(self) -> None:
        """The cluster, its FARGATE task definition, and a network for its tasks (moto's
        RunTask wants a subnet; its network interfaces want DNS host names on)."""
        ec2 = self._clients("ec2")
        vpc = ec2.create_vpc(CidrBlock="10.29.0.0/16")["Vpc"]["VpcId"]
        ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
        self.subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.29.1.0/24")["Subnet"]["SubnetId"]
        self.security_group = ec2.create_security_group(
            GroupName=TASK, Description="make run's sample tasks", VpcId=vpc
        )["GroupId"]
        ecs = self._clients("ecs")
        ecs.create_cluster(clusterName=CLUSTER)
        ecs.register_task_definition(
            family=TASK,
            requiresCompatibilities=["FARGATE"],
            networkMode="awsvpc",
            cpu="256",
            memory="512",
            containerDefinitions=[
                {"name": CONTAINER, "image": "busybox", "essential": True, "memory": 256}
            ],
        )

    def start(self, region: str) -> None:
        """Serve the webhook and read the queues back, on daemon threads."""
        self.webhook.start()
        self._reader = threading.Thread(
            target=self._read, args=(region,), name=f"queues:{region}", daemon=True
        )
        self._reader.start()
        log.info(
            "Sample targets: sqs://%s, sns://%s, events://%s (each read back: a line as a "
            "firing arrives), ecs://%s/%s, and a webhook at %s (a line per request)",
            QUEUE,
            TOPIC,
            BUS,
            CLUSTER,
            TASK,
            self.webhook.url,
        )

    def _read(self, region: str) -> None:
        with in_region(region):
            while not self._closing.wait(self._poll):
                self.read()

    def read(self) -> list[Arrival]:
        """Read each queue once, log and keep each message's arrival, delete it."""
        found: list[Arrival] = []
        via = {QUEUE: None, TOPIC_QUEUE: f"topic {TOPIC}", BUS_QUEUE: f"bus {BUS}"}
        for name, url in self.queues.items():
            try:
                found += self._drain(name, url, via[name])
            except (ClientError, BotoCoreError) as exc:
                log.error("Queue %s cannot be read back: %s", name, describe_aws_error(exc))
        if found:
            with self._changed:
                self.arrivals.extend(found)
                self._changed.notify_all()
        return found

    def _drain(self, name: str, url: str, via: str | None) -> list[Arrival]:
        sqs = self._clients("sqs")
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], WaitTimeSeconds=0
        ).get("Messages", [])
        arrivals = [Arrival(name, firing_of(message), via) for message in messages]
        for arrival in arrivals:
            came = f" from {arrival.via}" if arrival.via else ""
            log.info("Queue %s received firing %s%s", name, arrival.firing_id, came)
        if messages:
            sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                    for n, m in enumerate(messages)
                ],
            )
        return arrivals

    def wait_for(self, found: Callable[[list[Arrival]], bool], timeout: float) -> bool:
        """True once ``found`` holds for the arrivals read, False after ``timeout``."""
        with self._changed:
            return self._changed.wait_for(lambda: found(self.arrivals), timeout)

    def close(self) -> None:
        """Stop reading (after one last read, so what arrived is said) and serving."""
        self._closing.set()
        if self._reader is not None:
            self._reader.join(timeout=5)
            self.read()
        self.webhook.stop()
