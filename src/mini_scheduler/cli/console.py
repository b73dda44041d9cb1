"""``console``: the operator web page and JSON API on 127.0.0.1, over the deployed stacks of the
regions given, with the caller's own AWS credentials (no endpoint, no new credentials).

Each region is resolved as every other command resolves it (``--stack``, flags, variables); its
stores are read and written as ``jobs``, ``history``, ``pause`` and ``failover`` do, and a run
now or a rerun is sent to its ticker function as ``run`` and ``rerun`` send it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mini_scheduler.cli.audit import identity_of, trail_for
from mini_scheduler.cli.context import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    Context,
    TickerRefused,
    ask_ticker,
)
from mini_scheduler.cli.environment import add_known, known_names, resolve_each
from mini_scheduler.cli.where import (
    Where,
    add_where,
    claims_for,
    environment_for,
    load_cron,
    many_regions,
)
from mini_scheduler.console.server import DEFAULT_PORT  # no web library imported by it
from mini_scheduler.errors import EventError

if TYPE_CHECKING:
    from mini_scheduler.console.sites import Site


def add_console(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "console",
        help="serve the operator console (a web page and its API) on 127.0.0.1",
        description=(
            "Serve, on 127.0.0.1 only, a web page and a JSON API over the deployed stacks of "
            "the regions given: each job's next firings, last run and pause, each job's history "
            "across the regions, the next 24 hours, and which region is active; run now, pause, "
            "resume and failover, each confirmed with an operator's name. It uses your own AWS "
            "credentials, as the other commands do. Needs the console extra: "
            "pip install 'mini-scheduler[console]'. Ctrl-C stops it."
        ),
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        metavar="PORT",
        help=f"the port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)",
    )
    add_known(parser)
    add_where(parser, many_regions=True, cron_file=True, function=True, parameter=True)


def _send(context: Context, where: Where, event: Mapping[str, Any]) -> Any:
    """An operator's event to the region's ticker function; a refusal is an EventError."""
    try:
        function = where.need_function()
    except CommandError as exc:
        raise EventError(f"cannot run jobs in {where.region}: {exc}") from None
    try:
        return ask_ticker(context, "console", where.region, function, event)
    except TickerRefused as exc:
        raise EventError(str(exc)) from None


def _site(context: Context, where: Where, known: tuple[str, ...], identity: str | None) -> Site:
    from mini_scheduler.console.sites import CachedCron, Site
    from mini_scheduler.environment.active import DEFAULT_ACTIVE, ActiveEnvironment
    from mini_scheduler.operator import Operator

    name = where.environment_name or DEFAULT_ACTIVE
    environment = ActiveEnvironment(environment_for(context, where), name, known)
    operator = Operator(
        cron=CachedCron(functools.partial(load_cron, context, where), context.clock),
        claims=claims_for(context, where),
        environment=environment,
        clock=context.clock,
        origin=f"{where.region}/{name}",
        audit=trail_for(context, where, via="console"),
    ).asked(None, identity, "console")
    table = f"table {where.table}" if where.table else "no state table"
    return Site(
        region=where.region,
        environment_name=where.environment_name,
        operator=operator,
        send=functools.partial(_send, context, where),
        where=f"{table}, {environment.store.name}",
    )


def console(args: argparse.Namespace, context: Context) -> int:
    if not 0 <= args.port <= 65535:
        return context.fail("console", "--port must be 0 to 65535")
    try:
        from mini_scheduler.console.app import create_app
        from mini_scheduler.console.server import ConsoleServer
        from mini_scheduler.console.service import ConsoleService
    except ImportError as exc:
        return context.fail(
            "console",
            f"the console needs its extra ({exc.name} is missing): "
            "pip install 'mini-scheduler[console]'",
            EXIT_FAILED,
        )
    regions = many_regions(args, context)
    wheres, unresolved = resolve_each(args, context, regions)
    if unresolved:
        listed = "; ".join(f"{o.region}: {o.error}" for o in unresolved)
        return context.fail("console", f"cannot read every region's stack - {listed}", EXIT_FAILED)
    known = known_names(args, context, list(wheres.values()))
    identity = identity_of(args, context, regions[0])  # the console's credentials
    sites = [_site(context, wheres[region].where, known, identity) for region in regions]
    try:
        server = ConsoleServer(args.port)
    except OSError as exc:
        return context.fail(
            "console",
            f"cannot serve on 127.0.0.1:{args.port} ({exc.strerror or exc}): give another "
            "--port, or 0 for any free one",
            EXIT_USAGE,
        )
    title = args.stack or ", ".join(regions)
    if args.json:  # a script that starts the console learns where it is
        context.print(json.dumps({"url": server.url, "regions": regions, "stack": args.stack}))
    else:
        context.print(f"mini-scheduler console for {title} ({', '.join(regions)}): {server.url}")
        context.print("Serving on 127.0.0.1 only, with your AWS credentials. Ctrl-C stops it.")
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn stops on the first Ctrl-C
        server.serve(create_app(ConsoleService(sites, context.clock), title=title))
    return EXIT_OK
