"""The developer's commands on a cron file: ``validate`` (the load report; with ``--deploy``,
also whether a deployed ticker may invoke each job's target) and ``next`` (the next firings of
each job, or of one statement)."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError, Context
from mini_scheduler.cli.render import instant, level_tag, plural, utc_iso, utc_offset
from mini_scheduler.config import REGION_NAME
from mini_scheduler.cron import CronExpression, CronSyntaxError, parse
from mini_scheduler.cron.unix import unix_hint
from mini_scheduler.cron.zones import get_zone, is_fixed_offset, suggest_zone
from mini_scheduler.errors import CronFileError, UnknownTimeZoneError
from mini_scheduler.jobs import DEFAULT_TIMEZONE, CronFile, Problem, Target
from mini_scheduler.jobs.locations import CronFileSource
from mini_scheduler.jobs.targets import KIND_PARAMETERS, TargetRules

MAX_COUNT: Final = 1000
_UTC_NAMES: Final = frozenset({"UTC", "Etc/UTC"})
DEFAULT_TARGET_PREFIX: Final = "mini-scheduler-"
"""The template's TargetFunctionPrefix and TargetStateMachinePrefix by default."""
_TARGET_PREFIX: Final = re.compile(r"[A-Za-z0-9_-]{1,66}")
_ACCOUNT: Final = re.compile(r"[0-9]{12}")


def _read_cron_file(location: str, context: Context) -> CronFile:
    """The cron file at ``location`` (a path, ``file:<path>`` or ``s3://bucket/key``)."""
    zone = context.environ.get("DEFAULT_TIMEZONE", "").strip() or DEFAULT_TIMEZONE
    return CronFileSource(location, default_timezone=zone).load()


# -- what a deployed ticker may invoke ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Grant:
    """What a deployed ticker's role may invoke (template.yaml's TickerRole): the Lambda
    functions named ``function_prefix``*, the state machines named ``state_machine_prefix``*,
    of its own account and region. One cron file goes to every region in ``regions``; an
    ``account`` of None is not checked (a build has no account)."""

    function_prefix: str = DEFAULT_TARGET_PREFIX
    state_machine_prefix: str = DEFAULT_TARGET_PREFIX
    regions: tuple[str, ...] = ()
    account: str | None = None
    targets: TargetRules = field(default_factory=TargetRules)
    """The other kinds' prefixes (a kind missing: not checked)."""

    def describe(self) -> str:
        where = ", ".join(self.regions) or "its region"
        account = f", account {self.account}" if self.account else ""
        return (
            f"TargetFunctionPrefix {self.function_prefix}, TargetStateMachinePrefix "
            f"{self.state_machine_prefix}, in {where}{account}"
        )


def _target_parts(target: Target) -> tuple[str | None, str | None, str]:
    """A target's region and account (None: the ticker's own) and its bare name."""
    parts = target.name.split(":")
    if target.kind == "flow":
        if parts[0] == "arn":  # arn:<partition>:states:<region>:<account>:stateMachine:<name>
            return parts[3], parts[4], parts[6]
        return None, None, parts[0]
    if parts[0] == "arn":  # arn:<partition>:lambda:<region>:<account>:function:<name>[:q]
        return parts[3], parts[4], parts[6]
    if len(parts) >= 3 and parts[1] == "function":  # <account>:function:<name>[:q]
        return None, parts[0], parts[2]
    return None, None, parts[0]  # <name>[:qualifier]


def target_problem(target: Target, grant: Grant) -> str | None:
    """Why a ticker deployed with ``grant`` cannot invoke ``target`` (what to do included), or
    None when every region of the grant may."""
    if target.kind in KIND_PARAMETERS:
        return grant.targets.problem(target)
    region, account, name = _target_parts(target)
    if target.kind == "flow":
        prefix, parameter, what = grant.state_machine_prefix, "TargetStateMachinePrefix", "start"
        things = "state machines"
    else:
        prefix, parameter, what = grant.function_prefix, "TargetFunctionPrefix", "invoke"
        things = "functions"
    reasons: list[str] = []
    if not name.startswith(prefix):
        reasons.append(
            f"the ticker may {what} only {things} named {prefix}* ({parameter}): rename it, or "
            f"deploy with {parameter} set to a prefix of {name}"
        )
    others = [r for r in grant.regions if r != region] if region is not None else []
    if others:
        reasons.append(
            f"its ARN is in {region}, and the ticker in {', '.join(others)} may {what} only "
            f"its own region's {things}: name it without the ARN, and deploy it in every region"
        )
    if account is not None and grant.account is not None and account != grant.account:
        reasons.append(
            f"it is in account {account}, and the ticker may {what} only account "
            f"{grant.account}'s {things}"
        )
    return "; ".join(reasons) or None


def deploy_problems(cron_file: CronFile, grant: Grant) -> list[Problem]:
    """An error for each job whose target a ticker deployed with ``grant`` cannot invoke."""
    found: list[Problem] = []
    for job in cron_file.jobs:
        reason = target_problem(job.target, grant)
        if reason is not None:
            message = f"Job {job.name}: the deployed ticker cannot run {job.service} - {reason}"
            found.append(Problem("error", message, job.entry))
    return found


def _prefix(text: str) -> str:
    if not _TARGET_PREFIX.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"not a target prefix: {text!r} (1 to 66 letters, digits, '-' or '_')"
        )
    return text


def _account(text: str) -> str:
    if not _ACCOUNT.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"not an AWS account id: {text!r} (12 digits)")
    return text.strip()


def _regions(text: str) -> tuple[str, ...]:
    regions = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    for region in regions:
        if not REGION_NAME.fullmatch(region):
            raise argparse.ArgumentTypeError(f"not an AWS region: {region!r} (e.g. us-east-1)")
    if not regions:
        raise argparse.ArgumentTypeError("name at least one region, e.g. us-east-1,us-west-2")
    return regions


# -- validate ---------------------------------------------------------------------------------


def add_validate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "validate",
        help="check a cron file and report every problem",
        description=(
            "Read a cron file as the ticker does and print its load report: each problem at "
            "its level and each job that loaded. Exit 0 when every entry loaded (warnings "
            "allowed, unless --strict), 1 otherwise."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a path, file:<path> or s3://bucket/key")
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="print the problems only, no summary"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="every warning is an error (an unknown key, a job that never fires): exit 1 "
        "(make build checks the file it packages with --strict)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    deploy = parser.add_argument_group(
        "the deployment (make build runs validate --deploy on the file it packages)"
    )
    deploy.add_argument(
        "--deploy",
        action="store_true",
        help="also fail on a target the deployed ticker's role may not invoke: outside the "
        "target prefixes, or an ARN of another region or account",
    )
    deploy.add_argument(
        "--function-prefix",
        type=_prefix,
        default=DEFAULT_TARGET_PREFIX,
        metavar="PREFIX",
        help=f"the stack's TargetFunctionPrefix (default {DEFAULT_TARGET_PREFIX})",
    )
    deploy.add_argument(
        "--state-machine-prefix",
        type=_prefix,
        default=DEFAULT_TARGET_PREFIX,
        metavar="PREFIX",
        help=f"the stack's TargetStateMachinePrefix (default {DEFAULT_TARGET_PREFIX})",
    )
    _add_kind_prefixes(deploy)
    deploy.add_argument(
        "--regions",
        "--region",
        dest="regions",
        type=_regions,
        metavar="R1,R2",
        help="every region the file is deployed to (default AWS_REGION)",
    )
    deploy.add_argument(
        "--account", type=_account, help="the stacks' account (default: not checked)"
    )


def _grant(args: argparse.Namespace, context: Context) -> Grant | None:
    """The grant ``--deploy`` checks against; None without ``--deploy``."""
    if not args.deploy:
        return None
    regions: tuple[str, ...] = args.regions or ()
    if not regions:
        region = context.environ.get("AWS_REGION", "").strip()
        if not region:
            raise CommandError(
                "--deploy: give --regions (every region the file goes to)", EXIT_USAGE
            )
        regions = _regions(region)
    targets = TargetRules({**dict.fromkeys(KIND_PARAMETERS, ""), **dict(args.target_prefixes)})
    return Grant(args.function_prefix, args.state_machine_prefix, regions, args.account, targets)


def _add_kind_prefixes(deploy: argparse._ArgumentGroup) -> None:
    deploy.add_argument(
        "--target-prefix",
        dest="target_prefixes",
        action="append",
        type=_kind_prefix,
        default=[],
        metavar="KIND=PREFIX",
        help="the prefix parameter of another kind of target (sqs, sns, events, ecs, https: "
        "TargetQueuePrefix, ...), once each; a kind not given is off, as the template's "
        "default is",
    )


def _kind_prefix(text: str) -> tuple[str, str]:
    kind, equals, prefix = text.partition("=")
    if not equals or kind not in KIND_PARAMETERS:
        raise argparse.ArgumentTypeError(
            f"not KIND=PREFIX: {text[:100]!r} (KIND is one of {', '.join(KIND_PARAMETERS)})"
        )
    return kind, prefix.strip()


def validate(args: argparse.Namespace, context: Context) -> int:
    try:
        grant = _grant(args, context)
    except argparse.ArgumentTypeError as exc:
        return context.fail("validate", f"AWS_REGION: {exc}")
    try:
        cron_file = _read_cron_file(args.file, context)
    except CronFileError as exc:
        if args.json:
            context.print(json.dumps({"source": args.file, "ok": False, "error": str(exc)}))
        else:
            context.print(f"{level_tag('error')} {exc}")
        return EXIT_FAILED
    deploy = deploy_problems(cron_file, grant) if grant is not None else []
    problems = (*cron_file.problems, *deploy)
    warnings = sum(1 for p in problems if p.level == "warning")
    if args.strict:
        problems = tuple(_as_error(p) for p in problems)
    checked = replace(cron_file, problems=problems)
    if args.json:
        report: dict[str, Any] = {
            "source": checked.source,
            "ok": checked.ok,
            "version": checked.version,
            "jobs": [job.name for job in checked.jobs],
            "skipped": checked.skipped,
            "problems": [
                {"level": p.level, "message": p.message, "entry": p.entry} for p in checked.problems
            ],
        }
        if grant is not None:
            report["deploy"] = {
                "functionPrefix": grant.function_prefix,
                "stateMachinePrefix": grant.state_machine_prefix,
                "regions": list(grant.regions),
                "account": grant.account,
                "targetsRefused": len(deploy),
            }
        if args.strict:
            report["strict"] = {"warningsRefused": warnings}
        context.print(json.dumps(report, indent=2))
        return EXIT_OK if checked.ok else EXIT_FAILED
    lines = checked.problems if args.quiet else checked.lines()
    for line in lines:
        context.print(f"{level_tag(line.level)} {line.message}")
    if not args.quiet:  # quiet: the problems only
        context.print(_summary(checked, warnings, len(deploy), grant, strict=args.strict))
    return EXIT_OK if checked.ok else EXIT_FAILED


def _as_error(problem: Problem) -> Problem:
    """``--strict``: a warning is an error, its text marked so."""
    if problem.level != "warning":
        return problem
    return replace(problem, level="error", message=f"{problem.message} (a warning: --strict)")


def _summary(
    checked: CronFile, warnings: int, refused: int, grant: Grant | None, *, strict: bool
) -> str:
    summary = (
        f"{checked.source}: {plural(len(checked.jobs), 'job')} loaded, "
        f"{plural(checked.skipped, 'entry', 'entries')} skipped"
    )
    if warnings:
        summary += f" ({plural(warnings, 'warning')}{', errors under --strict' if strict else ''})"
    if grant is not None:
        cannot = plural(refused, "target") + " the deployed ticker cannot run"
        summary += f"; {cannot if refused else 'every target can be run'} ({grant.describe()})"
    return summary


# -- next -------------------------------------------------------------------------------------


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"give 1 to {MAX_COUNT}, not {value}")
    return value


def add_next(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        type=instant,
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
    start: datetime | None = None  # the job's start and end instants
    end: datetime | None = None


def _firings(schedule: _Schedule, after: datetime, count: int) -> list[datetime]:
    found: list[datetime] = []
    moment = after
    if schedule.start is not None and schedule.start > moment:
        moment = schedule.start - timedelta(seconds=1)
    while len(found) < count:
        following = schedule.expression.next_after(moment, schedule.zone)
        if following is not None and schedule.start is not None and following < schedule.start:
            following = schedule.expression.next_after(following, schedule.zone)
        if following is None or (schedule.end is not None and following >= schedule.end):
            break
        found.append(following)
        moment = following
    return found


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
                f"{level_tag('warning')} time zone {zone} never follows daylight saving - name a "
                "region such as America/New_York",
                file=context.err,
            )
        schedules.append(_Schedule(None, args.cron, expression, zone))
    elif args.file is not None:
        if args.zone is not None:
            return context.fail("next", "--zone goes with --cron: a file's jobs name their zone")
        try:
            cron_file = _read_cron_file(args.file, context)
        except CronFileError as exc:
            return context.fail("next", str(exc), EXIT_FAILED)
        for problem in cron_file.problems:
            print(f"{level_tag(problem.level)} {problem.message}", file=context.err)
        complete = cron_file.ok  # a skipped entry fails the command, as in validate
        schedules.extend(
            _Schedule(
                j.name, j.statement, j.expression, j.zone, j.service, j.enabled, j.start, j.end
            )
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
                    "utc": utc_iso(firing),
                    "local": local.isoformat(),
                    "abbreviation": local.tzname(),
                    "offset": utc_offset(local),
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
    return {"after": utc_iso(after), "schedules": schedules}


def _next_text(
    context: Context, after: datetime, table: Sequence[tuple[_Schedule, list[datetime]]]
) -> None:
    context.print(f"Next firings after {utc_iso(after)}")
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
            context.print(f"  {utc}   {wall} {local.tzname()} (UTC{utc_offset(local)})")
