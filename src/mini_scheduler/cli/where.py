"""Where an operator command acts: its regions, and in each the stack, the state table, the
ticker function, the active-environment store and the cron file; and the stores built from them.

Operator commands are configured like the functions, by ``STATE_TABLE``, ``CRON_FILE``,
``ACTIVE_ENVIRONMENT_STORE``, ``ENVIRONMENT_NAME`` and ``AWS_REGION``, and by flags that win over
them: ``--table``, ``--cron-file``, ``--parameter``, ``--function``, ``--region`` /
``--regions``, and ``--stack NAME``, which reads the stack's outputs (``StateTableName``,
``TickerFunctionName``, ``ActiveEnvironmentParameter``, and ``EnvironmentName`` and
``CronFileLocations`` when the stack has them) in each region. A flag wins over the stack, the
stack over the environment variables.

``--local`` acts on the ``make run`` running on this machine
(:mod:`mini_scheduler.local.runfile`): its regions, its stack and its cron file, where no flag
names them, every AWS call to its endpoint on 127.0.0.1 with dummy credentials
(:func:`~mini_scheduler.cli.context.on_local_run`), never to AWS.

The stack's cron file is read where its ticker reads it: an ``s3://`` location from S3 in the
stack's region, a ``file:`` location from the ticker's package (:mod:`.package`). Only with no
flag, stack or ``CRON_FILE`` does a command read ``cron.yaml`` in the current folder, and it
says so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mini_scheduler.cli.context import EXIT_USAGE, CommandError, Context
from mini_scheduler.cli.package import PackagedCronFile, TickerPackage
from mini_scheduler.cli.render import level_tag
from mini_scheduler.config import DEFAULT_PARAMETER, REGION_NAME, Settings, flag
from mini_scheduler.errors import (
    ConfigurationError,
    CronFileError,
    EventError,
    SchedulerError,
    describe_aws_error,
)
from mini_scheduler.fleet import Outcome
from mini_scheduler.fleet import each_region as fleet_each_region
from mini_scheduler.jobs import DEFAULT_TIMEZONE, CronFile
from mini_scheduler.jobs.locations import CronFileSource, default_locations

if TYPE_CHECKING:
    from mini_scheduler.claims.base import ClaimStore
    from mini_scheduler.environment.base import EnvironmentStore
    from mini_scheduler.local.runfile import LocalRun

CRON_OUTPUT: Final = "CronFileLocations"


def _region_name(text: str) -> str:
    region = text.strip()
    if not REGION_NAME.fullmatch(region):
        raise argparse.ArgumentTypeError(f"not an AWS region: {text!r} (e.g. us-east-1)")
    return region


def _region_list(text: str) -> list[str]:
    regions: list[str] = []
    for part in text.split(","):
        if not part.strip():
            continue
        region = _region_name(part)
        if region not in regions:
            regions.append(region)
    if not regions:
        raise argparse.ArgumentTypeError("name at least one region, e.g. us-east-1,us-west-2")
    return regions


def add_where(
    parser: argparse.ArgumentParser,
    *,
    many_regions: bool = False,
    table: bool = True,
    cron_file: bool = False,
    function: bool = False,
    parameter: bool = False,
    environment_name: bool = False,
) -> None:
    """The options that say where a command acts; each wins over its environment variable."""
    where = parser.add_argument_group("where it acts (flags win over --stack and variables)")
    if many_regions:
        where.add_argument(
            "--regions",
            "--region",
            dest="regions",
            type=_region_list,
            metavar="R1,R2",
            help="the regions, comma-separated, each done and reported in turn "
            "(default AWS_REGION)",
        )
    else:
        where.add_argument(
            "--region", type=_region_name, help="the stack's region (default AWS_REGION)"
        )
    _add_stack(where)
    if table:
        where.add_argument("--table", metavar="NAME", help="the state table (STATE_TABLE)")
    if cron_file:
        where.add_argument(
            "--cron-file",
            metavar="LOCATION",
            help="the cron file the ticker reads: a path, file:<path> or s3://bucket/key "
            "(CRON_FILE)",
        )
    if function:
        where.add_argument("--function", metavar="NAME", help="the ticker function's name or ARN")
    if parameter:
        where.add_argument(
            "--parameter",
            metavar="NAME",
            help="the SSM parameter naming the active environment "
            f"(ACTIVE_ENVIRONMENT_STORE, default ssm:{DEFAULT_PARAMETER})",
        )
    if environment_name:
        where.add_argument(
            "--environment-name",
            metavar="NAME",
            help="this region's environment name (ENVIRONMENT_NAME, default prod)",
        )
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def local_run(args: argparse.Namespace, environ: Mapping[str, str]) -> LocalRun:
    """``--local``: the running ``make run``, whose regions (``--regions``: all of them,
    ``--region``: the first), stack and cron file the command takes where no flag gives
    them; CommandError saying to start one when none runs."""
    from mini_scheduler.local.runfile import NoLocalRun, find

    try:
        run = find(environ)
    except NoLocalRun as exc:
        raise CommandError(str(exc), EXIT_USAGE) from exc
    if "regions" in args and not args.regions:
        args.regions = list(run.regions)
    if "region" in args and not args.region:
        args.region = run.regions[0]
    if not args.stack:
        args.stack = run.stack
    if "cron_file" in args and not args.cron_file:
        args.cron_file = run.cron_file
    return run


def _add_stack(where: argparse._ArgumentGroup) -> None:
    """``--stack``, and ``--local``: the stack ``make run`` stands for, and the rest of it."""
    where.add_argument(
        "--stack",
        metavar="NAME",
        help="read the table, the ticker function and the parameter from this stack's outputs",
    )
    where.add_argument(
        "--local",
        action="store_true",
        help="act on the make run running on this machine: its moto, regions, stack and cron "
        "file (nothing reaches AWS)",
    )


def add_operator(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--operator",
        metavar="NAME",
        help="who asks (default: your AWS identity, the last part of its ARN)",
    )


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


def add_parameters(parser: argparse.ArgumentParser) -> None:
    """``--parameters JSON``: an object merged over the job's parameters (run, rerun)."""
    parser.add_argument(
        "--parameters",
        type=_json_object,
        metavar="JSON",
        help="a JSON object merged over the job's parameters",
    )


@dataclass(frozen=True, slots=True)
class Where:
    """One region's configuration, resolved: flag, then stack output, then variable."""

    region: str
    stack: str | None
    table: str | None
    function: str | None
    store: str  # ssm:<parameter> or dynamodb
    environment_name: str | None  # None: not known for this region
    cron_file: str | None
    cron_from_stack: bool = False  # cron_file is the stack's: its file: locations are packaged
    audit_group: str | None = None  # the audit trail's log group (AuditLogGroupName)

    def need_table(self) -> str:
        if self.table:
            return self.table
        hint = (
            f" (stack {self.stack} in {self.region} has no output StateTableName)"
            if self.stack
            else ""
        )
        raise CommandError(
            f"no state table: give --table NAME, --stack NAME or set STATE_TABLE{hint}",
            EXIT_USAGE,
        )

    def need_function(self) -> str:
        if self.function:
            return self.function
        hint = (
            f" (stack {self.stack} in {self.region} has no output TickerFunctionName)"
            if self.stack
            else ""
        )
        raise CommandError(
            f"no ticker function: give --function NAME or --stack NAME{hint}", EXIT_USAGE
        )


def _default_region(context: Context) -> str:
    for key in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        value = context.environ.get(key, "").strip()
        if value:
            if not REGION_NAME.fullmatch(value):
                raise CommandError(f"{key} {value!r} is not an AWS region", EXIT_USAGE)
            return value
    raise CommandError("no region: give --region (or --regions) or set AWS_REGION", EXIT_USAGE)


def one_region(args: argparse.Namespace, context: Context) -> str:
    region: str | None = getattr(args, "region", None)
    return region or _default_region(context)


def many_regions(args: argparse.Namespace, context: Context) -> list[str]:
    regions: list[str] | None = getattr(args, "regions", None)
    return regions or [_default_region(context)]


def stack_outputs(context: Context, stack: str, region: str) -> dict[str, str]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = context.clients(region)("cloudformation").describe_stacks(StackName=stack)
    except ClientError as exc:
        message = str(exc.response.get("Error", {}).get("Message", ""))
        if "does not exist" in message:
            raise CommandError(f"stack {stack} not found in {region}") from exc
        raise CommandError(
            f"CloudFormation DescribeStacks {stack} in {region} failed - {describe_aws_error(exc)}"
        ) from exc
    except BotoCoreError as exc:
        raise CommandError(
            f"CloudFormation DescribeStacks {stack} in {region} failed - {describe_aws_error(exc)}"
        ) from exc
    stacks = answer.get("Stacks") or []
    if not stacks:
        raise CommandError(f"stack {stack} not found in {region}")
    return {
        str(o["OutputKey"]): str(o["OutputValue"])
        for o in stacks[0].get("Outputs") or []
        if "OutputKey" in o and "OutputValue" in o
    }


def _store_text(value: str) -> str:
    """An ``ACTIVE_ENVIRONMENT_STORE`` value from a parameter name or a store text."""
    value = value.strip()
    if value.startswith("ssm:") or value in ("dynamodb", "mongodb"):
        return value
    return f"ssm:{value}"


def resolve(args: argparse.Namespace, context: Context, region: str, *, one_of: int = 1) -> Where:
    """``region``'s configuration; ``one_of`` regions in the command (a flag or variable naming
    one environment then names none: only each stack's output can)."""
    env = context.environ
    stack: str | None = getattr(args, "stack", None)
    outputs = stack_outputs(context, stack, region) if stack else {}

    def pick(flag: str, output: str, variable: str | None) -> str | None:
        value = getattr(args, flag, None) or outputs.get(output)
        if not value and variable is not None:
            value = env.get(variable, "").strip()
        return value or None

    parameter = getattr(args, "parameter", None)
    if parameter:
        store = _store_text(parameter)
    elif outputs.get("ActiveEnvironmentParameter"):
        store = _store_text(outputs["ActiveEnvironmentParameter"])
    else:
        store = env.get("ACTIVE_ENVIRONMENT_STORE", "").strip() or f"ssm:{DEFAULT_PARAMETER}"
    flagged: str | None = getattr(args, "cron_file", None)
    from_stack = not flagged and bool(outputs.get(CRON_OUTPUT))
    name = outputs.get("EnvironmentName")
    if one_of == 1:
        name = getattr(args, "environment_name", None) or name
        if not name and not stack:
            name = env.get("ENVIRONMENT_NAME", "").strip() or None
    return Where(
        region=region,
        stack=stack,
        table=pick("table", "StateTableName", "STATE_TABLE"),
        function=pick("function", "TickerFunctionName", None),
        store=store,
        environment_name=name,
        cron_file=pick("cron_file", CRON_OUTPUT, "CRON_FILE"),
        cron_from_stack=from_stack,
        audit_group=pick("audit_group", "AuditLogGroupName", "AUDIT_LOG_GROUP"),
    )


def claims_for(context: Context, where: Where) -> ClaimStore:
    """The claim store the ticker uses (``CLAIM_STORE``, DynamoDB by default), built as the
    functions build it."""
    from mini_scheduler.wiring import claim_store

    kind = context.environ.get("CLAIM_STORE", "").strip() or "dynamodb"
    table = where.need_table() if kind == "dynamodb" else (where.table or "")
    try:
        batched = flag(context.environ, "STATE_TABLE_BATCH_WRITES", default=True)
    except ConfigurationError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from exc
    settings = Settings(
        state_table=table, claim_store=kind, region=where.region, batch_writes=batched
    )
    return claim_store(settings, context.clients(where.region))


def environment_for(context: Context, where: Where) -> EnvironmentStore:
    """The active-environment store the ticker reads, built as the functions build it."""
    from mini_scheduler.wiring import environment_store

    table = where.need_table() if where.store == "dynamodb" else (where.table or "")
    settings = Settings(
        state_table=table, active_environment_store=where.store, region=where.region
    )
    return environment_store(settings, context.clients(where.region))


def settings_for(context: Context, where: Where) -> Settings:
    env = dict(context.environ)
    env.update(
        STATE_TABLE=where.need_table(),
        ACTIVE_ENVIRONMENT_STORE=where.store,
        ENVIRONMENT_NAME=where.environment_name or "prod",
        AWS_REGION=where.region,
        CRON_FILE=where.cron_file or "",
    )
    env.pop("AWS_LAMBDA_FUNCTION_NAME", None)
    try:
        return Settings.from_environment(env)
    except ConfigurationError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from exc


def cron_source(context: Context, where: Where) -> CronFileSource:
    """The cron file the ticker of ``where`` reads: ``--cron-file``, the stack's
    ``CronFileLocations`` (its ``file:`` locations in the ticker's package), ``CRON_FILE``; with
    none of them, ``cron.yaml`` in the current folder (a note says so), unless a stack was
    named: its own file, or an error."""
    locations = where.cron_file
    if locations is None:
        if where.stack:
            raise CommandError(
                f"stack {where.stack} in {where.region} has no output {CRON_OUTPUT} (deployed "
                "before it had one): give --cron-file (the file the ticker reads), or deploy "
                "the stack again"
            )
        locations = default_locations({})
        if Path(locations.removeprefix("file:")).is_file():
            context.warn(
                f"{level_tag('info')} reading {locations} in the current folder: give --stack "
                "or --cron-file for the file a deployed ticker reads"
            )
    zone = context.environ.get("DEFAULT_TIMEZONE", "").strip() or DEFAULT_TIMEZONE
    s3 = context.clients(where.region)("s3") if "s3://" in locations else None
    if where.cron_from_stack:
        return PackagedCronFile(
            locations, s3_client=s3, default_timezone=zone, package=TickerPackage(context, where)
        )
    return CronFileSource(locations, s3_client=s3, default_timezone=zone)


def load_cron(context: Context, where: Where) -> CronFile:
    """The cron file, its problems on stderr; CronFileError names what to give when missing."""
    try:
        cron_file = cron_source(context, where).load()
    except CronFileError as exc:
        if where.cron_file is None and "not found" in str(exc):
            raise CommandError(
                f"{exc}: give --cron-file (the file the ticker reads) or set CRON_FILE"
            ) from exc
        raise
    for problem in cron_file.problems:
        context.warn(f"{level_tag(problem.level)} {problem.message}")
    return cron_file


def operator_name(args: argparse.Namespace, context: Context, region: str) -> str:
    """``--operator``, or the caller's identity (the last part of its ARN), checked as the
    ticker checks it."""
    from mini_scheduler.operator import check_operator

    given: str | None = getattr(args, "operator", None)
    if given is not None:
        try:
            return check_operator(given)
        except EventError as exc:
            raise CommandError(str(exc), EXIT_USAGE) from exc
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        arn = caller_arn(context, region)
    except (BotoCoreError, ClientError) as exc:
        raise CommandError(
            f"cannot tell who you are (STS GetCallerIdentity failed - "
            f"{describe_aws_error(exc)}): give --operator NAME"
        ) from exc
    resource = arn.split(":", 5)[-1]
    name = resource.rsplit("/", 1)[-1]
    try:
        return check_operator(name)
    except EventError as exc:
        raise CommandError(
            f"your identity {arn} does not end in an operator name ({exc}): give --operator NAME",
            EXIT_USAGE,
        ) from exc


_ARNS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def caller_arn(context: Context, region: str) -> str:
    """The caller's ARN: STS GetCallerIdentity, asked once for a region's clients (the
    operator's name and the audit record's identity both come from it)."""
    clients = context.clients(region)
    try:
        return _ARNS[clients]
    except (KeyError, TypeError):  # TypeError: clients that cannot be weakly referenced
        pass
    arn = str(clients("sts").get_caller_identity()["Arn"])
    with contextlib.suppress(TypeError):
        _ARNS[clients] = arn
    return arn


def each_region(regions: Sequence[str], act: Callable[[str], dict[str, Any]]) -> list[Outcome]:
    """:func:`mini_scheduler.fleet.each_region`, where a usage error (exit 2) stops the command
    in every region."""
    return fleet_each_region(regions, act, stops=_usage)


def _usage(exc: SchedulerError) -> bool:
    return isinstance(exc, CommandError) and exc.code == EXIT_USAGE
