"""The developer's commands on a cron file: ``validate`` (the load report; with ``--deploy``,
also whether a deployed ticker may invoke each job's target); ``next`` is :mod:`.upcoming`'s."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Final

from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError, Context
from mini_scheduler.cli.render import level_tag, plural
from mini_scheduler.config import REGION_NAME
from mini_scheduler.errors import CronFileError
from mini_scheduler.jobs import DEFAULT_TIMEZONE, CronFile, Problem, Target
from mini_scheduler.jobs.locations import CronFileSource
from mini_scheduler.jobs.targets import KIND_PARAMETERS, TargetRules

DEFAULT_TARGET_PREFIX: Final = "mini-scheduler-"
"""The template's TargetFunctionPrefix and TargetStateMachinePrefix by default."""
_TARGET_PREFIX: Final = re.compile(r"[A-Za-z0-9_-]{1,66}")
_ACCOUNT: Final = re.compile(r"[0-9]{12}")


def read_cron_file(location: str, context: Context) -> CronFile:
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
        cron_file = read_cron_file(args.file, context)
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
