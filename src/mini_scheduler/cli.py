"""``mini-scheduler``: the command line for developers and operators.

One function per subcommand, each ``(args, context) -> exit code``, registered in
:data:`COMMANDS` with the function that declares its arguments. Exit codes: 0 done, 1 the thing
checked is wrong or an operation failed (an entry skipped, a file that cannot be read, an AWS
call refused), 2 a usage error (a bad argument, statement, zone, or missing configuration).

Commands for developers: ``validate``, ``next``, ``local``. Commands for operators, against a
deployed stack: ``jobs``, ``history``, ``run``, ``pause``, ``resume``, ``status``,
``failover`` and ``tick``. They are configured like the functions, by ``STATE_TABLE``,
``CRON_FILE``, ``ACTIVE_ENVIRONMENT_STORE``, ``ENVIRONMENT_NAME`` and ``AWS_REGION``, and by
flags that win over them: ``--table``, ``--cron-file``, ``--parameter``, ``--function``,
``--region`` / ``--regions``, and ``--stack NAME``, which reads the stack's outputs
(``StateTableName``, ``TickerFunctionName``, ``ActiveEnvironmentParameter``, and
``EnvironmentName`` when the stack has it) in each region. A flag wins over the stack, the stack
over the environment variables.

Every command prints for people by default and JSON with ``--json``; an error is one line on
stderr. The clock, the environment variables, the AWS clients and the ticker's invoker are
injected through :class:`Context`, so tests are deterministic; only :func:`main` picks the real
ones, and it makes no client before a command needs one.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, TextIO

from mini_scheduler import __version__
from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.config import DEFAULT_PARAMETER, Settings, valid_environment_name
from mini_scheduler.cron import CronExpression, CronSyntaxError, parse
from mini_scheduler.errors import (
    ConfigurationError,
    CronFileError,
    EventError,
    SchedulerError,
    UnknownTimeZoneError,
    describe_aws_error,
)
from mini_scheduler.jobs import DEFAULT_TIMEZONE, CronFile, name_problem
from mini_scheduler.locations import CronFileSource, default_locations
from mini_scheduler.model import floor_minute, iso_seconds
from mini_scheduler.unix_cron import unix_hint
from mini_scheduler.zones import get_zone, is_fixed_offset, suggest_zone

if TYPE_CHECKING:
    from mini_scheduler.claims.base import ClaimStore, RunRecord
    from mini_scheduler.environment.base import EnvironmentStore
    from mini_scheduler.planner import Action, TickPlan
    from mini_scheduler.wiring import Clients

PROG: Final = "mini-scheduler"
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
MAX_COUNT: Final = 1000
MAX_HISTORY: Final = 1000
_UTC_NAMES: Final = frozenset({"UTC", "Etc/UTC"})
_REGION: Final = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}")
INVOKE_READ_TIMEOUT: Final = 300  # seconds a manual run may take to answer (the ticker's limit)


@dataclass(frozen=True, slots=True)
class Invocation:
    """What a synchronous invoke of the ticker answered: its payload (parsed when it is JSON)
    and the function error, when the function raised instead of answering."""

    payload: Any
    function_error: str | None = None


Invoker = Callable[[str, str, Mapping[str, Any]], Invocation]
"""``(region, function, event) -> Invocation``: invoke the ticker function synchronously."""
ClientsFor = Callable[[str], "Clients"]
"""``region -> Clients``: the AWS clients of one region, each made on first use."""


class RegionClients:
    """The default :data:`ClientsFor`: one :class:`~mini_scheduler.wiring.Clients` a region,
    all from one boto3 session (made on first use unless given)."""

    def __init__(self, session: Any = None) -> None:
        self._by_region: dict[str, Clients] = {}
        self._session: Any = session

    def __call__(self, region: str) -> Clients:
        import boto3

        from mini_scheduler.wiring import Clients

        found = self._by_region.get(region)
        if found is None:
            if self._session is None:  # one session: its service models load once
                self._session = boto3.session.Session()
            found = self._by_region[region] = Clients(region, session=self._session, pool=16)
        return found


def invoke_ticker(region: str, function: str, event: Mapping[str, Any]) -> Invocation:
    """The default :data:`Invoker`: ``Invoke`` with ``RequestResponse``, never retried (a retry
    after a lost answer would run the job a second time)."""
    import boto3
    from botocore.config import Config

    client = boto3.session.Session().client(
        "lambda",
        region_name=region,
        config=Config(
            connect_timeout=5,
            read_timeout=INVOKE_READ_TIMEOUT,
            retries={"total_max_attempts": 1, "mode": "standard"},
        ),
    )
    answer = client.invoke(
        FunctionName=function,
        InvocationType="RequestResponse",
        Payload=json.dumps(dict(event)).encode(),
    )
    raw = answer["Payload"].read().decode("utf-8", "replace")
    try:
        payload: Any = json.loads(raw) if raw else None
    except ValueError:
        payload = raw
    return Invocation(payload, answer.get("FunctionError"))


@dataclass(frozen=True, slots=True)
class Context:
    """What a subcommand may use besides its arguments."""

    clock: Clock
    out: TextIO
    err: TextIO
    environ: Mapping[str, str]
    clients: ClientsFor = field(default_factory=RegionClients)
    invoke: Invoker = invoke_ticker

    def print(self, text: str = "") -> None:
        print(text, file=self.out)

    def warn(self, text: str) -> None:
        print(text, file=self.err)

    def fail(self, command: str, message: str, code: int = EXIT_USAGE) -> int:
        """One line on stderr naming the command, and the exit code."""
        print(f"{PROG} {command}: {message}", file=self.err)
        return code


Handler = Callable[[argparse.Namespace, Context], int]


class CommandError(SchedulerError):
    """A command cannot go on: ``code`` is its exit code (2 usage, 1 an operation failed)."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


# -- shared helpers ---------------------------------------------------------------------------


def _plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def _read(location: str, context: Context) -> CronFile:
    """The cron file at ``location`` (a path, ``file:<path>`` or ``s3://bucket/key``)."""
    zone = context.environ.get("DEFAULT_TIMEZONE", "").strip() or DEFAULT_TIMEZONE
    return CronFileSource(location, default_timezone=zone).load()


def _level(level: str) -> str:
    return f"{level.upper():<7}"


# -- validate ---------------------------------------------------------------------------------


def _add_validate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "validate",
        help="check a cron file and report every problem",
        description=(
            "Read a cron file as the ticker does and print its load report: each problem at "
            "its level and each job that loaded. Exit 0 when every entry loaded (warnings "
            "allowed), 1 otherwise."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a path, file:<path> or s3://bucket/key")
    parser.add_argument("--quiet", "-q", action="store_true", help="print problems only")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def validate(args: argparse.Namespace, context: Context) -> int:
    try:
        cron_file = _read(args.file, context)
    except CronFileError as exc:
        if args.json:
            context.print(json.dumps({"source": args.file, "ok": False, "error": str(exc)}))
        else:
            context.print(f"{_level('error')} {exc}")
        return EXIT_FAILED
    if args.json:
        report = {
            "source": cron_file.source,
            "ok": cron_file.ok,
            "version": cron_file.version,
            "jobs": [job.name for job in cron_file.jobs],
            "skipped": cron_file.skipped,
            "problems": [
                {"level": p.level, "message": p.message, "entry": p.entry}
                for p in cron_file.problems
            ],
        }
        context.print(json.dumps(report, indent=2))
        return EXIT_OK if cron_file.ok else EXIT_FAILED
    lines = cron_file.problems if args.quiet else cron_file.lines()
    for line in lines:
        context.print(f"{_level(line.level)} {line.message}")
    warnings = sum(1 for p in cron_file.problems if p.level == "warning")
    summary = (
        f"{cron_file.source}: {_plural(len(cron_file.jobs), 'job')} loaded, "
        f"{_plural(cron_file.skipped, 'entry', 'entries')} skipped"
    )
    if warnings:
        summary += f" ({_plural(warnings, 'warning')})"
    context.print(summary)
    return EXIT_OK if cron_file.ok else EXIT_FAILED


# -- next -------------------------------------------------------------------------------------


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"give 1 to {MAX_COUNT}, not {value}")
    return value


def _instant(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 time: {text!r} (e.g. 2026-11-30T14:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _add_next(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "next",
        help="the next firings of a cron file's jobs, or of one statement",
        description=(
            "Print the next firings of each job in FILE, or of the statement given with "
            "--cron read in --zone, each in UTC and in the job's zone. The file's problems go "
            "to stderr; exit 1 when an entry was skipped, as validate does."
        ),
    )
    parser.add_argument(
        "file", metavar="FILE", nargs="?", help="a path, file:<path> or s3://bucket/key"
    )
    parser.add_argument("--cron", metavar="STATEMENT", help="a Quartz cron statement instead")
    parser.add_argument(
        "--zone", metavar="ZONE", help="the IANA zone of --cron (default DEFAULT_TIMEZONE, UTC)"
    )
    parser.add_argument(
        "--count", "-n", type=_count, default=5, help="how many firings each (default 5)"
    )
    parser.add_argument(
        "--after",
        type=_instant,
        metavar="ISO",
        help="start after this instant (default now; without an offset it is UTC)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


@dataclass(frozen=True, slots=True)
class _Schedule:
    job: str | None
    statement: str
    expression: CronExpression
    zone: str
    service: str | None = None
    enabled: bool = True


def _firings(schedule: _Schedule, after: datetime, count: int) -> list[datetime]:
    found: list[datetime] = []
    moment = after
    while len(found) < count:
        following = schedule.expression.next_after(moment, schedule.zone)
        if following is None:
            break
        found.append(following)
        moment = following
    return found


def _utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _offset(local: datetime) -> str:
    text = local.strftime("%z")  # +0530
    return f"{text[:3]}:{text[3:5]}" if len(text) >= 5 else "+00:00"


def next_firings(args: argparse.Namespace, context: Context) -> int:
    after: datetime = args.after or context.clock.now().astimezone(UTC)
    schedules: list[_Schedule] = []
    complete = True
    if args.cron is not None:
        if args.file is not None:
            return context.fail("next", "give FILE or --cron, not both")
        zone = args.zone or context.environ.get("DEFAULT_TIMEZONE", "").strip()
        zone = zone or DEFAULT_TIMEZONE
        try:
            get_zone(zone)
        except UnknownTimeZoneError:
            guess = suggest_zone(zone)
            hint = "" if guess is None else f" - did you mean {guess}?"
            return context.fail("next", f"unknown time zone {zone!r}{hint}")
        try:
            expression = parse(args.cron)
        except CronSyntaxError as exc:
            unix = unix_hint(args.cron)
            return context.fail("next", str(exc) if unix is None else f"{exc} - {unix}")
        if is_fixed_offset(zone) or zone in ("EST", "MST", "HST"):
            print(
                f"{_level('warning')} time zone {zone} never follows daylight saving - name a "
                "region such as America/New_York",
                file=context.err,
            )
        schedules.append(_Schedule(None, args.cron, expression, zone))
    elif args.file is not None:
        if args.zone is not None:
            return context.fail("next", "--zone goes with --cron: a file's jobs name their zone")
        try:
            cron_file = _read(args.file, context)
        except CronFileError as exc:
            return context.fail("next", str(exc), EXIT_FAILED)
        for problem in cron_file.problems:
            print(f"{_level(problem.level)} {problem.message}", file=context.err)
        complete = cron_file.ok  # a skipped entry fails the command, as in validate
        schedules.extend(
            _Schedule(j.name, j.statement, j.expression, j.zone, j.service, j.enabled)
            for j in cron_file.jobs
        )
    else:
        return context.fail("next", "give a cron FILE, or --cron STATEMENT")

    table = [(schedule, _firings(schedule, after, args.count)) for schedule in schedules]
    if args.json:
        context.print(json.dumps(_next_json(after, table), indent=2))
    else:
        _next_text(context, after, table)
    return EXIT_OK if complete else EXIT_FAILED


def _next_json(after: datetime, table: Sequence[tuple[_Schedule, list[datetime]]]) -> Any:
    schedules = []
    for schedule, firings in table:
        zone = get_zone(schedule.zone)
        items = []
        for firing in firings:
            local = firing.astimezone(zone)
            items.append(
                {
                    "utc": _utc_text(firing),
                    "local": local.isoformat(),
                    "abbreviation": local.tzname(),
                    "offset": _offset(local),
                }
            )
        schedules.append(
            {
                "job": schedule.job,
                "statement": schedule.statement,
                "zone": schedule.zone,
                "service": schedule.service,
                "enabled": schedule.enabled,
                "firings": items,
            }
        )
    return {"after": _utc_text(after), "schedules": schedules}


def _next_text(
    context: Context, after: datetime, table: Sequence[tuple[_Schedule, list[datetime]]]
) -> None:
    context.print(f"Next firings after {_utc_text(after)}")
    if not table:
        context.print("(no jobs loaded)")
    for schedule, firings in table:
        context.print()
        title = f"{schedule.statement} @{schedule.zone}"
        if schedule.job is not None:
            title = f"{schedule.job}  {title}  -> {schedule.service}"
            if not schedule.enabled:
                title += "  (disabled: the ticker skips it)"
        context.print(title)
        if not firings:
            context.print("  no firing after that")
            continue
        zone = get_zone(schedule.zone)
        for firing in firings:
            utc = firing.strftime("%a %Y-%m-%d %H:%M:%S UTC")
            if schedule.zone in _UTC_NAMES:
                context.print(f"  {utc}")
                continue
            local = firing.astimezone(zone)
            wall = local.strftime("%a %Y-%m-%d %H:%M:%S")
            context.print(f"  {utc}   {wall} {local.tzname()} (UTC{_offset(local)})")


# -- operator commands: where they act ------------------------------------------------------


def _region_name(text: str) -> str:
    region = text.strip()
    if not _REGION.fullmatch(region):
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


def _add_where(
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
    where.add_argument(
        "--stack",
        metavar="NAME",
        help="read the table, the ticker function and the parameter from this stack's outputs",
    )
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


def _add_operator(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--operator",
        metavar="NAME",
        help="who asks (default: your AWS identity, the last part of its ARN)",
    )


@dataclass(frozen=True, slots=True)
class _Where:
    """One region's configuration, resolved: flag, then stack output, then variable."""

    region: str
    stack: str | None
    table: str | None
    function: str | None
    store: str  # ssm:<parameter> or dynamodb
    environment_name: str | None  # None: not known for this region
    cron_file: str | None

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
            if not _REGION.fullmatch(value):
                raise CommandError(f"{key} {value!r} is not an AWS region", EXIT_USAGE)
            return value
    raise CommandError("no region: give --region (or --regions) or set AWS_REGION", EXIT_USAGE)


def _one_region(args: argparse.Namespace, context: Context) -> str:
    region: str | None = getattr(args, "region", None)
    return region or _default_region(context)


def _many_regions(args: argparse.Namespace, context: Context) -> list[str]:
    regions: list[str] | None = getattr(args, "regions", None)
    return regions or [_default_region(context)]


def _stack_outputs(context: Context, stack: str, region: str) -> dict[str, str]:
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


def _where(args: argparse.Namespace, context: Context, region: str, *, one_of: int = 1) -> _Where:
    """``region``'s configuration; ``one_of`` regions in the command (a flag or variable naming
    one environment then names none: only each stack's output can)."""
    env = context.environ
    stack: str | None = getattr(args, "stack", None)
    outputs = _stack_outputs(context, stack, region) if stack else {}

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
    name = outputs.get("EnvironmentName")
    if one_of == 1:
        name = getattr(args, "environment_name", None) or name
        if not name and not stack:
            name = env.get("ENVIRONMENT_NAME", "").strip() or None
    return _Where(
        region=region,
        stack=stack,
        table=pick("table", "StateTableName", "STATE_TABLE"),
        function=pick("function", "TickerFunctionName", None),
        store=store,
        environment_name=name,
        cron_file=pick("cron_file", "", "CRON_FILE"),
    )


def _claims(context: Context, where: _Where) -> ClaimStore:
    """The claim store the ticker uses (``CLAIM_STORE``, DynamoDB by default), built as the
    functions build it."""
    from mini_scheduler.wiring import claim_store

    kind = context.environ.get("CLAIM_STORE", "").strip() or "dynamodb"
    table = where.need_table() if kind == "dynamodb" else (where.table or "")
    settings = Settings(state_table=table, claim_store=kind, region=where.region)
    return claim_store(settings, context.clients(where.region))


def _environment_store(context: Context, where: _Where) -> EnvironmentStore:
    """The active-environment store the ticker reads, built as the functions build it."""
    from mini_scheduler.wiring import environment_store

    table = where.need_table() if where.store == "dynamodb" else (where.table or "")
    settings = Settings(
        state_table=table, active_environment_store=where.store, region=where.region
    )
    return environment_store(settings, context.clients(where.region))


def _settings(context: Context, where: _Where) -> Settings:
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


def _cron_source(context: Context, where: _Where) -> CronFileSource:
    locations = where.cron_file or default_locations({})
    zone = context.environ.get("DEFAULT_TIMEZONE", "").strip() or DEFAULT_TIMEZONE
    s3 = context.clients(where.region)("s3") if "s3://" in locations else None
    return CronFileSource(locations, s3_client=s3, default_timezone=zone)


def _load_cron(context: Context, where: _Where) -> CronFile:
    """The cron file, its problems on stderr; CronFileError names what to give when missing."""
    try:
        cron_file = _cron_source(context, where).load()
    except CronFileError as exc:
        if where.cron_file is None and "not found" in str(exc):
            raise CommandError(
                f"{exc}: give --cron-file (the file the ticker reads) or set CRON_FILE"
            ) from exc
        raise
    for problem in cron_file.problems:
        context.warn(f"{_level(problem.level)} {problem.message}")
    return cron_file


def _operator(args: argparse.Namespace, context: Context, region: str) -> str:
    """``--operator``, or the caller's identity (the last part of its ARN), checked as the
    ticker checks it."""
    from mini_scheduler.ticker import check_operator

    given: str | None = getattr(args, "operator", None)
    if given is not None:
        try:
            return check_operator(given)
        except EventError as exc:
            raise CommandError(str(exc), EXIT_USAGE) from exc
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        arn = str(context.clients(region)("sts").get_caller_identity()["Arn"])
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


# -- formatting -----------------------------------------------------------------------------


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows aligned in columns two spaces apart (the last column is not padded)."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join(
            [*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]]
        ).rstrip()
        for row in rows
    ]


def _utc(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ") if moment else "-"


def _wall(moment: datetime, zone: str) -> str:
    """A firing in its job's zone, with the zone's abbreviation: ``Mon 2026-11-30 09:00:00 EST``."""
    local = moment.astimezone(get_zone(zone))
    return f"{local.strftime('%a %Y-%m-%d %H:%M:%S')} {local.tzname()}"


def _span(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds}s" if seconds else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


def _took(run: RunRecord) -> str:
    """How long a run took; 0 when its end is stamped before its start (clocks of two machines
    disagree), as the recorder logs it."""
    started = run.started_at or run.claimed_at
    if started is None or run.ended_at is None:
        return "-"
    took = max(timedelta(0), run.ended_at - started)
    millis = int(took.total_seconds() * 1000)
    return f"{millis} ms" if millis < 10_000 else _span(took)


@dataclass(slots=True)
class _Outcome:
    """One region's result in a command done region by region."""

    region: str
    ok: bool
    fields: dict[str, Any]
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"region": self.region, "ok": self.ok, **self.fields}
        if self.error is not None:
            out["error"] = self.error
        return out


def _each_region(regions: Sequence[str], act: Callable[[str], dict[str, Any]]) -> list[_Outcome]:
    """Do ``act`` in every region in turn; a failure is reported, and the next region done."""
    from botocore.exceptions import BotoCoreError, ClientError

    outcomes: list[_Outcome] = []
    for region in regions:
        try:
            outcomes.append(_Outcome(region, True, act(region)))
        except CommandError as exc:
            if exc.code == EXIT_USAGE:
                raise
            outcomes.append(_Outcome(region, False, {}, str(exc)))
        except SchedulerError as exc:
            outcomes.append(_Outcome(region, False, {}, str(exc)))
        except (BotoCoreError, ClientError) as exc:
            outcomes.append(_Outcome(region, False, {}, describe_aws_error(exc)))
    return outcomes


# -- jobs -----------------------------------------------------------------------------------


def _add_jobs(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "jobs",
        help="each job: its next firing, its last run, paused or not",
        description=(
            "List the jobs of the cron file the ticker reads, each with its next firing (in "
            "the job's zone), the status of its last run and whether it is paused, as the "
            "region's state table records them."
        ),
    )
    _add_where(parser, cron_file=True)


def jobs(args: argparse.Namespace, context: Context) -> int:
    region = _one_region(args, context)
    where = _where(args, context, region)
    claims = _claims(context, where)
    cron_file = _load_cron(context, where)
    now = context.clock.now().astimezone(UTC)
    paused = claims.control(f"{region}/{where.environment_name or 'prod'}").paused
    listed: list[dict[str, Any]] = []
    for job in cron_file.jobs:
        state = claims.job_state(job.name)
        upcoming = job.expression.next_after(now, job.tz) if job.enabled else None
        pause = paused.get(job.name)
        listed.append(
            {
                "job": job.name,
                "service": job.service,
                "schedule": job.schedule,
                "enabled": job.enabled,
                "next": upcoming,
                "zone": job.zone,
                "state": state,
                "pause": pause,
            }
        )
    strays = sorted(set(paused) - {job.name for job in cron_file.jobs})
    if args.json:
        context.print(json.dumps(_jobs_json(where, cron_file, listed, strays, paused), indent=2))
        return EXIT_OK
    rows = [["JOB", "NEXT FIRING", "IN", "LAST RUN", "LAST STATUS", "PAUSED", "SERVICE"]]
    for item in listed:
        state, pause, upcoming = item["state"], item["pause"], item["next"]
        if not item["enabled"]:
            next_text, in_text = "disabled", "-"
        elif upcoming is None:
            next_text, in_text = "never again", "-"
        else:
            next_text, in_text = _wall(upcoming, item["zone"]), _span(upcoming - now)
        last_status = str(state.last_status) if state and state.last_status else "-"
        rows.append(
            [
                item["job"],
                next_text,
                in_text,
                _utc(state.start if state else None),
                last_status,
                f"by {pause.operator}" if pause else "-",
                item["service"],
            ]
        )
    for line in _columns(rows):
        context.print(line)
    for name in strays:
        context.print(f"(job {name} is paused by {paused[name].operator} but not in the cron file)")
    context.print(
        f"{_plural(len(listed), 'job')} in {cron_file.source}; runs from table "
        f"{where.table} in {region}"
    )
    return EXIT_OK


def _jobs_json(
    where: _Where,
    cron_file: CronFile,
    listed: list[dict[str, Any]],
    strays: list[str],
    paused: Mapping[str, Any],
) -> dict[str, Any]:
    out_jobs = []
    for item in listed:
        state, pause, upcoming = item["state"], item["pause"], item["next"]
        local = upcoming.astimezone(get_zone(item["zone"])) if upcoming else None
        out_jobs.append(
            {
                "job": item["job"],
                "service": item["service"],
                "schedule": item["schedule"],
                "enabled": item["enabled"],
                "nextFiring": (
                    {
                        "utc": iso_seconds(upcoming),
                        "local": local.isoformat() if local else None,
                        "zone": item["zone"],
                        "abbreviation": local.tzname() if local else None,
                    }
                    if upcoming
                    else None
                ),
                "lastFiringId": state.last_firing_id if state else None,
                "lastStatus": str(state.last_status) if state and state.last_status else None,
                "lastStart": iso_seconds(state.start) if state and state.start else None,
                "lastEnd": iso_seconds(state.end) if state and state.end else None,
                "paused": pause is not None,
                "pausedBy": pause.operator if pause else None,
                "pausedAt": iso_seconds(pause.at) if pause and pause.at.tzinfo else None,
            }
        )
    return {
        "region": where.region,
        "table": where.table,
        "cronFile": cron_file.source,
        "jobs": out_jobs,
        "pausedNotInCronFile": [{"job": n, "pausedBy": paused[n].operator} for n in strays],
    }


# -- history --------------------------------------------------------------------------------


def _history_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= MAX_HISTORY:
        raise argparse.ArgumentTypeError(f"give 1 to {MAX_HISTORY}, not {value}")
    return value


def _add_history(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "history",
        help="a job's runs, newest first",
        description=(
            "Print a job's run records from the state table, newest first. A job without runs "
            "is looked up in the cron file: a name in neither is an error."
        ),
    )
    parser.add_argument("job", metavar="JOB", help="the job's name")
    parser.add_argument(
        "--limit", "-n", type=_history_limit, default=20, help="how many runs (default 20)"
    )
    _add_where(parser, cron_file=True)


def _run_note(run: RunRecord) -> str:
    parts: list[str] = []
    if run.manual:
        parts.append(f"manual run by {run.operator}" if run.operator else "manual run")
    if run.skipped_count is not None and run.skipped_until:
        parts.append(f"{run.skipped_count} firings to {run.skipped_until}")
    if run.reason:
        parts.append(run.reason)
    if run.timed_out_at is not None and not run.swept:
        parts.append(f"ended after it was marked TIMED_OUT at {_utc(run.timed_out_at)}")
    if run.redrives:
        earlier = ", ".join(str(end.status) for end in run.earlier_ends)
        parts.append(f"redriven {run.redrives}x" + (f" after {earlier}" if earlier else ""))
    if run.error:
        parts.append(run.error.splitlines()[0][:200] if run.error.strip() else run.error)
    return "; ".join(parts) or "-"


def _check_job_known(job: str, context: Context, where: _Where) -> None:
    """A job with no runs must be in the cron file the CLI reads: else the name is wrong
    (CommandError, a usage error, with the nearest name in the file)."""
    where_runs = f"table {where.table} ({where.region})"
    try:
        cron_file = _cron_source(context, where).load()
    except CronFileError as exc:
        if where.cron_file is None and "not found" in str(exc):
            raise CommandError(
                f"no run of {job} in {where_runs}, and no cron file to tell whether it is a "
                f"job: {exc}: give --cron-file (the file the ticker reads) or set CRON_FILE",
                EXIT_USAGE,
            ) from exc
        raise
    if cron_file.job(job) is not None:
        return
    names = [known.name for known in cron_file.jobs]
    close = difflib.get_close_matches(job, names, n=1, cutoff=0.6)
    hint = f" - did you mean {close[0]}?" if close else ""
    raise CommandError(
        f"unknown job {job}: it is not in {cron_file.source} and {where_runs} holds no run of "
        f"it{hint}",
        EXIT_USAGE,
    )


def history(args: argparse.Namespace, context: Context) -> int:
    problem = name_problem(args.job)
    if problem:
        return context.fail("history", f"not a job name: {problem}")
    region = _one_region(args, context)
    where = _where(args, context, region)
    runs = list(_claims(context, where).history(args.job, args.limit))
    if not runs:
        _check_job_known(args.job, context, where)
    if args.json:
        report = {
            "job": args.job,
            "region": region,
            "table": where.table,
            "runs": [run.to_json() for run in runs],
        }
        context.print(json.dumps(report, indent=2))
        return EXIT_OK
    if not runs:
        context.print(f"No runs recorded for {args.job} in table {where.table} ({region}).")
        return EXIT_OK
    rows = [["SCHEDULED", "STATUS", "STARTED", "ENDED", "TOOK", "ORIGIN", "NOTE"]]
    rows.extend(
        [
            run.scheduled_time.replace("T", " "),
            str(run.status),
            _utc(run.started_at or run.claimed_at),
            _utc(run.ended_at),
            _took(run),
            run.origin or "-",
            _run_note(run),
        ]
        for run in runs
    )
    for line in _columns(rows):
        context.print(line)
    more = " (the newest; --limit for more)" if len(runs) == args.limit else ""
    context.print(f"{_plural(len(runs), 'run')} of {args.job} in {region}{more}")
    return EXIT_OK


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


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    _add_operator(parser)
    parser.add_argument(
        "--parameters",
        type=_json_object,
        metavar="JSON",
        help="a JSON object merged over the job's parameters",
    )
    _add_where(parser, table=False, function=True)


def run_job(args: argparse.Namespace, context: Context) -> int:
    problem = name_problem(args.job)
    if problem:
        return context.fail("run", f"not a job name: {problem}")
    region = _one_region(args, context)
    where = _where(args, context, region)
    function = where.need_function()
    operator = _operator(args, context, region)
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
    for line in _columns(rows):
        context.print(line)


# -- pause / resume -------------------------------------------------------------------------


def _add_pause(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "pause",
        help="pause a job in every region given: the ticker skips it until resumed",
        description=(
            "Record in each region's state table that the job is paused: the ticker skips its "
            "firings, with a log line, until it is resumed. No redeploy."
        ),
    )
    parser.add_argument("job", metavar="JOB", help="the job's name, as in cron.yaml")
    _add_operator(parser)
    _add_where(parser, many_regions=True, cron_file=True)


def _add_resume(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "resume",
        help="resume a paused job in every region given",
        description="Remove the job's pause from each region's state table.",
    )
    parser.add_argument("job", metavar="JOB", help="the job's name")
    _add_operator(parser)
    _add_where(parser, many_regions=True)


def pause(args: argparse.Namespace, context: Context) -> int:
    return _set_paused(args, context, True)


def resume(args: argparse.Namespace, context: Context) -> int:
    return _set_paused(args, context, False)


def _set_paused(args: argparse.Namespace, context: Context, paused: bool) -> int:
    command = "pause" if paused else "resume"
    problem = name_problem(args.job)
    if problem:
        return context.fail(command, f"not a job name: {problem}")
    regions = _many_regions(args, context)
    if paused and (getattr(args, "cron_file", None) or context.environ.get("CRON_FILE")):
        where = _where(args, context, regions[0])
        cron_file = _load_cron(context, where)
        if cron_file.job(args.job) is None:
            return context.fail(command, f"no job {args.job} in {cron_file.source}: check the name")
    operator = _operator(args, context, regions[0])

    def act(region: str) -> dict[str, Any]:
        where = _where(args, context, region)
        claims = _claims(context, where)
        was: bool | None = None
        if not paused:
            was = args.job in claims.control(f"{region}/-").paused
        claims.set_paused(args.job, paused, operator=operator, now=context.clock.now())
        fields: dict[str, Any] = {"table": where.table, "paused": paused}
        if was is not None:
            fields["wasPaused"] = was
        return fields

    outcomes = _each_region(regions, act)
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
        rows = []
        for o in outcomes:
            if not o.ok:
                rows.append([o.region, "FAILED", o.error or ""])
            elif paused:
                rows.append([o.region, "paused", f"table {o.fields['table']}"])
            else:
                done = "resumed" if o.fields.get("wasPaused") else "not paused (nothing to do)"
                rows.append([o.region, done, f"table {o.fields['table']}"])
        for line in _columns(rows):
            context.print(line)
        verb = "paused" if paused else "resumed"
        if failed:
            context.print(
                f"Job {args.job} {verb} by {operator} in {len(outcomes) - len(failed)} of "
                f"{_plural(len(outcomes), 'region')}: retry the failed ones with --regions "
                + ",".join(o.region for o in failed)
            )
        else:
            context.print(
                f"Job {args.job} {verb} by {operator} in {_plural(len(outcomes), 'region')}."
            )
    return EXIT_FAILED if failed else EXIT_OK


# -- status / failover ----------------------------------------------------------------------


def _add_status(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "status",
        help="the active environment, as each region's store holds it",
        description=(
            "Read each region's active-environment store (an SSM parameter by default) one "
            "by one and report it. Exit 1 when a region could not be read."
        ),
    )
    _add_where(parser, many_regions=True, table=True, parameter=True, environment_name=True)


def _read_active(context: Context, where: _Where) -> dict[str, Any]:
    store = _environment_store(context, where)
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
    regions = _many_regions(args, context)
    if args.environment_name and len(regions) > 1:
        return context.fail("status", "--environment-name names one region's: give one region")
    outcomes = _each_region(
        regions,
        lambda r: _read_active(context, _where(args, context, r, one_of=len(regions))),
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
    for line in _columns(rows):
        context.print(line)
    if len(values) > 1:
        context.print(
            "The regions disagree on the active environment: finish the failover "
            "(mini-scheduler failover --to NAME --regions ...)."
        )
    if failed:
        context.print(f"{len(failed)} of {_plural(len(outcomes), 'region')} could not be read.")
    return EXIT_FAILED if failed else EXIT_OK


def _environment_name(text: str) -> str:
    name = text.strip()
    if not valid_environment_name(name):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an environment name (one word of letters, digits, '-' and '_')"
        )
    return name


def _add_failover(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    _add_operator(parser)
    _add_where(parser, many_regions=True, table=True, parameter=True)


def failover(args: argparse.Namespace, context: Context) -> int:
    if getattr(args, "regions", None) is None:
        return context.fail(
            "failover", "name every region with --regions R1,R2: a failover must reach them all"
        )
    regions: list[str] = args.regions
    operator = _operator(args, context, regions[0])
    target: str = args.to

    def act(region: str) -> dict[str, Any]:
        where = _where(args, context, region)
        store = _environment_store(context, where)
        try:
            before: str | None = store.get()
        except SchedulerError:
            before = None
        store.set(target, operator=operator, now=context.clock.now())
        return {"store": store.name, "before": before, "active": target}

    outcomes = _each_region(regions, act)
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
    for line in _columns(rows):
        context.print(line)
    if failed:
        context.print(
            f"Active environment {target} in {len(outcomes) - len(failed)} of "
            f"{_plural(len(outcomes), 'region')}; the regions disagree until the rest are "
            "written: mini-scheduler failover --to "
            f"{target} --regions {','.join(o.region for o in failed)}"
        )
        return EXIT_FAILED
    context.print(
        f"Active environment {target} in {_plural(len(outcomes), 'region')}, set by {operator}."
    )
    return EXIT_OK


# -- tick -----------------------------------------------------------------------------------


def _minute(text: str) -> datetime:
    return floor_minute(_instant(text))


def _add_tick(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "tick",
        help="one tick at a given minute: a dry run, or --execute",
        description=(
            "Show what the ticker would do for one minute: the firings it would claim and "
            "dispatch, those it would skip (standby, paused, misfire and overlap policies, "
            "firings already recorded) and the open runs its sweep would close. Nothing is "
            "written. With --execute, run that tick for real (the minute must have begun)."
        ),
    )
    parser.add_argument(
        "--at",
        type=_minute,
        metavar="ISO",
        help="the minute (default the current one; without an offset it is UTC)",
    )
    parser.add_argument("--execute", action="store_true", help="run the tick for real")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="with a dry run, show what the ticker logged"
    )
    _add_where(parser, cron_file=True, parameter=True, environment_name=True)


def tick(args: argparse.Namespace, context: Context) -> int:
    now = context.clock.now().astimezone(UTC)
    minute: datetime = args.at or floor_minute(now)
    region = _one_region(args, context)
    where = _where(args, context, region)
    settings = _settings(context, where)
    if where.environment_name is None:
        context.warn(
            f"{_level('warning')} the environment name of {region} is not known: taken as "
            f"{settings.environment_name} (give --environment-name or set ENVIRONMENT_NAME)"
        )
    source = _cron_source(context, where)
    try:
        if args.execute:
            return _execute_tick(args, context, settings, source, minute, now)
        from mini_scheduler.planner import plan_tick

        store = _environment_store(context, where)
        plan = plan_tick(
            minute,
            settings=settings,
            cron=_reporting(context, source),
            claims=_claims(context, where),
            environment=store,
            now=now,
        )
    except CronFileError as exc:
        _missing_cron_hint(exc, where)
        raise
    if args.json:
        context.print(json.dumps(plan.to_json(), indent=2))
    else:
        _print_plan(context, plan, store.name, verbose=args.verbose)
    return EXIT_FAILED if plan.summary.error else EXIT_OK


def _missing_cron_hint(exc: CronFileError, where: _Where) -> None:
    if where.cron_file is None and "not found" in str(exc):
        raise CommandError(
            f"{exc}: give --cron-file (the file the ticker reads) or set CRON_FILE"
        ) from exc


def _reporting(context: Context, source: CronFileSource) -> Callable[[], CronFile]:
    """``source.load`` that prints the file's problems on stderr, once."""
    shown: set[str] = set()

    def load() -> CronFile:
        cron_file = source.load()
        if cron_file.version not in shown:
            shown.add(cron_file.version)
            for problem in cron_file.problems:
                context.warn(f"{_level(problem.level)} {problem.message}")
        return cron_file

    return load


_ACTION_TEXT: Final = {
    "dispatch": "dispatch",
    "skip": "record SKIPPED",
    "skip-range": "record SKIPPED",
    "already-recorded": "leave",
    "standby": "leave (standby)",
    "paused": "leave (paused)",
    "time-out": "mark TIMED_OUT",
    "take-over": "take over, dispatch",
    "fail": "mark FAILED",
}


ROWS_PER_JOB: Final = 5
"""A dry run's table shows a job's first five actions, then one line for the rest when there are
two or more (a long gap holds thousands of a frequent job's firings); --json lists each."""


def _action_row(action: Action) -> list[str]:
    detail: list[str] = []
    if action.kind == "dispatch":
        detail.append(f"to {action.service} at {_utc(action.at)[11:]}")
    if action.kind == "skip-range":
        detail.append(f"{action.count} firings to {_utc(action.until)}")
    if action.misfire:
        detail.append("missed")
    if action.reason:
        detail.append(action.reason)
    return [
        _utc(action.scheduled),
        action.job,
        _ACTION_TEXT.get(action.kind, action.kind),
        "; ".join(detail),
    ]


def _summary_row(rest: Sequence[Action]) -> list[str]:
    """One line for a job's actions past the first five: how many, the first and last, and how
    many of each kind."""
    kinds: dict[str, int] = {}
    for action in rest:
        text = _ACTION_TEXT.get(action.kind, action.kind)
        kinds[text] = kinds.get(text, 0) + 1
    counted = ", ".join(f"{text} {count:,}" for text, count in kinds.items())
    return [
        _utc(rest[0].scheduled),
        rest[0].job,
        f"{len(rest):,} more",
        f"to {_utc(rest[-1].scheduled)}: {counted} (--json lists each)",
    ]


def _plan_rows(actions: Sequence[Action]) -> list[list[str]]:
    """The table's rows, in the plan's order: each job's first actions, and past
    :data:`ROWS_PER_JOB` one summary line in place of the rest."""
    by_job: dict[str, list[Action]] = {}
    for action in actions:
        by_job.setdefault(action.job, []).append(action)
    rows: list[list[str]] = []
    seen: dict[str, int] = {}
    for action in actions:
        mine = by_job[action.job]
        index = seen[action.job] = seen.get(action.job, -1) + 1
        if len(mine) <= ROWS_PER_JOB + 1 or index < ROWS_PER_JOB:
            rows.append(_action_row(action))
        elif index == ROWS_PER_JOB:
            rows.append(_summary_row(mine[ROWS_PER_JOB:]))
    return rows


def _print_plan(context: Context, plan: TickPlan, store: str, *, verbose: bool) -> None:
    summary = plan.summary
    start, end = plan.window
    context.print(
        f"Dry run of the tick of {iso_seconds(plan.minute)} in {plan.region}: nothing written."
    )
    if summary.active_environment is None:
        context.print(
            f"  environment  {summary.environment}; the active environment cannot be read "
            f"from {store} ({summary.error}): the tick fails closed"
        )
    else:
        context.print(
            f"  environment  {summary.environment}; active environment "
            f"{summary.active_environment} ({store}): this region is {summary.mode}"
        )
    context.print(f"  window       {_utc(start)} to {_utc(end)}")
    watermark = _utc(plan.watermark) if plan.watermark else "none yet (a region's first tick)"
    moved = f"; it would move to {_utc(plan.watermark_after)}" if plan.watermark_after else ""
    context.print(f"  watermark    {watermark}{moved}")
    if summary.note:
        context.print(f"  note         {summary.note}")
    context.print()
    if plan.actions:
        rows = [["SCHEDULED", "JOB", "ACTION", "DETAIL"], *_plan_rows(plan.actions)]
        for line in _columns(rows):
            context.print(line)
    else:
        context.print("No firing in this minute.")
    for p in plan.paused:
        context.print(
            f"Paused: {p.job} (by {p.operator}): {_plural(p.firings, 'firing')} left alone."
        )
    if plan.disabled:
        context.print(f"Disabled in the cron file: {', '.join(plan.disabled)}.")
    counts = summary.counts
    skipped = sum(int(v) for v in counts.get("skipped", {}).values())
    context.print(
        f"Would claim {counts.get('claimed', 0)}, dispatch {counts.get('dispatched', 0)}, "
        f"skip {skipped}; {counts.get('misfired', 0)} missed before the window."
    )
    if verbose and plan.log:
        context.print()
        context.print("What the ticker would log:")
        for line in plan.log:
            context.print(f"  {line}")
    context.print("Run it for real with --execute.")


def _execute_tick(
    args: argparse.Namespace,
    context: Context,
    settings: Settings,
    source: CronFileSource,
    minute: datetime,
    now: datetime,
) -> int:
    if minute > floor_minute(now):
        return context.fail(
            "tick",
            f"{iso_seconds(minute)} has not begun: --execute runs a minute that has "
            "(drop --execute for a dry run)",
        )
    from mini_scheduler.wiring import build_ticker

    ticker = build_ticker(
        settings, clients=context.clients(settings.region), clock=context.clock, cron=source.load
    )
    from mini_scheduler.planner import package_logs

    console = logging.StreamHandler(context.err)
    console.setFormatter(logging.Formatter("%(levelname)-7s %(message)s"))
    with package_logs(console):
        summary = ticker.tick(minute)
    answer = summary.to_json()
    if args.json:
        context.print(json.dumps(answer, indent=2))
    else:
        counts = answer["counts"]
        skipped = ", ".join(f"{k} {v}" for k, v in counts["skipped"].items()) or "none"
        context.print(
            f"Tick of {answer['minute']} in {settings.region}: {answer['mode']} "
            f"(environment {answer['environment']}, active {answer['activeEnvironment']})"
        )
        context.print(
            f"  claimed {counts['claimed']}, dispatched {counts['dispatched']}, skipped "
            f"{skipped}, missed {counts['misfired']}, errors {counts['errors']}"
        )
        if summary.note:
            context.print(f"  note: {summary.note}")
    return EXIT_FAILED if summary.error or answer["counts"]["errors"] else EXIT_OK


# -- local ----------------------------------------------------------------------------------


def _add_local(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    from mini_scheduler.local import run

    return run(["--cron-file", args.cron_file] if args.cron_file else [])


# -- the parser -------------------------------------------------------------------------------

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

COMMANDS: Final[dict[str, tuple[Register, Handler]]] = {
    "validate": (_add_validate, validate),
    "next": (_add_next, next_firings),
    "jobs": (_add_jobs, jobs),
    "history": (_add_history, history),
    "run": (_add_run, run_job),
    "pause": (_add_pause, pause),
    "resume": (_add_resume, resume),
    "status": (_add_status, status),
    "failover": (_add_failover, failover),
    "tick": (_add_tick, tick),
    "local": (_add_local, local),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Quartz cron jobs on AWS: check cron files, see when jobs fire, run the scheduler "
            "locally, and operate a deployed scheduler."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
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
) -> int:
    """Run one command; return its exit code (argparse's own exits become return values).

    ``clients`` (region -> AWS clients) and ``invoke`` (the ticker's synchronous invoke) are
    injected by tests; by default they are made on first use, with boto3.
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
    )
    _, handler = COMMANDS[args.command]
    try:
        return handler(args, context)
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

        if isinstance(exc, (BotoCoreError, ClientError)):
            return context.fail(args.command, describe_aws_error(exc), EXIT_FAILED)
        if context.environ.get("MINI_SCHEDULER_TRACEBACK"):
            raise
        return context.fail(
            args.command,
            f"unexpected {type(exc).__name__}: {exc} (set MINI_SCHEDULER_TRACEBACK=1 to see where)",
            EXIT_FAILED,
        )
