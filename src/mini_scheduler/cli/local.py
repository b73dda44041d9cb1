"""``local``: the scheduler on this machine, with moto in-process as AWS."""

from __future__ import annotations

import argparse

from mini_scheduler.cli.context import Context
from mini_scheduler.local.options import add_options, as_argv


def add_local(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "local",
        help="run the scheduler on this machine, on moto, with the sample targets",
        description=(
            "Tick a cron file on the wall clock with moto in this process as AWS (no account "
            "or credentials needed): the sample Lambda targets run in-process, flows start in "
            "moto's Step Functions, and every firing is logged; the operator console is served "
            "on 127.0.0.1. Ctrl-C stops it."
        ),
    )
    add_options(parser)


def local(args: argparse.Namespace, context: Context) -> int:
    from mini_scheduler.local.main import run

    return run(as_argv(args))
