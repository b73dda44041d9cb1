"""``mini-scheduler local``'s options, in one place for its two doors (the CLI's ``local`` and
``python -m mini_scheduler.local``); imports nothing heavy, since the CLI builds every parser at
start."""

from __future__ import annotations

import argparse
from typing import Final

from mini_scheduler.config import REGION_NAME
from mini_scheduler.console.server import DEFAULT_PORT

MAX_REGIONS: Final = 3  # prod, DR, DR2: mini_scheduler.local.scheduler.ENVIRONMENTS


def region_list(text: str) -> list[str]:
    """``us-east-1,us-west-2``: 1 to :data:`MAX_REGIONS` region names, each once."""
    regions = [part.strip() for part in text.split(",") if part.strip()]
    for region in regions:
        if not REGION_NAME.fullmatch(region):
            raise argparse.ArgumentTypeError(f"not an AWS region: {region!r} (e.g. us-east-1)")
    if not 1 <= len(regions) <= MAX_REGIONS:
        raise argparse.ArgumentTypeError(
            f"name 1 to {MAX_REGIONS} regions, comma-separated, e.g. us-east-1,us-west-2"
        )
    twice = sorted({region for region in regions if regions.count(region) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"{', '.join(twice)} given twice: name each region once")
    return regions


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cron-file",
        metavar="PATH",
        help="the cron file to tick (default samplecode/cron.yaml)",
    )
    parser.add_argument(
        "--regions",
        type=region_list,
        metavar="R1,R2",
        help="run a ticker in each region, with a store each, on the one moto (default "
        "us-east-1): the first is prod and active, the next DR then DR2, standing by until a "
        "failover (mini-scheduler failover --local --to DR)",
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
    if args.regions:
        argv += ["--regions", ",".join(args.regions)]
    if args.demo is not None:
        argv.append("--demo" if args.demo else "--no-demo")
    if args.console_port is not None:
        argv += ["--console-port", str(args.console_port)]
    if not args.console:
        argv.append("--no-console")
    return argv
