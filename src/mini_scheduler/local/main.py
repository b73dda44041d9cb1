"""``make run``'s program: the console (its log format and banner), the options, the signals.

Started by ``mini-scheduler local`` or ``python -m mini_scheduler.local``; the scheduler itself is
:class:`mini_scheduler.local.scheduler.LocalScheduler`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from mini_scheduler import __version__
from mini_scheduler.clock import Clock
from mini_scheduler.config import DEFAULT_PARAMETER
from mini_scheduler.console.server import DEFAULT_PORT, ConsoleServer
from mini_scheduler.errors import CronFileError
from mini_scheduler.local.dispatch import FUNCTION_THREAD, SAMPLE_PREFIX
from mini_scheduler.local.moto_aws import REGION, SAMPLECODE, STATE_TABLE
from mini_scheduler.local.options import add_options
from mini_scheduler.local.scheduler import LocalScheduler
from mini_scheduler.logs import package_logs

log = logging.getLogger("mini_scheduler.local")


class ConsoleFormatter(logging.Formatter):
    """``14:00:15 INFO    ticker     Job heartbeat dispatched ...``: UTC time, level, source
    (the scheduler's module, or the function a line came from), message."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(source)-11s %(message)s", "%H:%M:%S")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return time.strftime(datefmt or "%H:%M:%S", time.gmtime(record.created))

    def format(self, record: logging.LogRecord) -> str:
        thread = record.threadName or ""
        if thread.startswith(FUNCTION_THREAD):
            source = thread.removeprefix(FUNCTION_THREAD).removeprefix(SAMPLE_PREFIX)
        else:
            source = record.name.removeprefix("mini_scheduler.")
        record.source = source
        return super().format(record)


@contextlib.contextmanager
def _console(stream: TextIO) -> Iterator[logging.StreamHandler[Any]]:
    """Every log line to ``stream`` in the console format (the package's, the samples', and
    moto's only when critical: it logs a failing flow's states); restored afterwards."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(ConsoleFormatter())
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


def banner(scheduler: LocalScheduler, console_url: str | None = None) -> str:
    cron_file = scheduler.cron
    jobs = cron_file.jobs if cron_file else ()
    functions = scheduler.samplecode / "functions"
    lines = [
        f"mini-scheduler {__version__} - the scheduler on this machine, moto in-process as AWS",
        f"  cron file    {_shown(scheduler.cron_path)} "
        f"({len(jobs)} job{'s' if len(jobs) != 1 else ''}: "
        f"{', '.join(job.name for job in jobs) or 'none'})",
        f"  AWS          moto, in this process: no account or credentials, nothing leaves "
        f"this machine ({REGION})",
        f"  state table  {STATE_TABLE} (DynamoDB on moto; gone when this stops)",
        f"  functions    run here: {SAMPLE_PREFIX}<x> is {_shown(functions)}/<x>/app.py",
        "  flows        run in moto's Step Functions",
        f"  environment  prod, active (SSM {DEFAULT_PARAMETER} unset: prod)",
        *(
            [
                "  demo         at start: a one-time schedule (demo-once), a retry "
                "(demo-retry), a final failure and its event (demo-failure), a backfill of "
                "heartbeat (--no-demo: none)"
            ]
            if scheduler.demo
            else []
        ),
        *(
            [f"  console      {console_url} (the operator page and its API; --no-console: none)"]
            if console_url
            else []
        ),
        "Ticking every minute on the wall clock; log times are UTC. Press Ctrl-C to stop.",
    ]
    return "\n".join(lines)


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
) -> int:
    """Run until SIGINT or SIGTERM; 0 after a clean stop, 1 when it cannot start, 2 on a usage
    error."""
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
    stop = stop or threading.Event()
    with _console(out) as console:
        scheduler = LocalScheduler(
            cron_path,
            clock=clock,
            stop=stop,
            console=console,
            demo=args.cron_file is None if args.demo is None else args.demo,
        )
        return _serve(scheduler, server, stop, out, err)


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
    server: ConsoleServer | None,
    stop: threading.Event,
    out: TextIO,
    err: TextIO,
) -> int:
    """The banner, the scheduler and its console until ``stop``; the signals as they were
    after."""
    previous = _on_signals(stop)
    try:
        scheduler.read_cron_file()
        # before anything logs
        print(banner(scheduler, server.url if server else None), file=out, flush=True)
        scheduler.start()
        if server is not None:
            from mini_scheduler.console.app import create_app
            from mini_scheduler.console.local import local_console

            server.start(create_app(local_console(scheduler), title="make run"))
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
        if server is not None:
            server.stop()
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
    code = main(argv)
    if code == 0:
        gc.freeze()
    return code
