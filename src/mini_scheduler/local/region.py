"""One region of the local run: its state table, sample functions, flows, sample targets
(:mod:`mini_scheduler.local.targets`) and stack in moto, the deployed ticker and recorder built
on them, its targets run in this process or in moto, and its ticks.

:class:`~mini_scheduler.local.scheduler.LocalScheduler` holds one per region on one moto, as
AWS holds a stack per region: each region reads its own active-environment parameter and keeps
its own store, so the region whose environment name the parameter holds dispatches and the
others stand by.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.base import Dispatcher, Dispatchers
from mini_scheduler.errors import SchedulerError
from mini_scheduler.handlers.events.recorder import completion_from_event
from mini_scheduler.jobs import CronFile
from mini_scheduler.jobs.locations import CronFileSource
from mini_scheduler.local.dispatch import (
    LocalDispatcher,
    LocalFlowDispatcher,
    adopt_region,
    in_region,
)
from mini_scheduler.local.moto_aws import (
    ACCOUNT,
    STATE_TABLE,
    TICKER_FUNCTION,
    deploy,
    stack,
)
from mini_scheduler.local.targets import SampleTargets
from mini_scheduler.local.tasks import LocalTaskDispatcher
from mini_scheduler.model import RunStatus, floor_minute, iso_seconds
from mini_scheduler.wake import Wake, waker

if TYPE_CHECKING:
    from mini_scheduler.aws import Clients
    from mini_scheduler.claims.records import RunRecord
    from mini_scheduler.recorder import Recorder
    from mini_scheduler.tick import Ticker, TickSummary

log = logging.getLogger("mini_scheduler.local")

MARK_WAIT_SECONDS: Final = 5.0  # how long a completion waits for its firing to be marked
CATCH_UP_JOIN_SECONDS: Final = 5.0  # how long a stop waits for a catch-up to notice it


class Stopped(Exception):
    """The local scheduler was asked to stop while it waited."""


class StoppableClock:
    """``clock`` whose waits end as soon as ``stop`` is set, raising :class:`Stopped`, so a tick
    waiting for a firing later in its minute stops at once. On the real clock a wait is a wait
    on the event; on any other clock (a FixedClock in tests) it is that clock's sleep.

    A region's ticker reads it on its worker threads too: each such thread is tagged with
    ``region`` (:func:`~mini_scheduler.local.dispatch.adopt_region`), so its log lines say it."""

    def __init__(self, clock: Clock, stop: threading.Event, region: str | None = None) -> None:
        self.clock = clock
        self.stop = stop
        self.region = region
        self._real = isinstance(clock, SystemClock)

    def now(self) -> datetime:
        if self.region is not None:
            adopt_region(self.region)
        return self.clock.now()

    def sleep(self, seconds: float) -> None:
        if self.region is not None:
            adopt_region(self.region)
        if self.stop.is_set():
            raise Stopped
        if self._real:
            if seconds > 0 and self.stop.wait(seconds):
                raise Stopped
            return
        self.clock.sleep(seconds)
        if self.stop.is_set():
            raise Stopped


class LocalRegion:
    """A region of the local run, named ``environment_name``; :meth:`start` it on moto, then
    :meth:`tick` it every minute. ``exit`` closes what it starts (its dispatchers) with the
    scheduler."""

    def __init__(
        self,
        region: str,
        environment_name: str,
        *,
        known: tuple[str, ...],
        cron_path: Path,
        cron: CronFileSource,
        clock: Clock,
        stop: threading.Event,
        samplecode: Path,
        exit: contextlib.ExitStack,
        console: logging.StreamHandler[Any] | None = None,
        flow_wait: float = 30.0,
        task_seconds: float = 3.0,
        peers: tuple[str, ...] = (),
    ) -> None:
        self.region = region
        self.clock = clock
        self.stop = stop
        self.samplecode = samplecode
        self._cron = cron
        self._exit = exit
        self._console = console
        self._flow_wait = flow_wait
        self._task_seconds = task_seconds  # how long a sample ECS task runs before it stops
        self.settings = Settings(
            state_table=STATE_TABLE,
            region=region,
            cron_file=f"file:{cron_path}",
            environment_name=environment_name,
            known_environments=known,
            dispatch_workers=16,
            batch_writes=False,  # moto's PartiQL ignores conditions (claims/dynamodb_batch.py)
            # The other regions' stores, brought in step as a deployed stack's are (carry/)
            peers=tuple((peer, STATE_TABLE) for peer in peers if peer != region),
        )
        self.summaries: deque[TickSummary] = deque(maxlen=1000)  # the latest ticks' answers
        self._ticker: Ticker | None = None
        self._recorder: Recorder | None = None
        self._lambda: LocalDispatcher | None = None
        self._flows: LocalFlowDispatcher | None = None
        self._tasks: LocalTaskDispatcher | None = None
        self._samples: SampleTargets | None = None
        self._clients: Clients | None = None
        self._catch_ups: threading.Thread | None = None  # the latest catch-up's thread

    @property
    def ticker(self) -> Ticker:
        if self._ticker is None:
            raise RuntimeError("start the local scheduler first")
        return self._ticker

    @property
    def recorder(self) -> Recorder:
        if self._recorder is None:
            raise RuntimeError("start the local scheduler first")
        return self._recorder

    @property
    def samples(self) -> SampleTargets:
        """The region's sample queue, topic, bus, cluster and webhook."""
        if self._samples is None:
            raise RuntimeError("start the local scheduler first")
        return self._samples

    @property
    def clients(self) -> Clients:
        if self._clients is None:
            raise RuntimeError("start the local scheduler first")
        return self._clients

    def start(self, cron_file: CronFile) -> None:
        """The region's resources in moto, its stack, its ticker and recorder; its watermark at
        the start instant."""
        from mini_scheduler.aws import Clients

        with in_region(self.region):
            clients = self._clients = Clients(self.region, pool=32)
            deploy(clients, self.samplecode, cron_file)
            samples = self._samples = SampleTargets(clients)
            samples.create()
            samples.start(self.region)
            self._exit.callback(samples.close)
            stack(clients, self.outputs())
            self._build(clients)
            # Nothing before the start is a misfire, and the current minute's firings from
            # this second on run at their second (not all at once, as a late tick would).
            self.ticker.claims.advance_watermark(
                self.settings.origin, self.clock.now().replace(microsecond=0)
            )

    def outputs(self) -> dict[str, str]:
        """The outputs of the region's stack (:data:`~mini_scheduler.local.moto_aws.STACK_NAME`),
        named as the template names them."""
        settings = self.settings
        return {
            "StateTableName": settings.state_table,
            "TickerFunctionName": TICKER_FUNCTION,
            "ActiveEnvironmentParameter": settings.active_environment_store.removeprefix("ssm:"),
            "EnvironmentName": settings.environment_name,
            "KnownEnvironments": ",".join(settings.known_environments),
        }

    @property
    def where(self) -> str:
        """What the region reads, as the console and the banner say it."""
        return f"table {self.settings.state_table} (DynamoDB on moto, in this process)"

    def _build(self, clients: Clients) -> None:
        """The recorder and the ticker, as wiring builds them in Lambda, on moto's clients."""
        from mini_scheduler.audit import MemoryAuditLog
        from mini_scheduler.local.alerts import LogAlerts
        from mini_scheduler.wiring import build_recorder, build_ticker

        alerts = LogAlerts()  # no bus here: each event is a line of the log
        wake = self._waker()
        self._recorder = build_recorder(
            self.settings, clients=clients, clock=self.clock, alerts=alerts, wake=wake
        )
        self._ticker = build_ticker(
            self.settings,
            alerts=alerts,
            clients=clients,
            clock=StoppableClock(self.clock, self.stop, self.region),
            dispatch=self._dispatchers(clients),
            cron=self._cron.load,
            wake=wake,
            audit=MemoryAuditLog(),  # the console's Audit page reads it (docs/audit.md)
        )

    def _dispatchers(self, clients: Clients) -> Dispatchers:
        """Lambda targets run here, flows in moto's Step Functions, ECS tasks in moto's ECS (a
        simulated event stops each); their ends are recorded. Queues, topics, buses and
        webhooks are the deployed dispatchers on moto's clients (a webhook: on this machine)."""
        from mini_scheduler.dispatch.ecs import EcsDispatcher
        from mini_scheduler.dispatch.stepfunctions import ExecutionInputs, StepFunctionsDispatcher

        execution_input = ExecutionInputs(lambda: clients("stepfunctions"))

        def record(event: dict[str, Any]) -> dict[str, Any]:
            """A completion event, as the recorder function takes it."""
            return self.recorder.record(completion_from_event(event, execution_input))

        region = self.region
        self._lambda = LocalDispatcher(
            self.samplecode / "functions",
            on_complete=record,
            clock=self.clock,
            region=region,
            account=ACCOUNT,
            before_complete=self._until_marked,
            console=self._console,
        )
        self._flows = LocalFlowDispatcher(
            StepFunctionsDispatcher(clients("stepfunctions"), region=region, account=ACCOUNT),
            clients("stepfunctions"),
            on_complete=record,
            clock=self.clock,
            region=region,
            account=ACCOUNT,
            before_complete=self._until_marked,
            wait=self._flow_wait,
        )
        self._tasks = LocalTaskDispatcher(
            EcsDispatcher(clients("ecs"), region=region, account=ACCOUNT),
            clients("ecs"),
            on_complete=record,
            clock=self.clock,
            region=region,
            account=ACCOUNT,
            before_complete=self._until_marked,
            after=self._task_seconds,
        )
        self._exit.callback(self._tasks.close)
        self._exit.callback(self._flows.close)
        self._exit.callback(self._lambda.close)
        return Dispatchers(
            {"lambda": self._lambda, "flow": self._flows, "ecs": self._tasks, **_messages(clients)}
        )

    def close(self) -> None:
        """Give a catch-up in progress a moment to notice the stop."""
        if self._catch_ups is not None:
            self._catch_ups.join(timeout=CATCH_UP_JOIN_SECONDS)

    def _waker(self) -> Wake | None:
        """On the real clock, the ticker is woken as in Lambda (:mod:`mini_scheduler.wake`):
        a catch-up runs on a thread of its own. On a test's clock none does (a thread would
        move that clock under the test): its ticks run what is due, a minute later."""
        if not isinstance(self.clock, SystemClock):
            return None
        return waker(self._catch_up_soon, self.clock, self.settings.tick_lead_seconds)

    def _catch_up_soon(self, event: dict[str, Any]) -> None:
        minute = floor_minute(datetime.fromisoformat(str(event["tick"]).replace("Z", "+00:00")))
        self._catch_ups = threading.Thread(
            target=self._catch_up, args=(minute,), name="catch-up", daemon=True
        )
        self._catch_ups.start()

    def _catch_up(self, minute: datetime) -> None:
        with in_region(self.region):
            try:
                summary = self.ticker.catch_up(minute)
            except Stopped:
                return
            except SchedulerError as exc:
                log.error("Catch-up of minute %s failed: %s", iso_seconds(minute), exc)
                return
            dispatched = summary.counts.get("dispatched", 0)
            if dispatched:
                log.info(
                    "Catch-up %s done - %d deferred firings dispatched",
                    iso_seconds(summary.minute)[11:16],
                    dispatched,
                )

    def _until_marked(self, firing_id: str) -> None:
        """Wait (a little, on the real clock) until the ticker has marked the firing
        dispatched, so its end is recorded after its start."""
        claims = self.ticker.claims
        deadline = time.monotonic() + MARK_WAIT_SECONDS
        while time.monotonic() < deadline:
            run = claims.run(firing_id)
            if run is None or run.status is not RunStatus.CLAIMED:
                return
            time.sleep(0.01)

    def tick(self, minute: datetime) -> TickSummary:
        """One tick (raises :class:`Stopped` when a stop is asked for while it waits)."""
        with in_region(self.region):
            summary = self.ticker.tick(minute)
            self.summaries.append(summary)
            counts = summary.counts
            skipped = sum(int(v) for v in counts.get("skipped", {}).values())
            log.info(
                "Tick %s done - %s, %d dispatched, %d skipped, %d errors",
                iso_seconds(summary.minute)[11:16],
                summary.mode,
                counts.get("dispatched", 0),
                skipped,
                counts.get("errors", 0),
            )
        return summary

    def busy(self) -> int:
        """The handlers running, the flows watched and the tasks not stopped yet."""
        return sum(
            part.pending() if part is not None else 0
            for part in (self._lambda, self._flows, self._tasks)
        )

    def history(self, job: str, limit: int = 100, before: str | None = None) -> list[RunRecord]:
        """A job's runs, newest first; ``before`` pages on (``ClaimStore.history``)."""
        return list(self.ticker.claims.history(job, limit, before))

    def send(self, event: Any) -> dict[str, Any]:
        """An event to this region's ticker, as its Lambda handler hands it on (the console's,
        and an Invoke through the endpoint)."""
        from mini_scheduler.handlers.routing import route

        with in_region(self.region):
            return route(self.ticker, dict(event) if isinstance(event, Mapping) else event)


def _messages(clients: Clients) -> dict[str, Dispatcher]:
    """The dispatchers of queues, topics, buses and webhooks, as the deployed ticker has them
    (:func:`mini_scheduler.wiring.dispatchers`), on moto's clients."""
    import boto3

    from mini_scheduler.dispatch.events import EventBridgeDispatcher
    from mini_scheduler.dispatch.https import WebhookDispatcher, secret_reader
    from mini_scheduler.dispatch.sns import SnsDispatcher
    from mini_scheduler.dispatch.sqs import SqsDispatcher

    session = clients.session or boto3.session.Session()
    return {
        "sqs": SqsDispatcher(clients("sqs")),
        "sns": SnsDispatcher(clients("sns"), region=clients.region, account=ACCOUNT),
        "events": EventBridgeDispatcher(clients("events")),
        "https": WebhookDispatcher(
            secrets=secret_reader(clients), credentials=session.get_credentials
        ),
    }
