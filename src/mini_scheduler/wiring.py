"""Build the scheduler's parts from Settings: stores, dispatchers, the ticker, the recorder.

Used by the entry points only: the Lambda handlers (once per container, on the first event), the
CLI and the local scheduler (which passes alerts of its own: log lines, no bus). The AWS clients
come from :class:`mini_scheduler.aws.Clients`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.aws import Clients, partition
from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatcher, Dispatchers, OnFirstUse
from mini_scheduler.dispatch.lambda_ import finish_invoke
from mini_scheduler.environment.active import ActiveEnvironment
from mini_scheduler.environment.base import EnvironmentStore
from mini_scheduler.errors import (
    AlertError,
    ConfigurationError,
    DispatchError,
    describe_aws_error,
)
from mini_scheduler.metrics import Metrics
from mini_scheduler.wake import Wake, waker

BATCH_ENTRIES = 10  # SendMessageBatch, PublishBatch and PutEvents take ten entries a request

if TYPE_CHECKING:
    from mini_scheduler.alerts import Alerts
    from mini_scheduler.audit.base import AuditLog
    from mini_scheduler.carry.carrier import Peers
    from mini_scheduler.jobs import CronFile
    from mini_scheduler.recorder import Recorder
    from mini_scheduler.tick import Ticker


def claim_store(settings: Settings, clients: Clients) -> ClaimStore:
    if settings.claim_store == "dynamodb":
        from mini_scheduler.claims.dynamodb import DynamoDBClaimStore

        return DynamoDBClaimStore(
            settings.state_table,
            clients("dynamodb"),
            run_ttl_days=settings.run_ttl_days,
            batched=settings.batch_writes,
            transactions=settings.transactions,
        )
    if settings.claim_store == "mongodb":
        # pymongo is imported here only: a DynamoDB deployment never loads it.
        from mini_scheduler.claims.mongodb import MongoDBClaimStore
        from mini_scheduler.mongo import database

        return MongoDBClaimStore(
            database(secrets=lambda: clients("secretsmanager")),
            run_ttl_days=settings.run_ttl_days,
        )
    raise ConfigurationError(f"CLAIM_STORE {settings.claim_store!r} is not available in this build")


def environment_store(settings: Settings, clients: Clients) -> EnvironmentStore:
    kind = settings.active_environment_store
    if kind.startswith("ssm:"):
        from mini_scheduler.environment.ssm import SSMEnvironmentStore

        return SSMEnvironmentStore(kind.removeprefix("ssm:"), clients("ssm"))
    if kind == "dynamodb":
        from mini_scheduler.environment.dynamodb import DynamoDBEnvironmentStore

        return DynamoDBEnvironmentStore(settings.state_table, clients("dynamodb"))
    if kind == "mongodb":
        from mini_scheduler.environment.mongodb import MongoDBEnvironmentStore
        from mini_scheduler.mongo import database

        return MongoDBEnvironmentStore(database(secrets=lambda: clients("secretsmanager")))
    raise ConfigurationError(f"ACTIVE_ENVIRONMENT_STORE {kind!r} is not available in this build")


def dispatchers(settings: Settings, clients: Clients, account: str | None) -> Dispatchers:
    from mini_scheduler.dispatch.lambda_ import LambdaDispatcher
    from mini_scheduler.dispatch.stepfunctions import StepFunctionsDispatcher

    if account is None:
        account = os.environ.get("AWS_ACCOUNT_ID") or None
    if account is None:
        account = str(clients("sts").get_caller_identity()["Account"])
    where = {"region": settings.region, "account": account, "partition": partition(settings.region)}
    by_kind: dict[str, Dispatcher] = {
        "lambda": LambdaDispatcher(clients("lambda")),
        "flow": StepFunctionsDispatcher(clients("stepfunctions"), **where),
    }
    by_kind.update(_more_kinds(settings, clients, where))
    return Dispatchers(by_kind)


def _more_kinds(
    settings: Settings, clients: Clients, where: dict[str, str]
) -> dict[str, Dispatcher]:
    """The dispatchers of the kinds this deployment may start besides Lambda and flows: those
    whose prefix is set (every kind outside Lambda, where none is), each module imported and
    client made at its kind's first firing."""
    from mini_scheduler.jobs.targets import TargetRules

    off = {kind for kind, prefix in settings.target_prefixes if not prefix}

    def sns() -> Dispatcher:
        from mini_scheduler.dispatch.sns import SnsDispatcher

        return SnsDispatcher(
            clients("sns"),
            region=where["region"],
            account=where["account"],
            partition=where["partition"],
        )

    def events() -> Dispatcher:
        from mini_scheduler.dispatch.events import EventBridgeDispatcher

        return EventBridgeDispatcher(clients("events"))

    def ecs() -> Dispatcher:
        from mini_scheduler.dispatch.ecs import EcsDispatcher

        return EcsDispatcher(
            clients("ecs"),
            region=where["region"],
            account=where["account"],
            partition=where["partition"],
        )

    def webhooks() -> Dispatcher:
        import boto3

        from mini_scheduler.dispatch.https import WebhookDispatcher, secret_reader

        session = clients.session or boto3.session.Session()
        return WebhookDispatcher(
            secrets=secret_reader(clients), credentials=session.get_credentials
        )

    makers: dict[str, tuple[Callable[[], Dispatcher], int]] = {
        "sqs": (lambda: queue_dispatcher(clients), BATCH_ENTRIES),
        "sns": (sns, BATCH_ENTRIES),
        "events": (events, BATCH_ENTRIES),
        "ecs": (ecs, 1),
        "https": (webhooks, 1),
    }
    rules = TargetRules(dict(settings.target_prefixes))
    return {
        kind: OnFirstUse(make, size, rules.problem)
        for kind, (make, size) in makers.items()
        if kind not in off
    }


def queue_dispatcher(clients: Clients) -> Dispatcher:
    """The SQS dispatcher: ``sqs://`` targets, and the dead-letter queues."""
    from mini_scheduler.dispatch.sqs import SqsDispatcher

    return SqsDispatcher(clients("sqs"))


def dead_letters(clients: Clients) -> Callable[[str, Mapping[str, Any]], None]:
    """Sends a final failure's letter to its job's ``sqs://`` queue (made at the first)."""
    from mini_scheduler.jobs.names import parse_service

    queues = OnFirstUse(lambda: queue_dispatcher(clients))

    def send(queue: str, letter: Mapping[str, Any]) -> None:
        target = parse_service(queue)
        if isinstance(target, str) or target.kind != "sqs":
            raise AlertError(f"dead letter not sent: {queue[:120]!r} is not an sqs:// queue")
        try:
            queues.dispatch(target, str(letter.get("firingId", "")), letter)
        except DispatchError as exc:
            raise AlertError(f"dead letter to {queue} not sent - {exc}") from exc

    return send


def cron_source(settings: Settings, clients: Clients) -> Callable[[], CronFile]:
    from mini_scheduler.jobs.locations import CronFileSource
    from mini_scheduler.jobs.targets import TargetRules

    locations = settings.cron_file
    if locations is None:
        root = os.environ.get("LAMBDA_TASK_ROOT")
        locations = f"file:{os.path.join(root, 'cron.yaml')}" if root else "file:cron.yaml"
    needs_s3 = "s3://" in locations
    source = CronFileSource(
        locations,
        s3_client=clients("s3") if needs_s3 else None,
        default_timezone=settings.default_timezone,
        targets=TargetRules(dict(settings.target_prefixes)),
    )
    return source.load


def fanout(settings: Settings, clients: Clients) -> Callable[[dict[str, Any]], None] | None:
    """Invoke this ticker function asynchronously with a shard's tick, or a catch-up (None
    outside Lambda)."""
    return _ticker_invoke(settings.function_name, clients)


def _ticker_invoke(
    function: str | None, clients: Clients
) -> Callable[[dict[str, Any]], None] | None:
    """An asynchronous invoke of the ticker function ``function`` with an event."""
    if not function:
        return None

    def invoke(event: dict[str, Any]) -> None:
        try:
            answer = clients("lambda").invoke(
                FunctionName=function, InvocationType="Event", Payload=json.dumps(event).encode()
            )
        except (ClientError, BotoCoreError) as exc:
            raise DispatchError(
                f"Lambda Invoke {function} (ticker) failed - {describe_aws_error(exc)}"
            ) from exc
        finish_invoke(answer)

    return invoke


def alert_publisher(settings: Settings, clients: Clients) -> Alerts:
    """EventBridge on ``settings.event_bus``; its client is made on the first alert."""
    from mini_scheduler.alerts.eventbridge import EventBridgeAlerts

    return EventBridgeAlerts(
        settings.event_bus, lambda: clients("events"), letters=dead_letters(clients)
    )


def peers(settings: Settings, clients: Clients) -> Peers | None:
    """The peer regions' stores (:mod:`mini_scheduler.carry`), each made on first use; None
    without peers. A peer named without its table has the table of this stack's namesake
    there (its ``StateTableName`` output)."""
    if not settings.peers:
        return None
    from mini_scheduler.carry.carrier import Peers

    def factory(region: str, table: str | None) -> Callable[[], ClaimStore]:
        def make() -> ClaimStore:
            there = Clients(region, session=clients.session, pool=4)
            named = table or _stack_table(settings.stack_name, region, there)
            return claim_store(replace(settings, state_table=named, region=region), there)

        return make

    return Peers(settings.region, {r: factory(r, t) for r, t in settings.peers})


def _stack_table(stack: str | None, region: str, clients: Clients) -> str:
    if not stack:
        raise ConfigurationError(
            f"PEER_STATE_TABLES names {region} without its table, and STACK_NAME is not set: "
            f"give {region}=TABLE"
        )
    try:
        answer = clients("cloudformation").describe_stacks(StackName=stack)
    except (BotoCoreError, ClientError) as exc:
        raise ConfigurationError(
            f"the state table of stack {stack} in {region} is unknown: CloudFormation "
            f"DescribeStacks failed - {describe_aws_error(exc)}"
        ) from exc
    for output in answer["Stacks"][0].get("Outputs") or []:
        if output.get("OutputKey") == "StateTableName":
            return str(output["OutputValue"])
    raise ConfigurationError(f"stack {stack} in {region} has no output StateTableName")


def build_ticker(
    settings: Settings,
    *,
    clients: Clients | None = None,
    clock: Clock | None = None,
    metrics: Metrics | None = None,
    account: str | None = None,
    dispatch: Dispatchers | None = None,
    cron: Callable[[], CronFile] | None = None,
    alerts: Alerts | None = None,
    wake: Wake | None = None,
    audit: AuditLog | None = None,
) -> Ticker:
    from mini_scheduler.tick import Ticker

    clients = clients or Clients(settings.region, pool=settings.dispatch_workers)
    return Ticker(
        settings=settings,
        cron=cron or cron_source(settings, clients),
        claims=claim_store(settings, clients),
        environment=ActiveEnvironment(
            environment_store(settings, clients),
            settings.environment_name,
            settings.known_environments,
        ),
        dispatchers=dispatch or dispatchers(settings, clients, account),
        clock=clock or SystemClock(),
        metrics=metrics,
        fanout=fanout(settings, clients),
        alerts=alerts if alerts is not None else alert_publisher(settings, clients),
        wake=wake,
        peers=peers(settings, clients),
        audit=audit if audit is not None else audit_log(settings, clients),
    )


def audit_log(settings: Settings, clients: Clients) -> AuditLog | None:
    """The audit trail's log group (``AUDIT_LOG_GROUP``), its client made on first use; None
    without one (operator actions are then not recorded)."""
    if not settings.audit_log_group:
        return None
    from mini_scheduler.audit.cloudwatch import CloudWatchAuditLog

    return CloudWatchAuditLog(settings.audit_log_group, lambda: clients("logs"))


def build_recorder(
    settings: Settings,
    *,
    clients: Clients | None = None,
    clock: Clock | None = None,
    metrics: Metrics | None = None,
    alerts: Alerts | None = None,
    wake: Wake | None = None,
) -> Recorder:
    from mini_scheduler.recorder import Recorder

    made = clients or Clients(settings.region, pool=8)
    clock = clock or SystemClock()
    if wake is None and (invoke := _ticker_invoke(settings.ticker_function, made)) is not None:
        wake = waker(invoke, clock, settings.tick_lead_seconds)
    return Recorder(
        claim_store(settings, made),
        clock,
        metrics,
        origin=settings.origin,
        alerts=alerts if alerts is not None else alert_publisher(settings, made),
        wake=wake,
        peers=peers(settings, made),
    )
