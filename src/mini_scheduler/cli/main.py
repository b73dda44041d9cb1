"""``mini-scheduler``: the command line for developers and operators.

One function per subcommand, each ``(args, context) -> exit code``, registered in
:data:`COMMANDS` with the function that declares its arguments. Commands for developers:
``validate``, ``next`` (files.py), ``local`` (local.py), and ``plan`` (plan.py: a cron file
against what a deployed stack runs). Commands for operators, against a
deployed stack (where.py says where they act): ``jobs``, ``history`` (jobs.py), ``run``
(run.py), ``pause``, ``resume`` (pause.py), ``status``, ``failover`` (environment.py; with
``--drill``, drill/), ``schedule``, ``backfill``, ``rerun`` (deferred.py), ``tick`` (tick.py),
``doctor`` (doctor/), ``audit`` (audit.py: the operator actions recorded, and every action's
``--reason``) and ``console`` (console.py: the web page, an optional extra).

Every command prints for people by default and JSON with ``--json``; an error is one line on
stderr (exit codes in context.py). Only :func:`main` picks the real clock, environment, AWS
clients and invoker, and it makes no client before a command needs one; with ``--local`` they
are those of the ``make run`` on this machine (where.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Final, cast

from mini_scheduler import __version__
from mini_scheduler.cli.audit import add_audit, audit
from mini_scheduler.cli.console import add_console, console
from mini_scheduler.cli.context import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    ClientsFor,
    CommandError,
    Context,
    Handler,
    Invoker,
    RegionClients,
    audited_exit,
    invoke_ticker,
    on_local_run,
)
from mini_scheduler.cli.context import download as default_download
from mini_scheduler.cli.deferred import (
    add_backfill,
    add_rerun,
    add_schedule,
    backfill,
    rerun,
    schedule,
)
from mini_scheduler.cli.doctor import add_doctor, doctor
from mini_scheduler.cli.drill import failover_or_drill
from mini_scheduler.cli.environment import add_failover, add_status, status
from mini_scheduler.cli.files import add_validate, validate
from mini_scheduler.cli.jobs import add_history, add_jobs, history, jobs
from mini_scheduler.cli.local import add_local, local
from mini_scheduler.cli.pause import add_pause, add_resume, pause, resume
from mini_scheduler.cli.plan import add_plan, plan
from mini_scheduler.cli.run import add_run, run_job
from mini_scheduler.cli.suggest import SuggestingParser
from mini_scheduler.cli.tick import add_tick, tick
from mini_scheduler.cli.upcoming import add_next, next_firings
from mini_scheduler.cli.where import local_run
from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.errors import ConfigurationError, SchedulerError, describe_aws_error

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

COMMANDS: Final[dict[str, tuple[Register, Handler]]] = {
    "validate": (add_validate, validate),
    "next": (add_next, next_firings),
    "plan": (add_plan, plan),
    "jobs": (add_jobs, jobs),
    "history": (add_history, history),
    "run": (add_run, run_job),
    "rerun": (add_rerun, rerun),
    "pause": (add_pause, pause),
    "resume": (add_resume, resume),
    "status": (add_status, status),
    "failover": (add_failover, failover_or_drill),
    "schedule": (add_schedule, schedule),
    "backfill": (add_backfill, backfill),
    "audit": (add_audit, audit),
    "tick": (add_tick, tick),
    "doctor": (add_doctor, doctor),
    "console": (add_console, console),
    "local": (add_local, local),
}


def build_parser() -> argparse.ArgumentParser:
    parser = SuggestingParser(  # a mistyped command or option gets the closest known one
        prog=PROG,
        description=(
            "Quartz cron jobs on AWS: check cron files, see when jobs fire, run the scheduler "
            "locally, and operate a deployed scheduler."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # each command's parser is a SuggestingParser too: argparse makes them of their parent's class
    commands = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", metavar="COMMAND", required=True),
    )
    for register, _ in COMMANDS.values():
        register(commands)
    return parser


def main(
    argv: list[str] | None = None,
    *,
    clock: Clock | None = None,
    environ: Mapping[str, str] | None = None,
    clients: ClientsFor | None = None,
    invoke: Invoker | None = None,
    sleep: Callable[[float], None] | None = None,
    download: Callable[[str], bytes] | None = None,
) -> int:
    """Run one command; return its exit code (argparse's own exits become return values).

    ``clients`` (region -> AWS clients), ``invoke`` (the ticker's synchronous invoke),
    ``sleep`` (a command that polls) and ``download`` (a ticker's package) are injected by
    tests; by default the clients are made on first use, with boto3.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE if exc.code else EXIT_OK
    context = Context(
        clock=clock or SystemClock(),
        out=sys.stdout,
        err=sys.stderr,
        environ=os.environ if environ is None else environ,
        clients=clients or RegionClients(),
        invoke=invoke or invoke_ticker,
        sleep=sleep or time.sleep,
        download=download or default_download,
    )
    _, handler = COMMANDS[args.command]
    try:
        if getattr(args, "local", False):
            run = local_run(args, context.environ)
            context = on_local_run(context, run.endpoint, run.regions[0])
        return audited_exit(handler(args, context), context)
    except CommandError as exc:
        return context.fail(args.command, str(exc), exc.code)
    except ConfigurationError as exc:
        return context.fail(args.command, str(exc), EXIT_USAGE)
    except SchedulerError as exc:
        return context.fail(args.command, str(exc), EXIT_FAILED)
    except KeyboardInterrupt:
        return context.fail(args.command, "interrupted", 130)
    except Exception as exc:
        from botocore.exceptions import BotoCoreError, ClientError
        from botocore.parsers import ResponseParserError  # an answer the SDK cannot read

        if isinstance(exc, (BotoCoreError, ClientError, ResponseParserError)):
            return context.fail(args.command, describe_aws_error(exc), EXIT_FAILED)
        if context.environ.get("MINI_SCHEDULER_TRACEBACK"):
            raise
        return context.fail(
            args.command,
            f"unexpected {type(exc).__name__}: {exc} (set MINI_SCHEDULER_TRACEBACK=1 to see where)",
            EXIT_FAILED,
        )
