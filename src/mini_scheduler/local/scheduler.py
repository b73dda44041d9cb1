"""``make run``: the scheduler on this machine, with moto in-process as AWS.

Run by :mod:`mini_scheduler.local.main` (``mini-scheduler local``). No AWS account or
credentials are needed and nothing leaves the process: dummy credentials and a region are set in
this process's environment only (``~/.aws`` is neither read nor written), moto answers every
AWS call, and the state table, the sample state machines and the samples' idempotency table are
created in it at start (:mod:`mini_scheduler.local.moto_aws`).

* The ticker and the recorder are the deployed ones (:class:`~mini_scheduler.tick.Ticker`,
  :class:`~mini_scheduler.recorder.Recorder`), built by :mod:`mini_scheduler.wiring` on moto's
  DynamoDB and SSM.
* A final failure's ``Job Run Failed`` event, and a ``Job Paused`` one, is a line of the log
  (:class:`~mini_scheduler.local.alerts.LogAlerts`): there is no bus to publish them to.
* Lambda targets run in this process (:class:`~mini_scheduler.local.dispatch.LocalDispatcher`):
  ``mini-scheduler-sample-<x>`` is ``samplecode/functions/<x>/app.py``; other functions get a
  stand-in that logs the event. Their ends reach the recorder as Lambda destination records.
* Flows start in moto's Step Functions, which runs their states (a Lambda task there answers its
  input: moto runs no Lambda code); their ends reach the recorder as status-change events.
* Each region has a sample queue, topic, bus, ECS cluster and webhook
  (:mod:`mini_scheduler.local.targets`): what reaches the queue, the topic and the bus is read
  back and logged, the webhook logs each request, and an ECS task is stopped ``task_seconds``
  after it starts, its STOPPED event reaching the recorder
  (:class:`~mini_scheduler.local.tasks.LocalTaskDispatcher`).
* With ``demo``, it starts with a one-time schedule, a retry, a final failure, a backfill and a
  schedule of each sample target (:mod:`mini_scheduler.local.demo`), so each shows in the log
  within two minutes.
* It ticks on the wall clock: the current minute at start (from the start instant on: nothing
  before it is a misfire), then every minute at the minute boundary.
* With several ``regions`` (``make run REGIONS=us-east-1,us-west-2``), each is a
  :class:`~mini_scheduler.local.region.LocalRegion` on the same moto, with its own table, stack
  and ticker, named ``prod``, ``DR`` (then ``DR2``): the first is active while the
  active-environment parameter is unset, the others stand by until a failover names them.
  On the wall clock each region ticks on a thread of its own (a tick waits within its minute
  for the firings at their second); on a test's clock they tick in turn on the caller's thread,
  so only it moves that clock.

Ctrl-C (SIGINT) or SIGTERM stops it within a second: the wait in progress ends, the handlers
already running finish, and the process exits 0. The loop takes its clock and its stop event
from the caller, so tests run minutes of it on a fixed clock.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import DEFAULT_KNOWN, Settings
from mini_scheduler.errors import SchedulerError
from mini_scheduler.jobs import CronFile
from mini_scheduler.jobs.locations import CronFileSource
from mini_scheduler.local.dispatch import in_region
from mini_scheduler.local.moto_aws import (
    REGION,
    SAMPLECODE,
    changed_environment,
    local_environment,
    serialised_moto,
)
from mini_scheduler.local.region import LocalRegion, StoppableClock, Stopped
from mini_scheduler.model import floor_minute, iso_seconds

if TYPE_CHECKING:
    from mini_scheduler.aws import Clients
    from mini_scheduler.claims.records import RunRecord
    from mini_scheduler.recorder import Recorder
    from mini_scheduler.tick import Ticker, TickSummary

__all__ = ["ENVIRONMENTS", "LocalScheduler", "StoppableClock", "Stopped"]

log = logging.getLogger("mini_scheduler.local")

ENVIRONMENTS: Final = ("prod", "DR", "DR2")
"""The regions' environment names, in the order the regions are given: ``prod`` and ``DR`` are
the names the deployed stacks have (samconfig.toml)."""
MAX_REGIONS: Final = len(ENVIRONMENTS)
JOIN_SECONDS: Final = 10.0  # how long a stop waits for another region's tick loop


class LocalScheduler:
    """The scheduler on moto, ticking ``cron_file`` on ``clock`` in each of ``regions`` until
    ``stop`` is set. The first region is the home one: :attr:`ticker`, :attr:`settings` and
    the like are its.

    ``start`` brings up moto and the resources, ``run`` ticks until stopped, ``close`` lets the
    running handlers finish and takes moto down; it is also a context manager.
    """

    def __init__(
        self,
        cron_file: str | Path,
        *,
        regions: Sequence[str] = (REGION,),
        clock: Clock | None = None,
        stop: threading.Event | None = None,
        samplecode: Path | None = None,
        console: logging.StreamHandler[Any] | None = None,
        flow_wait: float = 30.0,
        task_seconds: float = 3.0,
        demo: bool = False,
    ) -> None:
        if not 1 <= len(regions) <= MAX_REGIONS or len(set(regions)) != len(regions):
            raise ValueError(f"give 1 to {MAX_REGIONS} different regions, not {list(regions)}")
        self.cron_path = Path(cron_file)
        self.clock: Clock = clock or SystemClock()
        self.stop = stop or threading.Event()
        self.samplecode = samplecode or SAMPLECODE
        self.task_seconds = task_seconds  # how long a sample ECS task runs (local.tasks)
        self.demo = demo  # at start: the firings beyond cron.yaml's (mini_scheduler.local.demo)
        self._source = CronFileSource(f"file:{self.cron_path}", default_timezone="UTC")
        self._exit = contextlib.ExitStack()
        self._started = False
        names = ENVIRONMENTS[: len(regions)]
        known = tuple(dict.fromkeys((*DEFAULT_KNOWN, *names)))
        self.regions = [
            LocalRegion(
                region,
                name,
                known=known,
                cron_path=self.cron_path,
                cron=self._source,
                clock=self.clock,
                stop=self.stop,
                samplecode=self.samplecode,
                exit=self._exit,
                console=console,
                flow_wait=flow_wait,
                task_seconds=task_seconds,
                peers=tuple(regions),
            )
            for region, name in zip(regions, names, strict=False)
        ]
        self.cron: CronFile | None = None

    # -- the home region -------------------------------------------------------------------

    @property
    def home(self) -> LocalRegion:
        return self.regions[0]

    @property
    def settings(self) -> Settings:
        return self.home.settings

    @property
    def summaries(self) -> deque[TickSummary]:
        return self.home.summaries

    @property
    def ticker(self) -> Ticker:
        return self.home.ticker

    @property
    def recorder(self) -> Recorder:
        return self.home.recorder

    @property
    def clients(self) -> Clients:
        return self.home.clients

    def region(self, name: str) -> LocalRegion:
        """The region named ``name`` (KeyError when the run has none)."""
        for region in self.regions:
            if region.region == name:
                return region
        raise KeyError(name)

    # -- start and stop --------------------------------------------------------------------

    def __enter__(self) -> LocalScheduler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read_cron_file(self) -> CronFile:
        """Read the cron file into :attr:`cron` (CronFileError when it cannot be read), with
        nothing started: :func:`main` prints its banner from it before :meth:`start` logs."""
        self.cron = self._source.load()
        return self.cron

    def start(self) -> None:
        """moto, then in each region its tables, sample functions, flows and stack, its ticker
        and its recorder."""
        if self._started:
            return
        from moto import mock_aws

        cron_file = self.read_cron_file()  # a file that cannot be read stops us here
        try:
            self._exit.enter_context(changed_environment(local_environment(self.home.region)))
            self._exit.enter_context(
                mock_aws(
                    config={
                        "lambda": {"use_docker": False},
                        "stepfunctions": {"execute_state_machine": True},
                    }
                )
            )
            self._exit.enter_context(serialised_moto())
            for region in self.regions:
                region.start(cron_file)
            if self.demo:
                from mini_scheduler.local import demo

                with in_region(self.home.region):
                    demo.start(self.ticker.operator, self.clock.now(), self.home.samples)
        except BaseException:
            self._exit.close()
            raise
        self._started = True

    def close(self) -> None:
        """Let the running handlers finish, stop watching flows, take moto down."""
        self.stop.set()
        for region in self.regions:
            region.close()
        self._exit.close()
        self._started = False

    # -- ticking ---------------------------------------------------------------------------

    def tick(self, minute: datetime) -> TickSummary:
        """One tick of the home region (raises :class:`Stopped` when a stop is asked for
        while it waits)."""
        return self.home.tick(minute)

    def run(self) -> None:
        """Tick the current minute, then every minute at its boundary, until stopped: on the
        real clock each region on a thread of its own (the home region on this one), on any
        other clock every region in turn on this thread."""
        self.start()
        if not isinstance(self.clock, SystemClock):
            self._loop(self.regions)
            return
        others = [
            threading.Thread(
                target=self._loop, args=([region],), name=f"tick:{region.region}", daemon=True
            )
            for region in self.regions[1:]
        ]
        for thread in others:
            thread.start()
        try:
            self._loop([self.home])
        finally:
            self.stop.set()
            for thread in others:
                thread.join(timeout=JOIN_SECONDS)

    def _loop(self, regions: Sequence[LocalRegion]) -> None:
        clock = StoppableClock(self.clock, self.stop)
        minute = floor_minute(self.clock.now())
        while not self.stop.is_set():
            if not self._tick_each(regions, minute):
                break
            # The next minute; after a pause (a laptop asleep), the current one: the ticker's
            # misfire policies deal with what was missed, as after an outage.
            minute = max(minute + timedelta(minutes=1), floor_minute(self.clock.now()))
            wait = (minute - self.clock.now()).total_seconds()
            try:
                if wait > 0:
                    clock.sleep(wait)
            except Stopped:
                break

    @staticmethod
    def _tick_each(regions: Sequence[LocalRegion], minute: datetime) -> bool:
        """One tick of each region; False when a stop came while one waited."""
        for region in regions:
            with in_region(region.region):
                try:
                    region.tick(minute)
                except Stopped:
                    return False
                except SchedulerError as exc:
                    log.error("Tick %s failed: %s", iso_seconds(minute), exc)
        return True

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait (on the real clock) until no handler runs and no flow is watched in any region;
        True when everything dispatched so far has reported its end or given up."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not any(region.busy() for region in self.regions):
                return True
            time.sleep(0.01)
        return False

    def history(self, job: str, limit: int = 100, before: str | None = None) -> list[RunRecord]:
        """A job's runs in the home region, newest first; ``before`` pages on
        (``ClaimStore.history``)."""
        return self.home.history(job, limit, before)
