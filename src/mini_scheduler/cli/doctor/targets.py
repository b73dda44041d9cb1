"""doctor's checks of the jobs of a region's cron file: the file loads, and for each job its
target exists, the ticker's role may invoke it (the stack's target prefixes, its region and
account), and the recorder hears its end (a Lambda target's destinations, a flow's EventBridge
rule): through the stack's completion queue, or sent to the recorder itself (a stack, or a
target, wired before the queue)."""

from __future__ import annotations

from dataclasses import dataclass

from mini_scheduler.cli.context import CommandError, Context
from mini_scheduler.cli.doctor.findings import Finding, Region, Stop, aws
from mini_scheduler.cli.files import Grant, target_problem
from mini_scheduler.cli.package import PackageUnreadable
from mini_scheduler.cli.where import Where, cron_source
from mini_scheduler.errors import SchedulerError, describe_aws_error
from mini_scheduler.jobs import Job
from mini_scheduler.jobs.targets import KIND_PARAMETERS, TargetRules


@dataclass(frozen=True)
class Ears:
    """Where the stack hears the runs' ends: its completion queue (``CompletionQueueArn``) and
    its recorder (``RecorderFunctionArn``), each empty when the stack has no such output."""

    queue: str
    recorder: str

    @property
    def arns(self) -> tuple[str, ...]:
        return tuple(arn for arn in (self.queue, self.recorder) if arn)

    def name(self, arn: str) -> str:
        return "the completion queue" if arn == self.queue else "the recorder"

    def fix(self) -> str:
        if self.queue:
            return f"Lambda destinations OnSuccess and OnFailure, Type SQS, {self.queue}"
        return (
            "Lambda destinations OnSuccess and OnFailure "
            f"{self.recorder or 'the stack output CompletionQueueArn'}"
        )


def check_jobs(context: Context, seen: Region, where: Where) -> list[Finding]:
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
        TargetRules({k: seen.parameters.get(p, "") for k, p in KIND_PARAMETERS.items()}),
    )
    ears = Ears(
        seen.outputs.get("CompletionQueueArn", ""), seen.outputs.get("RecorderFunctionArn", "")
    )
    flows = any(job.target.kind == "flow" for job in cron_file.jobs)
    rule = _flow_rule(context, region, ears) if flows else None
    found.extend(_job(context, region, job, grant, ears, rule) for job in cron_file.jobs)
    return found


def _flow_rule(context: Context, region: str, ears: Ears) -> str | None:
    """Why the recorder hears no flow's end in ``region`` (no enabled EventBridge rule of
    Step Functions status events targets the completion queue or the recorder), or None."""
    from botocore.exceptions import BotoCoreError, ClientError

    if not ears.arns:
        return "the stack has no output CompletionQueueArn"
    events = context.clients(region)("events")
    try:
        for arn in ears.arns:
            names = events.list_rule_names_by_target(TargetArn=arn).get("RuleNames", [])
            for name in names:
                rule = events.describe_rule(Name=name)
                if rule.get("State") == "ENABLED" and "aws.states" in rule.get("EventPattern", ""):
                    return None
    except (BotoCoreError, ClientError) as exc:
        return f"EventBridge ListRuleNamesByTarget failed - {describe_aws_error(exc)}"
    return "no enabled EventBridge rule sends Step Functions status events to the completion queue"


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
    context: Context, region: str, job: Job, grant: Grant, ears: Ears, rule: str | None
) -> Finding:
    check = f"job {job.name}"
    refused = target_problem(job.target, grant)
    if refused is not None:
        return Finding(region, "error", check, f"{job.service}: the ticker cannot run it", refused)
    if job.target.kind in KIND_PARAMETERS:  # allowed by its prefix; not probed further
        parameter = KIND_PARAMETERS[job.target.kind]
        return Finding(region, "ok", check, f"{job.service}: within {parameter}", "")
    try:
        if job.target.kind == "flow":
            return _flow(context, region, job, check, grant.account, rule)
        return _function(context, region, job, check, ears)
    except Stop as stop:
        return stop.finding


def _function(context: Context, region: str, job: Job, check: str, ears: Ears) -> Finding:
    from botocore.exceptions import BotoCoreError, ClientError

    client = context.clients(region)("lambda")
    try:
        client.get_function_configuration(FunctionName=job.target.name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise Stop(
                Finding(
                    region,
                    "error",
                    check,
                    f"{job.service} does not exist in {region}",
                    f"deploy the function in {region} (every region runs the same cron file)",
                )
            ) from exc
        raise aws(region, check, f"Lambda GetFunctionConfiguration {job.service}")(exc) from exc
    except BotoCoreError as exc:
        raise aws(region, check, f"Lambda GetFunctionConfiguration {job.service}")(exc) from exc
    fix = (
        f"send its end to the recorder: {ears.fix()} (docs/deploy.md, Wire your own targets); "
        "until then each run ends TIMED_OUT"
    )
    try:
        config = client.get_function_event_invoke_config(FunctionName=job.target.name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return Finding(region, "warning", check, f"{job.service}: no destinations", fix)
        raise aws(region, check, f"Lambda GetFunctionEventInvokeConfig {job.service}")(exc) from exc
    except BotoCoreError as exc:
        raise aws(region, check, f"Lambda GetFunctionEventInvokeConfig {job.service}")(exc) from exc
    destinations = config.get("DestinationConfig", {})
    heard = {
        end: destinations.get(end, {}).get("Destination") for end in ("OnSuccess", "OnFailure")
    }
    missing = [end for end, arn in heard.items() if arn not in ears.arns]
    if missing:
        return Finding(
            region,
            "warning",
            check,
            f"{job.service}: its {' and '.join(missing)} destination is not the recorder's queue",
            fix,
        )
    where = " and ".join(sorted({ears.name(str(arn)) for arn in heard.values()}))
    return Finding(region, "ok", check, f"{job.service} exists, its ends go to {where}")


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
            raise Stop(
                Finding(
                    region,
                    "error",
                    check,
                    f"{job.service} does not exist in {region}",
                    f"deploy the state machine in {region} (every region runs the same cron file)",
                )
            ) from exc
        raise aws(region, check, f"Step Functions DescribeStateMachine {job.service}")(exc) from exc
    except BotoCoreError as exc:
        raise aws(region, check, f"Step Functions DescribeStateMachine {job.service}")(exc) from exc
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
            "deploy the stack again (its FlowEndedRule); until then each run ends TIMED_OUT",
        )
    return Finding(region, "ok", check, f"{job.service} exists; the recorder's rule hears its ends")
