"""doctor's checks of a region's stack: deployed and complete, its state table active, the
active-environment value its store holds, the tick schedule enabled; and across the regions,
the active environment against the stacks' names (a name no stack has, regions that disagree,
more than one region active)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from mini_scheduler.cli.context import Context
from mini_scheduler.cli.doctor.findings import Finding, Level, Region, Stop, aws
from mini_scheduler.cli.where import Where, environment_for
from mini_scheduler.errors import SchedulerError

_DEFAULT_ACTIVE: Final = "prod"  # what the ticker reads while the store holds no value


_READY: Final = (
    "CREATE_COMPLETE",
    "UPDATE_COMPLETE",
    "UPDATE_ROLLBACK_COMPLETE",
    "IMPORT_COMPLETE",
)


def describe_stack(context: Context, name: str, region: str) -> dict[str, Any]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = context.clients(region)("cloudformation").describe_stacks(StackName=name)
    except ClientError as exc:
        if "does not exist" in str(exc.response.get("Error", {}).get("Message", "")):
            raise Stop(
                Finding(
                    region,
                    "error",
                    "stack",
                    f"stack {name} not found",
                    "deploy it (make deploy), or name the stack and regions it has "
                    "(--stack, --regions)",
                )
            ) from exc
        raise aws(region, "stack", f"CloudFormation DescribeStacks {name}")(exc) from exc
    except BotoCoreError as exc:
        raise aws(region, "stack", f"CloudFormation DescribeStacks {name}")(exc) from exc
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


def check_table(context: Context, seen: Region, where: Where) -> Finding:
    """The stack's state table exists and is ACTIVE (doctor, and a drill's stack check)."""
    from botocore.exceptions import BotoCoreError, ClientError

    region, table = seen.region, where.table
    if not table:
        return Finding(
            region, "error", "table", "the stack has no output StateTableName", "deploy it again"
        )
    try:
        answer = context.clients(region)("dynamodb").describe_table(TableName=table)
    except (BotoCoreError, ClientError) as exc:
        raise aws(region, "table", f"DynamoDB DescribeTable {table}", "check the table exists")(
            exc
        ) from exc
    status = str(answer["Table"].get("TableStatus", ""))
    if status != "ACTIVE":
        return Finding(region, "error", "table", f"{table} is {status}", "wait until ACTIVE")
    return Finding(region, "ok", "table", f"{table} ACTIVE")


def _environment(context: Context, seen: Region, where: Where) -> Finding:
    store = environment_for(context, where)
    try:
        stored = store.get()
    except SchedulerError as exc:
        raise Stop(
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


def _schedule(context: Context, seen: Region, where: Where) -> Finding:
    from botocore.exceptions import BotoCoreError, ClientError

    region, name = seen.region, f"{where.stack}-tick"
    try:
        answer = context.clients(region)("scheduler").get_schedule(Name=name)
    except (BotoCoreError, ClientError) as exc:
        raise aws(
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


def _name(region: Region) -> str:
    """The stack's EnvironmentName ("" when its stack was not read)."""
    return region.outputs.get("EnvironmentName", region.parameters.get("EnvironmentName", ""))


def across_regions(stack: str, regions: Sequence[Region]) -> Iterator[Finding]:
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


CHECKS: Final[tuple[Callable[[Context, Region, Where], Finding], ...]] = (
    check_table,
    _environment,
    _schedule,
)
"""The checks of a described stack, in order (a :class:`Stop` ends one, not the others)."""
