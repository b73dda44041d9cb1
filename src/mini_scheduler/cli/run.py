"""``run``: a job now, through the deployed ticker (a manual-run event, answered synchronously),
its parameters checked before any AWS call as the ticker will check them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from mini_scheduler.cli.audit import add_reason, asking
from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, Context, audit_said
from mini_scheduler.cli.render import columns
from mini_scheduler.cli.where import (
    add_operator,
    add_parameters,
    add_where,
    one_region,
    operator_name,
    resolve,
)
from mini_scheduler.errors import PayloadError, describe_aws_error
from mini_scheduler.jobs import name_problem
from mini_scheduler.operator import check_sendable


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
    add_reason(parser)
    add_parameters(parser)
    add_where(parser, table=False, function=True)


def run_job(args: argparse.Namespace, context: Context) -> int:
    problem = name_problem(args.job)
    if problem:
        return context.fail("run", f"not a job name: {problem}")
    try:  # before any AWS call: the ticker checks them again against the job's target
        check_sendable(args.parameters or {})
    except PayloadError as exc:
        return context.fail("run", str(exc))
    region = one_region(args, context)
    where = resolve(args, context, region)
    function = where.need_function()
    operator = operator_name(args, context, region)
    event = {"job": args.job, "operator": operator, "parameters": args.parameters or {}}
    event |= asking(args, context, region)
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
    audit_said(context, "run", payload)
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
