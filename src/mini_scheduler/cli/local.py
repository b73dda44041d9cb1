"""``local``: the scheduler on this machine, with moto in-process as AWS."""

from __future__ import annotations

import argparse

from mini_scheduler.cli.context import Context


def add_local(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "local",
        help="run the scheduler on this machine, on moto, with the sample targets",
        description=(
            "Tick a cron file on the wall clock with moto in this process as AWS (no account "
            "or credentials needed): the sample Lambda targets run in-process, flows start in "
            "moto's Step Functions, and every firing is logged. Ctrl-C stops it."
        ),
    )
    parser.add_argument(
        "--cron-file",
        metavar="PATH",
        help="the cron file to tick (default samplecode/cron.yaml)",
    )


def local(args: argparse.Namespace, context: Context) -> int:
    from mini_scheduler.local.main import run

    return run(["--cron-file", args.cron_file] if args.cron_file else [])
