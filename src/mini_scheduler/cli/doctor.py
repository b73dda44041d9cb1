"""``doctor``: a deployment's preflight check, region by region, each finding with what to do.

In every region: the stack (deployed, complete), its state table, the active-environment value
and whether some region's stack has that name, the tick schedule enabled, and for each job of
the stack's cron file: its target exists, the ticker's role may invoke it (the stack's target
prefixes, its region and account), and the recorder hears its end (a Lambda target's
destinations, a flow's EventBridge rule). Read-only. Exit 1 when a finding stops jobs (an
``error``); warnings alone exit 0.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError, Context
from mini_scheduler.cli.files import Grant, target_problem
from mini_scheduler.cli.render import columns, level_tag
from mini_scheduler.cli.where import (
    PackageUnreadable,
    Where,
    add_where,
    cron_source,
    environment_for,
    many_regions,
    resolve,
)
from mini_scheduler.errors import SchedulerError, describe_aws_error
from mini_scheduler.jobs import Job

Level = Literal["ok", "warning", "error"]
_DEFAULT_ACTIVE: Final = "prod"  # what the ticker reads while the store holds no value
_READY: Final = (
    "CREATE_COMPLETE",
    "UPDATE_COMPLETE",
    "UPDATE_ROLLBACK_COMPLETE",
    "IMPORT_COMPLETE",
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing checked in one region: ``ok``, or a ``warning`` or an ``error`` (jobs stop)
    with what to do."""

    region: str
    level: Level
    check: str
    message: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        found = {"region": self.region, "level": self.level, "check": self.check}
        found["message"] = self.message
        if self.fix:
            found["fix"] = self.fix
        return found


@dataclass(slots=True)
class _Region:
    """What doctor learned of one region's stack, for the checks across regions."""

    region: str
    where: Where | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    active: str | None = None  # the active environment the store holds (or its default)


def add_doctor(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "doctor",
        help="check a deployment in every region, each finding with what to do",
        description=(
            "Check, in every region: the stack, its state table, the active environment (and "
            "that a stack has that name), the tick schedule, and each job of the stack's cron "
            "file: its target exists, the ticker may invoke it, the recorder hears its end. "
            "Read-only. Exit 1 when a finding stops jobs."
        ),
    )
    add_where(parser, many_regions=True, table=False)


def doctor(args: argparse.Namespace, context: Context) -> int:
    if not args.stack:
        raise CommandError("doctor checks a stack: give --stack NAME", EXIT_USAGE)
    regions = many_regions(args, context)
    seen = [_Region(region) for region in regions]
    findings: list[Finding] = []
    for region in seen:
        findings.extend(_region_findings(args, context, region))
    findings.extend(_across_regions(args.stack, seen))
    order = {r: i for i, r in enumerate(regions)}
    findings.sort(key=lambda f: order.get(f.region, len(order)))
    errors = sum(1 for f in findings if f.level == "error")
    warnings = sum(1 for f in findings if f.level == "warning")
    if args.json:
        report = {
            "stack": args.stack,
            "regions": regions,
            "ok": errors == 0,
            "findings": [f.to_json() for f in findings],
        }
        context.print(json.dumps(report, indent=2))
        return EXIT_FAILED if errors else EXIT_OK
    rows = [["REGION", "", "CHECK", "FINDING"]]
    rows += [[f.region, level_tag(f.level).strip(), f.check, f.message] for f in findings]
    for line in columns(rows):
        context.print(line)
    fixes = _what_to_do(findings)
    if fixes:
        context.print()
        context.print("What to do:")
        for line in fixes:
            context.print(f"  {line}")
    verdict = (
        ("1 finding stops" if errors == 1 else f"{errors} findings stop") + " the jobs"
        if errors
        else "Nothing stops the jobs"
    )
    if warnings:
        verdict += f"; {warnings} warning{'s' if warnings != 1 else ''}"
    context.print(f"{verdict} (stack {args.stack} in {', '.join(regions)}).")
    return EXIT_FAILED if errors else EXIT_OK


def _what_to_do(findings: list[Finding]) -> list[str]:
    """Each fix once: the regions where the same check has the same fix share one line."""
    regions: dict[tuple[str, str], list[str]] = {}
    for f in findings:
        if f.fix and f.region not in regions.setdefault((f.check, f.fix), []):
            regions[(f.check, f.fix)].append(f.region)
    return [f"{', '.join(where)} {check}: {fix}" for (check, fix), where in regions.items()]


def _region_findings(args: argparse.Namespace, context: Context, seen: _Region) -> list[Finding]:
    """The checks of one region; the first that cannot go on (no stack) ends them."""
    region = seen.region
    found: list[Finding] = []
    try:
        stack = _describe_stack(context, args.stack, region)
    except _Stop as stop:
        return [stop.finding]
    seen.parameters, seen.outputs = stack["parameters"], stack["outputs"]
    found.append(stack["finding"])
    try:
        where = seen.where = resolve(args, context, region)
    except (CommandError, SchedulerError) as exc:
        return [*found, Finding(region, "error", "stack", str(exc))]
    for check in (_table, _environment, _schedule):
        try:
            found.append(check(context, seen, where))
        except _Stop as stop:
            found.append(stop.finding)
    found.extend(_jobs(context, seen, where))
    return found


class _Stop(Exception):
    """A finding that ends its check (no stack, a call refused)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def _aws(region: str, check: str, call: str, fix: str = "") -> Callable[[Exception], _Stop]:
    def stop(exc: Exception) -> _Stop:
        return _Stop(
            Finding(region, "error", check, f"{call} failed - {describe_aws_error(exc)}", fix)
        )

    return stop


def _describe_stack(context: Context, name: str, region: str) -> dict[str, Any]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = context.clients(region)("cloudformation").describe_stacks(StackName=name)
    except ClientError as exc:
        if "does not exist" in str(exc.response.get("Error", {}).get("Message", "")):
            raise _Stop(
                Finding(
                    region,
                    "error",
                    "stack",
                    f"stack {name} not found",
                    "deploy it (make deploy), or name the stack and regions it has "
                    "(--stack, --regions)",
                )
            ) from exc
        raise _aws(region, "stack", f"CloudFormation DescribeStacks {name}")(exc) from exc
    except BotoCoreError as exc:
        raise _aws(region, "stack", f"CloudFormation DescribeStacks {name}")(exc) from exc
    described = answer["Stacks"][0]
    status = str(described.get("StackStatus", ""))
    outputs = {str(o["OutputKey"]): str(o["OutputValue"]) for o in described.get("Outputs") or []}
    parameters = {
        str(p["ParameterKey"]): str(p.get("ParameterValue", ""))
        for p in described.get("Parameters") or []
    }
    environment = outputs.get("EnvironmentName") or parameters.get("EnvironmentName", "?")
    finding = Finding(region, "ok", "stack", f"{name} {status}, environment {environment}")
    if status not in _READY:
        level: Level = "warning" if status.endswith("_IN_PROGRESS") else "error"
        finding = Finding(
            region,
            level,
            "stack",
            f"{name} is {status}, environment {environment}",
            "wait for it to finish"
            if level == "warning"
            else "see the stack's events "
            "(aws cloudformation describe-stack-events) and deploy again",
        )
    return {"finding": finding, "outputs": outputs, "parameters": parameters}


def _table(context: Context, seen: _Region, where: Where) -> Finding:
    from botocore.exceptions import BotoCoreError, ClientError

    region, table = seen.region, where.table
    if not table:
        return Finding(
            region, "error", "table", "the stack has no output StateTableName", "deploy it again"
        )
    try:
        answer = context.clients(region)("dynamodb").describe_table(TableName=table)
    except (BotoCoreError, ClientError) as exc:
        raise _aws(region, "table", f"DynamoDB DescribeTable {table}", "check the table exists")(
            exc
        ) from exc
    status = str(answer["Table"].get("TableStatus", ""))
    if status != "ACTIVE":
        return Finding(region, "error", "table", f"{table} is {status}", "wait until ACTIVE")
    return Finding(region, "ok", "table", f"{table} ACTIVE")


def _environment(context: Context, seen: _Region, where: Where) -> Finding:
    store = environment_for(context, where)
    try:
        stored = store.get()
    except SchedulerError as exc:
        raise _Stop(
            Finding(
                seen.region,
                "error",
                "environment",
                f"{store.name} cannot be read: {exc}",
                "the ticker cannot tell whether it is active: check the store and its grants",
            )
        ) from exc
    seen.active = _DEFAULT_ACTIVE if stored is None else stored.strip()
    shown = seen.active + (" (no value: the default)" if stored is None else "")
    return Finding(seen.region, "ok", "environment", f"active {shown} in {store.name}")


def _schedule(context: Context, seen: _Region, where: Where) -> Finding:
    from botocore.exceptions import BotoCoreError, ClientError

    region, name = seen.region, f"{where.stack}-tick"
    try:
        answer = context.clients(region)("scheduler").get_schedule(Name=name)
    except (BotoCoreError, ClientError) as exc:
        raise _aws(
            region,
            "schedule",
            f"EventBridge Scheduler GetSchedule {name}",
            "no tick, no job: deploy the stack again",
        )(exc) from exc
    state = str(answer.get("State", ""))
    if state != "ENABLED":
        return Finding(
            region,
            "error",
            "schedule",
            f"{name} is {state}: no tick, no job runs here",
            f"aws scheduler update-schedule --name {name} --state ENABLED ... (or deploy again)",
        )
    return Finding(region, "ok", "schedule", f"{name} {state}")


def _name(region: _Region) -> str:
    """The stack's EnvironmentName ("" when its stack was not read)."""
    return region.outputs.get("EnvironmentName", region.parameters.get("EnvironmentName", ""))


def _across_regions(stack: str, regions: Sequence[_Region]) -> Iterator[Finding]:
    """The active environment against the stacks' names: a value no stack has, regions that
    disagree, more than one region active."""
    names = [_name(r) for r in regions if _name(r)]
    folded = {name.casefold() for name in names}
    read = [(r, r.active) for r in regions if r.active is not None]
    every = ",".join(r.region for r in regions)
    for r, active in read:
        if active.casefold() not in folded:
            yield Finding(
                r.region,
                "error",
                "environment",
                f"the active environment {active} names no stack here ({', '.join(names)}): "
                "no region runs the jobs",
                f"mini-scheduler failover --to <one of {', '.join(names)}> --stack {stack} "
                f"--regions {every}",
            )
    if len({active.casefold() for _, active in read}) > 1:
        shown = ", ".join(f"{r.region} {active}" for r, active in read)
        yield Finding(
            read[0][0].region,
            "error",
            "environment",
            f"the regions disagree on the active environment ({shown})",
            f"write one value in every region: mini-scheduler failover --to <name> --stack "
            f"{stack} --regions {every}",
        )
    active_regions = [r for r, active in read if active.casefold() == _name(r).casefold()]
    if len(active_regions) > 1:
        yield Finding(
            active_regions[0].region,
            "error",
            "environment",
            f"{len(active_regions)} regions are active "
            f"({', '.join(r.region for r in active_regions)}): a firing may run in each",
            "give each stack its own EnvironmentName (make deploy does), then fail over",
        )


def _jobs(context: Context, seen: _Region, where: Where) -> list[Finding]:
    region = seen.region
    try:
        cron_file = cron_source(context, where).load()
    except PackageUnreadable as exc:
        return [Finding(region, "error", "cron file", f"not checked: {exc}", exc.fix)]
    except (CommandError, SchedulerError) as exc:
        return [
            Finding(
                region,
                "error",
                "cron file",
                str(exc),
                "ship a cron file: make deploy CRON_YAML=...",
            )
        ]
    found = [
        Finding(
            region,
            "ok" if cron_file.ok else "error",
            "cron file",
            f"{cron_file.source}: {len(cron_file.jobs)} jobs, {cron_file.skipped} skipped",
            "" if cron_file.ok else "mini-scheduler validate on it says why; fix and deploy",
        )
    ]
    account = _account(context, where)
    grant = Grant(
        seen.parameters.get("TargetFunctionPrefix", "mini-scheduler-"),
        seen.parameters.get("TargetStateMachinePrefix", "mini-scheduler-"),
        (region,),
        account,
    )
    recorder = seen.outputs.get("RecorderFunctionArn", "")
    flows = any(job.target.kind == "flow" for job in cron_file.jobs)
    rule = _flow_rule(context, region, recorder) if flows else None
    found.extend(_job(context, region, job, grant, recorder, rule) for job in cron_file.jobs)
    return found


def _flow_rule(context: Context, region: str, recorder: str) -> str | None:
    """Why the recorder hears no flow's end in ``region`` (no enabled EventBridge rule of
    Step Functions status events targets it), or None."""
    from botocore.exceptions import BotoCoreError, ClientError

    if not recorder:
        return "the stack has no output RecorderFunctionArn"
    events = context.clients(region)("events")
    try:
        names = events.list_rule_names_by_target(TargetArn=recorder).get("RuleNames", [])
        for name in names:
            rule = events.describe_rule(Name=name)
            if rule.get("State") == "ENABLED" and "aws.states" in rule.get("EventPattern", ""):
                return None
    except (BotoCoreError, ClientError) as exc:
        return f"EventBridge ListRuleNamesByTarget failed - {describe_aws_error(exc)}"
    return "no enabled EventBridge rule sends Step Functions status events to the recorder"


def _account(context: Context, where: Where) -> str | None:
    """The stack's account, from its ticker's ARN (None when it cannot be read)."""
    from botocore.exceptions import BotoCoreError, ClientError

    if not where.function:
        return None
    try:
        answer = context.clients(where.region)("lambda").get_function_configuration(
            FunctionName=where.function
        )
    except (BotoCoreError, ClientError):
        return None
    parts = str(answer.get("FunctionArn", "")).split(":")
    return parts[4] if len(parts) > 4 else None


def _job(
    context: Context, region: str, job: Job, grant: Grant, recorder: str, rule: str | None
) -> Finding:
    check = f"job {job.name}"
    refused = target_problem(job.target, grant)
    if refused is not None:
        return Finding(region, "error", check, f"{job.service}: the ticker cannot run it", refused)
    try:
        if job.target.kind == "flow":
            return _flow(context, region, job, check, grant.account, rule)
        return _function(context, region, job, check, recorder)
    except _Stop as stop:
        return stop.finding


def _function(context: Context, region: str, job: Job, check: str, recorder: str) -> Finding:
    from botocore.exceptions import BotoCoreError, ClientError

    client = context.clients(region)("lambda")
    try:
        client.get_function_configuration(FunctionName=job.target.name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise _Stop(
                Finding(
                    region,
                    "error",
                    check,
                    f"{job.service} does not exist in {region}",
                    f"deploy the function in {region} (every region runs the same cron file)",
                )
            ) from exc
        raise _aws(region, check, f"Lambda GetFunctionConfiguration {job.service}")(exc) from exc
    except BotoCoreError as exc:
        raise _aws(region, check, f"Lambda GetFunctionConfiguration {job.service}")(exc) from exc
    fix = (
        "send its end to the recorder: Lambda destinations OnSuccess and OnFailure "
        f"{recorder or 'the stack output RecorderFunctionArn'} (docs/deploy.md, Wire your "
        "own targets); until then each run ends TIMED_OUT"
    )
    try:
        config = client.get_function_event_invoke_config(FunctionName=job.target.name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return Finding(region, "warning", check, f"{job.service}: no destinations", fix)
        raise _aws(region, check, f"Lambda GetFunctionEventInvokeConfig {job.service}")(
            exc
        ) from exc
    except BotoCoreError as exc:
        raise _aws(region, check, f"Lambda GetFunctionEventInvokeConfig {job.service}")(
            exc
        ) from exc
    destinations = config.get("DestinationConfig", {})
    missing = [
        end
        for end in ("OnSuccess", "OnFailure")
        if not recorder or destinations.get(end, {}).get("Destination") != recorder
    ]
    if missing:
        return Finding(
            region,
            "warning",
            check,
            f"{job.service}: its {' and '.join(missing)} destination is not the recorder",
            fix,
        )
    return Finding(region, "ok", check, f"{job.service} exists, its ends go to the recorder")


def _flow(
    context: Context, region: str, job: Job, check: str, account: str | None, rule: str | None
) -> Finding:
    from botocore.exceptions import BotoCoreError, ClientError

    arn = job.target.name
    if not arn.startswith("arn:"):
        if account is None:
            return Finding(
                region, "warning", check, f"{job.service}: not checked (the account is unknown)"
            )
        arn = f"arn:aws:states:{region}:{account}:stateMachine:{arn}"
    client = context.clients(region)("stepfunctions")
    try:
        answer = client.describe_state_machine(stateMachineArn=arn)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        if code in ("StateMachineDoesNotExist", "ResourceNotFoundException"):
            raise _Stop(
                Finding(
                    region,
                    "error",
                    check,
                    f"{job.service} does not exist in {region}",
                    f"deploy the state machine in {region} (every region runs the same cron file)",
                )
            ) from exc
        raise _aws(region, check, f"Step Functions DescribeStateMachine {job.service}")(
            exc
        ) from exc
    except BotoCoreError as exc:
        raise _aws(region, check, f"Step Functions DescribeStateMachine {job.service}")(
            exc
        ) from exc
    if answer.get("type") == "EXPRESS":
        return Finding(
            region,
            "warning",
            check,
            f"{job.service} is an EXPRESS workflow: it sends no status event, so each run "
            "ends TIMED_OUT, and it does not refuse a second start of a firing",
            "make it a STANDARD workflow",
        )
    if rule is not None:
        return Finding(
            region,
            "warning",
            check,
            f"{job.service} exists, but the recorder does not hear its ends: {rule}",
            "deploy the stack again (its recorder's FlowEnded rule); until then each run ends "
            "TIMED_OUT",
        )
    return Finding(region, "ok", check, f"{job.service} exists; the recorder's rule hears its ends")
