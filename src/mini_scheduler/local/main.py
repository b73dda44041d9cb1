"""``make run``'s program: the console (its log format and banner), the options, the signals,
and what the CLI reaches it by: the endpoint (:mod:`mini_scheduler.local.endpoint`) and the file
that names it while it runs (:mod:`mini_scheduler.local.runfile`).

Started by ``mini-scheduler local`` or ``python -m mini_scheduler.local``; the scheduler itself is
:class:`mini_scheduler.local.scheduler.LocalScheduler`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from mini_scheduler import __version__
from mini_scheduler.clock import Clock
from mini_scheduler.config import DEFAULT_PARAMETER
from mini_scheduler.console.server import DEFAULT_PORT, ConsoleServer
from mini_scheduler.errors import CronFileError
from mini_scheduler.local import runfile
from mini_scheduler.local.dispatch import FUNCTION_THREAD, SAMPLE_PREFIX, region_tag
from mini_scheduler.local.endpoint import DEFAULT_ENDPOINT_PORT, LocalEndpoint
from mini_scheduler.local.moto_aws import REGION, SAMPLECODE, STACK_NAME, STATE_TABLE
from mini_scheduler.local.options import add_options
from mini_scheduler.local.scheduler import LocalScheduler
from mini_scheduler.local.targets import BUS, CLUSTER, QUEUE, TASK, TOPIC
from mini_scheduler.logs import package_logs

log = logging.getLogger("mini_scheduler.local")


class ConsoleFormatter(logging.Formatter):
    """``14:00:15 INFO    ticker     Job heartbeat dispatched ...``: UTC time, level, source
    (the scheduler's module, or the function a line came from), message. With several regions
    (``region_width`` > 0) the source starts with the region the line comes from
    (``us-west-2 ticker``), blank for a line of none."""

    def __init__(self, region_width: int = 0) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(source)-11s %(message)s", "%H:%M:%S")
        self.region_width = region_width

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return time.strftime(datefmt or "%H:%M:%S", time.gmtime(record.created))

    def format(self, record: logging.LogRecord) -> str:
        thread = record.threadName or ""
        if thread.startswith(FUNCTION_THREAD):
            source = thread.removeprefix(FUNCTION_THREAD).removeprefix(SAMPLE_PREFIX)
        else:
            source = record.name.removeprefix("mini_scheduler.")
        if self.region_width:
            source = f"{region_tag() or '':<{self.region_width}} {source:<11}"
        record.source = source
        return super().format(record)


@contextlib.contextmanager
def _console(stream: TextIO, region_width: int = 0) -> Iterator[logging.StreamHandler[Any]]:
    """Every log line to ``stream`` in the console format (the package's, the samples', and
    moto's only when critical: it logs a failing flow's states); restored afterwards."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(ConsoleFormatter(region_width))
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    quiet = {
        name: logging.getLogger(name).level for name in ("botocore", "boto3", "urllib3", "moto")
    }
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for name in quiet:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        with package_logs(None):
            yield handler
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, was in quiet.items():
            logging.getLogger(name).setLevel(was)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def banner(
    scheduler: LocalScheduler, console_url: str | None = None, endpoint_url: str | None = None
) -> str:
    cron_file = scheduler.cron
    jobs = cron_file.jobs if cron_file else ()
    functions = scheduler.samplecode / "functions"
    regions = [region.region for region in scheduler.regions]
    several = len(regions) > 1
    lines = [
        f"mini-scheduler {__version__} - the scheduler on this machine, moto in-process as AWS",
        f"  cron file    {_shown(scheduler.cron_path)} "
        f"({len(jobs)} job{'s' if len(jobs) != 1 else ''}: "
        f"{', '.join(job.name for job in jobs) or 'none'})",
        f"  AWS          moto, in this process: no account or credentials, nothing leaves "
        f"this machine ({', '.join(regions)})",
        f"  state table  {STATE_TABLE}{' in each region' if several else ''} "
        "(DynamoDB on moto; gone when this stops)",
        f"  functions    run here: {SAMPLE_PREFIX}<x> is {_shown(functions)}/<x>/app.py",
        "  flows        run in moto's Step Functions",
        f"  targets      sqs://{QUEUE}, sns://{TOPIC}, events://{BUS}: each firing read "
        "back, a line 'Queue ... received firing'; ecs://"
        f"{CLUSTER}/{TASK}: a task in moto, stopped {scheduler.task_seconds:g} s later; "
        "a webhook on 127.0.0.1 that prints each request (its URL in the log)",
        *_environment_lines(scheduler),
        *(
            [
                "  demo         at start: a one-time schedule (demo-once), a retry "
                "(demo-retry), a final failure and its event (demo-failure), a firing a "
                "minute started up to 29 s late by its jitter (demo-spread), a backfill of "
                f"heartbeat{f' in {regions[0]}' if several else ''}, and every minute a "
                "firing to each sample target (demo-queue, demo-topic, demo-bus, demo-task, "
                "demo-webhook), and from the next minute three firings a minute of a task "
                "that runs one at a time (demo-buffer: one starts, one waits for it, one is "
                "skipped) and of one that runs two at a time (demo-cap: the third is skipped) "
                "(--no-demo: none)"
            ]
            if scheduler.demo
            else []
        ),
        *(
            [f"  console      {console_url} (the operator page and its API; --no-console: none)"]
            if console_url
            else []
        ),
        *(_endpoint_lines(scheduler, endpoint_url) if endpoint_url else []),
        "Ticking every minute on the wall clock; log times are UTC. Press Ctrl-C to stop.",
    ]
    return "\n".join(lines)


def _environment_lines(scheduler: LocalScheduler) -> list[str]:
    """Each region's environment name, and which is active while the parameter is unset."""
    unset = f"(SSM {DEFAULT_PARAMETER} unset: prod)"
    if len(scheduler.regions) == 1:
        return [f"  environment  prod, active {unset}"]
    width = max(len(region.region) for region in scheduler.regions)
    rows = [
        f"{region.region:<{width}} {region.settings.environment_name}, "
        f"{'active' if region is scheduler.home else 'standby'}"
        for region in scheduler.regions
    ]
    return [
        f"  regions      {rows[0]} {unset}",
        *(f"               {row}" for row in rows[1:]),
    ]


def _endpoint_lines(scheduler: LocalScheduler, url: str) -> list[str]:
    """Where the CLI reaches this run, and with several regions the commands that show a
    failover."""
    program = _program()
    lines = [
        f"  endpoint     {url} (this moto over HTTP, for the CLI: {program} status --local; "
        f"or AWS_ENDPOINT_URL={url} --stack {STACK_NAME})"
    ]
    if len(scheduler.regions) == 1:
        return lines
    names = [job.name for job in scheduler.cron.jobs] if scheduler.cron else []
    job = "heartbeat" if "heartbeat" in names else names[0] if names else "JOB"
    standby = scheduler.regions[1].settings.environment_name
    return [
        *lines,
        "  failover     watch the firings move, from another terminal:",
        f"                 {program} status --local",
        f"                 {program} failover --local --to {standby}",
        f"                 {program} history --local {job}",
    ]


def _program() -> str:
    """How this shell starts the CLI: as it started this (``make run``:
    ``.venv/bin/mini-scheduler``), else the entry point beside this Python."""
    if Path(sys.argv[0]).name == "mini-scheduler":
        return sys.argv[0]
    entry = Path(sys.executable).with_name("mini-scheduler")
    if not entry.is_file():
        return "mini-scheduler"
    try:
        return str(entry.relative_to(Path.cwd()))
    except ValueError:
        return str(entry)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mini-scheduler local",
        description="Run the scheduler on this machine with moto as AWS (no account needed).",
    )
    add_options(parser)
    return parser


def _console_server(args: argparse.Namespace, err: TextIO) -> ConsoleServer | None:
    """The console's socket, bound on loopback before anything starts (its URL goes in the
    banner); None when it is turned off or its extra is missing (said on ``err``)."""
    if not args.console:
        return None
    try:
        import fastapi  # noqa: F401 - only to say clearly when it is missing
    except ImportError:
        print(
            "mini-scheduler local: no console (it needs the console extra: "
            "pip install -e '.[console]'; make run installs it)",
            file=err,
        )
        return None
    if args.console_port is not None:
        return ConsoleServer(args.console_port)
    try:
        return ConsoleServer(DEFAULT_PORT)
    except OSError:  # another make run has it: any free port
        return ConsoleServer(0)


def main(
    argv: list[str] | None = None,
    *,
    clock: Clock | None = None,
    stop: threading.Event | None = None,
    out: TextIO | None = None,
    run_dir: Path | None = None,
) -> int:
    """Run until SIGINT or SIGTERM; 0 after a clean stop, 1 when it cannot start, 2 on a usage
    error. ``run_dir``: where the file that names this run for the CLI's ``--local`` is kept
    while it runs (:mod:`~mini_scheduler.local.runfile`); None: nowhere."""
    out = out or sys.stdout
    err = sys.stderr
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    cron_path = Path(args.cron_file) if args.cron_file else SAMPLECODE / "cron.yaml"
    refused = _refused(args, cron_path, err)
    if refused is not None:
        return refused
    try:
        server = _console_server(args, err)
    except OSError as exc:
        print(
            f"mini-scheduler local: cannot serve the console on 127.0.0.1:{args.console_port} "
            f"({exc.strerror or exc}): give another --console-port, or 0 for any free one",
            file=err,
        )
        return 2
    doors = _Doors(server, _endpoint(), run_dir)
    stop = stop or threading.Event()
    regions: list[str] = args.regions or [REGION]
    width = max(len(region) for region in regions) if len(regions) > 1 else 0
    with _console(out, width) as console:
        scheduler = LocalScheduler(
            cron_path,
            regions=regions,
            clock=clock,
            stop=stop,
            console=console,
            demo=args.cron_file is None if args.demo is None else args.demo,
        )
        return _serve(scheduler, doors, stop, out, err)


def _endpoint() -> LocalEndpoint:
    """The endpoint's socket, bound on loopback before anything starts (its URL goes in the
    banner): its usual port, or any free one when another make run has it."""
    try:
        return LocalEndpoint({}, DEFAULT_ENDPOINT_PORT)
    except OSError:
        return LocalEndpoint({}, 0)


@dataclass
class _Doors:
    """How the run is reached while it runs: the console, the endpoint, and the file that
    names the endpoint for the CLI's ``--local``."""

    console: ConsoleServer | None
    endpoint: LocalEndpoint
    run_dir: Path | None
    _opened: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def open(self, scheduler: LocalScheduler) -> None:
        """Serve the started ``scheduler``."""
        if self.console is not None:
            from mini_scheduler.console.app import create_app
            from mini_scheduler.console.local import local_console

            self.console.start(create_app(local_console(scheduler), title="make run"))
        self.endpoint.tickers = {region.region: region.send for region in scheduler.regions}
        self.endpoint.start()
        if self.run_dir is not None:
            run = runfile.LocalRun(
                endpoint=self.endpoint.url,
                regions=tuple(region.region for region in scheduler.regions),
                stack=STACK_NAME,
                cron_file=str(scheduler.cron_path.resolve()),
                pid=os.getpid(),
                started=datetime.now(UTC).isoformat(timespec="seconds"),
            )
            self._opened.enter_context(runfile.announced(run, self.run_dir))

    def close(self) -> None:
        self._opened.close()
        if self.console is not None:
            self.console.stop()
        self.endpoint.stop()


def _refused(args: argparse.Namespace, cron_path: Path, err: TextIO) -> int | None:
    """The exit code of a run that cannot start (said on ``err``), or None when it can."""
    if not cron_path.is_file():
        print(f"mini-scheduler local: no cron file at {cron_path}: give --cron-file", file=err)
        return 2
    try:
        import moto  # noqa: F401 - only to say clearly when it is missing
    except ImportError:
        print(
            "mini-scheduler local: it needs moto, a development dependency: "
            "pip install -e '.[dev]' (make run does it)",
            file=err,
        )
        return 1
    if args.console_port is not None and not 0 <= args.console_port <= 65535:
        print("mini-scheduler local: --console-port must be 0 to 65535", file=err)
        return 2
    return None


def _serve(
    scheduler: LocalScheduler,
    doors: _Doors,
    stop: threading.Event,
    out: TextIO,
    err: TextIO,
) -> int:
    """The banner, the scheduler, its console and its endpoint until ``stop``; the signals as
    they were after."""
    previous = _on_signals(stop)
    try:
        scheduler.read_cron_file()
        # before anything logs
        console_url = doors.console.url if doors.console else None
        print(banner(scheduler, console_url, doors.endpoint.url), file=out, flush=True)
        scheduler.start()
        doors.open(scheduler)
        scheduler.run()
        log.info("Stopping - letting the running handlers finish")
        scheduler.close()
        log.info("Stopped")
    except CronFileError as exc:
        print(f"mini-scheduler local: {exc}", file=err)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        doors.close()
        scheduler.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _on_signals(stop: threading.Event) -> dict[int, Any]:
    """SIGINT and SIGTERM set ``stop``; a second SIGINT interrupts at once."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.getsignal(sig)
        signal.signal(sig, handle)
    return previous


def run(argv: list[str] | None = None) -> int:
    """The program: :func:`main`, then a prompt exit. After a clean stop the process ends at
    once; without ``gc.freeze`` the interpreter would spend a second or more collecting moto's
    and botocore's models on the way out."""
    code = main(argv, run_dir=runfile.run_dir(os.environ))
    if code == 0:
        gc.freeze()
    return code
