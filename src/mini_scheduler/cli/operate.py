"""The operator's commands that act on a deployed stack: ``run`` (a job now, through the
ticker), ``pause`` and ``resume`` (a job, in every region given), ``status`` (the active
environment as each region holds it) and ``failover`` (write it in every region)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, CommandError, Context
from mini_scheduler.cli.render import columns, plural
from mini_scheduler.cli.where import (
    Outcome,
    Where,
    add_operator,
    add_where,
    claims_for,
    each_region,
    environment_for,
    load_cron,
    many_regions,
    one_region,
    operator_name,
    resolve,
)
from mini_scheduler.config import valid_environment_name
from mini_scheduler.environment.active import DEFAULT_ACTIVE, ActiveEnvironment
from mini_scheduler.errors import SchedulerError, describe_aws_error
from mini_scheduler.jobs import name_problem
from mini_scheduler.operator import Operator

# -- run ------------------------------------------------------------------------------------


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            'give a JSON object, e.g. \'{"region": "west"}\', not ' + type(value).__name__
        )
    return value


def add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "run",
        help="run a job now, through the deployed ticker",
        description=(
            "Invoke the ticker function with a manual-run event and print its answer. The run "
            "is a firing of its own (it never takes a scheduled firing's place), runs on a "
            "region on standby too, and is recorded with the operator's name."
        ),
    )
    parser.add_argument("job", metavar="JOB", help="the job's name, as in cron.yaml")
    add_operator(parser)
    parser.add_argument(
        "--parameters",
        type=_json_object,
        metavar="JSON",
        help="a JSON object merged over the job's parameters",
    )
    add_where(parser, table=False, function=True)


def run_job(args: argparse.Namespace, context: Context) -> int:
    problem = name_problem(args.job)
    if problem:
        return context.fail("run", f"not a job name: {problem}")
    region = one_region(args, context)
    where = resolve(args, context, region)
    function = where.need_function()
    operator = operator_name(args, context, region)
    event = {"job": args.job, "operator": operator, "parameters": args.parameters or {}}
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = context.invoke(region, function, event)
    except (BotoCoreError, ClientError) as exc:
        return context.fail(
            "run",
            f"Lambda Invoke {function} in {region} failed - {describe_aws_error(exc)}",
            EXIT_FAILED,
        )
    payload = answer.payload
    if args.json:
        context.print(
            json.dumps(
                {"region": region, "function": function, "event": event, "answer": payload}
                | ({"functionError": answer.function_error} if answer.function_error else {}),
                indent=2,
            )
        )
    if answer.function_error:
        detail = (
            payload
            if not isinstance(payload, Mapping)
            else (f"{payload.get('errorType', 'Error')}: {payload.get('errorMessage', '')}")
        )
        return context.fail("run", f"the ticker failed ({answer.function_error}): {detail}", 1)
    if isinstance(payload, Mapping) and payload.get("status") == "rejected":
        return context.fail("run", f"the ticker refused the run: {payload.get('error')}", 1)
    failed = isinstance(payload, Mapping) and payload.get("status") == "FAILED"
    if not args.json:
        _print_run_answer(context, args.job, operator, payload)
    if failed:
        return context.fail("run", "the dispatch failed: see the ticker's log", EXIT_FAILED)
    return EXIT_OK


def _print_run_answer(context: Context, job: str, operator: str, payload: Any) -> None:
    if not isinstance(payload, Mapping):
        context.print(f"The ticker answered: {json.dumps(payload)}")
        return
    firing = payload.get("firingId")
    status = payload.get("status")
    if firing and status:
        context.print(
            f"Job {payload.get('job', job)} run by {operator}: {status} - firing {firing}"
        )
        if payload.get("mode") == "standby":
            context.print(
                "  (this region is on standby: the operator's run went ahead all the same)"
            )
    else:
        context.print("The ticker answered:")
    rows = [
        [f"  {key}", value if isinstance(value, str) else json.dumps(value)]
        for key, value in payload.items()
    ]
    for line in columns(rows):
        context.print(line)


# -- pause / resume -------------------------------------------------------------------------


def add_pause(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "pause",
        help="pause a job in every region given: the ticker skips it until resumed",
        description=(
            "Record in each region's state table that the job is paused: the ticker skips its "
            "firings, with a log line, until it is resumed. No redeploy."
        ),
    )
    parser.add_argument("job", metavar="JOB", help="the job's name, as in cron.yaml")
    add_operator(parser)
    add_where(parser, many_regions=True, cron_file=True)


def add_resume(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "resume",
        help="resume a paused job in every region given",
        description="Remove the job's pause from each region's state table.",
    )
    parser.add_argument("job", metavar="JOB", help="the job's name")
    add_operator(parser)
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
    # a job the deployed cron file does not name is refused (the stack says where it is)
    if paused and (args.cron_file or context.environ.get("CRON_FILE") or args.stack):
        where = resolve(args, context, regions[0])
        cron_file = load_cron(context, where)
        if cron_file.job(args.job) is None:
            return context.fail(command, f"no job {args.job} in {cron_file.source}: check the name")
    operator = operator_name(args, context, regions[0])

    def act(region: str) -> dict[str, Any]:
        where = resolve(args, context, region)
        claims = claims_for(context, where)
        was: bool | None = None
        if not paused:
            was = args.job in claims.control(f"{region}/-").paused
        operator_path = Operator(cron=None, claims=claims, environment=None, clock=context.clock)
        operator_path.set_paused(args.job, paused, operator)
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


def _print_paused(
    context: Context, job: str, operator: str, paused: bool, outcomes: list[Outcome]
) -> None:
    failed = [o for o in outcomes if not o.ok]
    rows = []
    for o in outcomes:
        if not o.ok:
            rows.append([o.region, "FAILED", o.error or ""])
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


# -- status / failover ----------------------------------------------------------------------


def add_status(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "status",
        help="the active environment, as each region's store holds it",
        description=(
            "Read each region's active-environment store (an SSM parameter by default) one "
            "by one and report it. Exit 1 when a region could not be read."
        ),
    )
    add_where(parser, many_regions=True, table=True, parameter=True, environment_name=True)


def _read_active(context: Context, where: Where) -> dict[str, Any]:
    store = environment_for(context, where)
    stored = store.get()
    active = "prod" if stored is None else stored.strip()
    if not valid_environment_name(active):
        raise CommandError(
            f"{store.name} holds {stored!r}, which is not an environment name: the tickers "
            "fail closed until it is fixed (mini-scheduler failover --to NAME)"
        )
    fields: dict[str, Any] = {"store": store.name, "active": active, "stored": stored is not None}
    if where.environment_name:
        fields["environment"] = where.environment_name
        fields["mode"] = (
            "active" if where.environment_name.casefold() == active.casefold() else "standby"
        )
    return fields


def status(args: argparse.Namespace, context: Context) -> int:
    regions = many_regions(args, context)
    if args.environment_name and len(regions) > 1:
        return context.fail("status", "--environment-name names one region's: give one region")
    outcomes = each_region(
        regions,
        lambda r: _read_active(context, resolve(args, context, r, one_of=len(regions))),
    )
    failed = [o for o in outcomes if not o.ok]
    values = {str(o.fields["active"]).casefold() for o in outcomes if o.ok}
    if args.json:
        report = {"regions": [o.to_json() for o in outcomes], "agree": len(values) <= 1}
        context.print(json.dumps(report, indent=2))
        return EXIT_FAILED if failed else EXIT_OK
    rows = [["REGION", "ACTIVE", "THIS REGION", "STORE"]]
    for o in outcomes:
        if not o.ok:
            rows.append([o.region, "FAILED", "-", o.error or ""])
            continue
        active = str(o.fields["active"]) + ("" if o.fields["stored"] else " (default)")
        here = (
            f"{o.fields['environment']}: {o.fields['mode']}" if "environment" in o.fields else "-"
        )
        rows.append([o.region, active, here, str(o.fields["store"])])
    for line in columns(rows):
        context.print(line)
    if len(values) > 1:
        context.print(
            "The regions disagree on the active environment: finish the failover "
            "(mini-scheduler failover --to NAME --regions ...)."
        )
    if failed:
        context.print(f"{len(failed)} of {plural(len(outcomes), 'region')} could not be read.")
    return EXIT_FAILED if failed else EXIT_OK


def _environment_name(text: str) -> str:
    name = text.strip()
    if not valid_environment_name(name):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an environment name (one word of letters, digits, '-' and '_')"
        )
    return name


def add_failover(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "failover",
        help="make an environment active: write every region's store, one by one",
        description=(
            "Write the active environment into each region's store (the same store classes "
            "the ticker reads), in the order given, and report each. Until every region is "
            "written the regions disagree: exit 1 when any failed, and run it again for those."
        ),
    )
    parser.add_argument(
        "--to", required=True, type=_environment_name, metavar="ENV", help="e.g. DR or prod"
    )
    add_operator(parser)
    add_where(parser, many_regions=True, table=True, parameter=True)


def failover(args: argparse.Namespace, context: Context) -> int:
    if getattr(args, "regions", None) is None:
        return context.fail(
            "failover", "name every region with --regions R1,R2: a failover must reach them all"
        )
    regions: list[str] = args.regions
    operator = operator_name(args, context, regions[0])
    target: str = args.to

    def act(region: str) -> dict[str, Any]:
        where = resolve(args, context, region)
        store = environment_for(context, where)
        try:
            before: str | None = store.get()
        except SchedulerError:
            before = None
        environment = ActiveEnvironment(store, where.environment_name or DEFAULT_ACTIVE)
        Operator(
            cron=None, claims=None, environment=environment, clock=context.clock
        ).set_environment(target, operator)
        return {"store": store.name, "before": before, "active": target}

    outcomes = each_region(regions, act)
    failed = [o for o in outcomes if not o.ok]
    if args.json:
        report = {
            "active": target,
            "operator": operator,
            "regions": [o.to_json() for o in outcomes],
        }
        context.print(json.dumps(report, indent=2))
        return EXIT_FAILED if failed else EXIT_OK
    rows = []
    for o in outcomes:
        if o.ok:
            before = o.fields["before"] if o.fields["before"] is not None else "prod (default)"
            rows.append([o.region, f"{before} -> {target}", str(o.fields["store"])])
        else:
            rows.append([o.region, "FAILED", o.error or ""])
    for line in columns(rows):
        context.print(line)
    if failed:
        context.print(
            f"Active environment {target} in {len(outcomes) - len(failed)} of "
            f"{plural(len(outcomes), 'region')}; the regions disagree until the rest are "
            "written: mini-scheduler failover --to "
            f"{target} --regions {','.join(o.region for o in failed)}"
        )
        return EXIT_FAILED
    context.print(
        f"Active environment {target} in {plural(len(outcomes), 'region')}, set by {operator}."
    )
    return EXIT_OK
