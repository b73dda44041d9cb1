"""``mini-scheduler local``'s options, in one place for its two doors (the CLI's ``local`` and
``python -m mini_scheduler.local``); imports nothing heavy, since the CLI builds every parser at
start."""

from __future__ import annotations

import argparse

from mini_scheduler.console.server import DEFAULT_PORT


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cron-file",
        metavar="PATH",
        help="the cron file to tick (default samplecode/cron.yaml)",
    )
    parser.add_argument(
        "--demo",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="at start, a one-time schedule, a retry, a final failure and a backfill (default: "
        "on with the sample cron file, off with --cron-file)",
    )
    parser.add_argument(
        "--console-port",
        type=int,
        metavar="PORT",
        help=f"serve the console on 127.0.0.1:PORT (default {DEFAULT_PORT}, or a free port when "
        "that one is taken; 0: any free port)",
    )
    parser.add_argument(
        "--console",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="serve the operator console (default: on)",
    )


def as_argv(args: argparse.Namespace) -> list[str]:
    """The options parsed by :func:`add_options`, as arguments again."""
    argv: list[str] = []
    if args.cron_file:
        argv += ["--cron-file", args.cron_file]
    if args.demo is not None:
        argv.append("--demo" if args.demo else "--no-demo")
    if args.console_port is not None:
        argv += ["--console-port", str(args.console_port)]
    if not args.console:
        argv.append("--no-console")
    return argv
