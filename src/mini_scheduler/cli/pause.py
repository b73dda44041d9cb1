"""``pause`` and ``resume``: a job, cron.yaml's or a runtime schedule, in every region given
(a runtime schedule where it lives: :func:`fleet.holders`), each through the operator path."""

from __future__ import annotations

import argparse
import json
from typing import Any

from mini_scheduler import fleet
from mini_scheduler.cli.audit import add_reason, asking, no_trail, trail_for
from mini_scheduler.cli.context import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    Context,
    audit_said,
)
from mini_scheduler.cli.render import columns, plural
from mini_scheduler.cli.where import (
    add_operator,
    add_where,
    claims_for,
    each_region,
    load_cron,
    many_regions,
    operator_name,
    resolve,
)
from mini_scheduler.fleet import Outcome
from mini_scheduler.jobs import CronFile, name_problem
from mini_scheduler.operator import Operator


def add_pause(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "pause",
        help="pause a job in every region given: the ticker skips it until resumed",
        description=(
            "Record in each region's state table that the job (a cron.yaml job or a runtime "
            "schedule) is paused: the ticker skips its firings, with a log line, until it is "
            "resumed. No redeploy. With a cron file, a name that is neither is refused, and a "
            "runtime schedule is paused in the regions that hold it."
        ),
    )
    parser.add_argument("job", metavar="JOB", help="a cron.yaml job's or a runtime schedule's name")
    add_operator(parser)
    add_reason(parser)
    add_where(parser, many_regions=True, cron_file=True)


def add_resume(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "resume",
        help="resume a paused job in every region given",
        description="Remove the job's pause from each region's state table.",
    )
    parser.add_argument("job", metavar="JOB", help="the job's name")
    add_operator(parser)
    add_reason(parser)
    add_where(parser, many_regions=True)


def pause(args: argparse.Namespace, context: Context) -> int:
    return _set_paused(args, context, True)


def resume(args: argparse.Namespace, context: Context) -> int:
    return _set_paused(args, context, False)


def _set_paused(args: argparse.Namespace, context: Context, paused: bool) -> int:
    command = "pause" if paused else "resume"
    problem = name_problem(args.job)
    if problem:
        return context.fail(command, f"not a job name: {problem}")
    regions = many_regions(args, context)
    cron_file = None  # with one (the stack says where it is), a name must be a job or schedule
    if paused and (args.cron_file or context.environ.get("CRON_FILE") or args.stack):
        cron_file = load_cron(context, resolve(args, context, regions[0]))
    holders = set(regions)
    if cron_file is not None and cron_file.job(args.job) is None:
        holders = _schedule_holders(args, context, regions, cron_file)
    operator = operator_name(args, context, regions[0])
    asked = asking(args, context, regions[0])

    def act(region: str) -> dict[str, Any]:
        where = resolve(args, context, region)
        if region not in holders:
            return {"table": where.table, "paused": False, "noSchedule": True}
        claims = claims_for(context, where)
        was: bool | None = None
        if not paused:
            was = args.job in claims.control(f"{region}/-").paused
        cron = None if cron_file is None else (lambda: cron_file)
        trail = trail_for(context, where)
        if trail is None:
            no_trail(context, command, where)
        operator_path = Operator(
            cron=cron, claims=claims, environment=None, clock=context.clock, audit=trail
        ).asked(asked.get("reason"), asked.get("identity"))
        audit_said(context, command, operator_path.set_paused(args.job, paused, operator))
        fields: dict[str, Any] = {"table": where.table, "paused": paused}
        if was is not None:
            fields["wasPaused"] = was
        return fields

    outcomes = each_region(regions, act)
    failed = [o for o in outcomes if not o.ok]
    if args.json:
        report = {
            "job": args.job,
            "operator": operator,
            "paused": paused,
            "regions": [o.to_json() for o in outcomes],
        }
        context.print(json.dumps(report, indent=2))
    else:
        _print_paused(context, args.job, operator, paused, outcomes)
    return EXIT_FAILED if failed else EXIT_OK


def _schedule_holders(
    args: argparse.Namespace, context: Context, regions: list[str], cron_file: CronFile
) -> set[str]:
    """The regions that hold a runtime schedule ``args.job`` (not a job of ``cron_file``), and
    those that could not be read (:func:`fleet.holders`); CommandError, before anything is
    written, when no region read holds it."""

    def holds(region: str) -> dict[str, Any]:
        claims = claims_for(context, resolve(args, context, region))
        operator_path = Operator(cron=None, claims=claims, environment=None, clock=context.clock)
        return {"holds": operator_path.holds_schedule(args.job)}

    outcomes = each_region(regions, holds)
    holders = fleet.holders(outcomes)
    if holders is not None:
        return set(holders)
    unread = "".join(f"; {o.region} not read - {o.error}" for o in outcomes if not o.ok)
    raise CommandError(fleet.no_such_job(args.job, cron_file.source, regions, unread), EXIT_USAGE)


def _print_paused(
    context: Context, job: str, operator: str, paused: bool, outcomes: list[Outcome]
) -> None:
    failed = [o for o in outcomes if not o.ok]
    rows = []
    for o in outcomes:
        if not o.ok:
            rows.append([o.region, "FAILED", o.error or ""])
        elif o.fields.get("noSchedule"):
            rows.append([o.region, "no runtime schedule here (nothing to do)", ""])
        elif paused:
            rows.append([o.region, "paused", f"table {o.fields['table']}"])
        else:
            done = "resumed" if o.fields.get("wasPaused") else "not paused (nothing to do)"
            rows.append([o.region, done, f"table {o.fields['table']}"])
    for line in columns(rows):
        context.print(line)
    verb = "paused" if paused else "resumed"
    if failed:
        context.print(
            f"Job {job} {verb} by {operator} in {len(outcomes) - len(failed)} of "
            f"{plural(len(outcomes), 'region')}: retry the failed ones with --regions "
            + ",".join(o.region for o in failed)
        )
    else:
        context.print(f"Job {job} {verb} by {operator} in {plural(len(outcomes), 'region')}.")
